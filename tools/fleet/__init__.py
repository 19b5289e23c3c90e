"""The fleet: every stack previewed at once, and changes rolled out wave by wave behind kiam's own
health gates (`python -m tools.fleet`, docs/fleet.md)."""
