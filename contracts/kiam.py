"""kiam v4.2's own rules, as its source at tag v4.2 (github.com/uswitch/kiam) writes them: how the
server turns a pod's annotation into a role ARN and judges that ARN against the namespace's
regexp, the flags those rules read, and the names of the upstream objects a running install has.
tests/contracts/test_kiam.py spells each one out with the file it comes from.

The settings (refusing a value kiam would fail on), the guarantees (judging what a stack renders)
and the real-engine tests (judging a live cluster) all decide with these functions, so the three
cannot disagree about kiam.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence

from kiam_eks.contracts import go_regexp

# The release every fact here is read from (the newest; later commits change only the README).
VERSION = "v4.2"
# cmd/kiam/server.go: the prefix a role name or path is appended to.
ROLE_BASE_ARN_FLAG = "--role-base-arn"
# cmd/kiam/server.go: a kingpin boolean, so `--no-disable-strict-namespace-regexp` clears it.
STRICT_OFF_FLAG = "--disable-strict-namespace-regexp"
# pkg/aws/sts/arn_resolver.go: an annotation starting with this is already a full role ARN.
ARN_PREFIX = "arn:"
# deploy/agent.yaml names the agent DaemonSet this; the Helm chart's `<release>-agent` gives the
# same for a release named kiam. A running install is adopted under this name unless told.
UPSTREAM_AGENT_DAEMON_SET = "kiam-agent"
# cmd/kiam/agent.go: `iptables-remove`, "Remove iptables rules at shutdown", a kingpin boolean
# defaulting to true; only an agent started with it deletes its metadata DNAT rule when it stops
# (the deferred rules.Remove() in run()), one started with --no-iptables-remove leaves the rule.
# cmd/kiam/iptables.go adds the rule with AppendUnique: an agent starting on a node where its
# predecessor left the rule holds it once, so its own removal leaves none.
AGENT_REMOVE_RULE_FLAG = "--iptables-remove"


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
    if annotation.startswith(ARN_PREFIX):
        return annotation
    return role_base_arn + annotation.removeprefix("/")


def strict_namespace_regexp(server_args: Sequence[str]) -> bool:
    """Whether kiam anchors the namespace regexp: it does unless the server is started with
    `--disable-strict-namespace-regexp` (`cmd/kiam/server.go`, handed on negated as
    `NewNamespacePermittedRoleNamePolicy(!DisableStrictNamespaceRegexp, ...)` in
    `pkg/server/server_builder.go`; the last of a repeated flag wins)."""
    strict = True
    for arg in server_args:
        if arg in (STRICT_OFF_FLAG, f"{STRICT_OFF_FLAG}=true"):
            strict = False
        elif arg in (f"--no-{STRICT_OFF_FLAG[2:]}", f"{STRICT_OFF_FLAG}=false"):
            strict = True
    return strict


# Cached: a stack's namespaces share a few expressions, and each application's check asks again
# (1,000 applications in 50 namespaces: 1,000 readings of 50 expressions).
@functools.cache
def permitted_regexp_problem(expression: str) -> str | None:
    """Why a namespace's `iam.amazonaws.com/permitted: <expression>` cannot be matched here the
    way kiam matches it, or None.

    kiam compiles it with Go's regexp when a pod asks, and refuses every pod of the namespace if
    that fails; a construct Go refuses is named as such. A construct Go reads and Python does not
    (or reads otherwise) is named too: `permits` could not decide as kiam does.
    """
    refused = go_regexp.refused(expression)
    if refused is not None:
        return "it " + go_regexp.REFUSED.format(refused)
    otherwise = go_regexp.read_otherwise(expression)
    if otherwise is not None:
        return "it " + go_regexp.READ_OTHERWISE.format(otherwise)
    try:
        go_regexp.python_pattern(expression)
    except (re.error, ValueError) as error:
        return "it " + go_regexp.NOT_A_REGEXP.format(error)
    try:
        # kiam anchors it by concatenation; Python refuses an inline flag such as `(?i)` once it
        # no longer starts the expression, where Go applies it to the rest.
        go_regexp.python_pattern(f"^{expression}$")
    except (re.error, ValueError) as error:
        return f"anchored as kiam anchors it, this check cannot read it ({error}); write flags as a scoped group such as (?i:...)"
    return None


def permits(expression: str, arn: str, *, strict: bool = True) -> bool:
    """Whether a namespace annotated `iam.amazonaws.com/permitted: <expression>` lets its pods
    assume `arn`, exactly as kiam `pkg/server/policy.go` (`NamespacePermittedRoleNamePolicy`)
    decides it; call only for an expression `permitted_regexp_problem` accepts.

    kiam matches the *resolved ARN*, never the annotation. An empty expression forbids everything.
    In strict mode (the default) it compiles `"^" + expression + "$"`, concatenated without a
    group, so `a|b` becomes `^a|b$` (anchoring only the first and last alternative); otherwise
    the expression as it is. Then `MatchString`, a search anywhere in the ARN.

    Python `re.search` with the same text decides the same, given what differs from Go: Python's
    `$` also matches before a final newline, Python's `\\B` never matches an empty text, and
    Go's `(?i)` also folds `k` to the Kelvin sign (an ARN is never empty and holds neither: IAM
    names and paths are printable ASCII); `\\d`, `\\w`, `\\s`, `\\b` are Unicode in Python and
    ASCII in Go (ASCII here); and the constructs only one side compiles or reads are turned away
    by `permitted_regexp_problem` first. Leftmost-first (RE2) and backtracking (Python) may pick
    different matches, never a different yes or no.
    """
    if not expression:
        return False
    pattern = go_regexp.python_pattern(f"^{expression}$" if strict else expression)
    return pattern.search(arn) is not None
