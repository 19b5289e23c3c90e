"""The Pulumi program: providers, and the one function that builds a stack from settings."""

from program.stack import deploy

__all__ = ["deploy"]
