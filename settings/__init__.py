"""Typed, validated stack settings: the one place where kiam's settings and their defaults live."""

from kiam_eks.settings.loader import SettingsError, load_settings, settings_from_stack_file
from kiam_eks.settings.stack import StackSettings

__all__ = ["SettingsError", "StackSettings", "load_settings", "settings_from_stack_file"]
