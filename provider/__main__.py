"""The component provider: hosts kiam_eks's public components for programs in any language.

The engine starts it when a program uses a `kiam:index:*` type after `pulumi package add`; the
schema it serves is inferred from the components' type hints and docstrings, and is
`schema.json` here (`make schema` writes it; tests/test_provider_schema.py compares).
"""

from importlib.metadata import version

from kiam_eks.components.kiam import Kiam
from kiam_eks.components.kiam_kubernetes import KiamKubernetes
from kiam_eks.components.provider_host import StrictComponentProvider, host
from kiam_eks.contracts.tokens import COMPONENT_PACKAGE

# The components other languages can use: the whole install (it creates AWS and pulumi-tls
# resources, so a program using it needs those providers too) and the Kubernetes side alone.
COMPONENTS = [Kiam, KiamKubernetes]
DISTRIBUTION = "kiam-eks"


def component_provider() -> StrictComponentProvider:
    """The provider served: the SDK's, refusing input keys its schema does not name
    (components/provider_host.py). tools/api_reference.py reads its schema and mapping here."""
    return StrictComponentProvider(COMPONENTS, COMPONENT_PACKAGE, None, version(DISTRIBUTION))


if __name__ == "__main__":
    host(component_provider())
