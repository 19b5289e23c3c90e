"""Entry point Pulumi runs for `--policy-pack policy`. Tests never import this module: constructing
the PolicyPack starts a gRPC server and blocks."""

import sys
from pathlib import Path

# The checks live in the package (kiam_eks.invariants), installed in the pack's virtualenv without
# its dependencies; the pack adds no logic of its own. The checkout is on the path for `policy`.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from typing import Any

from pulumi_policy import EnforcementLevel, PolicyPack
from pulumi_policy import policy as policy_runtime

from policy.kiam_policy import POLICIES, take_stack_config

_configure_stack = policy_runtime._PolicyAnalyzerServicer.ConfigureStack


def _configure_stack_and_its_config(self: Any, request: Any, context: Any) -> Any:
    # The engine calls this before any analysis; pulumi-policy 1.21 drops the config it carries.
    take_stack_config(request.config, request.config_secret_keys)
    return _configure_stack(self, request, context)


policy_runtime._PolicyAnalyzerServicer.ConfigureStack = _configure_stack_and_its_config  # type: ignore[method-assign,assignment]

PolicyPack(name="kiam", enforcement_level=EnforcementLevel.MANDATORY, policies=POLICIES)
