"""Where the toolchain's binaries are: built by `e2e/toolchain/build.sh` into a cache outside the
work tree, keyed by the pinned versions."""

from __future__ import annotations

import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BUILD_SCRIPT = REPO / "e2e" / "toolchain" / "build.sh"
PROVIDER_VERSION_KEY = "KUBERNETES_PROVIDER_RELEASE"


class ToolchainMissingError(RuntimeError):
    """The binaries are not built (yet): `make e2e-toolchain` builds them."""


def bin_dir() -> Path:
    """The directory of every toolchain binary; never builds (that is `make e2e-toolchain`)."""
    done = subprocess.run([str(BUILD_SCRIPT), "bin"], capture_output=True, text=True)
    if done.returncode != 0 or not done.stdout.strip():
        raise ToolchainMissingError(
            "the e2e toolchain is not built: run `make e2e-toolchain` (about 40 minutes cold, "
            "seconds when cached)"
        )
    return Path(done.stdout.strip().splitlines()[-1])


def pinned(key: str) -> str:
    """One pinned version from `e2e/toolchain/versions.env`."""
    for line in (BUILD_SCRIPT.parent / "versions.env").read_text().splitlines():
        name, _, value = line.partition("=")
        if name.strip() == key:
            return value.strip()
    raise KeyError(key)
