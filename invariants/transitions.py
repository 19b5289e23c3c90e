"""16. A change from what the stack's last update installed keeps credentials flowing while it is
applied, judged on what the program renders for it (the transition rules of
transitions/ decide the same change from the settings alone; this judges their
outcome, as the other guarantees judge what every stack renders):

- no agent stops for good with its metadata DNAT rule left behind: the stack's agents keep their
  DaemonSet, port and the nodes they run on, unless the running agents remove their rule on exit
  (contracts/agent_rule.py); a retirement rolls them to `--iptables-remove` first, on
  the port and interface of their rule;
- the servers keep listening where the running agents dial, and the server certificate names
  the host they dial, restarting the servers onto it when it changes;
- a namespace the stack created is not deleted unless kiam is retired: it stays registered
  (kept on delete once released);
- every application keeps its role and namespace, and moves at most one `servedBy` step.

Judged only where the gate knows the last update (`Expected.previous`).
"""

from __future__ import annotations

from typing import Any

from kiam_eks.contracts import kiam
from kiam_eks.contracts.agent_rule import agent_command
from kiam_eks.contracts.labels import PREVIOUS_NAMES_ANNOTATION
from kiam_eks.contracts.tokens import DAEMON_SET_PATCH, NAMESPACE
from kiam_eks.invariants.model import Resource, Violation, dig, is_unknown
from kiam_eks.invariants.view import (
    AGENT_CONTAINER,
    SERVER_CONTAINER,
    KiamView,
    container,
    flag_values,
)
from kiam_eks.settings.agent import TolerationSettings
from kiam_eks.settings.stack import StackSettings
from kiam_eks.transitions.installed import Installed
from kiam_eks.transitions.judges import covers, served_by_steps

CHECK = "change"


def change(view: KiamView) -> list[Violation]:
    """16. The change from the last update strands no rule, no dialled address, no namespace
    and no application."""
    if not view.knows_settings:
        return []
    previous, settings = view.expected.previous, view.expected.settings
    if previous is None or settings is None:
        return []
    return [
        *_agents(view, previous, settings),
        *_servers(view, previous, settings),
        *_namespace(view, previous, settings),
        *_applications(view, previous),
    ]


def _agents(view: KiamView, previous: Installed, s: StackSettings) -> list[Violation]:
    before = previous.agents
    if before is None:
        return []
    if s.retire:
        patches = [
            p
            for p in view.of_type(DAEMON_SET_PATCH)
            if kiam.AGENT_REMOVE_RULE_FLAG in _args(p, AGENT_CONTAINER)
        ]
        if not previous.kiam_installed or before.removes_rule_on_exit:
            return []
        if not patches:
            return [
                Violation(
                    CHECK,
                    "stack",
                    f"retires the agents of {before.daemon_set} without first rolling them to "
                    f"{kiam.AGENT_REMOVE_RULE_FLAG}: every node would keep their rule",
                )
            ]
        # An agent removes exactly the rule it added (contracts/agent_rule.py): rolled onto
        # another port or interface, the running agents' rule stays behind.
        out = []
        for patch in patches:
            command = agent_command(_args(patch, AGENT_CONTAINER))
            if (command.port, command.interface) != (before.port, before.host_interface):
                out.append(
                    Violation(
                        CHECK,
                        patch.urn,
                        f"rolls the agents onto port {command.port} and interface "
                        f"{command.interface}, while every node's rule names port {before.port} "
                        f"and interface {before.host_interface}: each agent would remove only "
                        "its own rule",
                    )
                )
        return out
    agents = [a for a in view.agents if dig(a.inputs, "metadata", "name") == before.daemon_set]
    if not agents:
        if previous.adoption is not None and previous.adoption.phase == "takeover":
            return []  # kept on delete while taking over: the running install has it back
        if before.removes_rule_on_exit:
            return []
        return [
            Violation(
                CHECK,
                "stack",
                f"no longer has the agent DaemonSet {before.daemon_set}, whose agents keep their "
                "rule when they stop",
            )
        ]
    out = []
    for agent in agents:
        args = _args(agent, AGENT_CONTAINER)
        if is_unknown(args):
            continue
        command = agent_command(args)
        if command.port != before.port and not before.removes_rule_on_exit:
            out.append(
                Violation(
                    CHECK,
                    agent.urn,
                    f"moves the agents to port {command.port}, while every node's rule sends "
                    f"pods to {before.port} and the running agents keep it",
                )
            )
        tolerations = dig(agent.inputs, "spec", "template", "spec", "tolerations", default=[])
        rendered = [_toleration(t) for t in tolerations or []]
        lost = [o for o in before.tolerations if not any(covers(n, o) for n in rendered)]
        if lost and not before.removes_rule_on_exit:
            out.append(
                Violation(
                    CHECK,
                    agent.urn,
                    f"no longer tolerates what the running agents tolerate ({len(lost)} "
                    "tolerations): their agents would be deleted with their rule in place",
                )
            )
    return out


