"""The stack's lock files, read from the backend itself before anything that takes a lock.

A lock is otherwise seen only when a locking command is refused; the recovery must know before it
edits the state, or a live update that ends between its `stack export` and its `stack import`
would have its last checkpoint overwritten. The self-managed backends keep each lock as
`<backend>/.pulumi/locks/<organization>/<project>/<stack>/<uuid>.json` (`.pulumi/locks/<stack>/`
for a backend not in project mode), holding `{pid, username, hostname, timestamp}` (pulumi/pulumi
v3.276.0 `pkg/backend/diy/lock.go`: `stackLockDir`, `lockPath`, `lockContent`). A `file://`
backend is read from disk and an `s3://` one with the AWS CLI (`aws s3 ls`, `aws s3 cp <key> -`,
the deploy job's own credentials); for any other backend None says "not known here", and the
recovery relies on the CLI's own refusal.
"""

from __future__ import annotations

import json
import subprocess
import urllib.parse
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from tools.interrupted.locks import Lock

LOCKS = ".pulumi/locks"
Run = Callable[[list[str]], str]


def _aws(args: list[str]) -> str:
    return subprocess.run(["aws", *args], check=True, capture_output=True, text=True).stdout


def _lock(url: str, content: str) -> Lock:
    document = json.loads(content)
    return Lock(
        url=url,
        user=str(document.get("username", "")),
        host=str(document.get("hostname", "")),
        pid=int(document.get("pid", 0)),
        taken=datetime.fromisoformat(str(document["timestamp"]).replace("Z", "+00:00")),
    )


def lock_files(backend_url: str, project: str, stack: str, aws: Run = _aws) -> list[Lock] | None:
    """Every lock of the stack in its backend, or None when this backend cannot be listed here."""
    parsed = urllib.parse.urlparse(backend_url)
    folders = [f"{LOCKS}/organization/{project}/{stack}", f"{LOCKS}/{stack}"]
    if parsed.scheme == "file":
        root = Path(urllib.parse.unquote(parsed.path))
        return [
            _lock(str(path), path.read_text())
            for folder in folders
            for path in sorted((root / folder).glob("*.json"))
        ]
    if parsed.scheme == "s3":
        base = f"s3://{parsed.netloc}/{parsed.path.strip('/')}".rstrip("/")
        found = []
        for folder in folders:
            try:
                listing = aws(["s3", "ls", f"{base}/{folder}/"])
            except subprocess.CalledProcessError:
                continue  # `aws s3 ls` exits 1 for a prefix with no object
            for line in listing.splitlines():
                name = line.split()[-1] if line.split() else ""
                if name.endswith(".json"):
                    key = f"{base}/{folder}/{name}"
                    found.append(_lock(key, aws(["s3", "cp", key, "-"])))
        return found
    return None
