"""What the stack asked for, as the guarantees judge it: derived from the validated settings and
the contracts, never from what the judged resources say about themselves (no tag or annotation
the program writes for the checker's sake)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kiam_eks.contracts.iam import (
    EKS_NODE_MANAGED_POLICIES,
    managed_policy_arn,
    role_arn,
    role_arn_parts,
)
from kiam_eks.settings.applications import ServedBy
from kiam_eks.settings.loader import load_settings
from kiam_eks.settings.stack import StackSettings
from kiam_eks.transitions.installed import Installed


@dataclass(frozen=True)
class ExpectedApplication:
    """One application of `kiam:applications`, as the stack asked for it."""

    name: str
    """Its key under `kiam:applications` (and in the stack output `applications`)."""
    namespace: str
    service_account: str | None
    """The service account Pod Identity or IRSA serves the role to (`serviceAccount`); None
    while kiam alone serves it."""
    served_by: ServedBy
    """`servedBy`: where its pods get credentials, which decides what may obtain its role."""
    role_name: str
    path: str
    """The role's IAM path: the application's own, or `kiam:iam.applicationRolePath`."""
    arn: str
    """The ARN IAM gives a role of that path and name in the stack's account, or `roleArn`."""
    managed_policy_arns: frozenset[str]
    inline_policies: Mapping[str, Any]
    """Inline policy documents by name, as the settings give them."""
    owned: bool = True
    """The stack creates the role (`roleName`); False for one that exists (`roleArn`), whose
    trust and policies are its owner's and so judged by nobody here."""
    chained: bool = False
    """An existing role of another account: Pod Identity reaches it through a role of the
    cluster's account that the stack creates (the association's `targetRoleArn`)."""

    @property
    def kiam(self) -> bool:
        """kiam serves it: the kiam-server role is trusted and its namespace admits the role."""
        return self.served_by.kiam

    @property
    def pod_identity(self) -> bool:
        """An EKS Pod Identity association serves it to its service account."""
        return self.served_by.pod_identity

    @property
    def irsa(self) -> bool:
        """IRSA serves it: the cluster's OIDC provider is trusted for its service account."""
        return self.served_by.irsa


@dataclass(frozen=True)
class Expected:
    """The expectations of one stack."""

    own_agents: bool
    """Whether this stack deploys agents: not while a running install's agents are still the ones
    in service (migration phase `servers`)."""
    allow_any_role: bool
    """`kiam:iam.allowAnyRole`: the server role may assume `role/*`."""
    node_managed_policy_arns: frozenset[str]
    """Exactly the managed policies the server nodes' role needs: EKS's worker node policies."""
    applications: tuple[ExpectedApplication, ...]
    server_taint: Mapping[str, str]
    """The taint that dedicates the server nodes (`kiam:nodeGroup.taint`), in Kubernetes
    spelling: what servers must tolerate and agents must not."""
    node_group_taints: tuple[Mapping[str, str], ...]
    """The same taint as an EKS managed node group spells it: exactly the group's `taints`."""
    retire: bool
    """`kiam:retire`: the stack holds none of kiam's objects, only what serves the applications."""
    cluster_name: str
    """`kiam:cluster.name`: what a Pod Identity association names, and its session tag."""
    account_id: str
    """`kiam:cluster.accountId`: the `aws:SourceAccount` a Pod Identity trust is narrowed to."""
    previous: Installed | None = None
    """What the stack's last update installed, where the gate knows it (the mock engine's runs
    of a change, the offline plan of one, the real-engine suite): the transition guarantees
    judge the change from it (invariants/transitions.py). None: a first update, or a gate that
    cannot know (a policy pack is not handed the stack's outputs), where they judge nothing."""
    settings: StackSettings | None = None
    """The settings themselves, for the transition guarantees."""

    @classmethod
    def of(cls, settings: StackSettings, previous: Installed | None = None) -> Expected:
        cluster, iam = settings.cluster, settings.iam
        taint = settings.node_group.taint
        partition, account = cluster.partition, cluster.account_id
        applications = []
        for name, app in sorted(settings.applications.items()):
            if app.role_arn is not None:
                # IAM's ARN grammar (contracts/iam.py): the path and name are part of it.
                parts = role_arn_parts(app.role_arn)
                role_name, path, arn = parts.name, parts.path, app.role_arn
            else:
                # The settings' rule (docs/configuration.md): an application's own path, or the
                # configured application path.
                assert app.role_name is not None
                path = app.path or iam.application_role_path
                role_name, arn = app.role_name, role_arn(partition, account, path, app.role_name)
            applications.append(
                ExpectedApplication(
                    name=name,
                    namespace=app.namespace,
                    service_account=app.service_account if app.served_by.successor else None,
                    served_by=app.served_by,
                    role_name=role_name,
                    path=path,
                    arn=arn,
                    managed_policy_arns=frozenset(app.managed_policy_arns),
                    inline_policies=dict(app.inline_policies),
                    owned=app.role_arn is None,
                    chained=app.role_arn is not None
                    and role_arn_parts(app.role_arn).account_id != account,
                )
            )
        return cls(
            own_agents=settings.adoption_state.stack_owns_agents,
            allow_any_role=iam.allow_any_role,
            node_managed_policy_arns=frozenset(
                managed_policy_arn(partition, policy) for policy in EKS_NODE_MANAGED_POLICIES
            ),
            applications=tuple(applications),
            server_taint={
                "key": taint.key,
                "value": taint.value,
                "effect": taint.kubernetes_effect,
            },
            node_group_taints=({"key": taint.key, "value": taint.value, "effect": taint.effect},),
            retire=settings.retire,
            cluster_name=cluster.name,
            account_id=account,
            previous=previous,
            settings=settings,
        )

    @classmethod
    def of_running_stack(cls) -> Expected:
        """The expectations of the stack whose program the Pulumi runtime runs, from its config
        as the program itself reads it (`settings.load_settings`): in the policy pack, the
        stack's config that the engine hands the pack's process (`PULUMI_CONFIG`, which
        pulumi-policy loads before each analysis); after a mock-engine run, that run's config.
        Raises `SettingsError` where there is none, or it is invalid."""
        return cls.of(load_settings())


class MissingExpectationsError(LookupError):
    """A check that judges against the settings was run without them."""
