"""Every message a guarantee can report has a breakage case that expects it exactly (issue 25).

The messages are enumerated from the source of `invariants/` (read with `ast`, nothing of it is
run): each `Violation(...)` construction's check id and message, the message followed wherever
it is built elsewhere and passed through a variable, to its literals:

- a string literal or f-string is a template, each `{...}` placeholder matching any text;
- a parameter (`reason` of a `report` helper) is followed to every call that passes it, also
  where the helper is handed to another function that calls it (`_judge_managed(..., report)`);
  an f-string placeholder naming such a parameter is replaced by what each call passes, so
  `f"gives {whose} the managed policy {arn}, {why_not}"` is one template per call;
- a local variable is followed to each of its assignments; a loop variable (`for reason in
  ...`, also a tuple target over `(condition, message)` pairs) to each element of what it
  loops over: a list or tuple literal, a comprehension, or a function of the module, whose
  elements are what it returns, appends or adds to what it returns;
- `a + b` is every combination; `a if c else b` is one template whose text is either.

Anything else where a message must be followed fails the enumeration, naming the place: a new
way of building messages is taught here rather than silently matched by nothing.

Each template must be matched (its check id equal, its pattern matching the whole message) by a
violation some breakage case expects exactly; the cases are the module-level lists of the test
modules that hold them (`CASE_LISTS`). The number of templates per module is pinned
(`TEMPLATES_PER_MODULE`), so a new branch of a guarantee fails here until it has a case and is
counted; a template that no input can produce is listed, with why, in `UNREACHABLE`.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from kiam_eks.invariants import Resource
from kiam_eks.invariants.recorded import resources_from_recording
from tests import test_existing_roles, test_invariants
from tests.conftest import run_program
from tools.mock_engine import PROJECT_DIR, Recording

INVARIANTS = PROJECT_DIR / "invariants"

# Exactly how many distinct messages each module of `invariants/` can report. A new branch, or a
# new module, changes these: give it a breakage case, then count it here.
TEMPLATES_PER_MODULE = {
    "invariants/agent_placement.py": 2,
    "invariants/applications.py": 10,
    "invariants/container_privileges.py": 7,
    "invariants/iam_least_privilege.py": 18,
    "invariants/node_group_replacement.py": 7,
    "invariants/off_kiam.py": 3,
    "invariants/ordering.py": 2,
    "invariants/pod_identity.py": 15,
    "invariants/presence.py": 1,
    "invariants/retirement.py": 7,
    "invariants/server_anti_affinity.py": 1,
    "invariants/server_args.py": 5,
    "invariants/server_certificate.py": 1,
    "invariants/server_disruption_budget.py": 2,
    "invariants/server_service.py": 4,
    "invariants/server_tolerations.py": 4,
    "invariants/transitions.py": 13,
}

# Templates no input can produce, by (module, template text), with why; they have no case.
UNREACHABLE: dict[tuple[str, str], str] = {
    ("invariants/iam_least_privilege.py", "the kiam-server role lacks the managed policy {…}"): (
        "`_judge_managed` reports each allowed policy a role lacks, and guarantee 8 allows the "
        "kiam-server role none (`frozenset()`): nothing can be missing"
    ),
}


# A message as enumerated: literal text, placeholders (None) and alternatives (a tuple of
# messages, one of which is the text there), with the source lines its literals are on.
Part = str | None | tuple["Message", ...]


@dataclass(frozen=True)
class Message:
    parts: tuple[Part, ...]
    lines: frozenset[int] = field(default_factory=frozenset)

    def __add__(self, other: Message) -> Message:
        return Message(self.parts + other.parts, self.lines | other.lines)

    def all_lines(self) -> frozenset[int]:
        nested = (m.all_lines() for p in self.parts if isinstance(p, tuple) for m in p)
        return self.lines.union(*nested)

    def regex(self) -> str:
        out = []
        for part in self.parts:
            if part is None:
                out.append(".*")
            elif isinstance(part, str):
                out.append(re.escape(part))
            else:
                out.append("(?:" + "|".join(m.regex() for m in part) + ")")
        return "".join(out)

    def text(self) -> str:
        out = []
        for part in self.parts:
            if part is None:
                out.append("{…}")
            elif isinstance(part, str):
                out.append(part)
            else:
                out.append("(" + "|".join(m.text() for m in part) + ")")
        return "".join(out)

    def literal(self) -> str | None:
        """The text, where it has no placeholder or alternative (a check id)."""
        if all(isinstance(p, str) for p in self.parts):
            return "".join(p for p in self.parts if isinstance(p, str))
        return None


EMPTY = Message(())


@dataclass(frozen=True)
class Template:
    module: str
    lines: tuple[int, ...]
    check: str
    text: str
    pattern: re.Pattern[str]

    def matches(self, check: str, message: str) -> bool:
        return check == self.check and self.pattern.fullmatch(message) is not None

    def __str__(self) -> str:
        return f"{self.module}:{','.join(map(str, self.lines))} [{self.check}] {self.text}"


class EnumerationError(Exception):
    """A message is built in a way the enumeration does not follow."""


FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
Scope = FunctionNode | ast.Module
# What a name means where it is read: its kind ("param", "def", "assign", "for",
# "comprehension", "unbound"), then what binds it.
Binding = tuple[Any, ...]
COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)
# While one message is followed: the call chosen for each function whose parameters it reads,
# the element chosen for each loop whose names it reads (by the id of the function or loop).
Env = tuple[tuple[int, Any], ...]


def _params(function: FunctionNode) -> list[str]:
    a = function.args
    return [p.arg for p in [*a.posonlyargs, *a.args, *a.kwonlyargs]]


def _positional(function: FunctionNode) -> list[str]:
    a = function.args
    return [p.arg for p in [*a.posonlyargs, *a.args]]


def _target_path(target: ast.expr, name: str) -> tuple[int, ...] | None:
    """Where `name` sits in an assignment or loop target: () for the name itself, (i, ...) in
    a tuple; None where it is not bound there."""
    if isinstance(target, ast.Name):
        return () if target.id == name else None
    if isinstance(target, ast.Tuple | ast.List):
        for i, element in enumerate(target.elts):
            path = _target_path(element, name)
            if path is not None:
                return (i, *path)
    return None


def _assigned(node: ast.AST, name: str, augmented: bool = False) -> ast.expr | None:
    """What `node` assigns to `name` (`name = ...`, `name: T = ...`, with `augmented` also
    `name += ...`), if it does."""
    if isinstance(node, ast.Assign):
        targets = node.targets
    elif isinstance(node, ast.AnnAssign) or (
        augmented and isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Add)
    ):
        targets = [node.target]
    else:
        return None
    if node.value is not None and any(_target_path(t, name) == () for t in targets):
        return node.value
    return None


class ModuleMessages:
    """The message templates of one module of `invariants/`."""

    def __init__(self, relative: str, source: str) -> None:
        self.relative = relative
        self.tree = ast.parse(source)
        self.parents: dict[ast.AST, ast.AST] = {}
        for node in ast.walk(self.tree):
            for child in ast.iter_child_nodes(node):
                self.parents[child] = node

    # Scopes and names.

    def _where(self, node: ast.AST) -> str:
        return f"{self.relative}:{getattr(node, 'lineno', '?')}"

    def _fail(self, node: ast.AST, why: str) -> EnumerationError:
        return EnumerationError(f"{self._where(node)}: {why}: {ast.unparse(node)}")

    def _ancestors(self, node: ast.AST) -> Iterator[ast.AST]:
        while node in self.parents:
            node = self.parents[node]
            yield node

    def _scope_of(self, node: ast.AST) -> Scope:
        for ancestor in self._ancestors(node):
            if isinstance(ancestor, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                return ancestor
        return self.tree

    def _own(self, scope: Scope) -> Iterator[ast.AST]:
        """The nodes of a scope, not those of the functions defined in it."""
        body = scope.body if not isinstance(scope, ast.Lambda) else [scope.body]
        todo: list[ast.AST] = list(body)
        while todo:
            node = todo.pop()
            yield node
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                continue
            todo.extend(ast.iter_child_nodes(node))

    def _binding(self, name: str, at: ast.AST) -> Binding:
        """What `name` means at `at`: ("comprehension", generator, path), ("for", loop, path),
        ("param", function), ("def", function), ("assign", [values]), or ("unbound", None)
        (an import, a builtin)."""
        for ancestor in self._ancestors(at):
            if isinstance(ancestor, COMPREHENSIONS):
                for generator in ancestor.generators:
                    path = _target_path(generator.target, name)
                    if path is not None:
                        return ("comprehension", generator, path)
            elif isinstance(ancestor, ast.For):
                path = _target_path(ancestor.target, name)
                if path is not None:
                    return ("for", ancestor, path)
            elif isinstance(ancestor, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                if name in _params(ancestor):
                    return ("param", ancestor)
                local = self._local(ancestor, name)
                if local is not None:
                    return local
        return self._local(self.tree, name) or ("unbound", None)

    def _local(self, scope: Scope, name: str) -> Binding | None:
        values: list[ast.expr] = []
        for node in self._own(scope):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == name:
                return ("def", node)
            value = _assigned(node, name)
            if value is not None:
                values.append(value)
        return ("assign", values) if values else None

    # Who calls a function.

    def _calls_of_name(self, scope: Scope, name: str, means: Binding) -> list[ast.Call]:
        """The calls of `name` within `scope` that call what `means`, directly or through a
        function it is handed to."""
        found = []
        for node in ast.walk(scope):
            if not (isinstance(node, ast.Name) and node.id == name):
                continue
            if isinstance(node.ctx, ast.Store) or self._binding(name, node) != means:
                continue
            parent = self.parents.get(node)
            if isinstance(parent, ast.Call) and parent.func is node:
                found.append(parent)
            elif isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name):
                found += self._calls_through(parent, node)
            elif isinstance(parent, ast.keyword) and isinstance(
                call := self.parents.get(parent), ast.Call
            ):
                found += self._calls_through(call, node)
        return found

    def _calls_through(self, call: ast.Call, handed: ast.AST) -> list[ast.Call]:
        """The calls of a function handed as an argument of `call`, made by the callee."""
        assert isinstance(call.func, ast.Name)
        kind, callee = self._binding(call.func.id, call)
        if kind != "def":
            return []  # handed to something outside the module (sorted, map...): no message
        if handed in call.args:
            index = call.args.index(handed)
            param = _positional(callee)[index]
        else:
            keyword = self.parents[handed]
            assert isinstance(keyword, ast.keyword) and keyword.arg is not None
            param = keyword.arg
        return self._calls_of_name(callee, param, ("param", callee))

    def _calls_of(self, function: FunctionNode) -> list[ast.Call]:
        if isinstance(function, ast.Lambda):
            raise self._fail(function, "a message built in a lambda")
        return self._calls_of_name(self._scope_of(function), function.name, ("def", function))

    def _argument(self, call: ast.Call, function: FunctionNode, param: str) -> ast.expr | None:
        positional = _positional(function)
        if param in positional and positional.index(param) < len(call.args):
            argument = call.args[positional.index(param)]
            if isinstance(argument, ast.Starred):
                raise self._fail(call, "a message passed as *args")
            return argument
        return next((k.value for k in call.keywords if k.arg == param), None)

    # Following a message.

    def resolve(self, node: ast.expr, env: Env, whole: bool) -> list[tuple[Message, Env]]:
        """Every message `node` can be, with the calls chosen on the way. `whole`: the node is
        the message, or a part of it that must be followed; else it is what a call passes for
        a placeholder, followed as far as it is a string built of literals."""
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return [(Message((node.value,), frozenset({node.lineno})), env)]
        if isinstance(node, ast.JoinedStr):
            return self._sequence(node.values, env, frozenset({node.lineno}), whole)
        if isinstance(node, ast.FormattedValue):
            # Only a parameter is followed into a placeholder: what each call passes.
            if isinstance(node.value, ast.Name) and self._binding(node.value.id, node)[0] == (
                "param"
            ):
                return self._follow(node.value, env, whole=False)
            return [(Message((None,)), env)]
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            return self._sequence([node.left, node.right], env, frozenset(), whole)
        if isinstance(node, ast.IfExp):
            alternatives = [
                (m, e)
                for branch in (node.body, node.orelse)
                for m, e in self.resolve(branch, env, whole)
            ]
            if len({e for _, e in alternatives}) > 1:
                raise self._fail(node, "alternatives that bind different calls")
            distinct = {m.regex(): m for m, _ in alternatives}
            if len(distinct) == 1:  # `x if c else y`, both placeholders
                return alternatives[:1]
            return [(Message((tuple(distinct.values()),)), alternatives[0][1])]
        if isinstance(node, ast.Name):
            return self._follow(node, env, whole)
        if whole:
            raise self._fail(node, "a message built in a way this enumeration does not follow")
        return [(Message((None,)), env)]

    def _sequence(
        self, nodes: Sequence[ast.expr], env: Env, lines: frozenset[int], whole: bool
    ) -> list[tuple[Message, Env]]:
        done = [(Message((), lines), env)]
        for part in nodes:
            done = [
                (message + more, later)
                for message, current in done
                for more, later in self.resolve(part, current, whole)
            ]
        return done

    def _follow(self, name: ast.Name, env: Env, whole: bool) -> list[tuple[Message, Env]]:
        binding = self._binding(name.id, name)
        kind = binding[0]
        if kind == "param":
            function = binding[1]
            bound = dict(env)
            calls: list[ast.Call] = (
                [bound[id(function)]] if id(function) in bound else self._calls_of(function)
            )
            if not calls:
                if whole:
                    raise self._fail(name, "a message parameter that nothing passes")
                return [(Message((None,)), env)]
            found = []
            for call in calls:
                # One call binds all the function's parameters for the rest of the message.
                later = env if id(function) in bound else (*env, (id(function), call))
                argument = self._argument(call, function, name.id)
                if argument is None:
                    if whole:
                        raise self._fail(call, f"a call that does not pass {name.id}")
                    found.append((Message((None,)), later))
                else:
                    found += self.resolve(argument, later, whole)
            return found
        if kind == "assign":
            return [r for value in binding[1] for r in self.resolve(value, env, whole)]
        if kind in ("for", "comprehension"):
            loop, path = binding[1], binding[2]
            bound = dict(env)
            found = []
            # One element binds all the loop's names for the rest of the message.
            chosen = [bound[id(loop)]] if id(loop) in bound else self._elements(loop.iter)
            for element in chosen:
                later = env if id(loop) in bound else (*env, (id(loop), element))
                for index in path:
                    if not isinstance(element, ast.Tuple | ast.List):
                        raise self._fail(element, "a loop over pairs that are not literal")
                    element = element.elts[index]
                found += self.resolve(element, later, whole)
            return found
        if whole:
            raise self._fail(name, f"a message that is {kind}")
        return [(Message((None,)), env)]

    def _elements(self, node: ast.expr) -> list[ast.expr]:
        """The elements of what a loop runs over."""
        if isinstance(node, ast.List | ast.Tuple | ast.Set):
            return [e for element in node.elts for e in self._starred(element)]
        if isinstance(node, ast.ListComp | ast.SetComp | ast.GeneratorExp):
            return [node.elt]
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            kind, target = self._binding(node.func.id, node.func)
            if kind == "unbound" and node.func.id in ("sorted", "list", "tuple", "reversed"):
                return self._elements(node.args[0])
            if kind == "def":
                return self._returned(target)
        if isinstance(node, ast.Name):
            binding = self._binding(node.id, node)
            if binding[0] == "assign":
                return [e for value in binding[1] for e in self._elements(value)]
        raise self._fail(node, "a loop over something this enumeration does not follow")

    def _starred(self, element: ast.expr) -> list[ast.expr]:
        return self._elements(element.value) if isinstance(element, ast.Starred) else [element]

    def _returned(self, function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.expr]:
        """The elements of what a function of the module returns: a list it returns, or one it
        builds (assigned, appended, extended, added to) and returns."""
        found: list[ast.expr] = []
        for node in self._own(function):
            if isinstance(node, ast.Return) and node.value is not None:
                value = node.value
                if isinstance(value, ast.Name):
                    found += self._built(function, value.id)
                else:
                    found += self._elements(value)
        return found

    def _built(self, function: ast.FunctionDef | ast.AsyncFunctionDef, name: str) -> list[ast.expr]:
        found: list[ast.expr] = []
        for node in self._own(function):
            value = _assigned(node, name, augmented=True)
            if value is not None:
                found += self._elements(value)
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == name
            ):
                if node.func.attr in ("append", "add"):
                    found.append(node.args[0])
                elif node.func.attr == "extend":
                    found += self._elements(node.args[0])
        return found

    # The templates.

    def violation_calls(self) -> list[ast.Call]:
        return [
            node
            for node in ast.walk(self.tree)
            if isinstance(node, ast.Call)
            and (
                (isinstance(node.func, ast.Name) and node.func.id == "Violation")
                or (isinstance(node.func, ast.Attribute) and node.func.attr == "Violation")
            )
        ]

    def templates(self) -> list[Template]:
        found: dict[tuple[str, str], tuple[Message, set[int]]] = {}
        for call in self.violation_calls():
            check = self._field(call, 0, "id")
            reason = self._field(call, 2, "reason")
            for check_message, env in self.resolve(check, (), whole=True):
                check_id = check_message.literal()
                if check_id is None:
                    raise self._fail(check, "a check id that is no literal")
                for message, _ in self.resolve(reason, env, whole=True):
                    key = (check_id, message.regex())
                    lines = found.setdefault(key, (message, set()))[1]
                    lines |= message.all_lines() or {call.lineno}
        return sorted(
            (
                Template(
                    self.relative,
                    tuple(sorted(lines)),
                    check,
                    message.text(),
                    re.compile(pattern, re.DOTALL),
                )
                for (check, pattern), (message, lines) in found.items()
            ),
            key=lambda t: (t.lines, t.text),
        )

    def _field(self, call: ast.Call, index: int, name: str) -> ast.expr:
        if len(call.args) > index and not isinstance(call.args[index], ast.Starred):
            return call.args[index]
        for keyword in call.keywords:
            if keyword.arg == name:
                return keyword.value
        raise self._fail(call, f"a Violation whose {name} this enumeration cannot find")


def module_messages() -> list[ModuleMessages]:
    return [
        ModuleMessages(path.relative_to(PROJECT_DIR).as_posix(), path.read_text())
        for path in sorted(INVARIANTS.rglob("*.py"))
    ]


def all_templates() -> list[Template]:
    return [t for module in module_messages() for t in module.templates()]


# The breakage cases, each a module-level list whose entries end with the function giving the
# exact violations expected, from the baseline resources they break ("base": the base
# configuration's run; "applications": the run of two applications, `APP_CONFIG`).
CASE_LISTS: dict[str, tuple[Sequence[tuple[Any, ...]], str]] = {
    "tests/test_invariants.py::CASES": (test_invariants.CASES, "base"),
    "tests/test_invariants.py::PRESENCE_CASES": (test_invariants.PRESENCE_CASES, "base"),
    "tests/test_invariants.py::APP_CASES": (test_invariants.APP_CASES, "applications"),
    "tests/test_invariants.py::WAY_OUT_CASES": (test_invariants.WAY_OUT_CASES, "applications"),
    # Each case names its own baseline (its second item).
    "tests/test_invariants.py::CHANGE_CASES": (test_invariants.CHANGE_CASES, "per case"),
    "tests/test_existing_roles.py::EXISTING_CASES": (
        test_existing_roles.EXISTING_CASES,
        "per case",
    ),
}

Expectation = tuple[str, str, str]  # (check id, message, the case that expects it)


@pytest.fixture(scope="module")
def expected_messages(base_run: Recording) -> list[Expectation]:
    baselines = test_invariants.change_baseline_resources(
        resources_from_recording(base_run),
        resources_from_recording(run_program(test_invariants.APP_CONFIG)),
    )
    found = []
    for list_name, (cases, baseline) in CASE_LISTS.items():
        assert cases, f"{list_name} is empty"
        for case in cases:
            expected: Callable[[list[Resource]], list[tuple[str, str, str]]] = case[-1]
            judged = case[1] if baseline == "per case" else baseline
            for check, _, message in expected(baselines[judged]):
                found.append((check, message, f"{list_name}[{case[0]!r}]"))
    return found


def test_every_module_with_violations_has_templates() -> None:
    """A guard against the enumeration silently matching nothing."""
    for module in module_messages():
        if module.violation_calls():
            assert module.templates(), f"{module.relative}: Violation calls, but no template"
    assert len(all_templates()) >= sum(TEMPLATES_PER_MODULE.values())


def test_each_module_has_exactly_its_counted_templates() -> None:
    counts = {m.relative: len(m.templates()) for m in module_messages() if m.templates()}
    if counts != TEMPLATES_PER_MODULE:
        listing = "\n".join(map(str, all_templates()))
        pytest.fail(
            f"templates per module {counts}, counted {TEMPLATES_PER_MODULE}: a branch was added "
            f"or removed (give it a case, then count it):\n{listing}",
            pytrace=False,
        )


def test_every_template_has_a_breakage_case_expecting_it_exactly(
    expected_messages: list[Expectation],
) -> None:
    templates = all_templates()
    uncovered = [
        t for t in templates if not any(t.matches(check, m) for check, m, _ in expected_messages)
    ]
    missing = [t for t in uncovered if (t.module, t.text) not in UNREACHABLE]
    if missing:
        pytest.fail("no breakage case expects:\n" + "\n".join(map(str, missing)), pytrace=False)
    # Each template listed as unreachable is one, and still has no case.
    assert sorted((t.module, t.text) for t in uncovered) == sorted(UNREACHABLE)


def test_every_expected_message_is_an_enumerated_template(
    expected_messages: list[Expectation],
) -> None:
    """The other way round: what the cases expect, the enumeration found (it misses no way of
    building a message that the checks use)."""
    templates = all_templates()
    strays = [
        f"{case}: [{check}] {message}"
        for check, message, case in expected_messages
        if not any(t.matches(check, message) for t in templates)
    ]
    if strays:
        pytest.fail("messages no template matches:\n" + "\n".join(strays), pytrace=False)


# The enumeration itself, on the ways of building a message it follows.
SAMPLE = """
from kiam_eks.invariants.model import Violation

