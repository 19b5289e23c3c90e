"""A real Kubernetes control plane (kube-apiserver, controller-manager, scheduler, etcd) with kwok
simulating nodes and pods, started and stopped by `kwokctl` from the toolchain's binaries."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from e2e.harness.kube import ApiError, Kube
from e2e.harness.toolchain import pinned

START_TIMEOUT_SECONDS = 180
# kwokctl gives each component the first port, counting down from 32766, that nothing listens on
# yet (sigs.k8s.io/kwok v0.8.0, pkg/utils/net/unused_port.go `GetUnusedPort`): two clusters
# created at the same moment pick the same ports. So creating one is serialised machine-wide (the
# suite's parallel workers, a sandbox), until its components listen (`--wait`).
CREATE_LOCK = Path(tempfile.gettempdir()) / "kiam-e2e-kwokctl-create.lock"


@contextmanager
def _creating_alone() -> Iterator[None]:
    with CREATE_LOCK.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


@dataclass
class ControlPlane:
    """One kwokctl cluster; `workdir` holds all of its state, `kubeconfig` its credentials."""

    name: str
    workdir: Path
    bin_dir: Path

    @property
    def kubeconfig(self) -> Path:
        return self.workdir / "kubeconfig.yaml"

    def _env(self) -> dict[str, str]:
        return {
            **os.environ,
            "KWOK_WORKDIR": str(self.workdir / "kwok"),
            "KWOK_KUBE_VERSION": pinned("KUBERNETES_VERSION"),
            "KWOK_ETCD_VERSION": pinned("ETCD_VERSION").removeprefix("v"),
            "KWOK_KUBECTL_BINARY": str(self.bin_dir / "kubectl"),
        }

    def _kwokctl(
        self, *args: str, timeout: float = START_TIMEOUT_SECONDS
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.bin_dir / "kwokctl"), "--name", self.name, *args],
            env=self._env(),
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def start(self) -> Kube:
        """Create the cluster (nothing is downloaded: every binary is the toolchain's)."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        b = self.bin_dir
        with _creating_alone():
            done = self._create(b)
        if done.returncode != 0:
            self.stop()
            raise RuntimeError(f"kwokctl create cluster failed:\n{done.stdout}\n{done.stderr}")
        kube = Kube(self.kubeconfig, self.bin_dir / "kubectl")
        _wait_for_default_service_account(kube)
        return kube

    def _create(self, b: Path) -> subprocess.CompletedProcess[str]:
        return self._kwokctl(
            "create", "cluster",
            "--runtime", "binary",
            f"--kube-apiserver-binary={b / 'kube-apiserver'}",
            f"--kube-controller-manager-binary={b / 'kube-controller-manager'}",
            f"--kube-scheduler-binary={b / 'kube-scheduler'}",
            f"--etcd-binary={b / 'etcd'}",
            f"--kwok-controller-binary={b / 'kwok'}",
            f"--kubeconfig={self.kubeconfig}",
            "--wait=120s",
        )  # fmt: skip

    def is_running(self) -> bool:
        if not self.kubeconfig.exists():
            return False
        try:
            answer = Kube(self.kubeconfig, self.bin_dir / "kubectl").request_text("GET", "/readyz")
        except (OSError, ApiError):
            return False
        return answer.strip() == "ok"

    def stop(self) -> None:
        """Stop every process of the cluster and remove its state."""
        self._kwokctl("delete", "cluster", timeout=120)
        shutil.rmtree(self.workdir / "kwok", ignore_errors=True)


def _wait_for_default_service_account(kube: Kube, deadline_seconds: float = 60) -> None:
    # Pods cannot be created in a namespace before its default ServiceAccount exists.
    end = time.monotonic() + deadline_seconds
    while time.monotonic() < end:
        if kube.get_or_none("/api/v1/namespaces/default/serviceaccounts/default"):
            return
        time.sleep(0.2)
    raise TimeoutError("the control plane never created the default ServiceAccount")
