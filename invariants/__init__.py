"""The guarantees of this project as pure checks over rendered resources.

The same functions run in the unit tests, in the offline plan and in the CrossGuard policy pack
(`policy/`), so a guarantee is written once and enforced at every gate a change passes.
"""

from kiam_eks.invariants.checks import CHECKS, check_all
from kiam_eks.invariants.model import UNKNOWN, Resource, Violation

__all__ = ["CHECKS", "UNKNOWN", "Resource", "Violation", "check_all"]
