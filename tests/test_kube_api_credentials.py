"""How a kubeconfig's credentials are read (program/kube_api.py): from the files it names, as
kubectl finds them, and no copy of them outlives its use on disk.

The program builds a `KubeApi` on every preview and `up` (program/live_cluster.py, the
Pod Identity look-ups): it once left each run's client certificate and key, and a copy of the
kubeconfig, in folders of their own under the temporary directory, never removed (2,649 such
folders on the development machine after a week of real-engine runs)."""

from __future__ import annotations

import base64
import ssl
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from e2e.standins.signing import make_ca
from kiam_eks.contracts.kubeconfig import KubeconfigError
from kiam_eks.program.kube_api import KubeApi, anchor, private_file, with_exec_token
from tests.kubeconfigs import kubeconfig_document


@pytest.fixture
def temporary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The folder `tempfile` writes under, watched by the tests."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


def _inline(cert: str, key: str) -> dict[str, Any]:
    return {
        "client-certificate-data": base64.b64encode(cert.encode()).decode(),
        "client-key-data": base64.b64encode(key.encode()).decode(),
    }


def test_an_inline_client_key_is_loaded_and_leaves_no_file(temporary: Path) -> None:
    cert, key = make_ca("client", 1)

    api = KubeApi(kubeconfig_document(_inline(cert, key)))

    assert api.server == "https://127.0.0.1:6443"
    assert list(temporary.iterdir()) == []


def test_a_client_key_that_does_not_load_leaves_no_file_either(temporary: Path) -> None:
    cert, _ = make_ca("client", 1)
    _, other_key = make_ca("other", 1)

    with pytest.raises(ssl.SSLError):
        KubeApi(kubeconfig_document(_inline(cert, other_key)))

    assert list(temporary.iterdir()) == []


def test_client_files_are_loaded_where_they_are_without_a_copy(
    temporary: Path, tmp_path: Path
) -> None:
    cert, key = make_ca("client", 1)
    (tmp_path / "tls.crt").write_text(cert)
    (tmp_path / "tls.key").write_text(key)
    kubeconfig = tmp_path / "kubeconfig.yaml"
    files = {
        "client-certificate": str(tmp_path / "tls.crt"),
        "client-key": str(tmp_path / "tls.key"),
    }
    kubeconfig.write_text(yaml.safe_dump(kubeconfig_document(files)))

    api = KubeApi(kubeconfig)

    assert api.server == "https://127.0.0.1:6443"
    assert list(temporary.iterdir()) == []


