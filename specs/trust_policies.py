"""The trust policies of application roles, as pure functions of plain values: what the stack
writes into a role it creates (`ApplicationRole`), and what it asks the owner of a role that
exists already to hold (`ExistingApplicationRole`, and the e2e stand-ins, which have no AWS SDK)."""

from __future__ import annotations

from typing import Any

from kiam_eks.contracts import pod_identity
from kiam_eks.contracts.iam import oidc_provider_arn, role_arn_parts
from kiam_eks.settings.applications import ApplicationSettings, ServedBy
from kiam_eks.specs.iam_policies import PolicyDocument


def application_trust_policy(
    served_by: ServedBy,
    *,
    server_role_arn: str | None,
    oidc_issuer: str | None,
    partition: str,
    account_id: str,
    cluster_name: str,
    namespace: str,
    service_account: str | None,
    oidc_provider_account_id: str | None = None,
    chain_role_arn: str | None = None,
) -> PolicyDocument:
    """The role's trust in one state: one statement per mechanism that serves it, in the order
    kiam, Pod Identity, IRSA. Nothing else is ever trusted.

    For a role in another account (`ExistingApplicationRole`): IRSA's OIDC provider is the one
    in the role's account (`oidc_provider_account_id`; `contracts.iam.oidc_provider_arn`), and
    Pod Identity reaches it through `chain_role_arn`, the role EKS assumes first."""
    statements: list[dict[str, Any]] = []
    if served_by.kiam:
        if not server_role_arn:
            raise ValueError(f"servedBy {served_by.value} trusts the kiam-server role: its ARN")
        statements.append(
            {"Effect": "Allow", "Principal": {"AWS": server_role_arn}, "Action": "sts:AssumeRole"}
        )
    if served_by.pod_identity and chain_role_arn is not None:
        # As pod-id-assign-target-role writes it: the cluster account, pinned to the role EKS
        # assumes first, and (optionally there, always here) to the namespace's session tags.
        tags = {pod_identity.request_tag(pod_identity.NAMESPACE_TAG): namespace}
        if service_account is not None:
            tags[pod_identity.request_tag(pod_identity.SERVICE_ACCOUNT_TAG)] = service_account
        statements.append(
            {
                "Effect": "Allow",
                "Principal": {"AWS": f"arn:{partition}:iam::{account_id}:root"},
                "Action": list(pod_identity.TARGET_TRUST_ACTIONS),
                "Condition": {
                    "ArnEquals": {pod_identity.PRINCIPAL_ARN_KEY: chain_role_arn},
                    "StringEquals": tags,
                },
            }
        )
    elif served_by.pod_identity:
        if service_account is None:
            raise ValueError(f"servedBy {served_by.value} serves one service account: its name")
        statements.append(
            pod_identity_statement(
                account_id=account_id,
                cluster_name=cluster_name,
                namespace=namespace,
                service_account=service_account,
            )
        )
    if served_by.irsa:
        if service_account is None or not oidc_issuer:
            raise ValueError(
                f"servedBy {served_by.value} trusts the cluster's OIDC issuer for one service "
                "account: both"
            )
        provider = oidc_issuer.removeprefix("https://")
        federated = oidc_provider_arn(partition, oidc_provider_account_id or account_id, provider)
        statements.append(
            {
                "Effect": "Allow",
                "Principal": {"Federated": federated},
                "Action": "sts:AssumeRoleWithWebIdentity",
                "Condition": {
                    "StringEquals": {
                        f"{provider}:sub": f"system:serviceaccount:{namespace}:{service_account}",
                        f"{provider}:aud": "sts.amazonaws.com",
                    }
                },
            }
        )
    return {"Version": "2012-10-17", "Statement": statements}


def pod_identity_statement(
    *, account_id: str, cluster_name: str, namespace: str, service_account: str | None
) -> dict[str, Any]:
    """EKS Pod Identity's trust (contracts/pod_identity.py), narrowed to this account and to the
    session tags EKS sets for one cluster, namespace and service account: no other cluster's or
    service account's association can obtain the role, even one naming it. Without a service
    account (a chain role before its application names one) it is narrowed to the namespace."""
    tags = {
        pod_identity.SOURCE_ACCOUNT_KEY: account_id,
        pod_identity.request_tag(pod_identity.CLUSTER_NAME_TAG): cluster_name,
        pod_identity.request_tag(pod_identity.NAMESPACE_TAG): namespace,
    }
    if service_account is not None:
        tags[pod_identity.request_tag(pod_identity.SERVICE_ACCOUNT_TAG)] = service_account
    return {
        "Effect": "Allow",
        "Principal": {"Service": pod_identity.SERVICE_PRINCIPAL},
        "Action": list(pod_identity.TRUST_ACTIONS),
        "Condition": {"StringEquals": tags},
    }


def owner_trust(
    settings: ApplicationSettings,
    *,
    server_role_arn: str | None,
    oidc_issuer: str | None,
    chain_role_arn: str | None,
    partition: str,
    account_id: str,
    cluster_name: str,
) -> dict[str, Any]:
    """What the existing role's trust policy must hold in its state (`required`), and what each
    next state adds to it (`next`): a state whose statements need a service account is listed
    once `serviceAccount` is given (allowed from `kiam` on for an existing role)."""
    assert settings.role_arn is not None
    role_account = role_arn_parts(settings.role_arn).account_id

    def statements(state: ServedBy) -> list[dict[str, Any]]:
        document = application_trust_policy(
            state,
            server_role_arn=server_role_arn,
            oidc_issuer=oidc_issuer,
            partition=partition,
            account_id=account_id,
            cluster_name=cluster_name,
            namespace=settings.namespace,
            service_account=settings.service_account,
            oidc_provider_account_id=role_account,
            chain_role_arn=chain_role_arn,
        )
        return list(document["Statement"])

    now = statements(settings.served_by)
    following: dict[str, list[dict[str, Any]]] = {}
    for state in settings.served_by.forward:
        if settings.service_account is None:
            continue
        if state.irsa and not oidc_issuer:
            continue
        if state.pod_identity and role_account != account_id and chain_role_arn is None:
            continue
        following[state.value] = [s for s in statements(state) if s not in now]
    return {"required": now, "next": following}
