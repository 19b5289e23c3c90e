"""How kiam v4.2 itself turns a pod's annotation into a role ARN and judges it against its
namespace: the facts the `application-reachable` guarantee relies on, each with its source."""

from __future__ import annotations

import re
import warnings

from invariants.view import flag_values

ROLE_BASE_ARN_FLAG = "--role-base-arn"
STRICT_OFF_FLAG = "--disable-strict-namespace-regexp"


def resolve(annotation: str, role_base_arn: str) -> str | None:
    """The ARN kiam assumes for a pod annotated `iam.amazonaws.com/role: <annotation>`.

    kiam `pkg/aws/sts/arn_resolver.go` (`Resolver.Resolve`): an empty annotation is an error
    (None here); one starting with `arn:` is used as it is; otherwise one leading `/` is dropped
    and the rest is appended to `--role-base-arn` as plain text (`kiam/myrole` under
    `arn:aws:iam::1:role/` is `arn:aws:iam::1:role/kiam/myrole`, its own test says so). The server
    resolves both the annotation and the role the agent asks for this way and requires them to
    be equal (`pkg/server/policy.go`, `RequestingAnnotatedRolePolicy`); the agent's credentials
    route takes the rest of the path, slashes included (`pkg/aws/metadata/handler_credentials.go`,
    `{role:.*}`), so a role name with a path survives the round trip through the SDK.
    """
    if not annotation:
        return None
    if annotation.startswith("arn:"):
        return annotation
    return role_base_arn + annotation.removeprefix("/")


def strict_namespace_regexp(server_args: list[str]) -> bool:
    """Whether kiam anchors the namespace regexp: it does unless the server is started with
    `--disable-strict-namespace-regexp` (`cmd/kiam/server.go`; the last of a repeated flag wins)."""
    strict = True
    for arg in server_args:
        if arg in (STRICT_OFF_FLAG, f"{STRICT_OFF_FLAG}=true"):
            strict = False
        elif arg in (f"--no-{STRICT_OFF_FLAG[2:]}", f"{STRICT_OFF_FLAG}=false"):
            strict = True
    return strict


# Python accepts these but Go's RE2 refuses to compile them (lookarounds, backreferences, atomic
# groups, conditionals, `\Z`): kiam then returns an error for every pod of the namespace.
_RE2_REFUSES = re.compile(r"\(\?(?:[=!>(]|<[=!]|P=)|\\[1-9Z]")
# Go syntax Python reads differently or not at all: POSIX classes, `\z`, `\p{..}`, `\Q..\E`, `\C`.
_GO_ONLY = re.compile(r"\[\[:|\\[zpPQEC]")


def regexp_problem(expression: str) -> str | None:
    """Why `expression` cannot be matched here the way kiam matches it, or None."""
    if _RE2_REFUSES.search(expression):
        return "Go's RE2, which kiam uses, does not compile lookarounds, backreferences, atomic groups, conditionals or \\Z"
    if _GO_ONLY.search(expression):
        return "it uses Go-only syntax ([[:class:]], \\z, \\p, \\Q, \\C) this check does not read"
    try:
        _compile(expression)
    except re.error as error:
        return f"it is not a regular expression ({error})"
    try:
        # kiam anchors it by concatenation; Python refuses an inline flag such as `(?i)` once it
        # no longer starts the expression, where Go applies it to the rest.
        _compile(f"^{expression}$")
    except re.error as error:
        return f"anchored as kiam anchors it, this check cannot read it ({error}); write flags as a scoped group such as (?i:...)"
    return None


def _compile(pattern: str) -> re.Pattern[str]:
    # Python warns that `[a--b]` or `[[` inside a class may change meaning in a future version;
    # today it reads them literally, as Go does.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return re.compile(pattern, re.ASCII)


def permits(expression: str, arn: str, *, strict: bool = True) -> bool:
    """Whether a namespace annotated `iam.amazonaws.com/permitted: <expression>` lets its pods
    assume `arn`, exactly as kiam `pkg/server/policy.go` (`NamespacePermittedRoleNamePolicy`)
    decides it; call only for an expression `regexp_problem` accepts.

    kiam matches the *resolved ARN*, never the annotation. An empty expression forbids everything.
    In strict mode (the default) it compiles `"^" + expression + "$"`, concatenated without a
    group, so `a|b` becomes `^a|b$` (anchoring only the first and last alternative); otherwise
    the expression as it is. Then `MatchString`, a search anywhere in the ARN.

    Python `re.search` with the same text decides the same, given what differs from Go: Python's
    `$` also matches before a final newline (no ARN holds one: IAM names and paths cannot);
    `\\d`, `\\w`, `\\s`, `\\b` are Unicode in Python and ASCII in Go (re.ASCII here); and the
    constructs only one side compiles are turned away by `regexp_problem` first. Leftmost-first
    (RE2) and backtracking (Python) may pick different matches, never a different yes or no.
    """
    if not expression:
        return False
    return _compile(f"^{expression}$" if strict else expression).search(arn) is not None


def granted_role(
    pod_annotation: str, namespace_permitted: str, server_args: list[str]
) -> str | None:
    """The role ARN kiam v4.2 would assume for a pod, or None where kiam would refuse the pod:
    the annotation resolved against the server's `--role-base-arn`, if the namespace's
    `iam.amazonaws.com/permitted` admits it as that server matches. For a live check: pass the
    live pod's annotation, the live namespace's annotation and the live server's args."""
    bases = flag_values(server_args, ROLE_BASE_ARN_FLAG)
    if len(bases) != 1 or regexp_problem(namespace_permitted) is not None:
        return None
    arn = resolve(pod_annotation, bases[0])
    strict = strict_namespace_regexp(server_args)
    return arn if arn and permits(namespace_permitted, arn, strict=strict) else None
