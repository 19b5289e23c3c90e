"""`kiam_eks.program.kube_api.KubeApi` lists a collection in pages (`limit`, `continue`), keeps the path's
own query on every page, starts over when a continue token expired, and starts a watch from the
paged list: against a small HTTP API server on localhost."""

from __future__ import annotations

import json
import threading
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from kiam_eks.program.kube_api import LIST_ATTEMPTS, PAGE_SIZE, ApiError, KubeApi

TOTAL = 1234
NAMES = [f"pod-{i:04d}" for i in range(TOTAL)]
EXPIRED = {
    "kind": "Status",
    "apiVersion": "v1",
    "status": "Failure",
    "reason": "Expired",
    "message": "The provided continue parameter is too old to display a consistent list result.",
    "code": 410,
}


@dataclass
class Collection:
    """What the server serves: TOTAL pods, a snapshot (resourceVersion) per list started, and the
    query of every request it answered."""

    requests: list[tuple[str, dict[str, str]]] = field(default_factory=list)
    expire: int = 0  # how many requests bearing a continue token are answered 410 Expired
    refuse_continue: bool = False  # a request bearing a continue token is answered 403
    snapshots: int = 0

    def answer(self, path: str, query: dict[str, str]) -> tuple[int, Any]:
        self.requests.append((path, query))
        if path != "/api/v1/pods":
            return 404, {"kind": "Status", "code": 404}
        if query.get("watch") == "true":
            return 200, {"type": "ADDED", "object": pod("pod-new", "2000")}
        token = query.get("continue")
        if token is None:
            self.snapshots += 1
            start, version = 0, str(1000 + self.snapshots)
        else:
            if self.refuse_continue:
                return 403, {"kind": "Status", "code": 403}
            if self.expire:
                self.expire -= 1
                return 410, EXPIRED
            start_text, version = token.split("/")[0], token.split("/")[1].rstrip("+=")
            start = int(start_text)
        limit = int(query.get("limit", TOTAL))  # no limit: the whole collection
        end = min(start + limit, TOTAL)
        metadata = {"resourceVersion": version}
        if end < TOTAL:
            # Characters a token carries that a query must escape.
            metadata["continue"] = f"{end}/{version}+="
        return 200, {
            "kind": "PodList",
            "metadata": metadata,
            "items": [pod(name, version) for name in NAMES[start:end]],
        }


def pod(name: str, version: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "resourceVersion": version}}


@pytest.fixture
def served(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[KubeApi, Collection]]:
    for name in ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    collection = Collection()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            url = urllib.parse.urlsplit(self.path)
            query = {k: v[-1] for k, v in urllib.parse.parse_qs(url.query).items()}
            assert self.headers["Authorization"] == "Bearer t"
            status, body = collection.answer(url.path, query)
            data = json.dumps(body).encode() + b"\n"
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    kubeconfig = tmp_path / "kubeconfig.yaml"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "c",
                "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
                "clusters": [
                    {"name": "k", "cluster": {"server": f"http://127.0.0.1:{server.server_port}"}}
                ],
                "users": [{"name": "u", "user": {"token": "t"}}],
            }
        )
    )
    try:
        yield KubeApi(kubeconfig), collection
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def names(items: list[dict[str, Any]]) -> list[str]:
    return [item["metadata"]["name"] for item in items]


def test_a_list_is_read_in_pages_of_500(served: tuple[KubeApi, Collection]) -> None:
    api, collection = served
    assert PAGE_SIZE == 500
    assert names(api.items("/api/v1/pods")) == NAMES
    assert [path for path, _ in collection.requests] == ["/api/v1/pods"] * 3
    assert [query for _, query in collection.requests] == [
        {"limit": "500"},
        {"limit": "500", "continue": "500/1001+="},
        {"limit": "500", "continue": "1000/1001+="},
    ]


def test_the_paths_query_is_kept_on_every_page(served: tuple[KubeApi, Collection]) -> None:
    api, collection = served
    path = "/api/v1/pods?labelSelector=app=kiam,tier=server&fieldSelector=spec.nodeName=n1"
    assert names(api.items(path)) == NAMES
    assert len(collection.requests) == 3
    for _, query in collection.requests:
        assert query["labelSelector"] == "app=kiam,tier=server"
        assert query["fieldSelector"] == "spec.nodeName=n1"
        assert query["limit"] == "500"


def test_an_expired_continue_token_starts_the_list_over(
    served: tuple[KubeApi, Collection],
) -> None:
    api, collection = served
    collection.expire = 1
    assert names(api.items("/api/v1/pods")) == NAMES
    assert [query.get("continue") for _, query in collection.requests] == [
        None,
        "500/1001+=",  # 410 Expired
        None,
        "500/1002+=",
        "1000/1002+=",
    ]


def test_a_list_that_keeps_expiring_is_an_error(served: tuple[KubeApi, Collection]) -> None:
    api, collection = served
    collection.expire = 1_000
    with pytest.raises(ApiError) as raised:
        api.items("/api/v1/pods")
    assert raised.value.status == 410
    assert str(raised.value) == (
        f"HTTP 410: the list of /api/v1/pods expired before its last page {LIST_ATTEMPTS} times "
        "(pages of 500); the cluster compacts faster than the list is read"
    )
    assert LIST_ATTEMPTS == 3
    assert [query.get("continue") for _, query in collection.requests] == [
        None,
        "500/1001+=",
        None,
        "500/1002+=",
        None,
        "500/1003+=",
    ]


def test_other_errors_between_pages_are_not_retried(served: tuple[KubeApi, Collection]) -> None:
    api, collection = served
    collection.refuse_continue = True
    with pytest.raises(ApiError) as raised:
        api.items("/api/v1/pods")
    assert raised.value.status == 403
    assert len(collection.requests) == 2


def test_a_watch_starts_from_the_paged_list(served: tuple[KubeApi, Collection]) -> None:
    api, collection = served
    stop = threading.Event()
    seen: list[tuple[str, str]] = []
    for kind, obj in api.watch("/api/v1/pods?labelSelector=app=kiam", stop):
        seen.append((kind, obj.get("metadata", {}).get("name", "")))
        if len(seen) > TOTAL + 1:
            stop.set()  # one watch request, then its stream ends and the watch stops
    assert seen == [("ADDED", name) for name in NAMES] + [("LISTED", ""), ("ADDED", "pod-new")]
    lists, watches = collection.requests[:3], collection.requests[3:]
    assert [query.get("continue") for _, query in lists] == [None, "500/1001+=", "1000/1001+="]
    assert all(query["labelSelector"] == "app=kiam" for _, query in lists)
    assert [query for _, query in watches] == [
        {
            "labelSelector": "app=kiam",
            "watch": "true",
            "resourceVersion": "1001",
            "timeoutSeconds": "2",
        }
    ]


def test_a_watch_whose_list_expired_starts_from_the_new_snapshot(
    served: tuple[KubeApi, Collection],
) -> None:
    api, collection = served
    collection.expire = 1
    stop = threading.Event()
    seen: list[str] = []
    for kind, obj in api.watch("/api/v1/pods", stop):
        seen.append(obj.get("metadata", {}).get("name", kind))
        if len(seen) > TOTAL + 1:
            stop.set()
    assert seen == [*NAMES, "LISTED", "pod-new"]
    assert collection.requests[-1][1]["resourceVersion"] == "1002"
