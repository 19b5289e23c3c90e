"""The whole `kiam:` namespace of one stack file, and the rules that span its sections."""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from typing import Any, Self

from pydantic import Field, PrivateAttr, SecretStr, model_validator

from kiam_eks.contracts import kiam
from kiam_eks.contracts.iam import delegates_across, role_arn_parts
from kiam_eks.settings import server_permission
from kiam_eks.settings.adoption import Adoption, AdoptionSettings
from kiam_eks.settings.agent import AgentSettings
from kiam_eks.settings.applications import ApplicationSettings
from kiam_eks.settings.base import DnsLabel, Model
from kiam_eks.settings.cluster import ClusterSettings
from kiam_eks.settings.iam import IamSettings
from kiam_eks.settings.kubernetes_side import (
    NamespaceSettings,
    agents_tolerate_server_taint,
    creates_an_initial_namespace,
    refuse_first,
    server_name_too_long,
    too_few_nodes,
)
from kiam_eks.settings.monitoring import MonitoringSettings
from kiam_eks.settings.node_group import NodeGroupSettings
from kiam_eks.settings.pod_identity import PodIdentityAgentSettings
from kiam_eks.settings.server import ServerSettings
from kiam_eks.settings.tls import TlsSettings


class StackSettings(Model):
    """Every setting of one stack: the keys under `kiam:` in `stacks/Pulumi.<stack>.yaml`."""

    cluster: ClusterSettings = Field(description="The EKS cluster, account and region.")
    node_group: NodeGroupSettings = Field(description="The dedicated server node group.")
    server: ServerSettings = Field(
        default=ServerSettings(), description="The kiam-server Deployment."
    )
    agent: AgentSettings = Field(default=AgentSettings(), description="The kiam-agent DaemonSet.")
    iam: IamSettings = Field(default=IamSettings(), description="What the server may assume.")
    tls: TlsSettings = Field(default=TlsSettings(), description="Certificate lifetimes.")
    namespace: NamespaceSettings = Field(default=NamespaceSettings(), description="The namespace.")
    monitoring: MonitoringSettings = Field(
        default=MonitoringSettings(),
        description="Prometheus scraping and alerts (docs/alerts.md); off by default.",
    )
    adoption: AdoptionSettings | None = Field(
        default=None,
        description="A running kiam install this stack is taking over (docs/migration.md).",
    )
    applications: dict[DnsLabel, ApplicationSettings] = Field(
        default={},
        description="Application roles by application name: each served to one namespace by kiam, "
        "by EKS Pod Identity or IRSA for one service account, or by both while it moves "
        "(`servedBy`).",
    )
    applications_file: str | None = Field(
        default=None,
        description="A YAML file holding more applications, as `applications:` mapping each "
        "name to the same settings as `kiam:applications` (a name may be in only one of the "
        "two). Relative to the project directory, the one holding `Pulumi.yaml`. For stacks "
        "past what Pulumi can hand a program in its configuration: about 700 applications "
        "(contracts/pulumi_config.py).",
    )
    existing_permitted: dict[DnsLabel, str] = Field(
        default={},
        description="Namespaces whose `iam.amazonaws.com/permitted` annotation someone else set "
        "before this stack (a running kiam install, `kubectl annotate`): the exact value found "
        "there, by namespace. The stack takes the annotation over only while it still holds that "
        "value, admits that value's roles and the stack's roles meanwhile, and gives the value "
        "back once none of the stack's applications uses the namespace (docs/migration.md). A "
        "namespace not listed here whose annotation someone else set stops `pulumi up` with a "
        "field conflict instead of being overwritten.",
    )
    pod_identity_agent: PodIdentityAgentSettings = Field(
        default=PodIdentityAgentSettings(),
        description="The EKS Pod Identity agent add-on, for applications served by Pod Identity.",
    )
    retire: bool = Field(
        default=False,
        description="Remove kiam from the cluster in one `pulumi up`: the agents (rolled first so "
        "that each removes its iptables rule on exit), the servers, their Service, RBAC, "
        "certificates, the dedicated node group and kiam's IAM roles. Every application role, "
        "its policies and its Pod Identity association stay. Refused while kiam still serves an "
        "application, and while `kiam:adoption.phase` is anything but complete (docs/leaving-kiam.md). "
        "It stays true once kiam is gone: the stack's own last outputs tell the `pulumi up` that "
        "retires kiam from the later ones, which have nothing left to roll.",
    )
    kubeconfig: SecretStr | None = Field(
        default=None,
        description="A kubeconfig to use instead of looking the cluster up (set it as a secret: "
        "`pulumi config set --secret kiam:kubeconfig < file`), or the path of one. Its current "
        "context must be the EKS cluster `cluster.name` names: every preview and update first "
        "compares its certificate authority with the one EKS answers for that cluster (or, "
        "without one, its server with the cluster's endpoint) and stops before changing "
        "anything if they differ.",
    )
    _adoption_state: Adoption = PrivateAttr()
    # The server permission's layout for each previous layout it was laid out from: the
    # settings' own check, the judge and the record each ask, and each asking counts the
    # characters of every document (the settings are frozen, so it never changes).
    _layouts: dict[tuple[tuple[str, ...], ...] | None, list[list[str]]] = PrivateAttr(
        default_factory=dict
    )

    @property
    def adoption_state(self) -> Adoption:
        """Where the stack stands towards a running install (`kiam:adoption`), derived once: who
        owns the agents and the Service, what is forced and kept, the running install's names,
        selectors and CA. Every part of the program reads it instead of the phase."""
        return self._adoption_state

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy, which lays its server permission out anew: `update` may change what it is."""
        copied = super().model_copy(update=update, deep=deep)
        copied._layouts = {}
        return copied

    @model_validator(mode="after")
    def _check(self) -> StackSettings:
        self._adoption_state = Adoption.of(self.adoption)
        # The rules across the sections the Kubernetes side reads, which `KiamKubernetes`
        # holds too (settings/kubernetes_side.py).
        refuse_first(
            too_few_nodes(self.node_group.min_size, self.server.replicas),
            agents_tolerate_server_taint(self.agent, self.node_group.taint),
        )
        self._check_zones()
        refuse_first(
            server_name_too_long(self.server, self.namespace.name, self.cluster.cluster_domain)
        )
        self._check_applications()
        self._check_existing_permitted()
        # IAM's quotas, at plan time: PutRolePolicy would refuse it half way through `up`.
        self.server_permission_layout()
        if self.adoption is not None and self.namespace.create:
            raise ValueError(
                "kiam:namespace.create must be false with kiam:adoption: the running install's "
                "namespace exists already (set kiam:namespace.name to it)"
            )
        if self.retire and self.adoption is not None and self.adoption.phase != "complete":
            # Until then the running install's objects are kept on delete (and, in phase
            # servers, its agents are not this stack's), so retiring would leave them running.
            raise ValueError(
                f"kiam:retire must wait for kiam:adoption.phase complete (it is "
                f"{self.adoption.phase}): while a running install is being taken over, the stack "
                "keeps its objects on delete, so retiring would leave them (and their agents' "
                "iptables rules) in the cluster. Finish the move first (docs/migration.md)"
            )
        if self.monitoring.enabled and not self.adoption_state.stack_owns_agents:
            raise ValueError(
                "kiam:monitoring.enabled must wait for kiam:adoption.phase takeover: in phase "
                "servers the running install's agents and Service are in charge, which this "
                "stack's ServiceMonitors and alerts would not see"
            )
        refuse_first(creates_an_initial_namespace(self.namespace))
        return self

    def _check_zones(self) -> None:
        region = self.cluster.region
        for index, subnet in enumerate(self.node_group.subnets):
            # A zone is its region and one letter; another region's zone is a typo that would
            # make the zone-spread check believe a spread that is not there.
            if subnet.zone is not None and not re.fullmatch(rf"{region}[a-z]", subnet.zone):
                raise ValueError(
                    f"kiam:nodeGroup.subnets[{index}].zone {subnet.zone!r} is not a zone of "
                    f"kiam:cluster.region {region!r} (such as {region}a)"
                )

    def _check_existing_permitted(self) -> None:
        cluster, iam = self.cluster, self.iam
        for namespace, value in sorted(self.existing_permitted.items()):
            key = f"kiam:existingPermitted.{namespace}"
            # kiam's own matching rules (v4.2), which the guarantees judge namespaces by too.
            problem = kiam.permitted_regexp_problem(value)
            if problem is not None:
                raise ValueError(
                    f"{key} {value!r} cannot be matched the way kiam matches it: {problem}"
                )
            for app, settings in sorted(self.applications.items()):
                if settings.namespace == namespace:
                    continue
                arn = settings.arn(cluster.partition, cluster.account_id, iam)
                # The stack keeps admitting what the value admits while it holds the annotation:
                # it would let this namespace's pods assume another namespace's role.
                if kiam.permits(value, arn):
                    raise ValueError(
                        f"{key} {value!r} admits {arn}, the role of application {app} in "
                        f"namespace {settings.namespace}: pods of {namespace} could assume it. "
                        f"Narrow the annotation first (kubectl annotate --overwrite namespace "
                        f"{namespace} iam.amazonaws.com/permitted=...) and give the narrowed value"
                    )

    def _check_existing_roles(self) -> None:
        """Roles named by ARN (`roleArn`): in the cluster's partition, never one of kiam's own
        roles, never one the stack also creates."""
        cluster, iam = self.cluster, self.iam
        created = {
            a.role_name.lower(): app
            for app, a in self.applications.items()
            if a.role_name is not None
        }
        served: dict[tuple[str, str], str] = {}
        for app, settings in sorted(self.applications.items()):
            if settings.role_arn is None:
                continue
            key = f"kiam:applications.{app}.roleArn"
            pair = (settings.role_arn, settings.namespace)
            if pair in served:
                raise ValueError(
                    f"kiam:applications.{served[pair]} and kiam:applications.{app} both serve "
                    f"{settings.role_arn} to namespace {settings.namespace}: give one application "
                    "per role and namespace"
                )
            served[pair] = app
            parts = role_arn_parts(settings.role_arn)
            if not delegates_across(cluster.partition, parts.partition):
                raise ValueError(
                    f"{key} {settings.role_arn!r} is a role of partition {parts.partition!r}; the "
                    f"cluster's region {cluster.region} (kiam:cluster.region) is in partition "
                    f"{cluster.partition!r}, and no role can be assumed across partitions"
                )
            if parts.account_id != cluster.account_id:
                continue
            if parts.path.startswith(iam.kiam_role_path):
                raise ValueError(
                    f"{key} {settings.role_arn!r} is under kiam:iam.kiamRolePath "
                    f"{iam.kiam_role_path!r}, where kiam's own roles live: the server may never "
                    "be allowed to assume them"
                )
            if parts.name.lower() in created:
                raise ValueError(
                    f"{key} {settings.role_arn!r} names the role kiam:applications."
                    f"{created[parts.name.lower()]}.roleName creates (IAM role names ignore "
                    "case): a role the stack creates is named by roleName only"
                )

    def server_permission_layout(
        self, previous: Sequence[Sequence[str]] | None = None
    ) -> list[list[str]]:
        """What the kiam-server role may assume (ARN patterns, then exact ARNs) laid over its
        inline policy and managed policies, keeping `previous`'s layout where it can; raises
        `PermissionTooLargeError` past IAM's quotas (settings/server_permission.py)."""
        key = None if previous is None else tuple(map(tuple, previous))
        layout = self._layouts.get(key)
        if layout is None:
            paths, existing = server_permission.assumable(self.iam, self.applications.values())
            resources = server_permission.application_role_patterns(
                self.cluster.partition, self.cluster.account_id, self.iam, paths, existing
            )
            layout = server_permission.place(
                resources, self.iam.managed_policies_per_role, previous
            )
            self._layouts[key] = layout
        return [list(policy) for policy in layout]

    def _check_applications(self) -> None:
        iam = self.iam
        self._check_existing_roles()
        names = [a.role_name for a in self.applications.values() if a.role_name is not None]
        duplicates = sorted(n for n, count in Counter(names).items() if count > 1)
        if duplicates:
            raise ValueError(
                f"kiam:applications use the role name {', '.join(duplicates)} more than once"
            )
        # IAM role names are unique per account regardless of case (CreateRole: "Names are not
        # distinguished by case").
        by_lower: dict[str, list[str]] = defaultdict(list)
        for name in names:
            by_lower[name.lower()].append(name)
        for name in names:
            same = sorted(by_lower[name.lower()])
            if len(same) > 1:
                raise ValueError(
                    f"kiam:applications use the role names {' and '.join(same)}, which IAM takes "
                    "for one: role names ignore case"
                )
        served: dict[tuple[str, str], str] = {}
        for app, settings in sorted(self.applications.items()):
            if settings.service_account is None or not settings.served_by.successor:
                continue
            key = (settings.namespace, settings.service_account)
            if key in served:
                # One association per service account per cluster (CreatePodIdentityAssociation),
                # and one `eks.amazonaws.com/role-arn` annotation per service account.
                raise ValueError(
                    f"kiam:applications.{served[key]} and kiam:applications.{app} both serve a role "
                    f"to service account {key[1]} in namespace {key[0]}: a service account gets "
                    "one role"
                )
            served[key] = app
        if self.retire:
            still = sorted(a for a, s in self.applications.items() if s.served_by.kiam)
            if still:
                raise ValueError(
                    "kiam:retire would remove kiam while it still serves "
                    + ", ".join(
                        f"kiam:applications.{a} (servedBy {self.applications[a].served_by.value})"
                        for a in still
                    )
                    + ": move each to podIdentity or irsa first, one step at a time "
                    "(docs/leaving-kiam.md)"
                )
        partition, account = self.cluster.partition, self.cluster.account_id
        for app, settings in self.applications.items():
            arns = settings.managed_policy_arns
            if len(arns) > iam.managed_policies_per_role:
                raise ValueError(
                    f"kiam:applications.{app}.managedPolicyArns lists {len(arns)} policies: IAM "
                    f"attaches at most kiam:iam.managedPoliciesPerRole ({iam.managed_policies_per_role}) "
                    "to a role (raise the quota, then that setting, up to 20)"
                )
            for index, arn in enumerate(arns):
                arn_partition, arn_account = arn.split(":")[1], arn.split(":")[4]
                if arn_partition != partition or arn_account not in ("aws", account):
                    raise ValueError(
                        f"kiam:applications.{app}.managedPolicyArns[{index}] {arn!r} is not a "
                        f"policy of partition {partition!r} (kiam:cluster.region) owned by AWS or "
                        f"by account {account} (kiam:cluster.accountId): IAM could not attach it"
                    )
        if iam.allow_any_role:
            return
        for app, settings in self.applications.items():
            if settings.role_name is None:
                continue  # an existing role: the server may assume exactly its ARN
            path = settings.role_path(iam)
            if not path.startswith(iam.application_role_path):
                raise ValueError(
                    f"kiam:applications.{app}.path {path!r} is outside kiam:iam.applicationRolePath "
                    f"{iam.application_role_path!r}: the kiam server could not assume the role"
                )
            # The server gets one pattern per application path (specs/iam_policies.py).
            if iam.pattern_covers_kiam_roles(path):
                raise ValueError(
                    f"kiam:applications.{app}.path {path!r} with kiam:iam.applicationRoleNamePrefix "
                    f"{iam.application_role_name_prefix!r} also matches kiam's own roles under "
                    f"kiam:iam.kiamRolePath {iam.kiam_role_path!r}: the server could assume them"
                )
            if not settings.role_name.startswith(iam.application_role_name_prefix):
                raise ValueError(
                    f"kiam:applications.{app}.roleName {settings.role_name!r} does not start with "
                    f"kiam:iam.applicationRoleNamePrefix {iam.application_role_name_prefix!r}: the "
                    "kiam server could not assume the role"
                )