def _servers(view: KiamView, previous: Installed, s: StackSettings) -> list[Violation]:
    server, namespace = previous.server, previous.namespace
    if not previous.kiam_installed or s.retire or server is None or namespace is None:
        return []
    out = []
    for dep in view.servers:
        args = _args(dep, SERVER_CONTAINER)
        if is_unknown(args):
            continue
        binds = flag_values(args, "--bind")
        if binds and not all(b.endswith(f":{server.grpc_port}") for b in binds):
            out.append(
                Violation(
                    CHECK,
                    dep.urn,
                    f"binds {', '.join(binds)}, while the running agents dial port "
                    f"{server.grpc_port}",
                )
            )
    host = server.address(namespace.name).rsplit(":", 1)[0]
    sans = view.server_certificate_names()
    if any(is_unknown(n) for n in sans):
        return out
    if sans and not any(host in n for n in sans):
        out.append(
            Violation(
                CHECK,
                "stack",
                f"the server certificate does not name {host}, which the running agents dial",
            )
        )
    dialled_now = [view.dialed_service(a)[0] for a in view.agents]
    if any(h is not None and h != host for h in dialled_now):
        for dep in view.servers:
            annotations = dig(dep.inputs, "spec", "template", "metadata", "annotations") or {}
            if PREVIOUS_NAMES_ANNOTATION not in annotations:
                out.append(
                    Violation(
                        CHECK,
                        dep.urn,
                        f"does not restart onto the certificate naming {host} while agents move "
                        "to another address",
                    )
                )
    return out


def _namespace(view: KiamView, previous: Installed, s: StackSettings) -> list[Violation]:
    before = previous.namespace
    if before is None or before.owner not in ("stack", "released") or s.retire:
        return []
    if before.owner == "released" and not s.namespace.create:
        return []  # released by the last update: forgetting it now leaves it in the cluster
    found = [n for n in view.of_type(NAMESPACE) if dig(n.inputs, "metadata", "name") == before.name]
    if not found:
        return [
            Violation(
                CHECK,
                "stack",
                f"no longer has namespace {before.name}, which it created: it would be deleted "
                "with everything in it",
            )
        ]
    out = []
    for namespace in found:
        if not s.namespace.create and namespace.retain_on_delete is False:
            out.append(
                Violation(
                    CHECK,
                    namespace.urn,
                    "is released but not kept on delete: the next update would delete it",
                )
            )
    return out


def _applications(view: KiamView, previous: Installed) -> list[Violation]:
    out = []
    for app in view.expected.applications:
        before = previous.applications.get(app.name)
        if before is None:
            continue
        if before.role_arn != app.arn:
            out.append(
                Violation(
                    CHECK,
                    "stack",
                    f"application {app.name} moves from role {before.role_arn} to {app.arn}",
                )
            )
        if before.namespace is not None and before.namespace != app.namespace:
            out.append(
                Violation(
                    CHECK,
                    "stack",
                    f"application {app.name} moves from namespace {before.namespace} to "
                    f"{app.namespace}",
                )
            )
        steps = served_by_steps(before.served_by, app.served_by)
        if len(steps) > 2:
            out.append(
                Violation(
                    CHECK,
                    "stack",
                    f"application {app.name} skips from {before.served_by.value} to "
                    f"{app.served_by.value}",
                )
            )
    return out


def _args(workload: Resource, name: str) -> Any:
    """A container's arguments, UNKNOWN while they are (a preview)."""
    found = container(workload, name)
    if is_unknown(found):
        return found
    args = (found or {}).get("args") or []
    return args if is_unknown(args) else [str(a) for a in args]


def _toleration(value: Any) -> TolerationSettings:
    return TolerationSettings.model_validate(value)
