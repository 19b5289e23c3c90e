"""Property-based tests: across the settings space every guarantee holds, and every near miss is
rejected with a message, never an exception from inside a component."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kiam_eks.invariants import check_all
from kiam_eks.invariants.recorded import resources_from_recording
from kiam_eks.settings import SettingsError
from kiam_eks.settings.loader import settings_from_values
from tests.conftest import expected_of, run_program

FAST = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
ZONES = ["eu-west-1a", "eu-west-1b", "eu-west-1c"]
X86 = ["t3.medium", "m6i.large", "c6i.large"]
ARM = ["m7g.large", "t4g.medium", "c6gn.large"]


@st.composite
def applications(draw: st.DrawFn, base_path: str, prefix: str) -> dict[str, Any]:
    """Application roles at the base path or below it (a sub-path the base pattern covers when
    it starts with the prefix), with and without IRSA, in shared and separate namespaces."""
    apps: dict[str, Any] = {}
    for name in draw(st.lists(st.sampled_from(["billing", "search", "rank"]), unique=True)):
        app: dict[str, Any] = {
            "namespace": draw(st.sampled_from(["billing", "search", "shop"])),
            "roleName": f"{prefix}{name}",
        }
        sub_path = draw(st.sampled_from([None, "team-a/", "team-a/ml/", "app-x/", "Team.B/"]))
        if sub_path is not None:
            app["path"] = f"{base_path}{sub_path}"
        if draw(st.booleans()):
            app["servedBy"] = "kiam+irsa"
            app["serviceAccount"] = name
        apps[name] = app
    return apps


@st.composite
def valid_configs(draw: st.DrawFn) -> dict[str, Any]:
    replicas = draw(st.integers(2, 5))
    min_size = draw(st.integers(replicas, 6))
    desired = draw(st.integers(min_size, 7))
    max_size = draw(st.integers(desired, 8))
    zones = draw(st.lists(st.sampled_from(ZONES), min_size=2, max_size=3, unique=True))
    arm = draw(st.booleans())
    ami = draw(
        st.sampled_from(
            ["AL2023_ARM_64_STANDARD", "BOTTLEROCKET_ARM_64"]
            if arm
            else ["AL2023_x86_64_STANDARD", "BOTTLEROCKET_x86_64"]
        )
    )
    duration = draw(st.integers(16, 60))
    refresh = draw(st.integers(1, duration - 1))
    taint_key = draw(st.sampled_from(["dedicated", "kiam.example.com/role", "node-role"]))
    taint_value = draw(st.sampled_from(["kiam-server", "kiam", "servers"]))
    other_taints = draw(
        st.lists(st.sampled_from(["nvidia.com/gpu", "spot", "batch"]), unique=True, max_size=2)
    )
    path = draw(st.sampled_from(["/kiam-apps/", "/apps/", "/teams/a/"]))
    prefix = draw(st.sampled_from(["", "app-"]))
    grpc_port = draw(st.integers(1024, 20000))
    return {
        "kiam:cluster": {
            "name": draw(st.sampled_from(["dev", "prod-eu", "c1"])),
            "accountId": draw(st.from_regex(r"\A\d{12}\Z")),
            "region": "eu-west-1",
            "kubernetesVersion": draw(st.sampled_from(["1.30", "1.31", "1.32", "1.33"])),
            "kubernetesAuth": draw(st.sampled_from(["exec", "token"])),
        },
        "kiam:nodeGroup": {
            "subnets": [
                {"id": f"subnet-{i:017x}", "zone": zone} for i, zone in enumerate(zones, 1)
            ],
            "instanceTypes": draw(
                st.lists(st.sampled_from(ARM if arm else X86), min_size=1, max_size=2, unique=True)
            ),
            "amiType": ami,
            "capacityType": draw(st.sampled_from(["ON_DEMAND", "SPOT"])),
            "minSize": min_size,
            "desiredSize": desired,
            "maxSize": max_size,
            "taint": {
                "key": taint_key,
                "value": taint_value,
                "effect": draw(st.sampled_from(["NO_SCHEDULE", "NO_EXECUTE"])),
            },
        },
        "kiam:server": {
            "replicas": replicas,
            "sessionDuration": f"{duration}m",
            "sessionRefresh": f"{refresh}m",
            "grpcPort": grpc_port,
            "metricsPort": grpc_port + 1,
            "logLevel": draw(st.sampled_from(["debug", "info", "warn", "error"])),
        },
        "kiam:agent": {
            "tolerations": [
                {"key": k, "operator": "Exists", "effect": "NoSchedule"} for k in other_taints
            ],
            "hostInterface": draw(st.sampled_from(["eni+", "cali+", "!eth0"])),
        },
        "kiam:iam": {
            "applicationRolePath": path,
            "applicationRoleNamePrefix": prefix,
        },
        "kiam:namespace": {"name": draw(st.sampled_from(["kiam", "kiam-system"]))},
        "kiam:applications": draw(applications(path, prefix)),
        "kiam:monitoring": draw(
            st.sampled_from(
                [
                    {},
                    {"enabled": True, "labels": {"release": "prometheus"}},
                    {"enabled": True, "prometheusOperator": False, "alerts": False},
                ]
            )
        ),
    }


@FAST
@given(valid_configs())
def test_every_guarantee_holds_across_the_settings_space(config: dict[str, Any]) -> None:
    """Every invariant holds, the parts the pack judges one resource at a time too, and every
    exported application is reachable seen from the outside. One program run per generated stack
    serves all three (the run is what takes the time)."""
    from kiam_eks.invariants.per_resource import RESOURCE_LEVEL, resource_violations

    recording = run_program(config)
    resources = resources_from_recording(recording)
    assert check_all(resources, expected_of(config)) == []
    assert [v for r in resources for c in RESOURCE_LEVEL for v in resource_violations(c, r)] == []
    assert_exported_applications_are_reachable(config, recording)


def assert_exported_applications_are_reachable(config: dict[str, Any], recording: Any) -> None:
    """Guarantee 12 from the outside: what the stack exports (role ARN, pod annotation, base ARN)
    fits the server's permission and the namespace regexps the way IAM and kiam decide."""
    from kiam_eks.contracts.kiam import permits, resolve
    from kiam_eks.invariants.iam_documents import allows, statements
    from kiam_eks.invariants.kiam_rules import granted_role

    outputs = recording.stack_outputs
    exported: dict[str, Any] = outputs["applications"]
    assert sorted(exported) == sorted(config["kiam:applications"])
    policy = recording.one("aws:iam/rolePolicy:RolePolicy", "kiam-iam-server-assume-applications")
    permitted = {
        r.inputs["metadata"]["name"]: r.inputs["metadata"]["annotations"][
            "iam.amazonaws.com/permitted"
        ]
        for r in recording.by_type("kubernetes:core/v1:NamespacePatch")
    }
    deployment = recording.one("kubernetes:apps/v1:Deployment")
    server_args = deployment.inputs["spec"]["template"]["spec"]["containers"][0]["args"]
    for app, out in exported.items():
        arn, namespace = out["roleArn"], config["kiam:applications"][app]["namespace"]
        annotation = out["podAnnotation"]["iam.amazonaws.com/role"]
        assert allows(statements(json.loads(policy.inputs["policy"])), "sts:AssumeRole", arn)
        assert resolve(annotation, outputs["roleBaseArn"]) == arn
        settings = config["kiam:applications"][app]
        assert out["serviceAccount"] == (
            {
                "name": settings["serviceAccount"],
                "namespace": namespace,
                "annotations": {"eks.amazonaws.com/role-arn": arn},
            }
            if settings.get("servedBy") == "kiam+irsa"
            else None
        )
        assert permits(permitted[namespace], arn)
        # What a live check asks of the live pod, namespace and server Deployment.
        assert granted_role(annotation, permitted[namespace], server_args) == arn
        assert not any(
            permits(permitted[namespace], other["roleArn"])
            for name, other in exported.items()
            if config["kiam:applications"][name]["namespace"] != namespace
        )


