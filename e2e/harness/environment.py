"""One control plane shaped for a stack, and the Pulumi stacks that run against it: what the
real-engine tests and `make sandbox` both use."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from e2e.harness import stack_yaml
from e2e.harness.cluster import INSTANT, ControlPlane, PodTiming
from e2e.harness.drainer import Drainer
from e2e.harness.kiam_chain import KiamChain
from e2e.harness.kube import Kube, is_ready, selector
from e2e.harness.node_rules import NodeRulesModel
from e2e.harness.pulumi import PulumiStack, deliver_interrupts, install_provider
from e2e.harness.shape import WORKERS, ClusterShape, shape_of
from kiam_eks.contracts.labels import NODE_GROUP_LABEL, Role, selector_labels
from kiam_eks.settings.loader import settings_from_stack_file
from kiam_eks.settings.stack import StackSettings


@dataclass
class Environment:
    """A running control plane with a Pulumi home and backend of its own, under `root`."""

    root: Path
    bin_dir: Path
    plane: ControlPlane
    kube: Kube

    def __post_init__(self) -> None:
        # EKS drains a node before it terminates it: so does the harness, for as long as this
        # environment is in use (the stand-in's Nodes wait for it, e2e/harness/drainer.py).
        self.drainer = Drainer(self.kube)
        self._draining = self.drainer.running()
        self._draining.__enter__()
        # What kiam's agents leave in each node's iptables, and what kubelets mount, from the
        # start: kwok nodes have neither (e2e/harness/node_rules.py).
        self.node_rules = NodeRulesModel(self.kube)
        self._modelling = self.node_rules.running()
        self._modelling.__enter__()

    @classmethod
    def start(
        cls, root: Path, bin_dir: Path, name: str, timing: PodTiming = INSTANT
    ) -> Environment:
        deliver_interrupts()
        plane = ControlPlane(name=name, workdir=root / "cluster", bin_dir=bin_dir)
        kube = plane.start(timing)
        install_provider(root / "pulumi-home", bin_dir)
        return cls(root=root, bin_dir=bin_dir, plane=plane, kube=kube)

    def kiam_chain(self, namespace: str) -> KiamChain:
        """The judge of whether kiam serves a pod, for kiam in `namespace`."""
        return KiamChain(self.kube, self.node_rules, namespace)

    def stop(self) -> None:
        self._modelling.__exit__(None, None, None)
        self._draining.__exit__(None, None, None)
        self.plane.stop()

    def stack(self, name: str, **program: Any) -> PulumiStack:
        """A stack of the e2e program against this cluster (created by `PulumiStack.create`);
        `program`: another program's `program_dir` and `extra_env` (the bench's floor)."""
        return PulumiStack(
            stack=name,
            project_dir=self.root / "projects" / name,
            backend_dir=self.root / "backend",
            home=self.root / "pulumi-home",
            bin_dir=self.bin_dir,
            kubeconfig=self.plane.kubeconfig,
            state_dir=self.root / "state" / name,
            **program,
        )

    def shape_for(
        self, stack_file: Path, workers: int = WORKERS
    ) -> tuple[StackSettings, ClusterShape]:
        """Validate the stack file, then give the cluster the nodes and namespaces it expects,
        with `workers` workload nodes."""
        settings, _ = settings_from_stack_file(stack_file)
        shape = shape_of(settings, workers)
        shape.apply(self.kube)
        return settings, shape

    # --- reading the cluster back ------------------------------------------------------------

    def pods(self, namespace: str, role: Role) -> list[dict[str, Any]]:
        query = selector(selector_labels(role))
        return self.kube.items(f"/api/v1/namespaces/{namespace}/pods?labelSelector={query}")

    def dedicated_nodes(self, group: str | None = None) -> list[str]:
        """Nodes of the stand-in node group (of one group, if named)."""
        query = f"{NODE_GROUP_LABEL}={group}" if group else NODE_GROUP_LABEL
        return sorted(
            n["metadata"]["name"] for n in self.kube.items(f"/api/v1/nodes?labelSelector={query}")
        )

    def placement(self, namespace: str) -> dict[str, list[str]]:
        """Node -> the kiam pods on it (`server:<ready>` / `agent:<ready>`), for people to read."""
        where: dict[str, list[str]] = {
            n["metadata"]["name"]: [] for n in self.kube.items("/api/v1/nodes")
        }
        roles: tuple[Role, ...] = ("server", "agent")
        for role in roles:
            for pod in self.pods(namespace, role):
                node = pod["spec"].get("nodeName") or "(pending)"
                state = "Ready" if is_ready(pod) else (pod.get("status") or {}).get("phase", "?")
                where.setdefault(node, []).append(f"{role} {pod['metadata']['name']} {state}")
        return where


def write_stack_file(path: Path, config: dict[str, Any], comment: str = "") -> Path:
    """A stack file with this `config:` map."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = stack_yaml.dump({"config": config})
    path.write_text((f"# {comment}\n" if comment else "") + text)
    return path
