"""Entry point for `pulumi up` / `pulumi preview` (and, through the mock engine, the tests and the
offline plan): validate the stack's settings, create the providers once, build with the AWS cloud
side, export."""

import pulumi

from components.cloud import CloudSide
from program.aws_cloud import AwsCloud
from program.providers import create_providers
from program.stack import build, export_outputs, judge_change
from settings import SettingsError, load_settings

try:
    settings = load_settings()
    # What the stack's last update installed, and whether this change can be applied to it.
    transition = judge_change(settings)
except SettingsError as error:
    # RunError ends the program with the message alone: a user mistake gets no traceback, and
    # since nothing has been registered yet, nothing is created, changed or deleted.
    raise pulumi.RunError(str(error)) from None

providers = create_providers(settings)
cloud: CloudSide = AwsCloud(settings, providers.oidc_issuer)
export_outputs(build(settings, cloud, providers.as_list(), transition), settings, transition)