def test_a_private_file_is_the_user_s_alone_and_gone_when_the_process_exits(
    tmp_path: Path,
) -> None:
    script = (
        "import sys, tempfile\n"
        f"tempfile.tempdir = {str(tmp_path)!r}\n"
        "from kiam_eks.program.kube_api import private_file\n"
        "path = private_file('kubeconfig.yaml', 'secret')\n"
        "print(path, oct(path.stat().st_mode & 0o777), oct(path.parent.stat().st_mode & 0o777),"
        " path.read_text())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )

    assert done.returncode == 0, done.stderr
    path, mode, folder_mode, text = done.stdout.split()
    assert (mode, folder_mode, text) == ("0o600", "0o700", "secret")
    assert Path(path).parent.parent == tmp_path
    assert list(tmp_path.iterdir()) == []


def test_a_private_file_is_readable_while_the_process_runs(temporary: Path) -> None:
    path = private_file("kubeconfig.yaml", "apiVersion: v1\n")

    assert path.read_text() == "apiVersion: v1\n"
    assert path.parent.parent == temporary


def test_relative_files_are_read_from_the_kubeconfig_s_folder(
    temporary: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cert, key = make_ca("client", 1)
    authority, _ = make_ca("authority", 1)
    folder = tmp_path / "config"
    (folder / "pki").mkdir(parents=True)
    (folder / "pki" / "tls.crt").write_text(cert)
    (folder / "pki" / "tls.key").write_text(key)
    (folder / "pki" / "ca.crt").write_text(authority)
    document = kubeconfig_document(
        {"client-certificate": "pki/tls.crt", "client-key": "pki/tls.key"}
    )
    document["clusters"][0]["cluster"]["certificate-authority"] = "pki/ca.crt"
    (folder / "kubeconfig.yaml").write_text(yaml.safe_dump(document))
    monkeypatch.chdir(tmp_path)  # where the relative paths name nothing

    api = KubeApi(folder / "kubeconfig.yaml")

    trusted = [c["subject"] for c in api._ssl.get_ca_certs()]
    assert ((("commonName", "authority"),), (("organizationName", "kiam"),)) in trusted
    assert list(temporary.iterdir()) == []


def test_inline_data_overrides_a_file_as_client_go_reads_it(temporary: Path) -> None:
    cert, key = make_ca("client", 1)
    user = {**_inline(cert, key), "client-certificate": "/absent.crt", "client-key": "/absent.key"}

    api = KubeApi(kubeconfig_document(user))

    assert api.server == "https://127.0.0.1:6443"
    assert list(temporary.iterdir()) == []


def test_a_token_file_is_read_beside_the_kubeconfig_and_wins_over_an_inline_token(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """client-go reads `tokenFile` relative to the kubeconfig (clientcmd
    `GetAuthInfoFileReferences`), strips it, and prefers what it read to `token` (rest.Config
    `BearerTokenFile`); an unreadable or empty file leaves `token`, or is an error naming it."""
    (tmp_path / "secrets").mkdir()
    (tmp_path / "secrets" / "token").write_text("from-file\n")
    monkeypatch.chdir(tmp_path.parent)  # where the relative path names nothing
    config = tmp_path / "kubeconfig.yaml"

    def token_of(user: dict[str, Any]) -> str | None:
        config.write_text(yaml.safe_dump(kubeconfig_document(user)))
        return KubeApi(config)._token

    assert token_of({"tokenFile": "secrets/token"}) == "from-file"
    assert token_of({"tokenFile": "secrets/token", "token": "inline"}) == "from-file"
    assert token_of({"tokenFile": "secrets/absent", "token": "inline"}) == "inline"
    (tmp_path / "secrets" / "empty").write_text(" \n")
    assert token_of({"tokenFile": "secrets/empty", "token": "inline"}) == "inline"
    with pytest.raises(KubeconfigError, match=r"tokenFile .*secrets/absent cannot be read"):
        token_of({"tokenFile": "secrets/absent"})
    with pytest.raises(KubeconfigError, match=r"tokenFile .*secrets/empty is empty"):
        token_of({"tokenFile": "secrets/empty"})


def test_anchoring_makes_every_file_reference_absolute_as_client_go_resolves_them(
    tmp_path: Path,
) -> None:
    """A document used away from its file keeps its references leading where they did: the
    certificates, the key, the token file, and an exec plugin named by a path; a plugin looked
    up on PATH and an absolute path stay as they are (clientcmd `ResolvePaths`)."""
    document = kubeconfig_document(
        {
            "client-certificate": "pki/tls.crt",
            "client-key": "/etc/kiam/tls.key",
            "tokenFile": "secrets/token",
            "exec": {"command": "bin/get-token"},
        },
        **{"certificate-authority": "pki/ca.crt"},
    )
    anchored = anchor(document, tmp_path)
    assert anchored is document
    assert document["clusters"][0]["cluster"]["certificate-authority"] == str(
        tmp_path / "pki/ca.crt"
    )
    assert document["users"][0]["user"] == {
        "client-certificate": str(tmp_path / "pki/tls.crt"),
        "client-key": "/etc/kiam/tls.key",
        "tokenFile": str(tmp_path / "secrets/token"),
        "exec": {"command": str(tmp_path / "bin/get-token")},
    }
    on_path = kubeconfig_document({"exec": {"command": "aws", "args": ["eks", "get-token"]}})
    assert anchor(on_path, tmp_path)["users"][0]["user"]["exec"]["command"] == "aws"


def test_a_token_is_sent_in_an_exec_plugin_s_stead(tmp_path: Path) -> None:
    """client-go's exec round tripper leaves a request that already carries an Authorization
    header as it is: with a token or a token file the plugin is never run."""
    never = {"command": str(tmp_path / "absent-plugin")}
    for user in ({"token": "t", "exec": never}, {"tokenFile": "/t", "exec": never}):
        document = kubeconfig_document(dict(user))
        assert with_exec_token(document) is False
        assert document["users"][0]["user"] == user
