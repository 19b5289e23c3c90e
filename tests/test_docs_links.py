"""The README and docs/ hold together: every relative link reaches a file that exists, and every
`#anchor` a heading of its page as GitHub names it; the README stays a front door a newcomer reads
in minutes (at most 300 lines), and its map of docs/ leads to every page there."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kiam_eks.invariants import CHECKS
from tools.mock_engine import PROJECT_DIR

README = PROJECT_DIR / "README.md"
DOCS = PROJECT_DIR / "docs"
PAGES = [README, PROJECT_DIR / "e2e" / "toolchain" / "README.md", *sorted(DOCS.rglob("*.md"))]
MAP_HEADING = "## Where to read on: docs/ by reader"

FENCE = re.compile(r"^\s*(```|~~~)")
CODE_SPAN = re.compile(r"(`+)(?!`).*?(?<!`)\1(?!`)")
LINK = re.compile(r"!?\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
EXTERNAL = ("http://", "https://", "mailto:")


def prose_lines(text: str) -> list[str]:
    """The lines of a Markdown text outside fenced code blocks."""
    lines: list[str] = []
    fenced = False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            lines.append(line)
    return lines


def slug(heading: str) -> str:
    """A heading's anchor as GitHub writes it: the rendered text (a link's text, a code span's
    content), lower case, without punctuation but hyphens and underscores, spaces as hyphens."""
    text = LINK.sub(lambda m: m.group(1), heading)
    # Outside code spans an HTML tag is markup, not text; inside one, `<name>` is text.
    parts = re.split(r"(`+[^`]*`+)", text)
    text = "".join(p if p.startswith("`") else re.sub(r"<[^>]+>", "", p) for p in parts)
    text = re.sub(r"[^\w\- ]", "", text.lower())
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """Every heading's anchor in `page`; a repeated one gets -1, -2, ... as on GitHub."""
    seen: dict[str, int] = {}
    found: set[str] = set()
    for line in prose_lines(page.read_text()):
        match = HEADING.match(line)
        if not match:
            continue
        base = slug(match.group(2))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def links(text: str) -> list[str]:
    """The targets of the Markdown links in `text`, outside code blocks and code spans."""
    targets: list[str] = []
    for line in prose_lines(text):
        without_code = CODE_SPAN.sub(lambda m: "x" * len(m.group(0)), line)
        targets.extend(m.group(2) for m in LINK.finditer(without_code))
    return targets


def relative_links(page: Path) -> list[str]:
    return [t for t in links(page.read_text()) if not t.startswith(EXTERNAL)]


def broken(page: Path, target: str) -> str | None:
    """Why `target`, linked from `page`, leads nowhere; None when it leads somewhere."""
    path_part, _, anchor = target.partition("#")
    destination = (page.parent / path_part).resolve() if path_part else page
    if not destination.exists():
        return f"{path_part} does not exist"
    if not anchor:
        return None
    if destination.suffix != ".md":
        return f"#{anchor} on {destination.name}, which has no headings"
    if anchor not in anchors(destination):
        return f"no heading of {destination.name} is #{anchor}"
    return None


def test_the_slug_is_githubs() -> None:
    assert slug("Rehearse a change on a local cluster: `make sandbox`") == (
        "rehearse-a-change-on-a-local-cluster-make-sandbox"
    )
    assert slug("The plan at scale (issue 39)") == "the-plan-at-scale-issue-39"
    assert slug("`kiam:agent.*`") == "kiamagent"
    assert slug("`kiam:applications.<name>.servedBy`") == "kiamapplicationsnameservedby"
    assert slug("Mutation testing (`make mutation`)") == "mutation-testing-make-mutation"
    assert slug("The real engine (`make e2e`, `make e2e-bench`)") == (
        "the-real-engine-make-e2e-make-e2e-bench"
    )
    assert slug("Phase 1: new servers next to the old ones") == (
        "phase-1-new-servers-next-to-the-old-ones"
    )


def test_the_anchors_of_a_page_are_its_headings_and_repeats_are_numbered(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("# Title\n\n## Notes\n\n```sh\n# not a heading\n```\n\n## Notes\n\n### Notes\n")
    assert anchors(page) == {"title", "notes", "notes-1", "notes-2"}
    assert "rehearse-a-change-on-a-local-cluster-make-sandbox" in anchors(DOCS / "sandbox.md")
    assert "kiamagent" in anchors(DOCS / "transitions.md")


def test_links_in_code_are_not_links() -> None:
    text = "[a](a.md) `[b](b.md)`\n```md\n[c](c.md)\n```\n[`d`](d.md#x)\n"
    assert links(text) == ["a.md", "d.md#x"]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(PROJECT_DIR)))
def test_every_relative_link_leads_somewhere(page: Path) -> None:
    problems = [
        f"({target}): {why}"
        for target in relative_links(page)
        if (why := broken(page, target)) is not None
    ]
    assert problems == []


def test_the_readme_is_a_front_door() -> None:
    assert len(README.read_text().splitlines()) <= 300


def test_the_readmes_map_leads_to_every_page_of_docs() -> None:
    text = README.read_text()
    assert MAP_HEADING in text
    section = text.split(MAP_HEADING, 1)[1].split("\n## ", 1)[0]
    mapped = {
        (README.parent / target.partition("#")[0]).resolve()
        for target in links(section)
        if not target.startswith(EXTERNAL)
    }
    pages = {page.resolve() for page in DOCS.glob("*.md")}
    assert sorted(p.name for p in pages - mapped) == []


def test_the_readme_lists_each_guarantee_once_in_the_order_the_checks_run() -> None:
    """The short list numbers the guarantees as `CHECKS` runs them (presence, first, is none)."""
    section = README.read_text().split("## What is guaranteed", 1)[1].split("\n## ", 1)[0]
    numbers = [int(m) for m in re.findall(r"^(\d+)\. ", section, flags=re.M)]
    assert numbers == list(range(1, len(CHECKS)))
    full = (DOCS / "guarantees.md").read_text()
    assert all(f"{n}. " in full for n in numbers)
