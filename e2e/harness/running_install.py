"""A kiam someone installed before this program, to adopt: the two common installs, written here from
the facts of kiam v4.2's own `deploy/` manifests and of its Helm chart 6.1.2 (release `kiam`), as
`../shared/reference/kiam.md` and the upstream sources state them, not copied.

- **upstream** (`deploy/server-rbac.yaml`, `server.daemonset.yaml`, `service.yaml`, `agent.yaml`,
  the Secrets of `docs/TLS.md`): ServiceAccount `kiam-server`, ClusterRoles and bindings
  `kiam-read`/`kiam-write` (rbac v1: the manifests' v1beta1 is gone since Kubernetes 1.22), Secrets
  `kiam-server-tls` (`ca.pem`, `server.pem`, `server-key.pem`) and `kiam-agent-tls` (`ca.pem`,
  `agent.pem`, `agent-key.pem`), the headless Service `kiam-server` (port 443 `grpclb`, selector
  `app: kiam, role: server`), the server as a DaemonSet and the agent DaemonSet `kiam-agent`
  (selector `app: kiam, role: agent`, `updateStrategy: OnDelete`), both with a container named
  `kiam`. The server's `kubernetes.io/role: master` nodeSelector is for kops masters, which EKS
  does not have: here, as EKS users ran it, the servers run on the workers (the nodes labelled
  `kubernetes.io/role: node`, the label the upstream agent selects). Installed with `kubectl apply`.
- **helm** (chart 6.1.2, release `kiam`, default values but the TLS files and
  `agent.host.iptables: true`, without which no agent intercepts anything): ServiceAccounts
  `kiam-server` and `kiam-agent`, ClusterRoles and bindings `kiam-read`/`kiam-write`, Opaque
  Secrets `kiam-server` and `kiam-agent` (`ca`, `cert`, `key`), the headless Service `kiam-server`
  (ports 9620 `metrics` and 443 `grpclb`, `prometheus.io/*` annotations), DaemonSets `kiam-server`
  and `kiam-agent` (selectors `app: kiam, component: <server|agent>, release: kiam`, containers
  `kiam-server`/`kiam-agent`, `updateStrategy: OnDelete`), every object labelled as the chart
  labels it plus what Helm 3 itself adds (`app.kubernetes.io/managed-by: Helm`,
  `meta.helm.sh/release-*`). Helm creates objects with its own field manager, `helm`, and keeps
  no `last-applied-configuration`: created here the same way (`kubectl create --field-manager
  helm`). There is no helm binary here: Helm's own release operations are not exercised.

Both are signed by one CA (`e2e.standins.signing`), the CA the adoption settings receive.
"""

from __future__ import annotations

import copy
import subprocess
from dataclasses import dataclass, field
from typing import Any, Literal

import yaml

from e2e.harness.kube import Kube
from e2e.harness.pulumi import PulumiStack
from e2e.harness.toolchain import REPO
from e2e.standins.signing import make_ca, make_leaf
from kiam_eks.components.cloud import CertificateRequest

Kind = Literal["upstream", "helm"]
INSTALLS: tuple[Kind, ...] = ("upstream", "helm")
SERVICE = "kiam-server"
SERVER_DAEMON_SET = "kiam-server"
AGENT_DAEMON_SET = "kiam-agent"
PORT = 443
# The label the upstream agent's nodeSelector names (and, here, the servers'): the workers.
WORKER_LABEL = ("kubernetes.io/role", "node")
HELM_RELEASE = "kiam"
HELM_CHART = "kiam-6.1.2"
HELM_IMAGE = "quay.io/uswitch/kiam:v4.0"  # the chart's default tag
UPSTREAM_IMAGE = "quay.io/uswitch/kiam:master"  # what the manifests ship
PHASE_FILES = sorted((REPO / "docs" / "migration").glob("Pulumi.migrate-*.yaml"))


def set_secret_from_stdin(stack: PulumiStack, path: str, value: str) -> None:
    """`pulumi config set --secret --path <path> < file`, as the runbook has users type it."""
    done = subprocess.run(
        [str(stack.bin_dir / "pulumi"), "config", "set", "--secret", "--path", path,
         "--stack", stack.stack, "--non-interactive"],
        input=value, cwd=stack.project_dir, env=stack.env(), capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"pulumi config set {path} failed: {done.stderr}")


