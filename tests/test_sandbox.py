"""`make sandbox` answers a bad stack file like the offline plan: exit 2, the loader's message,
and nothing started (no toolchain looked for, no sandbox state written)."""

from __future__ import annotations

from pathlib import Path

import pytest

from e2e import sandbox
from tests.conftest import PROJECT_DIR

BAD = PROJECT_DIR / "tests" / "bad_stacks" / "12-replicas-not-a-number.yaml"


def test_invalid_settings_exit_2_before_anything_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))

    def no_toolchain() -> Path:
        raise AssertionError("the toolchain must not be looked for")

    monkeypatch.setattr(sandbox.toolchain, "bin_dir", no_toolchain)
    assert sandbox.main(["up", "--config-file", str(BAD)]) == 2
    assert capsys.readouterr().err == (
        f"{BAD}: invalid kiam settings (1 problem):\n"
        "  - kiam:server.replicas: Input should be a valid integer, unable to parse string as an "
        'integer (got "three")\n'
    )
    assert list(tmp_path.iterdir()) == []
