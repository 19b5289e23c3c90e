"""Typed, validated stack settings: the one place where kiam's settings and their defaults live."""

from settings.loader import SettingsError, load_settings, settings_from_stack_file
from settings.stack import StackSettings

__all__ = ["SettingsError", "StackSettings", "load_settings", "settings_from_stack_file"]
