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
from typing import Any

import yaml

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


@dataclass(frozen=True)
class PodTiming:
    """How long kwok takes to make a pod Ready after it is scheduled, and to remove it once it is
    deleted: on EKS an agent takes 10 to 25 s to stop, start and pass its readiness probe (issue
    39), where kwok's default stages take no time at all."""

    start_seconds: float = 0.0
    stop_seconds: float = 0.0

    @property
    def instant(self) -> bool:
        return self.start_seconds == 0 and self.stop_seconds == 0


# kwok's own default: pods Ready the moment they are scheduled, gone the moment they are deleted.
INSTANT = PodTiming()


# The stages kwok runs pods through, by name (sigs.k8s.io/kwok v0.8.0, kustomize/stage/pod/fast:
# pod-ready makes a scheduled pod Running and Ready, pod-delete removes a deleted one), and the
# per-pod annotation its general stages read a delay from (kustomize/stage/pod/general,
# `pod-ready.stage.kwok.x-k8s.io/delay`; a Go duration). A stage's `delay.durationMilliseconds` is
# how long kwok waits before it applies the stage ("stages configuration", "How Delay is
# Calculated": the duration, plus a random part up to a jitter, none here).
DELAYED_STAGES = {"pod-ready": "start_seconds", "pod-delete": "stop_seconds"}
# kwokctl saves the whole configuration of a cluster, its stages included, in this file of the
# cluster's workdir, and starts the kwok controller with it (pkg/kwokctl/runtime/cluster.go,
# `ConfigName`; `Save`), each time the cluster starts.
SAVED_CONFIG = "kwok.yaml"


def with_pod_timing(documents: list[dict[str, Any]], timing: PodTiming) -> list[dict[str, Any]]:
    """kwok's saved configuration with its pod-ready and pod-delete stages delayed: every pod
    takes `timing`'s seconds unless its own annotation says otherwise."""
    found = set()
    out = []
    for doc in documents:
        name = (doc.get("metadata") or {}).get("name")
        if doc.get("kind") == "Stage" and name in DELAYED_STAGES:
            found.add(name)
            seconds = getattr(timing, DELAYED_STAGES[name])
            doc = {
                **doc,
                "spec": {
                    **doc["spec"],
                    "delay": {
                        "durationMilliseconds": round(seconds * 1000),
                        "durationFrom": {
                            "expressionFrom": f'.metadata.annotations["{name}.stage.kwok.x-k8s.io/delay"]'
                        },
                    },
                },
            }
        out.append(doc)
    if found != set(DELAYED_STAGES):
        raise RuntimeError(
            f"kwok's saved configuration has no stage {sorted(set(DELAYED_STAGES) - found)}: "
            "a kwok release changed its default stages"
        )
    return out


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

    def start(self, timing: PodTiming = INSTANT) -> Kube:
        """Create the cluster (nothing is downloaded: every binary is the toolchain's), its pods
        taking `timing` to start and stop."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        b = self.bin_dir
        with _creating_alone():
            done = self._create(b)
            if done.returncode == 0 and not timing.instant:
                done = self._time_pods(timing)
        if done.returncode != 0:
            self.stop()
            raise RuntimeError(
                f"kwokctl failed to start the cluster:\n{done.stdout}\n{done.stderr}"
            )
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

    def _time_pods(self, timing: PodTiming) -> subprocess.CompletedProcess[str]:
        """Stop the new cluster, delay its pod stages in the configuration kwokctl saved, and
        start it again: kwok reads its stages when it starts. Any stage given to `kwokctl create`
        itself would replace every default one, the nodes' too."""
        stopped = self._kwokctl("stop", "cluster")
        if stopped.returncode != 0:
            return stopped
        (saved,) = (self.workdir / "kwok").rglob(SAVED_CONFIG)
        documents = [d for d in yaml.safe_load_all(saved.read_text()) if d]
        saved.write_text(yaml.safe_dump_all(with_pod_timing(documents, timing)))
        return self._kwokctl("start", "cluster", "--wait=120s")

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