CHECK_ID = "sample"


def literals(view):
    return [Violation("literal", "stack", "a literal"), Violation(CHECK_ID, "s", f"an {view} f")]


def assigned(view):
    if view:
        reason = "first"
    else:
        reason = f"second {view}"
    return [Violation(CHECK_ID, "stack", reason)]


PAIRS = [(True, "pair one"), (False, f"pair {1} two")]


def pairs(view):
    out = []
    for name, condition, reason in [(CHECK_ID, view, "inline pair"), ("c", not view, "other")]:
        if condition:
            out.append(Violation(name, "stack", reason))
    return out + [Violation(CHECK_ID, "stack", reason) for ok, reason in PAIRS if not ok]


def _problems(view):
    problems = [f"listed {view}"]
    problems.append("appended")
    problems += [f"added {x}" for x in view]
    if not view:
        return ["returned"]
    return problems


def helpers(view):
    out = []

    def report(reason, where="stack", name=view):
        out.append(Violation(CHECK_ID, where, f"{name}: {reason}"))

    report("direct")
    for reason in _problems(view):
        report(reason)
    _judge(view, "whose", report)
    _judge(view, f"other {view}", report=report)
    return out


def _judge(view, whose, report):
    report(f"{whose} is judged")
"""


def test_the_enumeration_follows_each_way_of_building_a_message() -> None:
    texts = [(t.check, t.text) for t in ModuleMessages("sample.py", SAMPLE).templates()]
    assert sorted(texts) == sorted(
        [
            ("literal", "a literal"),
            ("sample", "an {…} f"),
            ("sample", "first"),
            ("sample", "second {…}"),
            ("sample", "inline pair"),
            ("c", "other"),
            ("sample", "pair one"),
            ("sample", "pair {…} two"),
            ("sample", "{…}: direct"),
            ("sample", "{…}: listed {…}"),
            ("sample", "{…}: appended"),
            ("sample", "{…}: added {…}"),
            ("sample", "{…}: returned"),
            ("sample", "{…}: whose is judged"),
            ("sample", "{…}: other {…} is judged"),
        ]
    )


@pytest.mark.parametrize(
    "body",
    [
        'Violation("c", "s", "".join(view))',
        'Violation("c", "s", message(view))',
        'Violation(view, "s", "a check id not known")',
        'Violation("c", "s", reason)',
    ],
)
def test_a_message_the_enumeration_cannot_follow_fails_it(body: str) -> None:
    source = f"def check(view, reason):\n    return [{body}]\n"
    with pytest.raises(EnumerationError, match=r"^sample\.py:2: "):
        ModuleMessages("sample.py", source).templates()
