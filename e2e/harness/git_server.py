"""A git server for `pulumi package add <git URL>`: a folder committed into a bare repository,
tagged, and served over smart HTTP behind TLS from 127.0.0.1, with a CA made here for the CLI to
trust. The CLI reaches it as `https://git.kiam-eks.test/...` through `HTTPS_PROXY`.

Why it is built this way (pulumi/pulumi read as of v3.259; the suite's v3.276 was run against it):
- Only HTTPS reaches the wire. sdk/go/common/workspace/plugins.go `parsePluginSpecFromURL` rewrites
  `git://` and a bare host to `https://` and refuses any other scheme; `http://`, `file://`,
  `ssh://` and a local path end up as a local plugin folder
  (pkg/resource/plugin/host.go `IsLocalPluginPath`). sdk/go/common/util/gitutil/git.go
  `parseGitRepoURLParts` splits the repository from the plugin's folder at the last `.git`.
- The clone is go-git's, in the CLI's process (gitutil/git.go `gitCloneOrPull`), with Go's default
  transport: the server's certificate must chain to the system pool, which `SSL_CERT_FILE` replaces
  (Go reads no CN: the leaf names its host as a SAN), and `HTTPS_PROXY` is honoured.
- `@v1.0.0` is a shallow clone of `refs/tags/v1.0.0` (plugins.go `gitSource.Download`), which
  go-git's dumb HTTP cannot do: a static file server will not serve it, `git http-backend` will.
- The URL's host has no port. With one, v3.276 clones, installs and runs the plugin, then panics
  before it writes Pulumi.yaml: it records the source as the download URL without `git://`
  (pkg/cmd/pulumi/packageresolution/package_resolution.go `naiveResolution`), `host:port/...`
  does not parse as a URL ("first path segment in URL cannot contain colon"), so
  `IsLocalPluginPath` takes it for a path, and `package add`
  (pkg/cmd/pulumi/packagecmd/package_add.go, after "condense local paths") calls `IsDir` on the
  nil result of `os.Stat` (the code path of pulumi/pulumi#21668). A portless host means port 443,
  which an unprivileged test cannot bind; Go never proxies loopback addresses, so the host is a
  name under `.test` (RFC 6761, never resolved: the proxy is the server) and the CLI is given
  `HTTPS_PROXY=http://127.0.0.1:PORT`. The server answers `CONNECT` to that host only, then speaks
  TLS for it on the same connection.
- The whole checkout is unpacked under `$PULUMI_HOME/plugins` and the folder's runtime
  dependencies installed from its PulumiPlugin.yaml (pkg/workspace/plugin.go
  `installDependenciesForPluginSpec`), so what is served is what the plugin runs from; a
  symlink out of it is refused on unpacking (e2e/harness/consumer.py `served_checkout`).

Each request in the tunnel runs `git http-backend` as a CGI program; its `Status:` header becomes
the HTTP status. Every request is kept (`GitSource.requests`, a refused `CONNECT` too), so a test
can tell the CLI cloned from here and asked for nothing else.
"""

from __future__ import annotations

import os
import shutil
import ssl
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from e2e.standins.signing import make_ca, make_leaf
from kiam_eks.components.cloud import CertificateRequest

LISTEN = "127.0.0.1"
HOST = "git.kiam-eks.test"
"""The name in the URL; only the proxy (this server) ever sees it."""
# The same commit for the same folder on every run, whatever the machine's git configuration.
_GIT_ENV = {
    "GIT_AUTHOR_NAME": "kiam-eks e2e",
    "GIT_AUTHOR_EMAIL": "e2e@kiam-eks.test",
    "GIT_AUTHOR_DATE": "2024-01-01T00:00:00+00:00",
    "GIT_COMMITTER_NAME": "kiam-eks e2e",
    "GIT_COMMITTER_EMAIL": "e2e@kiam-eks.test",
    "GIT_COMMITTER_DATE": "2024-01-01T00:00:00+00:00",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
}


