"""Contract tests for kiam v4.2's facts (`contracts.kiam`, and the annotation keys in
`contracts.labels`): each spells the fact out as kiam's source at tag v4.2 (github.com/uswitch/kiam)
writes it, naming the file, so a wrong constant or a drifted rule fails here instead of passing
every gate that reads the same constant."""

from __future__ import annotations

import pytest

from kiam_eks.contracts import kiam, labels
from kiam_eks.contracts.kiam import (
    permits,
    permitted_regexp_problem,
    resolve,
    strict_namespace_regexp,
)


def test_the_flags_kiams_rules_read() -> None:
    # cmd/kiam/server.go: the server's flags are declared as parser.Flag("role-base-arn", "Base
    # ARN for roles. e.g. arn:aws:iam::123456789:role/") and, as a BoolVar,
    # parser.Flag("disable-strict-namespace-regexp", ...).
    assert kiam.ROLE_BASE_ARN_FLAG == "--role-base-arn"
    assert kiam.STRICT_OFF_FLAG == "--disable-strict-namespace-regexp"


def test_a_full_arn_is_recognised_by_its_prefix() -> None:
    # pkg/aws/sts/arn_resolver.go, Resolve: strings.HasPrefix(role, "arn:") keeps the role as is.
    assert kiam.ARN_PREFIX == "arn:"


def test_the_annotations_kiam_reads() -> None:
    # pkg/k8s/pod_cache.go: const AnnotationIAMRoleKey = "iam.amazonaws.com/role".
    assert labels.ROLE_ANNOTATION == "iam.amazonaws.com/role"
    # pkg/k8s/namespace_cache.go: AnnotationPermittedKey = "iam.amazonaws.com/permitted".
    assert labels.PERMITTED_ANNOTATION == "iam.amazonaws.com/permitted"


def test_the_upstream_agent_daemon_set_name() -> None:
    # deploy/agent.yaml: kind DaemonSet, metadata.name kiam-agent (namespace kube-system); the
    # Helm chart (helm/kiam/templates/agent-daemonset.yaml) names it `<fullname>-agent`, the same
    # for a release named kiam.
    assert kiam.UPSTREAM_AGENT_DAEMON_SET == "kiam-agent"


KIAM_BASE = "arn:aws:iam::account-id:role/"


@pytest.mark.parametrize(
    ("annotation", "arn"),
    [
        # The cases of kiam's own pkg/aws/sts/arn_resolver_test.go, which resolves against
        # DefaultResolver("arn:aws:iam::account-id:role/"): TestAddsPrefix,
        # TestAddsPrefixWithRoleBeginningWithSlash, ...WithPathWithoutSlash, ...WithSlashPath.
        ("myrole", f"{KIAM_BASE}myrole"),
        ("/myrole", f"{KIAM_BASE}myrole"),
        ("kiam/myrole", f"{KIAM_BASE}kiam/myrole"),
        ("/kiam/myrole", f"{KIAM_BASE}kiam/myrole"),
        (
            "arn:aws:iam::some-other-account:role/path-prefix/another-role",
            "arn:aws:iam::some-other-account:role/path-prefix/another-role",
        ),
        # TestReturnsErrorForEmptyRole: Resolve returns "role can't be empty".
        ("", None),
        # One leading slash only: Resolve calls strings.TrimPrefix(role, "/") once.
        ("//myrole", f"{KIAM_BASE}/myrole"),
    ],
)
def test_an_annotation_resolves_as_kiam_resolves_it(annotation: str, arn: str | None) -> None:
    assert resolve(annotation, KIAM_BASE) == arn


