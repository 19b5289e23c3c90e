"""Entry point Pulumi runs for `--policy-pack policy`. Tests never import this module: constructing
the PolicyPack starts a gRPC server and blocks."""

import sys
from pathlib import Path

# The checks live in the project (invariants/); the pack adds no logic of its own.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pulumi_policy import EnforcementLevel, PolicyPack

from policy.kiam_policy import POLICIES

PolicyPack(name="kiam", enforcement_level=EnforcementLevel.MANDATORY, policies=POLICIES)
