"""What an interrupted update leaves, read and recovered (tools/interrupted/): the CLI's lock
refusal parsed, a lock's owner judged gone only when provable, pending creates imported or
cleared by whether their object exists, and the recovery's commands in order."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tools.interrupted.eks_node_groups import EksNodeGroups, tracked_node_groups
from tools.interrupted.kubernetes_objects import KubernetesObjects
from tools.interrupted.lock_files import lock_files
from tools.interrupted.locks import Lock, Process, linux_process, locks_in, owner_gone
from tools.interrupted.lookup import adopted_arguments, lookup_for
from tools.interrupted.pending import (
    Finding,
    PendingOperation,
    pending_operations,
    resolve,
    resolved_state,
)
from tools.interrupted.recover import NeedsOperator, recover, unlocked

TAKEN = datetime(2026, 12, 3, 19, 2, 11, tzinfo=UTC)
# `checkForLock`'s message as the v3.276.0 CLI writes it (pkg/backend/diy/lock.go), after the
# CLI's own "error: " prefix.
REFUSAL = (
    "error: the stack is currently locked by 2 lock(s). Either wait for the other process(es) to "
    "end or delete the lock file with `pulumi cancel`.\n"
    "  file:///state/.pulumi/locks/organization/kiam/dev/0b7c.json: created by runner@fv-az12 "
    "(pid 4123) at 2026-12-03T19:02:11Z\n"
    "  file:///state/.pulumi/locks/organization/kiam/dev/9e1d.json: created by ana@laptop "
    "(pid 77) at 2026-12-03T20:15:00+01:00\n"
)


def lock(host: str = "here", pid: int = 4123, taken: datetime = TAKEN) -> Lock:
    return Lock(url="file:///l.json", user="u", host=host, pid=pid, taken=taken)


def test_every_lock_of_the_refusal_is_read() -> None:
    assert locks_in(REFUSAL) == [
        Lock(
            url="file:///state/.pulumi/locks/organization/kiam/dev/0b7c.json",
            user="runner",
            host="fv-az12",
            pid=4123,
            taken=TAKEN,
        ),
        Lock(
            url="file:///state/.pulumi/locks/organization/kiam/dev/9e1d.json",
            user="ana",
            host="laptop",
            pid=77,
            taken=datetime(2026, 12, 3, 19, 15, tzinfo=UTC),
        ),
    ]
    assert locks_in("error: update failed") == []


def test_a_lock_of_another_host_is_never_taken_as_gone() -> None:
    assert not owner_gone(lock(host="fv-az12"), "here", lambda pid: None)


@pytest.mark.parametrize(
    ("running", "gone"),
    [
        pytest.param(None, True, id="no-such-pid"),
        pytest.param(Process("pulumi", TAKEN - timedelta(seconds=5)), False, id="its-pulumi"),
        pytest.param(Process("bash", TAKEN - timedelta(hours=1)), True, id="pid-reused-by-other"),
        pytest.param(Process("pulumi", TAKEN + timedelta(minutes=3)), True, id="a-later-pulumi"),
    ],
)
def test_a_lock_of_this_host_is_gone_unless_its_pulumi_still_runs(
    running: Process | None, gone: bool
) -> None:
    assert owner_gone(lock(), "here", lambda pid: running) is gone


def test_linux_process_reads_this_process_and_no_process() -> None:
    me = linux_process(os.getpid())
    assert me is not None and me.name.startswith("python")
    assert abs((datetime.now(UTC) - me.started).total_seconds()) < 24 * 3600
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    assert linux_process(child.pid) is None


def test_pending_operations_are_read_from_the_export() -> None:
    exported = {
        "deployment": {
            "resources": [],
            "pending_operations": [
                {
                    "resource": {
                        "urn": "urn:pulumi:dev::kiam::kubernetes:apps/v1:DaemonSet::kiam-agent",
                        "type": "kubernetes:apps/v1:DaemonSet",
                        "inputs": {"metadata": {"name": "kiam-agent", "namespace": "kiam"}},
                    },
                    "type": "creating",
                }
            ],
        }
    }
    assert pending_operations(exported) == [
        PendingOperation(
            urn="urn:pulumi:dev::kiam::kubernetes:apps/v1:DaemonSet::kiam-agent",
            type="kubernetes:apps/v1:DaemonSet",
            operation="creating",
            inputs={"metadata": {"name": "kiam-agent", "namespace": "kiam"}},
        )
    ]
    assert pending_operations({"deployment": {}}) == []


class FakeApi:
    """Discovery and objects as the API server serves them."""

    def __init__(self, objects: set[str]) -> None:
        self.objects = objects

    def get_or_none(self, path: str) -> Any:
        if path == "/apis/apps/v1":
            return {"resources": [{"name": "daemonsets", "kind": "DaemonSet", "namespaced": True},
                                  {"name": "daemonsets/status", "kind": "DaemonSet", "namespaced": True}]}  # fmt: skip
        if path == "/api/v1":
            return {"resources": [{"name": "nodes", "kind": "Node", "namespaced": False}]}
        return {"kind": "x"} if path in self.objects else None


def op(type_: str, name: str | None, namespace: str | None = None) -> PendingOperation:
    metadata = {k: v for k, v in (("name", name), ("namespace", namespace)) if v}
    return PendingOperation(f"urn:x::{name}", type_, "creating", {"metadata": metadata})


@pytest.mark.parametrize(
    ("pending", "objects", "finding"),
    [
        pytest.param(
            op("kubernetes:apps/v1:DaemonSet", "kiam-agent", "kiam"),
            {"/apis/apps/v1/namespaces/kiam/daemonsets/kiam-agent"},
            Finding("exists", id="kiam/kiam-agent"),
            id="namespaced-exists",
        ),
        pytest.param(
            op("kubernetes:apps/v1:DaemonSet", "kiam-agent", "kiam"),
            set(),
            Finding("absent"),
            id="namespaced-absent",
        ),
        pytest.param(
            op("kubernetes:core/v1:Node", "group-1"),
            {"/api/v1/nodes/group-1"},
            Finding("exists", id="group-1"),
            id="cluster-scoped-exists",
        ),
        pytest.param(
            op("kubernetes:apps/v1:DaemonSetPatch", "kiam-agent", "kiam"),
            {"/apis/apps/v1/namespaces/kiam/daemonsets/kiam-agent"},
            Finding("absent"),
            id="a-patch-is-applied-again",
        ),
        pytest.param(
            op("pulumi:providers:kubernetes", "k8s"), set(), Finding("absent"), id="provider"
        ),
        pytest.param(
            op("aws:eks/nodeGroup:NodeGroup", "kiam-server-nodes"),
            set(),
            Finding("unknown", why="not a Kubernetes object (aws:eks/nodeGroup:NodeGroup)"),
            id="not-kubernetes",
        ),
        pytest.param(
            op("kubernetes:apps/v1:DaemonSet", None),
            set(),
            Finding("unknown", why="its inputs name no object (metadata.name)"),
            id="no-name",
        ),
    ],
)
def test_a_pending_create_is_found_in_the_cluster(
    pending: PendingOperation, objects: set[str], finding: Finding
) -> None:
    assert KubernetesObjects(FakeApi(objects)).find(pending) == finding  # type: ignore[arg-type]


class FakeStack:
    """The recovery's commands, recorded; `locked` refusals come first, as the CLI's."""

    def __init__(self, pending: list[dict[str, Any]], locked: list[str] | None = None) -> None:
        self.pending = pending
        self.locked = list(locked or [])
        self.calls: list[Any] = []
        self.listed: list[Lock] | None = None

    def export(self) -> dict[str, Any]:
        self.calls.append("export")
        return {"deployment": {"pending_operations": self.pending}}

    def import_state(self, document: dict[str, Any]) -> None:
        self.calls.append("stack import")
        if self.locked:
            raise RuntimeError(self.locked.pop(0))
        self.imported = document
        self.pending = document["deployment"]["pending_operations"]

    def refresh(self) -> None:
        self.calls.append("refresh")

    def release_locks(self) -> None:
        self.calls.append("cancel")
        self.listed = []

    def locks(self) -> list[Lock] | None:
        return self.listed


def pending(name: str, operation: str = "creating") -> dict[str, Any]:
    return {
        "resource": {
            "urn": f"urn:pulumi:dev::kiam::kubernetes:core/v1:ConfigMap::{name}",
            "type": "kubernetes:core/v1:ConfigMap",
            "inputs": {"metadata": {"name": name, "namespace": "kube-system"}},
        },
        "type": operation,
    }


def exists_for(*names: str) -> Any:
    def find(o: PendingOperation) -> Finding:
        return (
            Finding("exists", id=f"kube-system/{o.name}") if o.name in names else Finding("absent")
        )

    return find


def test_what_exists_is_imported_the_rest_cleared_then_refreshed() -> None:
    stack = FakeStack([pending("group-new"), pending("orphan-less"), pending("agents", "updating")])
    said: list[str] = []
    resolution = recover("dev", stack, exists_for("group-new"), said.append, then="again")
    # Read once, read again just before the edit (unchanged), imported, refreshed, checked.
    assert stack.calls == ["export", "export", "stack import", "refresh", "export"]
    new = pending("group-new")["resource"]
    assert stack.imported == {
        "deployment": {
            "pending_operations": [],
            "resources": [{**new, "id": "kube-system/group-new", "outputs": new["inputs"]}],
        }
    }
    assert resolution is not None
    assert said[-1] == (
        "recovered: imported group-new; cleared orphan-less; refreshed agents (updating)"
    )


def test_a_stack_with_nothing_pending_is_left_alone() -> None:
    stack = FakeStack([])
    assert recover("dev", stack, exists_for(), print, then="again") is None
    assert stack.calls == ["export"]


def test_a_dead_lock_is_removed_and_the_refresh_runs_again() -> None:
    message = REFUSAL.split("\n  file:///state/.pulumi/locks/organization/kiam/dev/9e1d")[0]
    stack = FakeStack([pending("group-new")], locked=[message])
    said: list[str] = []
    recover(
        "dev", stack, exists_for(), said.append, then="again",
        this_host="fv-az12", process=lambda pid: None,
    )  # fmt: skip
    assert stack.calls == [
        "export", "export", "stack import", "cancel", "stack import", "refresh", "export"
    ]  # fmt: skip
    assert "removing the dead lock of pid 4123 (2026-12-03T19:02:11+00:00)" in said


def test_one_live_lock_among_dead_ones_stops_the_recovery_naming_it() -> None:
    stack = FakeStack([pending("group-new")], locked=[REFUSAL])
    with pytest.raises(NeedsOperator) as raised:
        recover(
            "dev", stack, exists_for(), print, then="`python -m tools.fleet up --resume`",
            this_host="fv-az12", process=lambda pid: None,
        )  # fmt: skip
    assert "cancel" not in stack.calls
    message = str(raised.value)
    assert message.startswith("dev is locked by an update that may still run: ana@laptop pid 77")
    assert message.endswith(
        "`pulumi cancel --stack dev --yes`, then `python -m tools.fleet up --resume`"
    )


def test_a_create_nothing_can_look_up_stops_with_the_commands() -> None:
    stack = FakeStack([pending("group-new")])
    with pytest.raises(NeedsOperator) as raised:
        recover(
            "dev", stack, lambda o: Finding("unknown", why="not a Kubernetes object (aws:x)"),
            print, then="again",
        )  # fmt: skip
    assert stack.calls == ["export"]  # nothing changed
    assert "`pulumi import --stack dev`" in str(raised.value)
    assert "`pulumi refresh --stack dev --yes --clear-pending-creates`" in str(raised.value)


def test_an_error_that_is_no_lock_is_raised_as_it_is() -> None:
    def fail() -> None:
        raise RuntimeError("error: update failed")

    with pytest.raises(RuntimeError, match="update failed"):
        unlocked("dev", fail, FakeStack([]), print, then="again")


def test_a_unit_test_of_linux_process_reads_proc_format(tmp_path: Path) -> None:
    (tmp_path / "42").mkdir()
    # proc(5): pid (comm) state ppid ... field 22 starttime in clock ticks.
    fields = ["S", *["0"] * 18, "250"]
    (tmp_path / "42" / "stat").write_text(f"42 (pulumi (x)) {' '.join(fields)} 0 0\n")
    (tmp_path / "stat").write_text("cpu 1 2 3\nbtime 1764788400\n")
    found = linux_process(42, tmp_path)
    ticks = os.sysconf("SC_CLK_TCK")
    assert found == Process(
        name="pulumi (x)", started=datetime.fromtimestamp(1764788400 + 250 / ticks, UTC)
    )


def managed(*entries: tuple[str, str]) -> dict[str, Any]:
    return {"metadata": {"managedFields": [{"manager": m, "operation": o} for m, o in entries]}}


@pytest.mark.parametrize(
    ("live", "outputs"),
    [
        pytest.param(
            managed(("kube-controller-manager", "Update"), ("pulumi-kubernetes-d118382b", "Apply")),
            {"__fieldManager": "pulumi-kubernetes-d118382b"},
            id="its-apply",
        ),
        pytest.param(
            managed(("pulumi-kubernetes-0a1b2c3d", "Update")),
            {"__fieldManager": "pulumi-kubernetes-0a1b2c3d"},
            id="a-client-side-create",
        ),
        pytest.param(
            managed(
                ("pulumi-kubernetes-aaaaaaaa", "Apply"), ("pulumi-kubernetes-bbbbbbbb", "Apply")
            ),
            {},
            id="two-managers-none-chosen",
        ),
        pytest.param(managed(("kubectl", "Update")), {}, id="no-pulumi-manager"),
    ],
)
def test_an_existing_object_is_imported_with_the_field_manager_that_created_it(
    live: dict[str, Any], outputs: dict[str, str]
) -> None:
    class Api(FakeApi):
        def get_or_none(self, path: str) -> Any:
            found = super().get_or_none(path)
            return live if found and "kind" in found and path.endswith("kiam-agent") else found

    pending_create = op("kubernetes:apps/v1:DaemonSet", "kiam-agent", "kiam")
    api = Api({"/apis/apps/v1/namespaces/kiam/daemonsets/kiam-agent"})
    assert KubernetesObjects(api).find(pending_create) == Finding(  # type: ignore[arg-type]
        "exists", id="kiam/kiam-agent", outputs=outputs
    )
    resolution = resolve([pending_create], KubernetesObjects(api).find)  # type: ignore[arg-type]
    document = {"deployment": {"resources": [], "pending_operations": [
        {"resource": {"urn": pending_create.urn, "inputs": {"kind": "DaemonSet"}}, "type": "creating"}
    ]}}  # fmt: skip
    imported = resolved_state(document, resolution)["deployment"]["resources"][0]
    assert imported["outputs"] == {"kind": "DaemonSet", **outputs}


NODE_GROUP_URN = (
    "urn:pulumi:prod-eu-1::kiam::kiam:index:Kiam$kiam:aws:ServerNodes$aws:eks/nodeGroup:NodeGroup"
    "::kiam-server-nodes"
)


def eks(groups: dict[str, dict[str, str]]) -> Any:
    """The AWS CLI's answers (AWS CLI Command Reference, eks list-nodegroups and
    describe-nodegroup), for a cluster with these groups and tags."""
    calls: list[list[str]] = []

    def run(args: list[str]) -> dict[str, Any]:
        calls.append(args)
        if args[1] == "list-nodegroups":
            return {"nodegroups": sorted(groups)}
        name = args[args.index("--nodegroup-name") + 1]
        return {
            "nodegroup": {
                "nodegroupName": name,
                "status": "ACTIVE",
                "createdAt": "2026-12-03T19:02:40.120000+00:00",
                "tags": groups[name],
            }
        }

    run.calls = calls  # type: ignore[attr-defined]
    return run


def node_group_op() -> PendingOperation:
    return PendingOperation(
        NODE_GROUP_URN, "aws:eks/nodeGroup:NodeGroup", "creating", {"clusterName": "prod-eu-1"}
    )


def test_the_orphan_node_group_is_found_by_its_stack_tag_and_named() -> None:
    run = eks(
        {
            "kiam-server-20261101": {"kiam-eks/stack": "kiam/prod-eu-1"},  # in the state
            "kiam-server-20261203": {"kiam-eks/stack": "kiam/prod-eu-1"},  # the orphan
            "other-team": {"team": "x"},
            "kiam-server-staging": {"kiam-eks/stack": "kiam/staging"},
        }
    )
    groups = EksNodeGroups("eu-west-1", lambda: {"kiam-server-20261101"}, run)
    finding = groups.find(node_group_op())
    assert finding.state == "unknown"
    assert finding.why.startswith(
        "node group kiam-server-20261203 (status ACTIVE, created 2026-12-03T19:02:40.120000+00:00) "
        "of cluster prod-eu-1 carries this stack's tag kiam-eks/stack=kiam/prod-eu-1 and is not in "
        "the state"
    )
    assert (
        f"`python -m tools.fleet up --resume --adopt '{NODE_GROUP_URN}=prod-eu-1:kiam-server-20261203'`"
        in finding.why
    )
    assert (
        "`aws eks delete-nodegroup --region eu-west-1 --cluster-name prod-eu-1 --nodegroup-name "
        "kiam-server-20261203`" in finding.why
    )
    described = [c[c.index("--nodegroup-name") + 1] for c in run.calls if "describe-nodegroup" in c]
    assert described == ["kiam-server-20261203", "kiam-server-staging", "other-team"]


def test_no_untracked_group_of_the_stack_means_the_create_never_happened() -> None:
    run = eks({"kiam-server-20261101": {"kiam-eks/stack": "kiam/prod-eu-1"}})
    groups = EksNodeGroups("eu-west-1", lambda: {"kiam-server-20261101"}, run)
    assert groups.find(node_group_op()) == Finding("absent")


def test_the_tracked_groups_are_read_from_the_export() -> None:
    exported = {"deployment": {"resources": [
        {"type": "aws:eks/nodeGroup:NodeGroup", "outputs": {"nodeGroupName": "kiam-server-1"}},
        {"type": "aws:ec2/launchTemplate:LaunchTemplate", "outputs": {"name": "lt"}},
    ]}}  # fmt: skip
    assert tracked_node_groups(exported) == {"kiam-server-1"}


def test_a_person_adopts_what_a_recovery_named() -> None:
    adopted = adopted_arguments([f"{NODE_GROUP_URN}=prod-eu-1:kiam-server-20261203"])
    find = lookup_for(lambda o: Finding("absent"), lambda o: Finding("unknown"), adopted)
    assert find(node_group_op()) == Finding("exists", id="prod-eu-1:kiam-server-20261203")
    assert find(op("kubernetes:apps/v1:DaemonSet", "x")) == Finding("absent")
    with pytest.raises(ValueError, match="expected URN=ID"):
        adopted_arguments(["kiam-server-nodes=prod-eu-1:x"])


def test_a_listed_dead_lock_is_removed_before_the_checkpoint_is_read() -> None:
    stack = FakeStack([pending("group-new")])
    stack.listed = [lock(host="fv-az12")]
    said: list[str] = []
    recover(
        "dev", stack, exists_for(), said.append, then="again",
        this_host="fv-az12", process=lambda pid: None,
    )  # fmt: skip
    assert stack.calls[:2] == ["cancel", "export"]


def test_a_listed_live_lock_stops_the_recovery_before_anything_is_read_or_written() -> None:
    stack = FakeStack([pending("group-new")])
    stack.listed = [lock(host="here")]
    running = Process("pulumi", TAKEN - timedelta(seconds=1))
    with pytest.raises(
        NeedsOperator, match="dev is locked by an update that may still run: u@here"
    ):
        recover(
            "dev", stack, exists_for(), print, then="again",
            this_host="here", process=lambda pid: running,
        )  # fmt: skip
    assert stack.calls == []


def test_a_checkpoint_that_changes_during_the_recovery_is_never_overwritten() -> None:
    class Changing(FakeStack):
        def export(self) -> dict[str, Any]:
            document = super().export()
            document["deployment"]["resources"] = [{"urn": f"r{len(self.calls)}"}]
            return document

    stack = Changing([pending("group-new")])
    with pytest.raises(NeedsOperator, match="its checkpoint changed while its recovery read it"):
        recover("dev", stack, exists_for("group-new"), print, then="again")
    assert "stack import" not in stack.calls


def test_the_lock_files_of_a_file_backend(tmp_path: Path) -> None:
    folder = tmp_path / ".pulumi" / "locks" / "organization" / "kiam" / "dev"
    folder.mkdir(parents=True)
    # lock.go's lockContent, as the v3.276.0 CLI wrote it (seen on the real engine).
    (folder / "dc1dfbdc.json").write_text(
        '{"pid":17306,"username":"root","hostname":"vm","timestamp":"2026-12-03T19:08:42.356481816Z"}'
    )
    (folder / "dc1dfbdc.json.attrs").write_text("{}")
    other = tmp_path / ".pulumi" / "locks" / "organization" / "kiam" / "prod"
    other.mkdir()
    (other / "x.json").write_text(
        '{"pid":1,"username":"a","hostname":"b","timestamp":"2026-12-03T00:00:00Z"}'
    )
    found = lock_files(f"file://{tmp_path}", "kiam", "dev")
    assert found is not None and [(x.user, x.host, x.pid) for x in found] == [("root", "vm", 17306)]
    assert found[0].taken == datetime(2026, 12, 3, 19, 8, 42, 356481, tzinfo=UTC)
    assert lock_files(f"file://{tmp_path}", "kiam", "staging") == []


def test_the_lock_files_of_an_s3_backend() -> None:
    calls: list[list[str]] = []

    def aws(args: list[str]) -> str:
        calls.append(args)
        if args[:2] == ["s3", "ls"] and args[2].endswith("/organization/kiam/dev/"):
            # `aws s3 ls` lines: date, time, size, key.
            return (
                "2026-12-03 19:02:11        102 0b7c.json\n2026-12-03 19:02:11  2 0b7c.json.attrs\n"
            )
        if args[:2] == ["s3", "ls"]:
            raise subprocess.CalledProcessError(1, args)
        return '{"pid":4123,"username":"runner","hostname":"fv-az12","timestamp":"2026-12-03T19:02:11Z"}'

    found = lock_files("s3://state-bucket/kiam?region=eu-west-1", "kiam", "dev", aws)
    key = "s3://state-bucket/kiam/.pulumi/locks/organization/kiam/dev/0b7c.json"
    assert found == [Lock(key, "runner", "fv-az12", 4123, TAKEN)]
    assert ["s3", "cp", key, "-"] in calls


def test_another_backend_is_not_listed_here() -> None:
    assert lock_files("gs://bucket", "kiam", "dev") is None
    assert lock_files("https://api.pulumi.com", "kiam", "dev") is None


def test_a_zombie_is_no_running_process(tmp_path: Path) -> None:
    """A killed CLI whose parent was killed too stays a zombie until something reaps it: its lock
    is dead all the same (seen on the real engine)."""
    (tmp_path / "42").mkdir()
    fields = ["Z", *["0"] * 18, "250"]
    (tmp_path / "42" / "stat").write_text(f"42 (pulumi) {' '.join(fields)} 0 0\n")
    (tmp_path / "stat").write_text("btime 1764788400\n")
    assert linux_process(42, tmp_path) is None
    zombie = subprocess.Popen([sys.executable, "-c", "pass"])
    deadline = time.monotonic() + 10
    stat = Path(f"/proc/{zombie.pid}/stat")
    while time.monotonic() < deadline and stat.read_text().split(") ")[-1][0] != "Z":
        time.sleep(0.05)
    assert linux_process(zombie.pid) is None  # exited, not yet reaped by us
    zombie.wait()
