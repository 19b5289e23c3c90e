"""The program's first steps, before anything heavier is imported: Python's collector set for a
program that keeps its whole resource graph (collector.py), and the question for the stack's
stored state sent to the engine, which answers while the program imports its modules and
validates the stack file (components/stack_state.py)."""

from __future__ import annotations

from kiam_eks.components.stack_state import start_reading
from kiam_eks.program.collector import collect_less_often


def start() -> None:
    """What both entry points (`__main__.py`, e2e/program/__main__.py) do first."""
    collect_less_often()
    start_reading()
