"""Whether kiam can serve a pod right now, asked the way its metadata request travels:

1. the pod's node sends it to the first DNAT rule that matches (e2e/harness/node_rules.py); no
   rule: the node's own metadata service answers, not kiam;
2. a Ready agent on that node, not stopping, listens on the rule's port;
3. that agent dials its `--server-address` (`<service>.<namespace>...:<port>`): the headless
   Service's ready endpoints are server pods, Ready and not stopping, listening (`--bind`) on that
   port;
4. and the certificate such a server serves names the host the agent dials. A server reads its
   certificate from its mounted Secret when it starts and reloads it at some moment after the
   Secret changes (kiam's certificate reloader; the kubelet refreshes a mounted Secret within its
   sync period), so only a name every version of the Secret held since the server started (the
   one before included) certainly reaches the agent.

Not modelled: the CA each side trusts (a change of CA is refused before anything is registered,
transitions/), and STS (no AWS here).
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

from cryptography import x509

from e2e.harness.kube import Kube, is_ready
from e2e.harness.node_rules import NodeRulesModel, is_agent
from kiam_eks.contracts.agent_rule import agent_command


@dataclass(frozen=True)
class Verdict:
    works: bool
    why: str


def _flag(args: list[str], name: str) -> str | None:
    for arg in reversed(args):
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    return None


def _args(pod: dict[str, Any]) -> list[str]:
    container = (pod["spec"].get("containers") or [{}])[0]
    return [str(a) for a in container.get("args") or []]


def certificate_names(data: dict[str, str]) -> frozenset[str]:
    """The DNS names of the certificate in a TLS Secret's data (none for a Secret gone)."""
    pem = base64.b64decode(data.get("tls.crt", ""))
    if not pem:
        return frozenset()
    cert = x509.load_pem_x509_certificate(pem)
    try:
        sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return frozenset()
    return frozenset(sans.get_values_for_type(x509.DNSName))


@dataclass
class KiamChain:
    """Reads the kiam namespace and asks the chain for a pod."""

    kube: Kube
    model: NodeRulesModel
    namespace: str

    def state(self) -> ChainState:
        """The namespace's agents, servers and endpoints now."""
        pods = self.kube.items(f"/api/v1/namespaces/{self.namespace}/pods")
        slices = self.kube.items(
            f"/apis/discovery.k8s.io/v1/namespaces/{self.namespace}/endpointslices"
        )
        ready: dict[str, set[str]] = {}
        for s in slices:
            service = (s["metadata"].get("labels") or {}).get("kubernetes.io/service-name", "")
            for endpoint in s.get("endpoints") or []:
                if (endpoint.get("conditions") or {}).get("ready"):
                    ready.setdefault(service, set()).update(endpoint.get("addresses") or [])
        return ChainState(
            agents=[p for p in pods if is_agent(p) is not None],
            servers=[p for p in pods if _args(p)[:1] == ["server"]],
            ready_endpoints=ready,
            model=self.model,
        )


@dataclass(frozen=True)
class ChainState:
    agents: list[dict[str, Any]]
    servers: list[dict[str, Any]]
    ready_endpoints: dict[str, set[str]]
    model: NodeRulesModel

    def serves(self, pod: dict[str, Any]) -> Verdict:
        node = pod["spec"].get("nodeName")
        if not node:
            return Verdict(False, "not on a node yet")
        rule = self.model.destination(node)
        if rule is None:
            return Verdict(False, f"no kiam rule on {node}: the node's own metadata service")
        agent = next(
            (
                a
                for a in self.agents
                if a["spec"].get("nodeName") == node
                and is_ready(a)
                and agent_command(_args(a)).port == rule.port
            ),
            None,
        )
        if agent is None:
            others = sorted(
                {
                    agent_command(_args(a)).port
                    for a in self.agents
                    if a["spec"].get("nodeName") == node and is_ready(a)
                }
            )
            if others:
                # A rule left behind: the node's agent serves elsewhere, and this rule wins.
                listening = ", ".join(str(p) for p in others)
                return Verdict(
                    False,
                    f"{node}'s rule sends it to port {rule.port}, where nothing listens: its "
                    f"agent listens on {listening}",
                )
            # Its agent is being replaced (or is gone): nothing answers on the node for now.
            return Verdict(
                False, f"{node}'s rule sends it to port {rule.port}: no Ready agent there"
            )
        address = _flag(_args(agent), "--server-address") or ""
        host, _, port = address.rpartition(":")
        service = host.split(".", 1)[0]
        endpoints = self.ready_endpoints.get(service, set())
        for server in self.servers:
            ip = (server.get("status") or {}).get("podIP")
            if not is_ready(server) or ip not in endpoints:
                continue
            bind = _flag(_args(server), "--bind") or ""
            if bind.rpartition(":")[2] != port:
                continue
            if host in self._names_served(server):
                return Verdict(True, f"agent on {node} to {server['metadata']['name']}")
        return Verdict(
            False,
            f"the agent on {node} dials {address}: no Ready server there names {host} on {port}",
        )

    def _names_served(self, server: dict[str, Any]) -> frozenset[str]:
        """Names every version of its certificate Secret held since the server was created."""
        created = self.model.created_at(server["metadata"]["uid"])
        namespace = server["metadata"]["namespace"]
        names: frozenset[str] | None = None
        for volume in server["spec"].get("volumes") or []:
            if "secret" not in volume:
                continue
            versions = self.model.secret_versions(namespace, volume["secret"]["secretName"])
            first = max(
                (
                    i
                    for i, (revision, _) in enumerate(versions)
                    if created is not None and revision <= created
                ),
                default=0,
            )
            for _, data in versions[first:]:
                held = certificate_names(data)
                names = held if names is None else names & held
        return names or frozenset()
