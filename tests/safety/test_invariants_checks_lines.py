"""invariants/, guarantees 1 to 11 and `presence` (one module each): what the mutants the other
tests let live would change."""

from __future__ import annotations

import copy
import dataclasses
import json

from kiam_eks.contracts.names import SERVER_NODES
from kiam_eks.invariants import Resource, Violation, check_all
from kiam_eks.invariants.recorded import resources_from_recording
from tests.conftest import base_config, expected_of, run_program
from tests.test_invariants import APP_CONFIG


def test_a_second_node_affinity_term_that_admits_server_nodes_is_caught(
    base_resources: list[Resource],
) -> None:
    # Node selector terms are ORed: one that does not exclude the server nodes admits them.
    agent = next(r for r in base_resources if r.type == "kubernetes:apps/v1:DaemonSet")
    inputs = copy.deepcopy(dict(agent.inputs))
    affinity = inputs["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]
    affinity["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"].append(
        {"matchExpressions": [{"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}]}
    )
    rs = [dataclasses.replace(agent, inputs=inputs) if r is agent else r for r in base_resources]
    assert check_all(rs, expected_of(base_config())) == [
        Violation(
            "agent-placement",
            agent.urn,
            "no required node affinity keeps it off nodes labelled dedicated=kiam-server",
        )
    ]


def _replaced(rs: list[Resource], old: Resource, **fields: object) -> list[Resource]:
    return [dataclasses.replace(old, **fields) if r is old else r for r in rs]  # type: ignore[arg-type]


def test_a_deployment_without_replicas_is_judged_as_kubernetes_defaults_it_to_one(
    base_resources: list[Resource],
) -> None:
    deployment = next(r for r in base_resources if r.type == "kubernetes:apps/v1:Deployment")
    pdb = next(r for r in base_resources if r.type == "kubernetes:policy/v1:PodDisruptionBudget")
    inputs = copy.deepcopy(dict(deployment.inputs))
    del inputs["spec"]["replicas"]
    rs = _replaced(base_resources, deployment, inputs=inputs)
    assert [v for v in check_all(rs, expected_of(base_config())) if v.id.endswith("budget")] == [
        Violation(
            "server-disruption-budget",
            pdb.urn,
            "allows 1 disruptions of 1 servers; must be exactly 1 and fewer than the replicas",
        )
    ]


def test_a_session_of_61_minutes_is_too_long(base_resources: list[Resource]) -> None:
    deployment = next(r for r in base_resources if r.type == "kubernetes:apps/v1:Deployment")
    inputs = copy.deepcopy(dict(deployment.inputs))
    container = inputs["spec"]["template"]["spec"]["containers"][0]
    container["args"] = [
        "--session-duration=61m" if a.startswith("--session-duration=") else a
        for a in container["args"]
    ]
    rs = _replaced(base_resources, deployment, inputs=inputs)
    assert check_all(rs, expected_of(base_config())) == [
        Violation(
            "server-args",
            deployment.urn,
            "session duration ['61m'] is not above 15m and at most 60m",
        )
    ]


def test_every_agent_is_judged_after_one_that_dials_no_service(
    base_resources: list[Resource],
) -> None:
    """Three agent DaemonSets: one without --server-address, then two dialling a host that is no
    Service of the stack: each is reported."""
    agent = next(r for r in base_resources if r.type == "kubernetes:apps/v1:DaemonSet")

    def with_args(suffix: str, keep: bool) -> Resource:
        inputs = copy.deepcopy(dict(agent.inputs))
        container = inputs["spec"]["template"]["spec"]["containers"][0]
        container["args"] = [
            "--server-address=elsewhere:443" if a.startswith("--server-address=") else a
            for a in container["args"]
            if keep or not a.startswith("--server-address=")
        ]
        return dataclasses.replace(agent, inputs=inputs, urn=agent.urn + suffix)

    agents = [with_args("-1", keep=False), with_args("-2", keep=True), with_args("-3", keep=True)]
    rs = [*[r for r in base_resources if r is not agent], *agents]
    found = [v for v in check_all(rs, expected_of(base_config())) if v.id == "server-service"]
    elsewhere = "--server-address host elsewhere is not a Service of this stack"
    assert found == [
        Violation("server-service", agents[0].urn, "needs exactly one --server-address"),
        Violation("server-service", agents[1].urn, elsewhere),
        Violation("server-service", agents[2].urn, elsewhere),
    ]


def test_the_server_nodes_group_is_judged_after_a_group_that_is_not_theirs(
    base_resources: list[Resource],
) -> None:
    """Another node group first in the stack (not under the server nodes' component) is not
    judged, and the server nodes' group after it still is."""
    group = next(r for r in base_resources if r.type == "aws:eks/nodeGroup:NodeGroup")
    taints = [{"key": "dedicated", "value": "other", "effect": "NO_SCHEDULE"}]
    other = dataclasses.replace(
        group, urn=group.urn + "-other", name="other-nodes", parent="urn:pulumi:test::kiam::x::y"
    )
    tainted = dataclasses.replace(group, inputs={**group.inputs, "taints": taints})
    rs = [other, *[tainted if r is group else r for r in base_resources]]
    found = [
        v for v in check_all(rs, expected_of(base_config())) if v.id == "node-group-replacement"
    ]
    assert found == [
        Violation(
            "node-group-replacement",
            group.urn,
            "is tainted [{'key': 'dedicated', 'value': 'other', 'effect': 'NO_SCHEDULE'}], not with "
            "the taint kiam:nodeGroup.taint asks for ([{'key': 'dedicated', 'value': "
            "'kiam-server', 'effect': 'NO_SCHEDULE'}])",
        )
    ]


def test_every_application_role_is_judged_after_an_application_without_one(
    kiam: list[Resource],
) -> None:
    """billing's role is gone (`application-reachable` says so), and search's, judged after it,
    admits any principal of an account."""
    billing = next(
        r for r in kiam if r.type == "aws:iam/role:Role" and r.name == "kiam-app-billing"
    )
    search = next(r for r in kiam if r.type == "aws:iam/role:Role" and r.name == "kiam-app-search")
    trust = {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"AWS": "arn:aws:iam::111122223333:root"},
                "Action": "sts:AssumeRole",
            }
        ],
    }
    rs = [
        dataclasses.replace(search, inputs={**search.inputs, "assumeRolePolicy": json.dumps(trust)})
        if r is search
        else r
        for r in kiam
        if r is not billing
    ]
    found = [v for v in check_all(rs, expected_of(APP_CONFIG)) if v.id == "iam-least-privilege"]
    assert found == [
        Violation(
            "iam-least-privilege",
            search.urn,
            "trust admits {'AWS': 'arn:aws:iam::111122223333:root'}: application roles trust the "
            "kiam-server role, IRSA and EKS Pod Identity only",
        )
    ]


def _agent_expression(rs: list[Resource], expression: dict[str, object]) -> list[Resource]:
    agent = next(r for r in rs if r.type == "kubernetes:apps/v1:DaemonSet")
    inputs = copy.deepcopy(dict(agent.inputs))
    affinity = inputs["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]
    [term] = affinity["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    term["matchExpressions"] = [expression]
    return _replaced(rs, agent, inputs=inputs)


def test_an_affinity_term_excludes_the_server_nodes_by_the_label_s_absence_or_not_in_only(
    base_resources: list[Resource],
) -> None:
    """Kubernetes' node affinity: `DoesNotExist` and `NotIn [kiam-server]` keep the agents off
    nodes labelled dedicated=kiam-server; `In` or `Exists` on the same key admit them."""
    expected = expected_of(base_config())
    agent = next(r for r in base_resources if r.type == "kubernetes:apps/v1:DaemonSet")
    absent = _agent_expression(base_resources, {"key": "dedicated", "operator": "DoesNotExist"})
    assert check_all(absent, expected) == []
    for operator in ("In", "Exists"):
        expression: dict[str, object] = {"key": "dedicated", "operator": operator}
        if operator == "In":
            expression["values"] = ["kiam-server"]
        admitting = _agent_expression(base_resources, expression)
        assert check_all(admitting, expected) == [
            Violation(
                "agent-placement",
                agent.urn,
                "no required node affinity keeps it off nodes labelled dedicated=kiam-server",
            )
        ], operator


def test_a_budget_of_min_available_two_of_three_servers_allows_one_disruption(
    base_resources: list[Resource],
) -> None:
    pdb = next(r for r in base_resources if r.type == "kubernetes:policy/v1:PodDisruptionBudget")
    expected = expected_of(base_config())
    assert pdb.inputs["spec"]["maxUnavailable"] == 1  # of 3 replicas
    for min_available, found in ((2, []), (1, ["allows 2 disruptions of 3 servers"])):
        spec = {k: v for k, v in pdb.inputs["spec"].items() if k != "maxUnavailable"}
        inputs = {**pdb.inputs, "spec": {**spec, "minAvailable": min_available}}
        rs = _replaced(base_resources, pdb, inputs=inputs)
        assert [v.reason.split(";")[0] for v in check_all(rs, expected)] == found


def _two_servers(rs: list[Resource], first: dict[str, object]) -> tuple[list[Resource], Resource]:
    """The stack with a copy of its server Deployment before it, the copy's inputs `first`."""
    deployment = next(r for r in rs if r.type == "kubernetes:apps/v1:Deployment")
    copied = dataclasses.replace(
        deployment, urn=deployment.urn + "-first", name=deployment.name + "-first", inputs=first
    )
    return [copied, *rs], deployment


def test_every_server_s_flags_are_judged_after_one_whose_flags_are_unknown(
    base_resources: list[Resource],
) -> None:
    from kiam_eks.invariants import UNKNOWN

    deployment = next(r for r in base_resources if r.type == "kubernetes:apps/v1:Deployment")
    unknown = copy.deepcopy(dict(deployment.inputs))
    unknown["spec"]["template"]["spec"]["containers"][0]["args"] = UNKNOWN
    rs, second = _two_servers(base_resources, unknown)
    inputs = copy.deepcopy(dict(second.inputs))
    container = inputs["spec"]["template"]["spec"]["containers"][0]
    container["args"] = [*container["args"], "--role-base-arn-autodetect"]
    rs = _replaced(rs, second, inputs=inputs)
    found = [v for v in check_all(rs, expected_of(base_config())) if v.id == "server-args"]
    assert found == [
        Violation(
            "server-args",
            second.urn,
            "autodetects --role-base-arn (needs the metadata API from the pod); set it explicitly",
        )
    ]


def test_every_server_s_rollout_wait_is_judged_after_one_that_skips_it(
    base_resources: list[Resource],
) -> None:
    deployment = next(r for r in base_resources if r.type == "kubernetes:apps/v1:Deployment")
    skipping = copy.deepcopy(dict(deployment.inputs))
    skipping["metadata"]["annotations"] = {"pulumi.com/skipAwait": "true"}
    rs, second = _two_servers(base_resources, skipping)
    inputs = copy.deepcopy(dict(second.inputs))
    inputs["metadata"]["annotations"] = {
        **inputs["metadata"].get("annotations", {}),
        "pulumi.com/waitFor": "condition=Available",
    }
    rs = _replaced(rs, second, inputs=inputs)
    found = [
        v for v in check_all(rs, expected_of(base_config())) if v.id == "node-group-replacement"
    ]
    assert found == [
        Violation(
            "node-group-replacement",
            second.urn,
            "is not held until its rollout is done: pulumi.com/waitFor must wait for "
            "updatedReplicas, replicas, availableReplicas to reach 3 (it is "
            "condition=Available); the provider's own Deployment wait can return with one new "
            "server Ready, and the old nodes go",
        ),
        Violation(
            "node-group-replacement",
            deployment.urn + "-first",
            "skips the rollout wait (pulumi.com/skipAwait)",
        ),
    ]


def test_while_the_running_install_serves_only_the_agents_presence_is_asked_of_the_rest() -> None:
    """Migration phase `servers`: the stack runs servers for the running install's agents, so
    it has no agent DaemonSet of its own and no Service for agents to dial, and is whole."""
    from tests.test_adoption import adoption_config

    config = adoption_config("servers")
    rs = resources_from_recording(run_program(config))
    expected = expected_of(config)
    assert check_all(rs, expected) == []
    without_nodes = [r for r in rs if not r.parent.endswith(f"::{SERVER_NODES}")]
    assert len(without_nodes) < len(rs)
    found = [v for v in check_all(without_nodes, expected) if v.id == "presence"]
    assert found == [Violation("presence", "stack", "no kiam node group found")]


def test_a_federated_principal_is_irsa_only_with_a_service_account_condition(
    kiam: list[Resource],
) -> None:
    """An application role may trust the cluster's OIDC provider only for a service account
    (`:sub`): a Federated statement without that condition admits every pod of the cluster."""
    billing = next(
        r for r in kiam if r.type == "aws:iam/role:Role" and r.name == "kiam-app-billing"
    )
    trust = json.loads(billing.inputs["assumeRolePolicy"])
    federated = {"Federated": "arn:aws:iam::111122223333:oidc-provider/oidc.eks.example"}
    trust["Statement"].append(
        {
            "Effect": "Allow",
            "Principal": federated,
            "Action": "sts:AssumeRoleWithWebIdentity",
            "Condition": {"StringEquals": {"oidc.eks.example:aud": "sts.amazonaws.com"}},
        }
    )
    changed = dataclasses.replace(
        billing, inputs={**billing.inputs, "assumeRolePolicy": json.dumps(trust)}
    )
    rs = [changed if r is billing else r for r in kiam]
    found = [v for v in check_all(rs, expected_of(APP_CONFIG)) if v.id == "iam-least-privilege"]
    assert found == [
        Violation(
            "iam-least-privilege",
            billing.urn,
            f"trust admits {federated!r}: application roles trust the kiam-server role, IRSA "
            "and EKS Pod Identity only",
        )
    ]


def _server(rs: list[Resource]) -> Resource:
    return next(r for r in rs if r.type == "kubernetes:apps/v1:Deployment")


def _with_server_args(rs: list[Resource], flag: str, value: str) -> tuple[list[Resource], Resource]:
    deployment = _server(rs)
    inputs = copy.deepcopy(dict(deployment.inputs))
    container = inputs["spec"]["template"]["spec"]["containers"][0]
    container["args"] = [
        f"{flag}={value}" if a.startswith(f"{flag}=") else a for a in container["args"]
    ]
    return _replaced(rs, deployment, inputs=inputs), deployment


def test_a_session_of_15_minutes_10_seconds_is_above_15_minutes(
    base_resources: list[Resource],
) -> None:
    """The lower bound is 15m exclusive, to the second: 15m10s is allowed, 15m is not."""
    expected = expected_of(base_config())
    rs, _ = _with_server_args(base_resources, "--session-duration", "15m10s")
    rs, _ = _with_server_args(rs, "--session-refresh", "5m")
    assert check_all(rs, expected) == []
    rs, deployment = _with_server_args(rs, "--session-duration", "15m")
    assert check_all(rs, expected) == [
        Violation(
            "server-args",
            deployment.urn,
            "session duration ['15m'] is not above 15m and at most 60m",
        )
    ]


def test_anti_affinity_must_select_the_servers_own_pods(base_resources: list[Resource]) -> None:
    deployment = _server(base_resources)
    inputs = copy.deepcopy(dict(deployment.inputs))
    affinity = inputs["spec"]["template"]["spec"]["affinity"]["podAntiAffinity"]
    [term] = affinity["requiredDuringSchedulingIgnoredDuringExecution"]
    term["labelSelector"]["matchLabels"] = {"app": "something-else"}
    rs = _replaced(base_resources, deployment, inputs=inputs)
    found = [v for v in check_all(rs, expected_of(base_config())) if v.resource == deployment.urn]
    assert [v.id for v in found] == ["server-anti-affinity"]


def _pdb_spec(rs: list[Resource], spec: dict[str, object]) -> tuple[list[Resource], Resource]:
    pdb = next(r for r in rs if r.type == "kubernetes:policy/v1:PodDisruptionBudget")
    selector = pdb.inputs["spec"]["selector"]
    return _replaced(rs, pdb, inputs={**pdb.inputs, "spec": {"selector": selector, **spec}}), pdb


def test_a_budget_that_allows_no_disruption_or_names_no_bound_is_caught(
    base_resources: list[Resource],
) -> None:
    """maxUnavailable 0 blocks every drain of a server node; a budget with neither bound is no
    bound at all."""
    expected = expected_of(base_config())
    for spec, allows in (({"maxUnavailable": 0}, "0"), ({}, "None")):
        rs, pdb = _pdb_spec(base_resources, spec)
        assert check_all(rs, expected) == [
            Violation(
                "server-disruption-budget",
                pdb.urn,
                f"allows {allows} disruptions of 3 servers; must be exactly 1 and fewer than the replicas",
            )
        ], spec


def test_a_budget_of_min_available_for_servers_of_unknown_count_is_judged_without_a_count(
    base_resources: list[Resource],
) -> None:
    from kiam_eks.invariants import UNKNOWN

    deployment = _server(base_resources)
    inputs = copy.deepcopy(dict(deployment.inputs))
    inputs["spec"]["replicas"] = UNKNOWN
    rs = _replaced(base_resources, deployment, inputs=inputs)
    rs, pdb = _pdb_spec(rs, {"minAvailable": 2})
    found = [v for v in check_all(rs, expected_of(base_config())) if v.resource == pdb.urn]
    assert [v.reason.split(";")[0] for v in found] == [
        "allows None disruptions of <unknown> servers"
    ]


def _role(rs: list[Resource], name: str) -> Resource:
    return next(r for r in rs if r.type == "aws:iam/role:Role" and r.name == name)


def _server_role_trusting(rs: list[Resource], principal: dict[str, str]) -> list[Resource]:
    role = _role(rs, "kiam-iam-server")
    trust = {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Principal": principal, "Action": "sts:AssumeRole"}],
    }
    return _replaced(rs, role, inputs={**role.inputs, "assumeRolePolicy": json.dumps(trust)})


def _trust_violations(rs: list[Resource]) -> list[str]:
    server_role = _role(rs, "kiam-iam-server")
    return [
        v.reason
        for v in check_all(rs, expected_of(base_config()))
        if v.resource == server_role.urn and v.reason.startswith("trust")
    ]


def test_the_server_role_trusts_the_node_role_and_no_other_principal(
    base_resources: list[Resource],
) -> None:
    node_arn = _role(base_resources, "kiam-iam-server-node").outputs["arn"]
    other = "arn:aws:iam::111122223333:role/someone-else"
    for principal in (
        {"AWS": node_arn, "Service": "ec2.amazonaws.com"},  # a second kind of principal
        {"AWS": other},  # another role
    ):
        rs = _server_role_trusting(base_resources, principal)
        assert _trust_violations(rs) == [
            f"trust admits {principal!r}, not only the server node role"
        ]
    assert _trust_violations(_server_role_trusting(base_resources, {"AWS": node_arn})) == []


def test_a_whole_account_is_refused_while_the_node_role_s_arn_is_unknown(
    base_resources: list[Resource],
) -> None:
    """Before the node role has an ARN (a policy pack's preview of a new stack) the trust can
    still be judged for `*` and a whole account."""
    node = _role(base_resources, "kiam-iam-server-node")
    outputs = {k: v for k, v in node.outputs.items() if k != "arn"}
    rs = _replaced(base_resources, node, outputs=outputs)
    root = {"AWS": "arn:aws:iam::111122223333:root"}
    assert _trust_violations(_server_role_trusting(rs, root)) == [
        f"trust admits {root!r}, not only the server node role"
    ]
    assert _trust_violations(_server_role_trusting(rs, {"AWS": "arn:aws:iam::1:role/x"})) == []


def test_the_excluding_expression_is_found_after_one_on_another_key(
    base_resources: list[Resource],
) -> None:
    agent = next(r for r in base_resources if r.type == "kubernetes:apps/v1:DaemonSet")
    inputs = copy.deepcopy(dict(agent.inputs))
    affinity = inputs["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]
    [term] = affinity["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    term["matchExpressions"] = [
        {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]},
        *term["matchExpressions"],
    ]
    rs = _replaced(base_resources, agent, inputs=inputs)
    assert check_all(rs, expected_of(base_config())) == []


def test_an_inline_policy_not_known_yet_is_skipped_and_the_next_one_still_judged() -> None:
    """During a preview a policy's name or document may be unknown: that one is skipped (it is
    judged on `up`), and every policy after it is still judged."""
    from kiam_eks.invariants import UNKNOWN
    from tests.test_invariants import WITH_INLINE

    rs = resources_from_recording(run_program(WITH_INLINE))
    expected = expected_of(WITH_INLINE)
    [read] = [r for r in rs if r.type == "aws:iam/rolePolicy:RolePolicy" and "billing" in r.name]
    assert check_all(rs, expected) == []

    def policy(suffix: str, name: object, document: object) -> Resource:
        inputs = {**read.inputs, "name": name, "policy": document}
        return dataclasses.replace(
            read, urn=read.urn + suffix, name=read.name + suffix, inputs=inputs
        )

    not_known = policy("-document-unknown", "read", UNKNOWN)
    assert check_all([*rs, not_known], expected) == []
    name_unknown = policy("-name-unknown", UNKNOWN, read.inputs["policy"])
    extra = policy("-extra", "extra", read.inputs["policy"])
    assert [v.resource for v in check_all([*rs, name_unknown, extra], expected)] == [extra.urn]
