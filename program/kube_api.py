"""A small, fast client of a cluster's API, from a kubeconfig: what the program reads the running
cluster with at preview (program/live_cluster.py), what the tools read live clusters with
(`tools.kiam_usage`, the fleet's health gates) and what the real-engine harness builds on. A
watcher samples it every half second; `kubectl` would take longer than that per call."""

from __future__ import annotations

import atexit
import base64
import json
import os
import shutil
import ssl
import subprocess
import tempfile
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from kiam_eks.contracts.kubeconfig import KubeconfigError, current_context

# Collections are listed in pages of this many items (`limit`, then `continue`), as kubectl does
# ("kubectl get --chunk-size", default 500) and as the Kubernetes API concepts page describes
# ("Retrieving large results sets in chunks"): one GET of every pod of a large cluster is a
# response of hundreds of megabytes, built in the API server's memory at once.
PAGE_SIZE = 500
# How many times a list is started over when its continue token expired (410 Gone, "Expired":
# the cluster compacted the snapshot the pages were read from) before it is an error.
LIST_ATTEMPTS = 3


class ApiError(RuntimeError):
    """The API server answered with an error status."""

    def __init__(self, status: int, body: str) -> None:
        super().__init__(f"HTTP {status}: {body[:500]}")
        self.status = status


@dataclass
class KubeApi:
    """The API of one cluster, from its kubeconfig (its current context; CA and client
    certificates, inline or as files, or a bearer token, inline or as a `tokenFile`): the file,
    or its parsed document, which then never needs a file of its own."""

    kubeconfig: Path | dict[str, Any]

    def __post_init__(self) -> None:
        document = (
            self.kubeconfig
            if isinstance(self.kubeconfig, dict)
            else yaml.safe_load(self.kubeconfig.read_text())
        )
        # A file's relative references lead from its folder; a document's from the working
        # directory (`anchor` makes them absolute first where they lead elsewhere).
        folder = None if isinstance(self.kubeconfig, dict) else self.kubeconfig.parent
        current = current_context(document)
        cluster, user = current.cluster, current.user
        self.server = cluster["server"].rstrip("/")
        self._ssl = ssl.create_default_context()
        ca = _material(cluster, "certificate-authority", folder)
        if ca:
            self._ssl.load_verify_locations(cadata=ca.decode())
        elif cluster.get("insecure-skip-tls-verify"):
            self._ssl.check_hostname = False
            self._ssl.verify_mode = ssl.CERT_NONE
        cert_file = _file(user, "client-certificate", folder)
        key_file = _file(user, "client-key", folder)
        if cert_file and key_file:
            self._ssl.load_cert_chain(cert_file, key_file)
        else:
            cert = _material(user, "client-certificate", folder)
            key = _material(user, "client-key", folder)
            if cert and key:
                _load_client_certificate(self._ssl, cert, key)
        self._token = _bearer_token(user, folder)

    def request(
        self, method: str, path: str, body: Any = None, content_type: str = "application/json"
    ) -> Any:
        text = self.request_text(method, path, body, content_type)
        return json.loads(text) if text else None

    def request_text(
        self, method: str, path: str, body: Any = None, content_type: str = "application/json"
    ) -> str:
        """The body of the answer as text: health endpoints (`/readyz`) answer `ok`, not JSON."""
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.server + path, data=data, method=method)
        req.add_header("Accept", "application/json")
        if data is not None:
            req.add_header("Content-Type", content_type)
        if self._token:
            req.add_header("Authorization", f"Bearer {self._token}")
        try:
            with urllib.request.urlopen(req, context=self._ssl, timeout=10) as response:
                text: str = response.read().decode()
        except urllib.error.HTTPError as error:
            raise ApiError(error.code, error.read().decode()) from None
        return text

    def get(self, path: str) -> Any:
        return self.request("GET", path)

    def watch(self, path: str, stop: threading.Event) -> Iterator[tuple[str, dict[str, Any]]]:
        """Every change to the collection at `path` as (event type, object), starting with its
        current members as ADDED and then ("LISTED", {}), until `stop` is set: the API server's
        own order of events."""
        members, version = self._list(path)
        for item in members:
            yield "ADDED", item
        yield "LISTED", {}
        separator = "&" if "?" in path else "?"
        while not stop.is_set():
            # Short server-side timeouts, so `stop` is noticed within a couple of seconds.
            url = f"{path}{separator}watch=true&resourceVersion={version}&timeoutSeconds=2"
            req = urllib.request.Request(self.server + url)
            if self._token:
                req.add_header("Authorization", f"Bearer {self._token}")
            with urllib.request.urlopen(req, context=self._ssl, timeout=15) as stream:
                for line in stream:
                    event = json.loads(line)
                    if event["type"] == "ERROR":  # e.g. 410 Gone: start over from a new list
                        yield from self.watch(path, stop)
                        return
                    version = event["object"]["metadata"]["resourceVersion"]
                    yield event["type"], event["object"]

    def items(self, path: str) -> list[dict[str, Any]]:
        """Every member of the collection at `path` (which may carry a query: labelSelector,
        fieldSelector), read in pages of PAGE_SIZE."""
        members, _ = self._list(path)
        return members

    def _list(self, path: str) -> tuple[list[dict[str, Any]], str]:
        """The members of the collection at `path` and the resourceVersion they were listed at,
        page by page: each page's `metadata.continue` is passed back with the same `limit` and
        the same query until a page has none. Every page of one list is served from the first
        page's snapshot, so the last page's resourceVersion is the whole list's (where a watch
        starts). An expired continue token (410 Gone) starts the list over from its first page,
        at most LIST_ATTEMPTS times in all."""
        first = f"{path}{'&' if '?' in path else '?'}limit={PAGE_SIZE}"
        for _ in range(LIST_ATTEMPTS):
            members: list[dict[str, Any]] = []
            token = ""
            try:
                while True:
                    page = self.get(
                        first + (f"&continue={urllib.parse.quote(token, safe='')}" if token else "")
                    )
                    members.extend(page.get("items") or [])
                    metadata = page.get("metadata") or {}
                    token = metadata.get("continue") or ""
                    if not token:
                        return members, str(metadata.get("resourceVersion") or "")
            except ApiError as error:
                if error.status != 410 or not token:
                    raise
                # The token expired between pages: start over (a newer snapshot).
        raise ApiError(
            410,
            f"the list of {path} expired before its last page {LIST_ATTEMPTS} times "
            f"(pages of {PAGE_SIZE}); the cluster compacts faster than the list is read",
        )

    def get_or_none(self, path: str) -> Any:
        try:
            return self.get(path)
        except ApiError as error:
            if error.status == 404:
                return None
            raise


