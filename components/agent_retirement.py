"""Retiring kiam's agents so that every node loses the metadata DNAT rule (`kiam:retire`).

The program runs agents with `--no-iptables-remove` (pods fail closed while an agent restarts,
kiam #253), so an agent that is simply deleted leaves its rule behind, and after retirement every
pod of that node would have its metadata requests sent to a port nothing listens on. A pod's
arguments cannot change, so the agents must first be *rolled* to `--iptables-remove` and only then
deleted, both inside the one `pulumi up` that retires kiam:

1. This component registers a server-side-apply patch of the agent DaemonSet that sets the
   agent container's arguments to the same command line with `--iptables-remove`, and keeps the
   DaemonSet's rolling update (`kiam:agent.rollout`). pulumi-kubernetes awaits a `DaemonSetPatch`
   like the DaemonSet itself: `await.Creation` picks the awaiter by the applied object's
   apiVersion and kind (`apps/v1/DaemonSet`), and the DaemonSet awaiter returns only once kstatus
   says `Current`, i.e. every scheduled agent is updated, ready and available
   (pulumi-kubernetes v4.25.0, f47bc2d6, provider/pkg/await/await.go `Creation`,
   provider/pkg/await/awaiters.go `awaiters`, provider/pkg/await/daemonset.go `rolloutComplete`).
2. `Kiam` registers nothing else of the install in retire mode, so the engine deletes the
   DaemonSet and the rest of kiam after every registered resource is done, this patch's await
   included (pulumi/pulumi pkg/resource/deploy/deployment_executor.go: `performDeletes` runs
   once the program has exited and no step is outstanding), in reverse dependency order
   (`ScheduleDeletes`: a resource goes only after everything that depends on it). The
   DaemonSet depends on the server Deployment (agents are created after the servers), which
   depends on the Service and RBAC; the Deployment's nodeSelector names the node group, which
   depends on kiam's IAM roles. So agents go first, and pulumi-kubernetes deletes with
   foreground propagation by default (provider/pkg/metadata/overrides.go
   `DeletionPropagation`), so the DaemonSet is gone only once its pods are: each stops
   gracefully and, started with `--iptables-remove`, removes its rule.

The patch is kept on delete (`retainOnDelete`), for three reasons:
- once the DaemonSet is gone, giving up the patch's fields would apply an empty DaemonSet of
  that name, which the API server refuses (`ssa.Relinquish`, provider/pkg/ssa/actions.go): a
  `pulumi destroy` of a retired stack would fail;
- the patch took the arguments with force; giving them up while the DaemonSet still exists
  (kiam:retire set back to false after a retirement that stopped half way) would leave the
  template with no arguments at all, and every agent would be rolled into a crash loop;
- nothing of it outlives the DaemonSet in the cluster: the object it patched is deleted.

Retiring, or retired? The settings cannot say (`kiam:retire` stays true), so the program reads
what the stack's last update left before it registers anything (components/last_update.py,
transitions/): the patch is registered only while those facts show kiam installed
(`Transition.roll_agents_before_retiring`). The engine hands the program the checkpoint the
previous update left, in a preview as in an update, so:

- the `pulumi up` (and its preview) that retires kiam reads an install: the patch rolls the agents;
- a stack whose first `pulumi up` already has `kiam:retire` has no outputs: nothing to roll;
- every later `pulumi up` reads a retired stack: no patch. The first of them forgets the kept
  patch from the state (a retained delete: the cluster is not touched), the next is a no-op;
- after `pulumi refresh` (which forgets the patch once its DaemonSet is gone: the provider's
  `Read` finds a 404, pulumi-kubernetes provider/pkg/provider/provider.go) nothing applies it
  again: the outputs, which `refresh` leaves, still show the stack retired.

`done` resolves only once the patch is applied (the URN of a registration arrives when its step
completes, an error rejects it), and `program/stack.py` makes the stack outputs wait for it: if
the roll fails, the stack keeps its previous outputs, `installed` included, and the next
`pulumi up` rolls again instead of deleting agents that still keep their rule. If the next
`pulumi up` sets `kiam:retire` back to false instead, the patch is still in the state with some
agents rolled to `--iptables-remove`: the agent DaemonSet is then applied with force
(`Transition.restore_agents`, components/agent.py), which takes the arguments back from the
patch and rolls every agent to the stack's own command line, and the patch, no longer
registered, is forgotten (kept on delete).
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi

from kiam_eks.components import kubernetes_objects as kube
from kiam_eks.components.agent import rollout_wait, update_strategy
from kiam_eks.contracts import kiam, names, tokens
from kiam_eks.contracts.labels import PATCH_FORCE_ANNOTATION
from kiam_eks.settings.agent import AgentSettings
from kiam_eks.specs import kiam_flags


@dataclass(frozen=True, kw_only=True)
class AgentRetirementArgs:
    """Inputs of `AgentRetirement`."""

    settings: AgentSettings
    """Agent settings: the command line the running agents were given."""
    namespace: str
    """Namespace of the agent DaemonSet."""
    daemon_set_name: str
    """The agent DaemonSet's name (the running install's, after an adoption)."""
    server_address: str
    """What the running agents dial; part of their command line."""
    roll: bool
    """The last update left kiam installed, so there are agents to roll."""


class AgentRetirement(pulumi.ComponentResource):
    """The patch that rolls every agent to `--iptables-remove` before the agents are deleted,
    registered only while the stack's last update left kiam installed (see the module)."""

    done: pulumi.Output[str]
    """The patch's URN once the agents are rolled; "" when there was nothing to roll."""

    def __init__(
        self, name: str, args: AgentRetirementArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(tokens.AGENT_RETIREMENT, name, None, opts)
        # A new stack, or one already retired, has no agent left to roll.
        self.done = (
            _retirement_patch(name, args, self).urn if args.roll else pulumi.Output.from_input("")
        )
        self.register_outputs({"done": self.done})


def _retirement_patch(
    name: str, args: AgentRetirementArgs, parent: pulumi.Resource
) -> kube.DaemonSetPatch:
    """The agent DaemonSet's arguments and update strategy, applied with force."""
    return kube.DaemonSetPatch(
        name,
        metadata={
            "name": args.daemon_set_name,
            "namespace": args.namespace,
            # The agent DaemonSet's own field manager set these arguments; without force the
            # API server refuses to let another manager change them (a conflict).
            "annotations": {PATCH_FORCE_ANNOTATION: "true"},
        },
        spec={
            "updateStrategy": update_strategy(args.settings.rollout),
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": names.AGENT_CONTAINER,
                            "args": retiring_agent_flags(
                                args.settings, server_address=args.server_address
                            ),
                        }
                    ]
                }
            },
        },
        # Why kept: see the module docstring (a destroy would fail, a rollback would crash).
        # Awaited like the DaemonSet's own rollout, so it waits as long (components/agent.py).
        opts=pulumi.ResourceOptions(
            parent=parent,
            retain_on_delete=True,
            custom_timeouts=rollout_wait(args.settings.rollout),
        ),
    )


def retiring_agent_flags(settings: AgentSettings, *, server_address: str) -> list[str]:
    """The running agents' command line, removing the rule on exit: `--iptables-remove` spelled
    out (not left to kiam's default) right after `--iptables`, nothing else changed."""
    flags = kiam_flags.agent_flags(
        settings.model_copy(update={"remove_iptables_rule_on_exit": True}),
        server_address=server_address,
    )
    after = flags.index("--iptables") + 1
    return [*flags[:after], kiam.AGENT_REMOVE_RULE_FLAG, *flags[after:]]