@dataclass(frozen=True)
class RunningInstall:
    """The objects of one running install, in the order they are created."""

    kind: Kind
    namespace: str
    ca_cert: str
    ca_key: str
    server_pod_labels: dict[str, str]
    agent_pod_labels: dict[str, str]
    tls_secrets: tuple[str, str]
    objects: list[dict[str, Any]] = field(default_factory=list)

    def manifest(self, kind: str, name: str) -> dict[str, Any]:
        """The object exactly as the install created it (for a rollback's `kubectl replace`)."""
        return copy.deepcopy(
            next(o for o in self.objects if o["kind"] == kind and o["metadata"]["name"] == name)
        )

    def install(self, kube: Kube) -> None:
        """Create it the way its users did: `kubectl apply -f deploy/`, or Helm."""
        self._create(kube, self.objects)

    def recreate(self, kube: Kube, kind: str, name: str) -> None:
        """Put back one object it had (a rollback re-applying the old server DaemonSet)."""
        self._create(kube, [self.manifest(kind, name)])

    def replace(self, kube: Kube, kind: str, name: str) -> None:
        """`kubectl replace` one object with exactly what the install had (a rollback)."""
        kube.kubectl("replace", "-f", "-", stdin=yaml.safe_dump(self.manifest(kind, name)))

    def _create(self, kube: Kube, objects: list[dict[str, Any]]) -> None:
        if self.kind == "upstream":
            kube.apply(objects)
        else:
            kube.kubectl(
                "create", "--field-manager", "helm", "-f", "-",
                stdin=yaml.safe_dump_all(objects),
            )  # fmt: skip

    def adoption_config(self) -> dict[str, Any]:
        """The documented phase-1 stack file (docs/migration/), with this install's selectors and
        without its CA, which the runbook sets with `pulumi config set --secret --path`."""
        config: dict[str, Any] = yaml.safe_load(PHASE_FILES[0].read_text())["config"]
        adoption = config["kiam:adoption"]
        for key in ("caCertificate", "caPrivateKey"):
            adoption.pop(key)
        adoption["serverPodLabels"] = dict(self.server_pod_labels)
        adoption["agentPodLabels"] = dict(self.agent_pod_labels)
        adoption["agentDaemonSetName"] = AGENT_DAEMON_SET
        return config

    def set_ca(self, stack: PulumiStack) -> None:
        """`pulumi config set --secret --path 'kiam:adoption.caCertificate' < ca.pem`, and the key."""
        for key, value in (("caCertificate", self.ca_cert), ("caPrivateKey", self.ca_key)):
            set_secret_from_stdin(stack, f"kiam:adoption.{key}", value)


def running_install(kind: Kind, namespace: str = "kube-system") -> RunningInstall:
    """A running install of `kind` in `namespace`, with a fresh CA and its certificates."""
    ca_cert, ca_key = make_ca("kiam-ca", 24 * 365)
    return (_upstream if kind == "upstream" else _helm)(namespace, ca_cert, ca_key)


def _leaf(
    ca: tuple[str, str], common_name: str, dns: list[str], ips: list[str], uses: list[str]
) -> tuple[str, str]:
    request = CertificateRequest(
        common_name=common_name,
        dns_names=dns,
        ip_addresses=ips,
        uses=["digital_signature", "key_encipherment", *uses],
        validity_hours=24 * 365,
        early_renewal_hours=0,
    )
    return make_leaf(request, ca[0], ca[1])


def _server_leaf(ca: tuple[str, str]) -> tuple[str, str]:
    # docs/server.json: hosts kiam-server, 127.0.0.1, localhost (cfssl makes client+server usages).
    return _leaf(
        ca,
        "kiam-server",
        ["kiam-server", "localhost"],
        ["127.0.0.1"],
        ["server_auth", "client_auth"],
    )


def _agent_leaf(ca: tuple[str, str]) -> tuple[str, str]:
    return _leaf(ca, "Kiam Agent", [], [], ["client_auth"])


def _secret(
    name: str, namespace: str, data: dict[str, str], meta: dict[str, Any] | None = None
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace, **(meta or {})},
        "type": "Opaque",
        "stringData": data,
    }


