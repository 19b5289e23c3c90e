"""Pulumi components, one per module; `Kiam` composes the others."""
