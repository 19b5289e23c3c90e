"""The Pulumi program: the providers, and the function that builds a stack from settings."""

from program.providers import create_providers
from program.stack import build, export_outputs

__all__ = ["build", "create_providers", "export_outputs"]
