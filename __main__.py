"""Entry point for `pulumi up` / `pulumi preview` (and, through the mock engine, the tests and the
offline plan): validate the stack's settings, create the providers once, build `Kiam` (on AWS)
from them, export."""

import pulumi

from kiam_eks.program.startup import start

# Before the SDKs below are imported: their imports allocate too (program/collector.py), and the
# engine answers what the last update left while they are (components/stack_state.py).
start()

from kiam_eks.program.providers import create_providers  # noqa: E402
from kiam_eks.program.stack import build, export_outputs, judge_change  # noqa: E402
from kiam_eks.settings import SettingsError, load_settings  # noqa: E402

try:
    settings = load_settings()
    # What the stack's last update installed, and whether this change can be applied to it.
    transition = judge_change(settings)
except SettingsError as error:
    # RunError ends the program with the message alone: a user mistake gets no traceback, and
    # since nothing has been registered yet, nothing is created, changed or deleted.
    raise pulumi.RunError(str(error)) from None

providers = create_providers(settings, transition)
kiam = build(
    settings, providers.as_list(), transition=transition, oidc_issuer=providers.oidc_issuer
)
export_outputs(kiam, settings)
