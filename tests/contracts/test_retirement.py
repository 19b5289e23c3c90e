"""Contract tests for the facts retiring kiam rests on (`components/agent_retirement.py`): kiam
v4.2's flag that makes an agent remove its iptables rule when it stops, and the type token of the
pulumi-kubernetes resource that flips it on the running agents."""

from __future__ import annotations

from kiam_eks.contracts import kiam, tokens


def test_the_agent_flag_that_removes_the_rule_on_exit() -> None:
    # kiam v4.2 (b795246b), cmd/kiam/agent.go: parser.Flag("iptables-remove", "Remove iptables
    # rules at shutdown").Default("true").BoolVar(&cmd.iptablesRemove); run() defers
    # rules.Remove() only `if opts.iptablesRemove`. cmd/kiam/iptables.go: Add() is
    # ipt.AppendUnique("nat", "PREROUTING", ...), Remove() is ipt.Delete of the same rule.
    assert kiam.AGENT_REMOVE_RULE_FLAG == "--iptables-remove"


def test_the_daemon_set_patch_type_token() -> None:
    # pulumi-kubernetes schema (and its Python SDK's @pulumi.type_token on
    # pulumi_kubernetes/apps/v1/DaemonSetPatch.py): `kubernetes:apps/v1:DaemonSetPatch`.
    assert tokens.DAEMON_SET_PATCH == "kubernetes:apps/v1:DaemonSetPatch"


def test_the_stack_reference_type_token() -> None:
    # pulumi Python SDK 3.272.0, pulumi/stack_reference.py: StackReference.__init__ registers
    # "pulumi:pulumi:StackReference" with id=<the stack's name> (a read, not a registration).
    assert tokens.STACK_REFERENCE == "pulumi:pulumi:StackReference"
