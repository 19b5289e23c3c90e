"""Mutation testing with cosmic-ray: `python -m tools.mutation.run [--changed BASE_REF] [MODULE...]`.

For each target module in `tools/mutation/targets.toml` (all of them, the ones named, or those
`git diff --name-only BASE_REF` touches) this

1. copies the working tree (tracked and untracked, not ignored files) to
   `build/mutation/<module>/tree`: cosmic-ray mutates the module's file in place, and the copy
   keeps every mutant away from the checkout, its other users and their test runs;
2. writes the module's cosmic-ray configuration (`build/mutation/<module>/cosmic-ray.toml`) from
   the shared `[cosmic-ray]` table and the module's own test files, runs those tests once
   unmutated (they must pass; the timeout is derived from how long they took), and runs
   `cosmic-ray init`, `cr-filter-operators` and `cosmic-ray exec` on the session
   `build/mutation/<module>/session.sqlite`;
3. reads the session back (`cosmic-ray dump`) and reports every surviving mutant: file, line,
   operator, the original and the mutated line. A survivor listed in
   `tools/mutation/equivalent.toml` (by module, operator, the original line's text and its
   occurrence among that operator's mutants of lines with that text) is shown as equivalent.

Exits 1 when a survivor is neither killed nor listed, when a listed entry matches no surviving
mutant of a module that ran (it is out of date), or when a session could not run (a baseline
that fails, a mutant the worker could not run); 0 otherwise. cosmic-ray runs as a command (it is
installed only by `make mutation`, from requirements-mutation.txt), never imported.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import shlex
import sqlite3
import subprocess
import sys
import time
import tomllib
from collections import Counter
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from tools.package_layout import link_tree
from tools.working_tree import copy_working_tree

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
TARGETS_FILE = HERE / "targets.toml"
EQUIVALENT_FILE = HERE / "equivalent.toml"
BUILD = REPO / "build" / "mutation"
BIN = Path(sys.executable).parent


@dataclasses.dataclass(frozen=True)
class Target:
    module: str
    """Path of the mutated module, relative to the repository."""
    tests: tuple[str, ...]
    """The test files (or node ids) that exercise it."""
    pytest_args: tuple[str, ...] = ()
    """Options before them (the shared `pytest-args`, unless the target has its own)."""

    @property
    def slug(self) -> str:
        return self.module.removesuffix(".py").replace("/", ".")


@dataclasses.dataclass(frozen=True)
class Mutant:
    module: str
    operator: str
    line_number: int
    line: str
    """The original line's text, stripped."""
    occurrence: int
    """Its index among this module's mutants by the same operator of lines with the same text."""
    mutated: str
    """The mutated line(s), stripped, from cosmic-ray's diff."""
    outcome: str
    """killed, survived, incompetent (the worker could not run it), skipped (an operator left out
    in targets.toml), or uncompilable (compile_filter.py)."""

    def key(self) -> tuple[str, str, str, int]:
        return (self.module, self.operator, self.line, self.occurrence)


@dataclasses.dataclass(frozen=True)
class Equivalent:
    module: str
    operator: str
    line: str
    occurrence: int
    reason: str

    def key(self) -> tuple[str, str, str, int]:
        return (self.module, self.operator, self.line, self.occurrence)


@dataclasses.dataclass
class Outcome:
    target: Target
    mutants: list[Mutant] = dataclasses.field(default_factory=list)
    error: str | None = None
    baseline_seconds: float = 0.0
    seconds: float = 0.0


def load_targets(path: Path = TARGETS_FILE) -> tuple[dict[str, Any], list[Target]]:
    """The shared `[cosmic-ray]` table and the targets, in file order."""
    data = tomllib.loads(path.read_text())
    targets = [
        Target(
            module=module,
            tests=tuple(entry["tests"]),
            pytest_args=tuple(entry.get("pytest-args", data["cosmic-ray"].get("pytest-args", []))),
        )
        for module, entry in data["targets"].items()
    ]
    return data["cosmic-ray"], targets


def load_equivalents(path: Path = EQUIVALENT_FILE) -> list[Equivalent]:
    if not path.exists():
        return []
    entries = tomllib.loads(path.read_text()).get("equivalent", [])
    equivalents = []
    for entry in entries:
        if not entry.get("reason", "").strip():
            raise SystemExit(f"{path}: an entry without a reason: {entry}")
        equivalents.append(
            Equivalent(
                module=entry["module"],
                operator=entry["operator"],
                line=entry["line"].strip(),
                occurrence=int(entry.get("occurrence", 0)),
                reason=entry["reason"].strip(),
            )
        )
    keys = Counter(e.key() for e in equivalents)
    duplicates = [key for key, count in keys.items() if count > 1]
    if duplicates:
        raise SystemExit(f"{path}: entries listed twice: {duplicates}")
    return equivalents


