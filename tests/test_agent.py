"""kiam-agent: host networking, only the capabilities iptables needs, never on server nodes, after servers."""

from __future__ import annotations

from kiam_eks.contracts import tokens
from tests.conftest import base_config, only_container, pod_spec, run_program, types_and_names
from tools.mock_engine import Recording

DAEMON_SET = "kubernetes:apps/v1:DaemonSet"


def test_children_and_parentage(base_run: Recording) -> None:
    component = base_run.one(tokens.AGENT)
    assert component.parent == base_run.one(tokens.KIAM).urn
    assert types_and_names(base_run.children_of(component.urn)) == {
        ("kubernetes:core/v1:ServiceAccount", "kiam-agent"),
        (DAEMON_SET, "kiam-agent"),
    }


def test_host_network_and_the_node_address(base_run: Recording) -> None:
    spec = pod_spec(base_run.one(DAEMON_SET))
    assert spec["hostNetwork"] is True
    assert spec["dnsPolicy"] == "ClusterFirstWithHostNet"
    assert spec["priorityClassName"] == "system-node-critical"
    assert spec["automountServiceAccountToken"] is False
    assert only_container(base_run.one(DAEMON_SET))["env"] == [
        {"name": "HOST_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}
    ]


def test_only_net_admin_and_net_raw(base_run: Recording) -> None:
    assert only_container(base_run.one(DAEMON_SET))["securityContext"] == {
        "runAsUser": 0,
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"], "add": ["NET_ADMIN", "NET_RAW"]},
    }


def test_mounts_tls_and_the_xtables_lock(base_run: Recording) -> None:
    ds = base_run.one(DAEMON_SET)
    assert pod_spec(ds)["volumes"] == [
        {"name": "tls", "secret": {"secretName": "kiam-agent-certificate", "defaultMode": 0o400}},
        {"name": "xtables-lock", "hostPath": {"path": "/run/xtables.lock", "type": "FileOrCreate"}},
    ]
    assert only_container(ds)["volumeMounts"] == [
        {"name": "tls", "mountPath": "/etc/kiam/tls", "readOnly": True},
        {"name": "xtables-lock", "mountPath": "/run/xtables.lock"},
    ]


def test_args_dial_the_headless_service_with_keepalive(base_run: Recording) -> None:
    c = only_container(base_run.one(DAEMON_SET))
    assert c["command"] == ["/kiam"]
    assert c["args"] == [
        "agent",
        "--json-log",
        "--level=info",
        "--iptables",
        "--no-iptables-remove",
        "--host-interface=eni+",
        "--host=$(HOST_IP)",
        "--port=8181",
        "--server-address=kiam-server.kiam.svc.cluster.local:9610",
        "--cert=/etc/kiam/tls/tls.crt",
        "--key=/etc/kiam/tls/tls.key",
        "--ca=/etc/kiam/tls/ca.crt",
        "--allow-route-regexp=^$",
        "--prometheus-listen-addr=0.0.0.0:9620",
        "--gateway-timeout-creation=1s",
        "--grpc-keepalive-time-duration=10s",
        "--grpc-keepalive-timeout-duration=2s",
    ]
    assert c["livenessProbe"]["httpGet"] == {"path": "/ping", "port": 8181}
    assert c["readinessProbe"]["httpGet"] == {"path": "/health?deep=1", "port": 8181}
    assert c["resources"] == {
        "requests": {"cpu": "20m", "memory": "48Mi"},
        "limits": {"memory": "128Mi"},
    }


def test_kept_off_server_nodes_by_affinity_and_no_toleration(base_run: Recording) -> None:
    spec = pod_spec(base_run.one(DAEMON_SET))
    assert spec["affinity"] == {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {"key": "dedicated", "operator": "NotIn", "values": ["kiam-server"]}
                        ]
                    }
                ]
            }
        }
    }
    assert spec["tolerations"] == []


def test_tolerates_only_the_configured_other_pools() -> None:
    rec = run_program(
        base_config(
            agent={
                "tolerations": [
                    {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
                ]
            }
        )
    )
    assert pod_spec(rec.one(DAEMON_SET))["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
    ]


def test_created_only_after_the_server_deployment(base_run: Recording) -> None:
    ds = base_run.one(DAEMON_SET)
    assert base_run.one("kubernetes:apps/v1:Deployment").urn in ds.dependencies
    assert base_run.one("kubernetes:core/v1:Secret", "kiam-tls-agent").urn in ds.dependencies


def test_removing_the_rule_on_exit_is_opt_in() -> None:
    rec = run_program(
        base_config(agent={"removeIptablesRuleOnExit": True, "hostInterface": "cali+"})
    )
    args = only_container(rec.one(DAEMON_SET))["args"]
    assert "--no-iptables-remove" not in args
    assert "--host-interface=cali+" in args