@dataclass(frozen=True)
class GitSource:
    """What `pulumi package add` is given: `url`, reachable with `env` in its environment."""

    url: str
    """`https://git.kiam-eks.test/OWNER/NAME.git/SUBDIR@vVERSION`"""
    ca_file: Path
    proxy: str
    """`http://127.0.0.1:PORT`, the server itself."""
    commit: str
    """The tagged commit's hash."""
    requests: list[tuple[str, str]] = field(default_factory=list)
    """(method, target) of every request served, in order: `CONNECT` with its `host:port`, then
    the tunnelled git requests with their path and query."""

    @property
    def env(self) -> dict[str, str]:
        """The CLI's environment for the clone: trust the CA, go through the server. NO_PROXY is
        emptied (lowercase too: Go reads the first set) so no ambient value bypasses it."""
        return {
            "SSL_CERT_FILE": str(self.ca_file),
            "HTTPS_PROXY": self.proxy,
            "NO_PROXY": "",
            "no_proxy": "",
        }


@contextmanager
def serve_git(
    folder: Path,
    workdir: Path,
    *,
    owner: str,
    name: str,
    subdir: str,
    version: str = "1.0.0",
) -> Iterator[GitSource]:
    """`folder` committed as it is (symlinks and modes kept, ignore rules not applied) into a
    bare repository `OWNER/NAME.git` under `workdir`, tagged `v<version>`, served until the block
    ends."""
    root = workdir / "repositories"
    bare = root / owner / f"{name}.git"
    commit = _commit_and_tag(folder, bare, workdir / "index", f"v{version}")
    ca_file, cert_file, key_file = _certificates(workdir / "tls")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_file, key_file)
    requests: list[tuple[str, str]] = []
    server = _GitServer((LISTEN, 0), context, root, requests)
    thread = threading.Thread(target=server.serve_forever, name="git-server", daemon=True)
    thread.start()
    try:
        yield GitSource(
            url=f"https://{HOST}/{owner}/{name}.git/{subdir}@v{version}",
            ca_file=ca_file,
            proxy=f"http://{LISTEN}:{server.server_address[1]}",
            commit=commit,
            requests=requests,
        )
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def _environ() -> dict[str, str]:
    """This process's environment without the git variables of whatever runs it (a hook's
    GIT_DIR would name another repository)."""
    return {k: v for k, v in os.environ.items() if not k.startswith("GIT_")} | _GIT_ENV


