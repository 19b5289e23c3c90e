"""The README's "Use it from your own program" shows one example program per language exactly as it
is, and docs/package.md the other Python one, so what a reader copies is what `make e2e` runs
(e2e/tests/test_consumers.py) or the mock engine runs (tests/test_kiam_args.py)."""

from __future__ import annotations

import re

import pytest

from tools.mock_engine import PROJECT_DIR

README = (PROJECT_DIR / "README.md").read_text()
SECTION = README.split("## Use it from your own program", 1)[1].split("\n## ", 1)[0]
EXAMPLES = {
    "python": PROJECT_DIR / "examples" / "python-whole" / "__main__.py",
    "typescript": PROJECT_DIR / "examples" / "typescript" / "index.ts",
    "yaml": PROJECT_DIR / "examples" / "yaml" / "Pulumi.yaml",
}
# The other Python example, moved out of the README: docs/package.md, in a section of its own.
PACKAGE_PAGE = (PROJECT_DIR / "docs" / "package.md").read_text()
MOVED_SECTION = PACKAGE_PAGE.split("## `KiamKubernetes` from Python", 1)[1].split("\n## ", 1)[0]
MOVED_EXAMPLE = PROJECT_DIR / "examples" / "python" / "__main__.py"


def blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", text, flags=re.S)


@pytest.mark.parametrize("language", sorted(EXAMPLES))
def test_the_readme_shows_one_example_per_language_as_it_is(language: str) -> None:
    assert blocks(SECTION, language) == [EXAMPLES[language].read_text()]


def test_the_docs_show_the_other_python_example_as_it_is() -> None:
    assert blocks(MOVED_SECTION, "python") == [MOVED_EXAMPLE.read_text()]
    assert "[docs/package.md](docs/package.md)" in SECTION


def test_the_examples_add_the_package_the_way_the_section_says() -> None:
    assert "pulumi package add <clone>/provider" in SECTION
    for example in ("python", "python-whole"):
        requirements = (PROJECT_DIR / "examples" / example / "requirements.txt").read_text()
        assert [line for line in requirements.splitlines() if not line.startswith("#")] == ["../.."]
    assert (PROJECT_DIR / "examples" / "python" / "../../pyproject.toml").resolve() == (
        PROJECT_DIR / "pyproject.toml"
    )
