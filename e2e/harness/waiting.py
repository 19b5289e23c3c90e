"""Waiting on a condition of the cluster, never for a fixed time: polled until it holds or a
generous deadline passes, which fails naming what was never seen."""

from __future__ import annotations

import time
from collections.abc import Callable

POLL_SECONDS = 0.2


def wait_for(what: str, condition: Callable[[], object], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(POLL_SECONDS)
    raise TimeoutError(f"never observed: {what}")
