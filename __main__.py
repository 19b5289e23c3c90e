"""Entry point for `pulumi up` / `pulumi preview` (and, through the mock engine, the tests and the
offline plan): validate the stack's settings, create the providers once, build, export."""

import pulumi

from program import build, create_providers, export_outputs
from settings import SettingsError, load_settings

try:
    settings = load_settings()
except SettingsError as error:
    # RunError ends the program with the message alone: a user mistake gets no traceback, and
    # since nothing has been registered yet, nothing is created, changed or deleted.
    raise pulumi.RunError(str(error)) from None

providers = create_providers(settings)
export_outputs(build(settings, providers), settings)