def _git(*args: str, env: dict[str, str]) -> str:
    return subprocess.run(
        ["git", *args], env={**_environ(), **env},
        check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip


def _commit_and_tag(folder: Path, bare: Path, index: Path, tag: str) -> str:
    if bare.exists():
        shutil.rmtree(bare)
    index.unlink(missing_ok=True)
    bare.parent.mkdir(parents=True, exist_ok=True)
    _git("init", "--quiet", "--bare", "--initial-branch", "main", str(bare), env={})
    # The folder is the work tree and the index lives beside the repository: nothing is written
    # into the folder.
    env = {"GIT_DIR": str(bare), "GIT_WORK_TREE": str(folder), "GIT_INDEX_FILE": str(index)}
    _git("add", "--all", "--force", env=env)
    _git("commit", "--quiet", "--no-verify", "--message", f"kiam-eks {tag}", env=env)
    _git("tag", tag, env=env)
    return _git("rev-parse", f"refs/tags/{tag}^{{commit}}", env=env)


def _certificates(directory: Path) -> tuple[Path, Path, Path]:
    """A throwaway CA and a server certificate for HOST it signed (CA, cert, key files)."""
    ca_cert, ca_key = make_ca("kiam-e2e git server CA", 24)
    request = CertificateRequest(
        common_name=HOST,
        dns_names=[HOST],
        ip_addresses=[],
        uses=["digital_signature", "key_encipherment", "server_auth"],
        validity_hours=24,
        early_renewal_hours=0,
        organization="kiam-e2e",
    )
    cert, key = make_leaf(request, ca_cert, ca_key)
    directory.mkdir(parents=True, exist_ok=True)
    files = directory / "ca.pem", directory / "server.pem", directory / "server.key"
    for path, pem in zip(files, (ca_cert, cert, key), strict=True):
        path.write_text(pem)
    files[2].chmod(0o600)
    return files


class _GitServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(
        self,
        address: tuple[str, int],
        context: ssl.SSLContext,
        project_root: Path,
        requests: list[tuple[str, str]],
    ) -> None:
        super().__init__(address, _ProxyHandler)
        self.context = context
        self.project_root = project_root
        self.requests = requests
        self.lock = threading.Lock()

    def record(self, method: str, target: str) -> None:
        with self.lock:
            self.requests.append((method, target))


class _ProxyHandler(BaseHTTPRequestHandler):
    """The proxy's side: `CONNECT HOST:443` only, answered by TLS on the same connection."""

    server: _GitServer

    def do_CONNECT(self) -> None:
        self.server.record(self.command, self.path)
        if self.path != f"{HOST}:443":
            self.send_error(403, f"only {HOST}:443 is served here")
            return
        self.send_response(200, "Connection established")
        self.end_headers()
        self.close_connection = True
        try:
            tunnel = self.server.context.wrap_socket(self.connection, server_side=True)
        except (ssl.SSLError, OSError):
            return
        try:
            _GitHttpHandler(tunnel, self.client_address, self.server)
        finally:
            tunnel.close()

    def log_message(self, format: str, *args: Any) -> None:
        pass  # kept in `GitSource.requests`


class _GitHttpHandler(BaseHTTPRequestHandler):
    """Smart HTTP through `git http-backend` (CGI), one process per request; HTTP/1.0, so each
    response ends with its connection (the CLI opens a tunnel per request)."""

    server: _GitServer

    def do_GET(self) -> None:
        self._backend(b"")

    def do_POST(self) -> None:
        self._backend(self._body())

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while size := int(self.rfile.readline().split(b";")[0].strip(), 16):
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                pass  # trailers
            return b"".join(chunks)
        return self.rfile.read(int(self.headers.get("Content-Length", "0")))

    def _backend(self, body: bytes) -> None:
        self.server.record(self.command, self.path)
        path, _, query = self.path.partition("?")
        env = {
            **_environ(),
            "GIT_PROJECT_ROOT": str(self.server.project_root),
            "GIT_HTTP_EXPORT_ALL": "1",
            "GATEWAY_INTERFACE": "CGI/1.1",
            "SERVER_PROTOCOL": self.request_version,
            "REQUEST_METHOD": self.command,
            "PATH_INFO": path,
            "QUERY_STRING": query,
            "CONTENT_TYPE": self.headers.get("Content-Type", ""),
            "CONTENT_LENGTH": str(len(body)),
            "REMOTE_ADDR": self.client_address[0],
        }
        # The backend inflates a gzip body itself; `Git-Protocol` asks for protocol v2.
        for header, variable in (("Content-Encoding", "HTTP_CONTENT_ENCODING"),
                                 ("Git-Protocol", "GIT_PROTOCOL")):  # fmt: skip
            if value := self.headers.get(header):
                env[variable] = value
        done = subprocess.run(
            ["git", "http-backend"], input=body, env=env, capture_output=True, check=False
        )
        # CGI: headers, a blank line, the body; `Status:` is the HTTP status (200 without it).
        head, _, payload = done.stdout.partition(b"\r\n\r\n")
        status, headers = 200, []
        for line in head.decode("latin-1").splitlines():
            key, _, value = line.partition(":")
            if key.lower() == "status":
                status = int(value.split()[0])
            elif key:
                headers.append((key.strip(), value.strip()))
        if done.returncode != 0 and not head:
            status, payload = 500, done.stderr
        self.send_response(status)
        for key, value in headers:
            if key.lower() not in ("content-length", "connection"):
                self.send_header(key, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # kept in `GitSource.requests`
