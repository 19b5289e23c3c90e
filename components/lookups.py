"""Synchronous provider look-ups (invokes) made before anything but the providers is registered:
how a failed one reads in the message that stops the program."""

from __future__ import annotations


def failure_reason(error: Exception) -> str:
    """The provider's error on one line (its text spans several), or the error's type."""
    return " ".join(str(error).split()) or type(error).__name__
