"""The README's "Use it from your own program" shows the example programs exactly as they are, so
what a reader copies is what `make e2e` runs (e2e/tests/test_consumers.py)."""

from __future__ import annotations

import re

import pytest

from tools.mock_engine import PROJECT_DIR

README = (PROJECT_DIR / "README.md").read_text()
SECTION = README.split("## Use it from your own program", 1)[1].split("\n## ", 1)[0]
EXAMPLES = {
    "python": [
        PROJECT_DIR / "examples" / "python" / "__main__.py",
        PROJECT_DIR / "examples" / "python-whole" / "__main__.py",
    ],
    "typescript": [PROJECT_DIR / "examples" / "typescript" / "index.ts"],
    "yaml": [PROJECT_DIR / "examples" / "yaml" / "Pulumi.yaml"],
}


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", SECTION, flags=re.S)


@pytest.mark.parametrize("language", sorted(EXAMPLES))
def test_the_readme_shows_each_example_as_it_is(language: str) -> None:
    assert blocks(language) == [path.read_text() for path in EXAMPLES[language]]


def test_the_examples_add_the_package_the_way_the_section_says() -> None:
    assert "pulumi package add <clone>/provider" in SECTION
    for example in ("python", "python-whole"):
        requirements = (PROJECT_DIR / "examples" / example / "requirements.txt").read_text()
        assert [line for line in requirements.splitlines() if not line.startswith("#")] == ["../.."]
    assert (PROJECT_DIR / "examples" / "python" / "../../pyproject.toml").resolve() == (
        PROJECT_DIR / "pyproject.toml"
    )