RESERVED = ("kubernetes.io/", "k8s.io/", "eks.amazonaws.com/")
STATEMENT = {"Effect": "Allow", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::b/*"}
BAD_DOCUMENTS = [
    {"Version": "2008-10-17", "Statement": [STATEMENT]},
    {"Version": "2012-10-17", "Statement": [dict(STATEMENT, Effect="allow")]},
    {"Version": "2012-10-17", "Statement": [dict(STATEMENT, Principal="*")]},
    {"Version": "2012-10-17", "Statement": [dict(STATEMENT, NotResource="*")]},
    {"Version": "2012-10-17", "Statement": [dict(STATEMENT, Action="GetObject")]},
]


def application(config: dict[str, Any], **settings: Any) -> dict[str, Any]:
    """One application whose role the stack's pattern admits, with these settings."""
    prefix = config["kiam:iam"]["applicationRoleNamePrefix"]
    app = {"namespace": "billing", "roleName": f"{prefix}billing", **settings}
    return {"kiam:applications": {"app": app}}


# One way to miss each rule; hypothesis picks the rule and the values.
NEAR_MISSES = {
    "replicas above the node group": lambda c, n: c["kiam:server"].update(
        replicas=c["kiam:nodeGroup"]["minSize"] + n
    ),
    "refresh not below duration": lambda c, n: c["kiam:server"].update(
        sessionRefresh=f"{int(c['kiam:server']['sessionDuration'][:-1]) + n - 1}m"
    ),
    "session too long": lambda c, n: c["kiam:server"].update(sessionDuration=f"{60 + n}m"),
    "session too short": lambda c, n: c["kiam:server"].update(sessionDuration=f"{max(1, 16 - n)}m"),
    "one zone": lambda c, n: [s.update(zone="eu-west-1a") for s in c["kiam:nodeGroup"]["subnets"]],
    "agent tolerates the server taint": lambda c, n: c["kiam:agent"]["tolerations"].append(
        {"key": c["kiam:nodeGroup"]["taint"]["key"], "operator": "Exists"}
    ),
    "account id length": lambda c, n: c["kiam:cluster"].update(accountId="1" * (12 + n)),
    "min above desired": lambda c, n: c["kiam:nodeGroup"].update(
        minSize=c["kiam:nodeGroup"]["desiredSize"] + n,
        maxSize=c["kiam:nodeGroup"]["desiredSize"] + n,
    ),
    "unknown key": lambda c, n: c["kiam:server"].update({f"replicas{n}": 1}),
    "same ports": lambda c, n: c["kiam:server"].update(metricsPort=c["kiam:server"]["grpcPort"]),
    # What AWS, EKS, Kubernetes, kiam or gRPC would refuse (or quietly ignore) at apply time.
    "region of no partition": lambda c, n: c["kiam:cluster"].update(region=f"xx-west-{n}"),
    "cluster name too long": lambda c, n: c["kiam:cluster"].update(name="c" * (86 + n)),
    "kubernetes older than 1.25": lambda c, n: c["kiam:cluster"].update(
        kubernetesVersion=f"1.{25 - n}"
    ),
    "zone of another region": lambda c, n: c["kiam:nodeGroup"]["subnets"][0].update(
        zone=f"eu-west-{1 + n}a"
    ),
    "subnet id length": lambda c, n: c["kiam:nodeGroup"]["subnets"][0].update(
        id="subnet-" + "0" * (8 + n)
    ),
    "node label with a reserved prefix": lambda c, n: c["kiam:nodeGroup"].update(
        labels={f"{('', 'node-role.', 'x.')[n % 3]}{RESERVED[n % 3]}kiam": "true"}
    ),
    "empty node label value": lambda c, n: c["kiam:nodeGroup"].update(labels={f"team{n}": ""}),
    "taint key with a reserved prefix": lambda c, n: c["kiam:nodeGroup"]["taint"].update(
        key=f"{RESERVED[n % 3]}kiam"
    ),
    "empty taint value": lambda c, n: c["kiam:nodeGroup"]["taint"].update(value=""),
    "service name starting with a digit": lambda c, n: c["kiam:server"].update(
        serviceName=f"{n}kiam"
    ),
    "reserved priority class": lambda c, n: c["kiam:server"].update(
        priorityClassName=f"system-kiam-{n}"
    ),
    "namespace every cluster has": lambda c, n: c["kiam:namespace"].update(
        name=("default", "kube-system", "kube-public", "kube-node-lease")[n % 4]
    ),
    "short image digest": lambda c, n: c["kiam:server"].update(
        image="quay.io/uswitch/kiam@sha256:" + "a" * (64 - n)
    ),
    "flag kiam lacks": lambda c, n: c["kiam:server"].update(extraArgs=[f"--fetcher{n}=4"]),
    "negated managed flag": lambda c, n: c["kiam:agent"].update(
        extraArgs=[("--no-iptables", "--no-json-log")[n % 2]]
    ),
    "keepalive time below gRPC's minimum": lambda c, n: c["kiam:agent"].update(
        keepaliveTime=f"{10 - n}s"
    ),
    "keepalive timeout letting a failover outlast the readiness probe": lambda c, n: c[
        "kiam:agent"
    ].update(keepaliveTimeout=f"{3 + n}s"),
    "scrape interval below Prometheus' scrape timeout": lambda c, n: c["kiam:monitoring"].update(
        scrapeInterval=f"{10 - n}s"
    ),
    "scrape interval too long for the alerts' rate windows": lambda c, n: c[
        "kiam:monitoring"
    ].update(scrapeInterval=f"{75 + n}s"),
    "alerts without the Prometheus Operator": lambda c, n: c["kiam:monitoring"].update(
        enabled=n % 2 == 1, prometheusOperator=False, alerts=True
    ),
    "monitoring labels without the Prometheus Operator": lambda c, n: c["kiam:monitoring"].update(
        prometheusOperator=False, alerts=False, labels={f"release{n}": "prometheus"}
    ),
    "monitoring label the program sets": lambda c, n: c["kiam:monitoring"].update(
        labels={f"app.kubernetes.io/{('name', 'part-of', 'team')[n % 3]}": "x"}
    ),
    "agent port a node holds": lambda c, n: c["kiam:agent"].update(
        port=(10248, 10249, 10250, 10256, 30000 + n)[n - 1]
    ),
    "zero CPU request": lambda c, n: c["kiam:server"].update(
        resources={"cpuRequest": "0" * n, "memoryRequest": "64Mi", "memoryLimit": "64Mi"}
    ),
    "certificate validity beyond Go's durations": lambda c, n: c.setdefault("kiam:tls", {}).update(
        caValidityHours=2_562_047 + n
    ),
    "managed policy of another partition": lambda c, n: c.update(
        application(c, managedPolicyArns=[f"arn:aws-{('cn', 'us-gov')[n % 2]}:iam::aws:policy/P"])
    ),
    "managed policy of another account": lambda c, n: c.update(
        application(c, managedPolicyArns=[f"arn:aws:iam::{n:012d}:policy/P"])
    ),
    "managed policies above the quota": lambda c, n: c.update(
        application(
            c,
            managedPolicyArns=[
                f"arn:aws:iam::{c['kiam:cluster']['accountId']}:policy/p{i}" for i in range(10 + n)
            ],
        )
    ),
    "role names differing in case": lambda c, n: c.update(
        {
            "kiam:applications": {
                **application(c)["kiam:applications"],
                "other": dict(
                    application(c)["kiam:applications"]["app"],
                    roleName=(application(c)["kiam:applications"]["app"]["roleName"].upper()),
                ),
            }
        }
    ),
    "inline policy IAM would refuse": lambda c, n: c.update(
        application(c, inlinePolicies={"p": BAD_DOCUMENTS[n - 1]})
    ),
}


@FAST
@given(valid_configs(), st.sampled_from(sorted(NEAR_MISSES)), st.integers(1, 5))
def test_near_misses_are_rejected_with_a_message(config: dict[str, Any], miss: str, n: int) -> None:
    assert_refused(config, miss, n)


@pytest.mark.parametrize("miss", sorted(NEAR_MISSES))
@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(config=valid_configs(), n=st.integers(1, 5))
def test_every_near_miss_is_rejected(miss: str, config: dict[str, Any], n: int) -> None:
    """Each rule, not only those the sampling above happens to pick (settings only: cheap)."""
    assert_refused(config, miss, n)


def assert_refused(config: dict[str, Any], miss: str, n: int) -> None:
    broken = copy.deepcopy(config)
    NEAR_MISSES[miss](broken, n)
    values = {k.removeprefix("kiam:"): v for k, v in broken.items()}
    try:
        settings_from_values(values, "stacks/Pulumi.case.yaml")
    except SettingsError as error:
        assert error.problems
        assert all(p and "\n" not in p and "Traceback" not in p for p in error.problems)
        assert str(error).startswith("stacks/Pulumi.case.yaml: invalid kiam settings")
    else:
        raise AssertionError(f"{miss} was accepted")


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 70000) | st.text(max_size=12),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=6,
)


@FAST
@given(
    valid_configs(),
    st.sampled_from(
        ["kiam:cluster", "kiam:nodeGroup", "kiam:server", "kiam:agent", "kiam:iam", "kiam:tls"]
    ),
    st.text(min_size=1, max_size=24),
    JSON,
)
def test_arbitrary_values_are_either_valid_or_a_settings_error(
    config: dict[str, Any], section: str, key: str, value: Any
) -> None:
    broken = copy.deepcopy(config)
    target = broken.setdefault(section, {})
    target[key] = value
    values = {k.removeprefix("kiam:"): v for k, v in broken.items()}
    try:
        settings_from_values(values, "stacks/Pulumi.case.yaml")
    except SettingsError as error:
        assert error.problems
