"""`kiam:agent.rollout`: how many agents restart at once when the DaemonSet's template changes,
and, from that and the cluster's size, how long the rollout takes and how long `pulumi up` waits
for it.

Why it is a setting. pulumi-kubernetes awaits a DaemonSet update until every node runs an
updated, available pod, for 10 minutes unless the resource's `customTimeouts` say otherwise
(pulumi/pulumi-kubernetes v4.25.0, provider/pkg/await/daemonset.go `_defaultDaemonSetTimeout`;
the order customTimeouts, then `pulumi.com/timeoutSeconds`, then the default is
provider/pkg/metadata/overrides.go `TimeoutDuration`). A DaemonSet cannot surge a host-network pod
(every container port is then a host port, kubernetes pkg/apis/core/v1/defaults.go; #106417), so
the controller deletes an old agent, waits for its replacement to turn available, and deletes the
next while fewer than `maxUnavailable` are unavailable (pkg/controller/daemon/update.go). One node
at a time, a rollout of N nodes takes N restarts: past a few dozen nodes the 10 minutes run out and
`pulumi up` fails with the rollout half done (issue 39, measured: 61 of 73 agents in 600 s).

Why 10% by default. What a node's pods see while its agent restarts does not depend on how many
agents restart at once: the agents keep their DNAT rule on exit (`removeIptablesRuleOnExit: false`,
kiam #253), so a pod there is refused a connection to the agent port until the new agent listens,
and AWS SDKs retry and keep their cached credentials, valid for the session, meanwhile (kiam #202,
#418: "You can use a rolling update"). The number only sets how many nodes are in that moment at
once, and how long the whole rollout takes. EKS's own per-node agent, the VPC CNI's aws-node
DaemonSet, rolls 10% at a time (amazon-vpc-cni-k8s config/master/aws-k8s-cni.yaml,
`maxUnavailable: "10%"`). A percentage also bounds the rollout whatever the cluster's size: with
p%, ceil(N * p / 100) agents restart at once (Kubernetes rounds a percentage up, DaemonSet API
reference, `rollingUpdate.maxUnavailable`), so N nodes take at most ceil(100 / p) waves. On a
cluster of at most ten nodes, 10% is one node at a time, as before.
"""

from __future__ import annotations

import math
import re
from typing import Annotated

from pydantic import AfterValidator, Field, StrictInt, StrictStr, model_validator

from kiam_eks.settings.base import Model

# The provider's own DaemonSet wait (see the module): our wait is never shorter.
PROVIDER_DEFAULT_WAIT_MINUTES = 10
# How much longer than the estimate `pulumi up` waits: restarts vary (image pulls, a slow node);
# a wait cut at the estimate would fail half the rollouts that run a little slow.
WAIT_MARGIN = 2
# One stack's `pulumi up` in the deploy workflow runs in a job of 240 minutes
# (.github/workflows/deploy.yml, `timeout-minutes`), which may also wait up to 60 minutes for the
# node group (components/node_group.py, its update timeout) and up to 60 for the servers
# (`kiam:server.rolloutTimeoutMinutes` at most): the agents get the rest. A wait past it would be
# cut by the runner, not by Pulumi, with the rollout half done.
MAX_WAIT_MINUTES = 120
# Kubernetes supports clusters of up to 5,000 nodes (kubernetes.io/docs/setup/best-practices/
# cluster-large/, "Considerations for large clusters").
MAX_NODES = 5000

_PERCENT = re.compile(r"([1-9]\d{0,2})%")


def _check_max_unavailable(value: int | str) -> int | str:
    # A rollout with 0 unavailable never deletes an old agent (and cannot surge one): it would
    # never finish; Kubernetes also refuses 0 with no surge (apps validation, "may not be 0 when
    # `maxSurge` is 0").
    if isinstance(value, int):
        if value < 1:
            raise ValueError(
                f"{value} agents at a time would never finish a rollout: use at least 1, or a "
                "percentage such as 10%"
            )
        return value
    match = _PERCENT.fullmatch(value)
    if match is None or int(match.group(1)) > 100:
        raise ValueError(f"{value!r} is not a count or a percentage from 1% to 100% (such as 10%)")
    return value