def _cluster_rbac(namespace: str, meta: dict[str, Any]) -> list[dict[str, Any]]:
    rules = {
        "kiam-read": [
            {
                "apiGroups": [""],
                "resources": ["namespaces", "pods"],
                "verbs": ["watch", "get", "list"],
            }
        ],
        "kiam-write": [{"apiGroups": [""], "resources": ["events"], "verbs": ["create", "patch"]}],
    }
    objects: list[dict[str, Any]] = []
    for name, rule in rules.items():
        objects.append(
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRole",
                "metadata": {"name": name, **meta},
                "rules": rule,
            }
        )
        objects.append({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": name, **meta},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
            "subjects": [{"kind": "ServiceAccount", "name": "kiam-server", "namespace": namespace}],
        })  # fmt: skip
    return objects


def _health(cert: str, key: str, ca: str, extra: list[str]) -> list[str]:
    return [
        "/kiam", "health", f"--cert=/etc/kiam/tls/{cert}", f"--key=/etc/kiam/tls/{key}",
        f"--ca=/etc/kiam/tls/{ca}", "--server-address=127.0.0.1:443", *extra,
        "--gateway-timeout-creation=1s", "--timeout=5s",
    ]  # fmt: skip


def _upstream(namespace: str, ca_cert: str, ca_key: str) -> RunningInstall:
    ca = (ca_cert, ca_key)
    server_cert, server_key = _server_leaf(ca)
    agent_cert, agent_key = _agent_leaf(ca)
    server_labels = {"app": "kiam", "role": "server"}
    agent_labels = {"app": "kiam", "role": "agent"}
    scrape = {"prometheus.io/scrape": "true", "prometheus.io/port": "9620"}
    workers = dict([WORKER_LABEL])
    health = _health("server.pem", "server-key.pem", "ca.pem", [])
    objects: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "kiam-server", "namespace": namespace}},
        *_cluster_rbac(namespace, {}),
        _secret("kiam-server-tls", namespace, {"ca.pem": ca_cert, "server.pem": server_cert, "server-key.pem": server_key}),
        _secret("kiam-agent-tls", namespace, {"ca.pem": ca_cert, "agent.pem": agent_cert, "agent-key.pem": agent_key}),
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": SERVICE, "namespace": namespace},
            "spec": {
                "clusterIP": "None",
                "selector": server_labels,
                "ports": [{"name": "grpclb", "port": PORT, "targetPort": PORT, "protocol": "TCP"}],
            },
        },
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": {"name": SERVER_DAEMON_SET, "namespace": namespace},
            "spec": {
                "selector": {"matchLabels": server_labels},
                "updateStrategy": {"type": "RollingUpdate"},
                "template": {
                    "metadata": {"annotations": scrape, "labels": server_labels},
                    "spec": {
                        "serviceAccountName": "kiam-server",
                        "nodeSelector": workers,
                        "volumes": [
                            {"name": "ssl-certs", "hostPath": {"path": "/usr/share/ca-certificates"}},
                            {"name": "tls", "secret": {"secretName": "kiam-server-tls"}},
                        ],
                        "containers": [{
                            "name": "kiam",
                            "image": UPSTREAM_IMAGE,
                            "imagePullPolicy": "Always",
                            "command": ["/kiam"],
                            "args": [
                                "server", "--json-log", "--level=warn", "--bind=0.0.0.0:443",
                                "--cert=/etc/kiam/tls/server.pem", "--key=/etc/kiam/tls/server-key.pem",
                                "--ca=/etc/kiam/tls/ca.pem", "--role-base-arn-autodetect", "--sync=1m",
                                "--prometheus-listen-addr=0.0.0.0:9620", "--prometheus-sync-interval=5s",
                            ],
                            "securityContext": {"capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]}},
                            "volumeMounts": [
                                {"mountPath": "/etc/ssl/certs", "name": "ssl-certs"},
                                {"mountPath": "/etc/kiam/tls", "name": "tls"},
                            ],
                            "livenessProbe": {"exec": {"command": health}, "initialDelaySeconds": 10, "periodSeconds": 10, "timeoutSeconds": 10},
                            "readinessProbe": {"exec": {"command": health}, "initialDelaySeconds": 3, "periodSeconds": 10, "timeoutSeconds": 10},
                        }],
                    },
                },
            },
        },
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": {"name": AGENT_DAEMON_SET, "namespace": namespace},
            "spec": {
                "selector": {"matchLabels": agent_labels},
                "updateStrategy": {"type": "OnDelete"},
                "template": {
                    "metadata": {"annotations": scrape, "labels": agent_labels},
                    "spec": {
                        "hostNetwork": True,
                        "dnsPolicy": "ClusterFirstWithHostNet",
                        "nodeSelector": workers,
                        "volumes": [
                            {"name": "ssl-certs", "hostPath": {"path": "/usr/share/ca-certificates"}},
                            {"name": "tls", "secret": {"secretName": "kiam-agent-tls"}},
                            {"name": "xtables", "hostPath": {"path": "/run/xtables.lock", "type": "FileOrCreate"}},
                        ],
                        "containers": [{
                            "name": "kiam",
                            "securityContext": {"capabilities": {"drop": ["ALL"], "add": ["NET_ADMIN", "NET_RAW"]}},
                            "image": UPSTREAM_IMAGE,
                            "imagePullPolicy": "Always",
                            "command": ["/kiam"],
                            "args": [
                                "agent", "--iptables", "--host-interface=cali+", "--json-log", "--port=8181",
                                "--cert=/etc/kiam/tls/agent.pem", "--key=/etc/kiam/tls/agent-key.pem",
                                "--ca=/etc/kiam/tls/ca.pem", "--server-address=kiam-server:443",
                                "--prometheus-listen-addr=0.0.0.0:9620", "--prometheus-sync-interval=5s",
                                "--gateway-timeout-creation=1s",
                            ],
                            "env": [{"name": "HOST_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}],
                            "volumeMounts": [
                                {"mountPath": "/etc/ssl/certs", "name": "ssl-certs"},
                                {"mountPath": "/etc/kiam/tls", "name": "tls"},
                                {"mountPath": "/var/run/xtables.lock", "name": "xtables"},
                            ],
                            "livenessProbe": {"httpGet": {"path": "/ping", "port": 8181}, "initialDelaySeconds": 3, "periodSeconds": 3},
                        }],
                    },
                },
            },
        },
    ]  # fmt: skip
    return RunningInstall(
        kind="upstream",
        namespace=namespace,
        ca_cert=ca_cert,
        ca_key=ca_key,
        server_pod_labels=server_labels,
        agent_pod_labels=agent_labels,
        tls_secrets=("kiam-server-tls", "kiam-agent-tls"),
        objects=objects,
    )