def _load_client_certificate(context: ssl.SSLContext, cert: bytes, key: bytes) -> None:
    """Load an inline client certificate and key (`client-certificate-data`, `client-key-data`).
    `ssl` reads them from files only (`SSLContext.load_cert_chain`, docs.python.org/3/library/
    ssl.html), so they are written to a folder only this user may enter (`tempfile.mkdtemp`: "readable,
    writable, and searchable only by the creating user ID") and removed once loaded, failed or
    not: the private key is on disk only for the call."""
    with tempfile.TemporaryDirectory(prefix="kiam-client-") as folder:
        cert_file, key_file = Path(folder, "tls.crt"), Path(folder, "tls.key")
        cert_file.write_bytes(cert)
        key_file.touch(mode=0o600)
        key_file.write_bytes(key)
        context.load_cert_chain(cert_file, key_file)


def anchor(document: dict[str, Any], folder: Path) -> dict[str, Any]:
    """The parsed kubeconfig `document`, read from a file in `folder` but used without it
    (`KubeApi(document)`), with its current context's relative file references made absolute
    from `folder`, where they lead (see `_file`). Changed in place, and returned."""
    current = current_context(document)
    for section, names in (
        (current.cluster, ("certificate-authority",)),
        (current.user, ("client-certificate", "client-key", "tokenFile")),
    ):
        for name in names:
            path = _file(section, name, folder)
            if path is not None:
                section[name] = str(path)
    plugin = current.user.get("exec")
    # An exec plugin named by a path, not looked up on PATH, is a file reference too (client-go
    # clientcmd `GetAuthInfoFileReferences`: "Only resolve exec command if it isn't PATH based").
    if plugin and os.sep in plugin.get("command", "") and not Path(plugin["command"]).is_absolute():
        plugin["command"] = str(folder / plugin["command"])
    return document


def anchored(text: str, folder: Path) -> str:
    """An inline kubeconfig (`kiam:kubeconfig`) for a copy kept elsewhere, its relative file
    references leading from `folder` (`anchor`): the program's working directory, where the
    program, which reads the document itself, finds them. Text that is no kubeconfig is
    returned as it is, for its reader to explain."""
    try:
        return yaml.safe_dump(anchor(yaml.safe_load(text), folder))
    except (yaml.YAMLError, KubeconfigError):
        return text


