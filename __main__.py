"""Entry point for `pulumi up` / `pulumi preview`: validate the stack's settings, then build it."""

import pulumi

from program import deploy
from settings import SettingsError, load_settings

try:
    settings = load_settings()
except SettingsError as error:
    # RunError ends the program with the message alone: a user mistake gets no traceback, and
    # since nothing has been registered yet, nothing is created, changed or deleted.
    raise pulumi.RunError(str(error)) from None

deploy(settings)