@pytest.mark.parametrize(
    ("expression", "arn", "strict", "permitted"),
    [
        # pkg/server/policy_test.go, TestNamespacePolicy (with an empty base, as there): the
        # namespace annotated "^red.*$|^.red.*$" permits red_role and forbids orange_role.
        ("^red.*$|^.red.*$", "red_role", True, True),
        ("^red.*$|^.red.*$", "orange_role", True, False),
        # pkg/server/policy.go: strict mode compiles "^" + expression + "$" without a group, so
        # `^a|b$` anchors `a` at the start and `b` at the end only.
        ("arn:x|role/b", "arn:y:role/b", True, True),
        ("(arn:x|role/b)", "arn:y:role/b", True, False),
        # Otherwise regexp.Compile(expression) and MatchString: a search anywhere in the ARN.
        ("role/b", "arn:y:role/b/c", False, True),
        ("role/b", "arn:y:role/b/c", True, False),
        # An empty annotation is forbidden before any regexp (namespacePolicyForbidden "(empty)").
        ("", "anything", True, False),
        ("", "anything", False, False),
        # Go's `\z` is the end of the text, read here as Python's `\Z`.
        (r"arn:y:role/b\z", "arn:y:role/b", False, True),
        (r"arn:y:role/b\z", "arn:y:role/b/c", False, False),
    ],
)
def test_the_namespace_regexp_matches_as_kiam_matches_it(
    expression: str, arn: str, strict: bool, permitted: bool
) -> None:
    assert permits(expression, arn, strict=strict) is permitted


@pytest.mark.parametrize(
    ("args", "strict"),
    [
        # pkg/server/server_builder.go hands NewNamespacePermittedRoleNamePolicy
        # !DisableStrictNamespaceRegexp: strict unless the flag is given.
        (["server"], True),
        (["server", "--disable-strict-namespace-regexp"], False),
        (["server", "--disable-strict-namespace-regexp=true"], False),
        # A kingpin BoolVar: the --no- form clears it, and the last one given wins.
        (
            ["server", "--disable-strict-namespace-regexp", "--no-disable-strict-namespace-regexp"],
            True,
        ),
        (
            [
                "server",
                "--disable-strict-namespace-regexp",
                "--disable-strict-namespace-regexp=false",
            ],
            True,
        ),
    ],
)
def test_kiam_matches_strictly_unless_told_not_to(args: list[str], strict: bool) -> None:
    assert strict_namespace_regexp(args) is strict


REFUSED = "which Go's regexp (kiam's) does not compile"
OTHERWISE = "which this check (Python's re) does not read as Go does"


@pytest.mark.parametrize(
    ("expression", "problem"),
    [
        ("^(arn:a|arn:b)$", None),
        (r"^arn:\d+$", None),
        (r"^arn:.*\z", None),
        ("(?i:arn:aws:iam::1:role/x)", None),
        # Constructs Python compiles and Go refuses (tests/contracts/test_go_regexp.py has them all).
        ("^(?!arn:x).*$", f"it uses a lookahead `(?!`, {REFUSED}"),
        (r"^(a)\1$", rf"it uses a backreference `\1`, {REFUSED}"),
        (r"^arn:.*\Z", rf"it uses Python's end-of-text escape `\Z` (Go writes `\z`), {REFUSED}"),
        ("^(arn)(?(1)a|b)$", f"it uses a conditional `(?(`, {REFUSED}"),
        # Go syntax Python refuses or reads otherwise.
        ("^[[:alpha:]]+$", f"it uses an ASCII class `[:alpha:]`, {OTHERWISE}"),
        (r"^\pL+$", rf"it uses a Unicode class `\pL`, {OTHERWISE}"),
        (r"^arn:x{,3}$", f"it uses a repeat Go reads as literal text `{{,3}}`, {OTHERWISE}"),
        # What neither compiles.
        (
            "^(arn$",
            "it is not a regular expression (missing ), unterminated subpattern at position 1)",
        ),
        # Go applies `(?i)` to the rest of "^" + expression + "$"; Python cannot read it there.
        (
            "(?i)arn:x",
            "anchored as kiam anchors it, this check cannot read it (global flags not at the "
            "start of the expression at position 1); write flags as a scoped group such as "
            "(?i:...)",
        ),
    ],
)
def test_regexps_this_check_and_kiam_read_differently_are_named(
    expression: str, problem: str | None
) -> None:
    assert permitted_regexp_problem(expression) == problem