def resolved(document: dict[str, Any], folder: Path) -> dict[str, Any]:
    """A kubeconfig document read from `folder` (or, inline, used where its relative files are
    found), ready for `KubeApi` anywhere: its references anchored there (`anchor`), then its exec
    plugin run and its token put in the plugin's place (`with_exec_token`, which raises
    `KubeconfigError` when the plugin gives none)."""
    with_exec_token(anchor(document, folder))
    return document


def private_file(name: str, text: str) -> Path:
    """A file only this user reads (a kubeconfig holds credentials), in a folder of its own,
    removed with the folder when the process exits: for a tool that hands a kubeconfig on by
    path. The program passes documents (`KubeApi(document)`) and writes none."""
    folder = Path(tempfile.mkdtemp(prefix="kiam-kubeconfig-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    path = folder / name
    path.touch(mode=0o600)
    path.write_text(text)
    return path


def with_exec_token(config: dict[str, Any]) -> bool:
    """Where the current user of the parsed kubeconfig `config` runs an exec plugin (`aws eks
    get-token`) and holds no token, run it once and put the token it prints
    (client.authentication.k8s.io ExecCredential `status.token`) in the plugin's place; True if
    it did. Raises `KubeconfigError` saying why the plugin gave no token."""
    user = current_context(config).user
    plugin = user.get("exec")
    # A token, inline or in a file, is sent in the plugin's stead (client-go's exec round tripper
    # leaves a request that already carries an Authorization header as it is).
    if not plugin or user.get("token") or user.get("tokenFile"):
        return False
    env = {**os.environ, **{e["name"]: e["value"] for e in plugin.get("env") or []}}
    try:
        done = subprocess.run(
            [plugin["command"], *(plugin.get("args") or [])],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        raise KubeconfigError(f"its exec plugin cannot run: {error}") from None
    try:
        token = json.loads(done.stdout)["status"]["token"] if done.returncode == 0 else None
    except (ValueError, KeyError, TypeError):
        token = None
    if not token:
        last = (done.stderr.strip().splitlines() or ["(no message)"])[-1]
        raise KubeconfigError(f"its exec plugin {plugin['command']} gave no token: {last}")
    user.pop("exec")
    user["token"] = token
    return True


def _file(section: dict[str, Any], name: str, folder: Path | None) -> Path | None:
    """The file the kubeconfig names for `name`, unless it also holds `name`-data, which
    overrides it as client-go reads a kubeconfig (clientcmd's validation: "client-cert-data and
    client-cert are both specified ... client-cert-data will override"). A relative path is
    relative to the kubeconfig's own folder ("File and path references in a kubeconfig file are
    relative to the location of the kubeconfig file": kubernetes.io, Organizing Cluster Access
    Using kubeconfig Files); a document given without a file leaves it to the working directory."""
    if section.get(f"{name}-data") or not section.get(name):
        return None
    path = Path(section[name]).expanduser()
    return folder / path if folder is not None and not path.is_absolute() else path


def _bearer_token(user: dict[str, Any], folder: Path | None) -> str | None:
    """The user's bearer token: `tokenFile`'s content, stripped, where it names one, which
    client-go prefers to an inline `token` ("The last successfully read value takes precedence
    over BearerToken": k8s.io/client-go rest.Config `BearerTokenFile`), else `token`. A file
    that cannot be read or is empty falls back to `token`; without one it is an error."""
    path = _file(user, "tokenFile", folder)
    if path is None:
        return user.get("token")
    try:
        token, problem = path.read_text().strip(), "is empty"
    except OSError as error:
        token, problem = "", f"cannot be read: {error}"
    if token:
        return token
    if user.get("token"):
        return str(user["token"])
    raise KubeconfigError(f"its user's tokenFile {path} {problem}")


def _material(section: dict[str, Any], name: str, folder: Path | None) -> bytes | None:
    if section.get(f"{name}-data"):
        return base64.b64decode(section[f"{name}-data"])
    path = _file(section, name, folder)
    return path.read_bytes() if path is not None else None


def is_ready(pod: dict[str, Any]) -> bool:
    """The pod's Ready condition is True (and it is not being deleted)."""
    if pod["metadata"].get("deletionTimestamp"):
        return False
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)


def selector(labels: dict[str, str]) -> str:
    """A label selector query parameter."""
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()))