def changed_targets(base_ref: str, targets: Sequence[Target]) -> list[Target]:
    """The targets whose module `git diff --name-only BASE_REF` names (committed or not)."""
    names = set(
        subprocess.run(
            ["git", "diff", "--name-only", base_ref],
            cwd=REPO,
            check=True,
            capture_output=True,
            text=True,
        ).stdout.split()
    )
    return [target for target in targets if target.module in names]


def snapshot(tree: Path) -> None:
    """Copy the working tree's tracked and untracked (not ignored) files to `tree`."""
    copy_working_tree(tree, REPO)


def test_command(target: Target) -> str:
    """Run in the tree: its modules come first on sys.path (`-m`), no byte code is written (a
    mutant and the restored original can share a size and an mtime second)."""
    return shlex.join(
        [
            sys.executable,
            "-B",
            "-m",
            "pytest",
            "-x",
            "-q",
            "-p",
            "no:cacheprovider",
            *target.pytest_args,
            *target.tests,
        ]
    )


def write_config(target: Target, shared: dict[str, Any], timeout: float, path: Path) -> None:
    lines = [
        "# Generated by tools/mutation/run.py from tools/mutation/targets.toml: do not edit.",
        "[cosmic-ray]",
        f"module-path = {json.dumps(target.module)}",
        f"timeout = {timeout:.0f}",
        "excluded-modules = []",
        f"test-command = {json.dumps(test_command(target))}",
        "",
        "[cosmic-ray.distributor]",
        'name = "local"',
        "",
        "[cosmic-ray.filters.operators-filter]",
        "exclude-operators = [",
        *(f"    {json.dumps(pattern)}," for pattern in shared.get("exclude-operators", [])),
        "]",
    ]
    path.write_text("\n".join(lines) + "\n")


def tree_environment(tree: Path) -> dict[str, str]:
    """The environment the tree's tests run in: `kiam_eks` is the tree's own (a tree of links to
    its folders, first on PYTHONPATH, ahead of the checkout's editable install), so the tests load
    the mutant, and no byte code is written (a mutant and the restored original can share a size
    and an mtime second)."""
    links = link_tree(tree, tree / "build" / "package")
    return {**os.environ, "PYTHONPATH": str(links), "PYTHONDONTWRITEBYTECODE": "1"}


def _run(command: Sequence[str], cwd: Path, log: Path) -> None:
    with log.open("a") as out:
        out.write(f"$ {shlex.join(command)}\n")
        out.flush()
        subprocess.run(
            command,
            cwd=cwd,
            check=True,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=tree_environment(cwd),
        )


def _mutated_lines(diff: str) -> str:
    added = [
        line[1:].strip()
        for line in diff.splitlines()
        if line.startswith("+") and not line.startswith("+++")
    ]
    return " / ".join(added)


