"""What kiam v4.2 would grant a live pod, from the live objects: the rules themselves are kiam's
(`contracts.kiam`); this reads them off a server's command line."""

from __future__ import annotations

from kiam_eks.contracts import kiam
from kiam_eks.invariants.view import flag_values


def granted_role(
    pod_annotation: str, namespace_permitted: str, server_args: list[str]
) -> str | None:
    """The role ARN kiam v4.2 would assume for a pod, or None where kiam would refuse the pod:
    the annotation resolved against the server's `--role-base-arn`, if the namespace's
    `iam.amazonaws.com/permitted` admits it as that server matches. For a live check: pass the
    live pod's annotation, the live namespace's annotation and the live server's args."""
    bases = flag_values(server_args, kiam.ROLE_BASE_ARN_FLAG)
    if len(bases) != 1 or kiam.permitted_regexp_problem(namespace_permitted) is not None:
        return None
    arn = kiam.resolve(pod_annotation, bases[0])
    strict = kiam.strict_namespace_regexp(server_args)
    return arn if arn and kiam.permits(namespace_permitted, arn, strict=strict) else None