# Strict: YAML's `true` or a quoted "5" is a mistake, not 1 or 5.
MaxUnavailable = Annotated[StrictInt | StrictStr, AfterValidator(_check_max_unavailable)]


class AgentRolloutSettings(Model):
    """`kiam:agent.rollout`: how many agents restart at once, and the cluster size it is sized
    for."""

    max_unavailable: MaxUnavailable = Field(
        default="10%",
        description="How many agents restart at once when their template changes: a count, or a "
        "percentage of the agents (rounded up). Each node's pods are refused by the metadata "
        "address only while its own agent restarts; this sets how many nodes are in that moment "
        "together, and how long the rollout takes.",
    )
    nodes: int = Field(
        default=100,
        ge=1,
        le=MAX_NODES,
        description="The most nodes the agents run on (the workload node groups' and "
        "autoscalers' maximum): the plan's rollout estimate, and, with a count, how long "
        "`pulumi up` waits for a rollout.",
    )
    restart_seconds: int = Field(
        default=30,
        ge=5,
        le=600,
        description="How long one agent takes to stop, start and turn Ready on this cluster "
        "(10 to 25 s on EKS).",
    )

    @model_validator(mode="after")
    def _check(self) -> AgentRolloutSettings:
        if self.wait_minutes > MAX_WAIT_MINUTES:
            raise ValueError(
                f"{self.nodes} nodes, {self.max_unavailable} at a time, take "
                f"{self.waves} restarts of {self.restart_seconds}s one after another (about "
                f"{math.ceil(self.estimate_seconds / 60)} min), and `pulumi up` would wait up to "
                f"{self.wait_minutes} min, past the {MAX_WAIT_MINUTES} min a deploy leaves the "
                f"agents: restart more at once (maxUnavailable: {self._enough()})"
            )
        return self

    def at_once(self, nodes: int) -> int:
        """How many agents restart at once among `nodes` (a percentage rounded up, as
        Kubernetes does; never more than there are)."""
        if isinstance(self.max_unavailable, int):
            return min(self.max_unavailable, nodes)
        percent = int(self.max_unavailable.removesuffix("%"))
        return max(1, math.ceil(nodes * percent / 100))

    @property
    def waves(self) -> int:
        """Restarts one after another on a cluster of `nodes`."""
        return math.ceil(self.nodes / self.at_once(self.nodes))

    @property
    def most_waves(self) -> int:
        """Restarts one after another on any cluster up to `nodes`, or, with a percentage, of
        any size: ceil(N / ceil(N p / 100)) is at most ceil(100 / p)."""
        if isinstance(self.max_unavailable, int):
            return self.waves
        return math.ceil(100 / int(self.max_unavailable.removesuffix("%")))

    @property
    def estimate_seconds(self) -> int:
        """How long a rollout takes on a cluster of `nodes`."""
        return self.waves * self.restart_seconds

    @property
    def wait_minutes(self) -> int:
        """How long `pulumi up` waits for a rollout (the DaemonSet's custom timeouts): twice the
        longest one, never below the provider's own 10 minutes."""
        longest = self.most_waves * self.restart_seconds * WAIT_MARGIN
        return max(PROVIDER_DEFAULT_WAIT_MINUTES, math.ceil(longest / 60))

    def describe(self) -> str:
        """One line for the plan and the preview: how long a rollout takes, and the wait."""
        return (
            f"{self.at_once(self.nodes)} of {self.nodes} nodes at a time "
            f"(maxUnavailable {self.max_unavailable}): {self.waves} restarts of about "
            f"{self.restart_seconds}s, about {_minutes(self.estimate_seconds)}; `pulumi up` waits "
            f"up to {self.wait_minutes} min"
        )

    def _enough(self) -> str:
        fitting = MAX_WAIT_MINUTES * 60 // (self.restart_seconds * WAIT_MARGIN)
        return f"at least {math.ceil(self.nodes / max(1, fitting))}, or a percentage"


def _minutes(seconds: int) -> str:
    return f"{seconds} s" if seconds < 120 else f"{math.ceil(seconds / 60)} min"
