"""The real-engine tests' entry point: the same settings, composition and Kubernetes provider as
`__main__.py`, with the cloud side replaced by stand-ins (`e2e/standins`).

The harness runs it with `KIAM_E2E_KUBECONFIG` (the control plane) and `KIAM_E2E_STATE` (where the
stand-in CA keeps what it issued) in the environment.
"""

import os
import sys
from pathlib import Path
from typing import Any

# The language host runs this file by path; the project's packages live two folders up.
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import pulumi

from kiam_eks.program.startup import start

# As `__main__.py` does, before the SDKs are imported (program/startup.py).
start()

from e2e.standins.cloud import KwokCloud, described_cluster  # noqa: E402
from kiam_eks.components.cloud import CloudSide  # noqa: E402
from kiam_eks.program.cluster_identity import (  # noqa: E402
    check_cluster_identity,
    kubeconfig_document,
)
from kiam_eks.program.kube_api import KubeApi  # noqa: E402
from kiam_eks.program.kubernetes import kubernetes_provider  # noqa: E402
from kiam_eks.program.live_cluster import judge_live_cluster  # noqa: E402
from kiam_eks.program.stack import build, export_outputs, judge_change  # noqa: E402
from kiam_eks.settings import SettingsError, load_settings  # noqa: E402

try:
    settings = load_settings()
    transition = judge_change(settings)
except SettingsError as error:
    raise pulumi.RunError(str(error)) from None

plane = Path(os.environ["KIAM_E2E_KUBECONFIG"])
kubeconfig: Path | dict[str, Any] = plane
given: pulumi.Input[str] = str(plane)
if settings.kubeconfig is not None:
    # As program/providers.py checks it against EKS, with the control plane standing in for the
    # EKS cluster; then used as the program uses it.
    check_cluster_identity(settings, lambda: described_cluster(plane))
    document = kubeconfig_document(settings.kubeconfig.get_secret_value())
    kubeconfig = document
    given = pulumi.Output.secret(settings.kubeconfig.get_secret_value())
# As program/providers.py does before the Kubernetes provider.
judge_live_cluster(settings, transition, lambda: KubeApi(kubeconfig))
provider = kubernetes_provider(settings, given)
# The stand-ins read the control plane where AWS would be asked (is the Pod Identity agent there?).
cloud: CloudSide = KwokCloud(settings, Path(os.environ["KIAM_E2E_STATE"]), KubeApi(plane))
export_outputs(build(settings, [provider], transition=transition, cloud=cloud), settings)
