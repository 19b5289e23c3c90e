"""Mutation testing of the modules whose lines carry a promise (docs/testing.md)."""