def _helm(namespace: str, ca_cert: str, ca_key: str) -> RunningInstall:
    ca = (ca_cert, ca_key)
    server_cert, server_key = _server_leaf(ca)
    agent_cert, agent_key = _agent_leaf(ca)
    release = {"release": HELM_RELEASE}

    def meta(component: str | None) -> dict[str, Any]:
        chart = {"app": "kiam", "chart": HELM_CHART, "heritage": "Helm", **release}
        return {
            "labels": {
                **chart,
                **({"component": component} if component else {}),
                # Helm 3 adds these to everything it installs.
                "app.kubernetes.io/managed-by": "Helm",
            },
            "annotations": {
                "meta.helm.sh/release-name": HELM_RELEASE,
                "meta.helm.sh/release-namespace": namespace,
            },
        }

    def with_meta(obj: dict[str, Any], component: str | None) -> dict[str, Any]:
        extra = meta(component)
        obj["metadata"]["labels"] = {**extra["labels"], **obj["metadata"].get("labels", {})}
        obj["metadata"]["annotations"] = {
            **extra["annotations"],
            **obj["metadata"].get("annotations", {}),
        }
        return obj

    server_labels = {"app": "kiam", "component": "server", **release}
    agent_labels = {"app": "kiam", "component": "agent", **release}
    health = _health("cert", "key", "ca", ["--server-address-refresh=2s"])

    def probe(initial: int) -> dict[str, Any]:
        return {
            "exec": {"command": health},
            "initialDelaySeconds": initial,
            "periodSeconds": 10,
            "timeoutSeconds": 10,
            "successThreshold": 1,
            "failureThreshold": 3,
        }

    objects: list[dict[str, Any]] = [
        with_meta({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "kiam-agent", "namespace": namespace}}, "agent"),
        with_meta({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "kiam-server", "namespace": namespace}}, "server"),
        *(with_meta(o, "server") for o in _cluster_rbac(namespace, {})),
        with_meta(_secret("kiam-agent", namespace, {"ca": ca_cert, "cert": agent_cert, "key": agent_key}), None),
        with_meta(_secret("kiam-server", namespace, {"ca": ca_cert, "cert": server_cert, "key": server_key}), None),
        with_meta({
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {
                "name": SERVICE,
                "namespace": namespace,
                "annotations": {"prometheus.io/scrape": "true", "prometheus.io/port": "9620"},
            },
            "spec": {
                "clusterIP": "None",
                "selector": server_labels,
                "ports": [
                    {"name": "metrics", "port": 9620, "targetPort": 9620, "protocol": "TCP"},
                    {"name": "grpclb", "port": PORT, "targetPort": PORT, "protocol": "TCP"},
                ],
            },
        }, "server"),
        with_meta({
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": {"name": AGENT_DAEMON_SET, "namespace": namespace},
            "spec": {
                "selector": {"matchLabels": agent_labels},
                "template": {
                    "metadata": {"labels": agent_labels},
                    "spec": {
                        "hostNetwork": True,
                        "dnsPolicy": "ClusterFirstWithHostNet",
                        "serviceAccountName": "kiam-agent",
                        "tolerations": [],
                        "volumes": [
                            {"name": "tls", "secret": {"secretName": "kiam-agent"}},
                            {"name": "xtables", "hostPath": {"path": "/run/xtables.lock", "type": "FileOrCreate"}},
                        ],
                        "containers": [{
                            "name": "kiam-agent",
                            # agent.host.iptables=true, as every working install sets it.
                            "securityContext": {"capabilities": {"add": ["NET_ADMIN"]}},
                            "image": HELM_IMAGE,
                            "imagePullPolicy": "IfNotPresent",
                            "command": ["/kiam", "agent"],
                            "args": [
                                "--iptables", "--no-iptables-remove",
                                "--host-interface=cali+", "--json-log", "--level=info", "--port=8181",
                                "--cert=/etc/kiam/tls/cert", "--key=/etc/kiam/tls/key", "--ca=/etc/kiam/tls/ca",
                                "--server-address=kiam-server:443",
                                "--prometheus-listen-addr=0.0.0.0:9620", "--prometheus-sync-interval=5s",
                                "--gateway-timeout-creation=1s",
                            ],
                            "env": [{"name": "HOST_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}],
                            "volumeMounts": [
                                {"mountPath": "/etc/kiam/tls", "name": "tls"},
                                {"mountPath": "/var/run/xtables.lock", "name": "xtables"},
                            ],
                            "livenessProbe": {
                                "httpGet": {"path": "/ping", "port": 8181},
                                "initialDelaySeconds": 3, "periodSeconds": 3, "timeoutSeconds": 1,
                                "successThreshold": 1, "failureThreshold": 3,
                            },
                        }],
                    },
                },
                "updateStrategy": {"type": "OnDelete"},
            },
        }, "agent"),
        with_meta({
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": {"name": SERVER_DAEMON_SET, "namespace": namespace},
            "spec": {
                "selector": {"matchLabels": server_labels},
                "template": {
                    "metadata": {"labels": server_labels},
                    "spec": {
                        "serviceAccountName": "kiam-server",
                        "hostNetwork": False,
                        "tolerations": [],
                        "volumes": [
                            {"name": "tls", "secret": {"secretName": "kiam-server"}},
                            {"name": "ssl-certs", "hostPath": {"path": "/usr/share/ca-certificates"}},
                        ],
                        "containers": [{
                            "name": "kiam-server",
                            "image": HELM_IMAGE,
                            "imagePullPolicy": "IfNotPresent",
                            "command": ["/kiam", "server"],
                            "args": [
                                "--json-log", "--level=info", "--bind=0.0.0.0:443",
                                "--cert=/etc/kiam/tls/cert", "--key=/etc/kiam/tls/key", "--ca=/etc/kiam/tls/ca",
                                "--role-base-arn-autodetect", "--session-duration=15m", "--sync=1m",
                                "--prometheus-listen-addr=0.0.0.0:9620", "--prometheus-sync-interval=5s",
                            ],
                            "volumeMounts": [
                                {"mountPath": "/etc/kiam/tls", "name": "tls"},
                                {"mountPath": "/etc/ssl/certs", "name": "ssl-certs", "readOnly": True},
                            ],
                            "livenessProbe": probe(10),
                            "readinessProbe": probe(3),
                        }],
                    },
                },
                "updateStrategy": {"type": "OnDelete"},
            },
        }, "server"),
    ]  # fmt: skip
    return RunningInstall(
        kind="helm",
        namespace=namespace,
        ca_cert=ca_cert,
        ca_key=ca_key,
        server_pod_labels=server_labels,
        agent_pod_labels=agent_labels,
        tls_secrets=("kiam-server", "kiam-agent"),
        objects=objects,
    )
