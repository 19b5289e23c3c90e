"""The transition table: every setting once, what changing it does on a running cluster, and its
judge. docs/transitions.md is generated from it (tools/transition_reference.py) and the
configuration reference links each key to its row."""

from __future__ import annotations

from kiam_eks.transitions.judges import (
    adoption_change,
    agents_change,
    applications_change,
    cluster_change,
    existing_permitted_change,
    iam_change,
    namespace_change,
    retire_change,
    server_address_change,
)
from kiam_eks.transitions.verdicts import Kind, Row

SERVERS_ROLL = (
    "the servers roll one at a time behind their PodDisruptionBudget (a new one first with a spare "
    "node), and `pulumi up` waits until every one is updated and available"
)


AGENTS_ROLL = (
    "the agents roll, kiam:agent.rollout.maxUnavailable nodes at a time; each new agent, on the "
    "same port, holds the rule the one "
    "it replaces left (kiam's AppendUnique), so pods there are never sent elsewhere"
)


NODE_CHANGE = "see the node-change table (docs/operations.md, Changing the server nodes): "


TABLE: tuple[Row, ...] = (
    Row(
        "kiam:cluster.name",
        (Kind.REFUSED,),
        "Another cluster: refused (one stack per cluster; retire kiam first, then give the other "
        "cluster a stack of its own).",
        cluster_change,
    ),
    Row(
        "kiam:cluster.accountId",
        (Kind.REFUSED,),
        "Another account: refused, as for the cluster.",
        cluster_change,
    ),
    Row(
        "kiam:cluster.region",
        (Kind.REFUSED,),
        "Another region: refused, as for the cluster.",
        cluster_change,
    ),
    Row(
        "kiam:cluster.kubernetesVersion",
        (Kind.SAFE,),
        "Replaces the server node group: new nodes first, the servers Ready there, then the old "
        "nodes drained and deleted.",
    ),
    Row(
        "kiam:cluster.clusterDomain",
        (Kind.SEQUENCED,),
        "Changes the name agents dial: the server certificate names both the old and the new "
        "name for the update, the servers restart onto it before the agents move, and the next "
        "update drops the old names.",
        server_address_change,
    ),
    Row(
        "kiam:cluster.kubernetesAuth",
        (Kind.SAFE,),
        "Only how Pulumi authenticates: the Kubernetes provider is updated, not replaced (it is "
        "replaced only when its clusterIdentifier, the cluster's name, changes).",
    ),
    Row(
        "kiam:kubeconfig",
        (Kind.SAFE,),
        "Only how Pulumi reaches the cluster, as kubernetesAuth; every update first checks that "
        "its current context is the EKS cluster kiam:cluster.name names (its certificate "
        "authority), and stops before changing anything if not.",
    ),
    Row(
        "kiam:nodeGroup.*",
        (Kind.SAFE,),
        NODE_CHANGE
        + "a replacement moves every server to new nodes before the old ones go; labels, sizes "
        "and maxUnavailable change the running group.",
    ),
    Row(
        "kiam:server.serviceName",
        (Kind.SEQUENCED,),
        "Changes the name agents dial: as clusterDomain; the new Service is created next to the "
        "old one, which goes at the end of the update.",
        server_address_change,
    ),
    Row(
        "kiam:server.grpcPort",
        (Kind.REFUSED,),
        "Refused: agents dial the old port until they roll, after the servers, and a server "
        "listens on one port only.",
        server_address_change,
    ),
    Row(
        "kiam:server.replicas",
        (Kind.SAFE,),
        "Adds or removes servers (never below two; the PodDisruptionBudget keeps one disruption).",
    ),
    Row(
        "kiam:server.rolloutTimeoutMinutes",
        (Kind.SAFE,),
        "Only how long `pulumi up` waits; no pod restarts.",
    ),
    Row("kiam:server.*", (Kind.SAFE,), SERVERS_ROLL + "."),
    Row(
        "kiam:agent.port",
        (Kind.REFUSED, Kind.SAFE),
        "Refused while the running agents keep their rule on exit (the default): the old rule, "
        "first in the chain, would send every pod to a port nothing listens on. Safe once they "
        "remove it (removeIptablesRuleOnExit: true), at the cost that setting always has. "
        "Refused too while retiring agents that keep their rule: the retirement must roll "
        "their own rule away.",
        agents_change,
    ),
    Row(
        "kiam:agent.tolerations",
        (Kind.SAFE, Kind.REFUSED),
        "Tolerating more: agents start on the new nodes. Tolerating less: refused while the "
        "running agents keep their rule on exit, since the agents on nodes no longer tolerated "
        "would be deleted with their rule in place.",
        agents_change,
    ),
    Row(
        "kiam:agent.hostInterface",
        (Kind.REFUSED, Kind.SAFE),
        "Refused while the running agents keep their rule on exit (the default): the rule for the "
        "old interfaces would stay on every running node with no agent to remove it, and a later "
        "port change or the retirement would leave it sending pods to a port nothing listens on. "
        "Safe once they remove it (removeIptablesRuleOnExit: true): each agent that stops takes "
        "its rule with it. Refused too while retiring agents that keep their rule: the retirement "
        "must roll their own rule away. A stack that changed it under an earlier version may "
        "still carry rules for the old interfaces on nodes started before: replace those nodes "
        "before changing the port or retiring.",
        agents_change,
    ),
    Row(
        "kiam:agent.removeIptablesRuleOnExit",
        (Kind.SAFE,),
        AGENTS_ROLL + ". Turned off, the agents started with it remove their rule once more as "
        "they roll: pods on that node reach the node's own metadata service until the new agent "
        "starts, as on every restart while it was on.",
    ),
    Row(
        "kiam:agent.rollout",
        (Kind.SAFE,),
        "Only how many agents a later rollout restarts at once and how long `pulumi up` waits for "
        "it (the DaemonSet's update strategy and timeouts); no agent restarts.",
    ),
    Row("kiam:agent.*", (Kind.SAFE,), AGENTS_ROLL + "."),
    Row(
        "kiam:iam.applicationRolePath",
        (Kind.REFUSED,),
        "Refused while kiam runs: it is kiam's --role-base-arn, so every running pod's annotation "
        "would name another role.",
        iam_change,
    ),
    Row(
        "kiam:iam.kiamRolePath",
        (Kind.REFUSED, Kind.SAFE),
        "Refused while kiam runs: both kiam roles and the node group would be replaced, and the "
        "application roles would stop trusting the running servers' role first. Refused too, "
        "retired or not, while a Pod Identity chain role lives there: another account trusts "
        "its ARN, which another path replaces. Safe once retired without one.",
        iam_change,
    ),
    Row(
        "kiam:iam.managedPoliciesPerRole",
        (Kind.SAFE,),
        "Only how many customer managed policies the kiam-server role's exact permission may "
        "spread over (raise IAM's quota L-0DA4ABF3 first). Each role ARN stays in the document "
        "the last update put it in (the `installed` output); one that must move is added to its "
        "new document before the old one is detached, since the engine deletes only after every "
        "create and update, and the inline policy waits for every attachment: the permission "
        "never narrows mid-update.",
    ),
    Row(
        "kiam:iam.*",
        (Kind.SAFE,),
        "Changes what the servers may assume; every application role must still match (checked "
        "before anything is created). Roles no application names are not the stack's to judge: "
        "`python -m tools.kiam_usage` lists the pods that use them.",
    ),
    Row(
        "kiam:tls.*",
        (Kind.SAFE,),
        "Re-issues the certificates from the same CA key; the Secrets are updated in place and "
        "kiam reloads them.",
    ),
    Row(
        "kiam:namespace.name",
        (Kind.REFUSED,),
        "Refused while kiam runs: a second agent DaemonSet would need the ports the first holds, "
        "and the first would go with its rules in place; a retirement rolls the agents in the "
        "namespace they run in.",
        namespace_change,
    ),
    Row(
        "kiam:namespace.create",
        (Kind.SEQUENCED, Kind.REFUSED),
        "true to false: the namespace the stack created stays, with everything in it (kept on "
        "delete by this update, forgotten by the next). false to true: refused, the namespace "
        "exists and is not the stack's.",
        namespace_change,
    ),
    Row(
        "kiam:monitoring.*",
        (Kind.SAFE,),
        "ServiceMonitors, the agent metrics Service and the PrometheusRule are created, changed "
        "or deleted; switching scrape annotations rolls the servers and the agents.",
    ),
    Row(
        "kiam:adoption.phase",
        (Kind.SAFE, Kind.REFUSED),
        "One phase forward or back with its runbook step (docs/migration.md); skipping one is "
        "refused.",
        adoption_change,
    ),
    Row(
        "kiam:adoption.serverPodLabels",
        (Kind.SAFE, Kind.REFUSED),
        "Refused in phase servers (the running Service selects the new servers by them); later, "
        "the servers roll.",
        adoption_change,
    ),
    Row(
        "kiam:adoption",
        (Kind.REFUSED,),
        "Added to a stack that installed kiam itself, removed, or the taken-over DaemonSet's name, "
        "selector or the CA changed: refused (a new CA, or agents stopped with their rule).",
        adoption_change,
    ),
    Row(
        "kiam:applications.<name>.servedBy",
        (Kind.SAFE, Kind.REFUSED),
        "One step along its path, forward or back, is one `pulumi up` (docs/leaving-kiam.md); a "
        "skipped step is refused with the steps to take. The last step off kiam reads the "
        "cluster's pods at preview and is refused while one gets its credentials from kiam alone, "
        "naming it and its rollout (program/live_cluster.py), or while the cluster cannot be read.",
        applications_change,
    ),
    Row(
        "kiam:applications.<name>.managedPolicyArns",
        (Kind.SAFE,),
        "The role's policies change in place.",
    ),
    Row(
        "kiam:applications.<name>.inlinePolicies",
        (Kind.SAFE,),
        "The role's policies change in place.",
    ),
    Row(
        "kiam:applications",
        (Kind.SAFE, Kind.REFUSED),
        "Adding an application is safe; removing one revokes its role (check "
        "`python -m tools.kiam_usage` first). Another role name, path, role ARN, namespace or "
        "(while Pod Identity or IRSA serves it) service account is refused: the old role or "
        "binding would go before the pods moved; add the new one as another application "
        "instead. The stack's own role named by `roleArn`, or an existing one by `roleName`, is "
        "refused too: the first would delete the role, the second create it again.",
        applications_change,
    ),
    Row(
        "kiam:applicationsFile",
        (Kind.SAFE,),
        "Only where the applications are listed: they are joined to kiam:applications before "
        "anything is judged, and each is judged by the rows above, wherever it is listed.",
    ),
    Row(
        "kiam:existingPermitted",
        (Kind.SAFE, Kind.REFUSED),
        "Adding an entry takes the namespace's annotation over; dropping or changing one the "
        "stack holds is refused until the value is given back (docs/migration.md).",
        existing_permitted_change,
    ),
    Row(
        "kiam:podIdentityAgent.*",
        (Kind.SAFE,),
        "The add-on is installed or updated in place; one the stack drops is kept on the nodes.",
    ),
    Row(
        "kiam:retire",
        (Kind.SEQUENCED, Kind.SAFE, Kind.REFUSED),
        "true: the agents roll to remove their rule, then kiam is deleted, agents first "
        "(components/agent_retirement.py); refused in the same update as an application's last "
        "step off kiam (that step first, on its own), and while a live pod gets its credentials "
        "from kiam alone (read at preview: program/live_cluster.py). false after a retirement that stopped half "
        "way: the agents roll back to the stack's own command line. false once retired: a new "
        "install.",
        retire_change,
    ),
)


def row_of(key: str) -> Row:
    """The most specific row covering a setting's key path (`kiam:applications.<name>.x` form)."""
    found = [r for r in TABLE if r.covers(key)]
    if not found:
        raise LookupError(f"no transition row covers {key}")
    return max(found, key=lambda r: len(r.setting.removesuffix(".*")))