def read_session(target: Target, tree: Path, session: Path) -> list[Mutant]:
    dump = subprocess.run(
        [str(BIN / "cosmic-ray"), "dump", str(session)],
        cwd=tree,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    source_lines = (tree / target.module).read_text().splitlines()
    rows = []
    for record in filter(None, dump.splitlines()):
        item, result = json.loads(record)
        (mutation,) = item["mutations"]
        line_number = mutation["start_pos"][0]
        if result is None:
            outcome = "pending"
        elif result["worker_outcome"] == "skipped":
            does_not_compile = (result.get("output") or "").startswith("does not compile")
            outcome = "uncompilable" if does_not_compile else "skipped"
        elif result["worker_outcome"] != "normal":
            outcome = "incompetent"
        else:
            outcome = result["test_outcome"]
        rows.append(
            (
                # Where, then cosmic-ray's own order among one operator's mutants (a number has
                # two at one place): never the outcome, so an occurrence stays what it was.
                (tuple(mutation["start_pos"]), mutation["operator_name"], mutation["occurrence"]),
                mutation["operator_name"],
                line_number,
                outcome,
                _mutated_lines(result.get("diff") or "") if result else "",
            )
        )
    rows.sort(key=lambda row: row[0])
    seen: Counter[tuple[str, str]] = Counter()
    mutants = []
    for _, operator, line_number, outcome, mutated in rows:
        line = source_lines[line_number - 1].strip()
        occurrence = seen[(operator, line)]
        seen[(operator, line)] += 1
        mutants.append(
            Mutant(
                module=target.module,
                operator=operator,
                line_number=line_number,
                line=line,
                occurrence=occurrence,
                mutated=mutated,
                outcome=outcome,
            )
        )
    return mutants


def forget_survivors(session: Path) -> int:
    """Drop the survivors' results, so that `cosmic-ray exec` runs them again."""
    with sqlite3.connect(session) as db:
        return db.execute(
            "DELETE FROM work_results WHERE UPPER(test_outcome) = 'SURVIVED'"
        ).rowcount


def run_target(target: Target, shared: dict[str, Any], mode: str) -> Outcome:
    started = time.monotonic()
    outcome = Outcome(target)
    work = BUILD / target.slug
    tree, session, config, log = (
        work / "tree",
        work / "session.sqlite",
        work / "cosmic-ray.toml",
        work / "log.txt",
    )
    try:
        if mode != "fresh" and not (session.exists() and tree.exists()):
            outcome.error = f"no session to continue in {work}: run without --{mode}"
            return outcome
        if mode == "report":
            outcome.mutants = read_session(target, tree, session)
            return outcome
        if mode == "retest-survivors":
            # The same mutants, the tests as they are now: the module must not have moved since
            # the session was made (the tree's copy may hold a mutant an interrupted run left).
            original = work / "module.orig"
            module_text = (original if original.exists() else tree / target.module).read_text()
            if (REPO / target.module).read_text() != module_text:
                outcome.error = f"{target.module} changed since its session: run it afresh"
                return outcome
            snapshot(tree)
        if mode == "fresh":
            work.mkdir(parents=True, exist_ok=True)
            log.write_text("")
            session.unlink(missing_ok=True)
            snapshot(tree)
            (work / "module.orig").write_text((tree / target.module).read_text())
        if mode in ("fresh", "retest-survivors"):
            baseline_started = time.monotonic()
            baseline = subprocess.run(
                shlex.split(test_command(target)),
                cwd=tree,
                env=tree_environment(tree),
                capture_output=True,
                text=True,
            )
            outcome.baseline_seconds = time.monotonic() - baseline_started
            if baseline.returncode != 0:
                outcome.error = (
                    f"the unmutated tests fail ({test_command(target)}):\n"
                    + (baseline.stdout + baseline.stderr)[-3000:]
                )
                return outcome
            timeout = max(
                float(shared.get("minimum-timeout", 60)),
                math.ceil(outcome.baseline_seconds * float(shared.get("timeout-factor", 4))),
            )
            write_config(target, shared, timeout, config)
        if mode == "fresh":
            _run([str(BIN / "cosmic-ray"), "init", str(config), str(session)], tree, log)
            _run([str(BIN / "cr-filter-operators"), str(session), str(config)], tree, log)
            _run([sys.executable, "-m", "tools.mutation.compile_filter", str(session)], tree, log)
        if mode == "retest-survivors":
            forget_survivors(session)
        _run([str(BIN / "cosmic-ray"), "exec", str(config), str(session)], tree, log)
        outcome.mutants = read_session(target, tree, session)
        incompetent = [m for m in outcome.mutants if m.outcome in ("incompetent", "pending")]
        if incompetent:
            outcome.error = f"{len(incompetent)} mutants did not run (see {log})"
    except subprocess.CalledProcessError as error:
        outcome.error = f"{shlex.join(error.cmd)} failed (see {log})"
    finally:
        outcome.seconds = time.monotonic() - started
    return outcome


def _toml_string(text: str) -> str:
    return json.dumps(text)


def report(outcomes: Iterable[Outcome], equivalents: Sequence[Equivalent]) -> int:
    """Print every survivor and a summary table; the exit status."""
    by_key = {e.key(): e for e in equivalents}
    matched: set[tuple[str, str, str, int]] = set()
    failed = False
    summary = []
    ran_modules = set()
    for outcome in outcomes:
        target = outcome.target
        if outcome.error:
            failed = True
            print(f"\n{target.module}: ERROR: {outcome.error}")
        else:
            ran_modules.add(target.module)
        counts: Counter[str] = Counter()
        left = []
        for mutant in outcome.mutants:
            if mutant.outcome == "survived":
                equivalent = by_key.get(mutant.key())
                if equivalent is not None:
                    matched.add(mutant.key())
                    counts["equivalent"] += 1
                    continue
                left.append(mutant)
            counts[mutant.outcome] += 1
        for mutant in left:
            failed = True
            print(
                f"\nSURVIVED {mutant.module}:{mutant.line_number} {mutant.operator}\n"
                f"  original: {mutant.line}\n"
                f"  mutated:  {mutant.mutated}\n"
                "  kill it with a test, or list it in tools/mutation/equivalent.toml:\n"
                f"  [[equivalent]]\n  module = {_toml_string(mutant.module)}\n"
                f"  operator = {_toml_string(mutant.operator)}\n"
                f"  line = {_toml_string(mutant.line)}\n"
                f"  occurrence = {mutant.occurrence}\n"
                '  reason = "..."'
            )
        ran = len(outcome.mutants) - counts["skipped"] - counts["uncompilable"]
        summary.append(
            (
                target.module,
                ran,
                counts["killed"],
                counts["equivalent"],
                len(left),
                counts["skipped"],
                counts["uncompilable"],
                outcome.baseline_seconds,
                outcome.seconds,
            )
        )
    # A module whose session failed already fails the run; its entries are not judged.
    stale = [e for e in equivalents if e.module in ran_modules and e.key() not in matched]
    for entry in stale:
        failed = True
        print(
            f"\nOUT OF DATE in tools/mutation/equivalent.toml: {entry.module} {entry.operator} "
            f"occurrence {entry.occurrence} of `{entry.line}` is not a surviving mutant any more"
        )
    print(
        "\n| module | mutants | killed | equivalent (listed) | survivors left "
        "| operators left out | do not compile | tests' own run s | run s |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for row in summary:
        module, ran, killed, listed, left_count, skipped, uncompilable, baseline, seconds = row
        print(
            f"| `{module}` | {ran} | {killed} | {listed} | {left_count} | {skipped} "
            f"| {uncompilable} | {baseline:.1f} | {seconds:.0f} |"
        )
    return 1 if failed else 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.mutation.run", description=__doc__)
    parser.add_argument("modules", nargs="*", metavar="MODULE", help="target modules (paths)")
    parser.add_argument(
        "--changed",
        metavar="BASE_REF",
        help="only the target modules `git diff --name-only BASE_REF` touches",
    )
    parser.add_argument(
        "--jobs", type=int, default=1, help="modules mutated at once, each in its own tree copy"
    )
    again = parser.add_mutually_exclusive_group()
    again.add_argument(
        "--resume",
        action="store_true",
        help="continue the sessions already in build/mutation (same tree copies)",
    )
    again.add_argument(
        "--retest-survivors",
        action="store_true",
        help="run the last sessions' survivors again against the tests as they are now (the "
        "modules themselves unchanged); the killed stay killed, since tests were only added",
    )
    parser.add_argument(
        "--list", action="store_true", help="only list the target modules and their tests"
    )
    again.add_argument(
        "--report",
        action="store_true",
        help="only report on the sessions already in build/mutation (run nothing)",
    )
    args = parser.parse_args(argv)

    shared, targets = load_targets()
    equivalents = load_equivalents()
    known = {target.module for target in targets}
    unknown = [m for m in args.modules if m not in known]
    if unknown:
        parser.error(f"not a target in {TARGETS_FILE.relative_to(REPO)}: {', '.join(unknown)}")
    if args.modules:
        targets = [t for t in targets if t.module in args.modules]
    if args.changed:
        targets = changed_targets(args.changed, targets)
    unknown_equivalents = [e for e in equivalents if e.module not in known]
    if unknown_equivalents:
        parser.error(f"equivalent.toml names modules that are no target: {unknown_equivalents}")
    if args.list:
        for target in targets:
            print(f"{target.module}: {' '.join(target.tests)}")
        return 0
    if not targets:
        print("no target module to mutate")
        return 0

    BUILD.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        mode = (
            "resume"
            if args.resume
            else "retest-survivors"
            if args.retest_survivors
            else "report"
            if args.report
            else "fresh"
        )
        futures = [pool.submit(run_target, t, shared, mode) for t in targets]
        outcomes = []
        for future in futures:
            outcome = future.result()
            print(
                f"{outcome.target.module}: {len(outcome.mutants)} mutants in "
                f"{outcome.seconds:.0f} s{' (ERROR)' if outcome.error else ''}",
                flush=True,
            )
            outcomes.append(outcome)
    status = report(outcomes, equivalents)
    print(f"\n{len(outcomes)} modules in {time.monotonic() - started:.0f} s")
    return status


if __name__ == "__main__":
    sys.exit(main())
