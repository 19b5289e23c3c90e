"""Scenario: the package used from other people's programs, as the README's "Use it from your own
program" and docs/package.md show: the examples in examples/ (YAML and TypeScript through `pulumi
package add` of the component provider, YAML's from a git URL, TypeScript's from the provider
folder, Python with the package installed by pip into a fresh virtualenv), each run by the real CLI
and language host on a control plane whose dedicated nodes, roles and certificates were made
elsewhere. The git URL is a clean checkout committed and tagged here, served over HTTPS by a git
server on 127.0.0.1 (reached as `git.kiam-eks.test` through `HTTPS_PROXY`: e2e/harness/git_server.py
says why) that lives only as long as that `pulumi package add`. The engine serves both public
components' schema; each example installs kiam's Kubernetes side (`KiamKubernetes`: no AWS or TLS
resource, which this machine cannot run, unlike `Kiam`) to Ready servers on the dedicated nodes and
Ready agents everywhere else, agents only after the servers; a second `up` changes nothing; a
destroy removes it before the next language installs. The Python example is first installed as
version 0.1.0 wrote it, with that version, then upgraded to today's package and example: nothing
changes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from e2e.harness.consumer import (
    MadeElsewhere,
    clean_checkout,
    dedicated_nodes,
    made_elsewhere,
    plugin_in_this_environment,
    served_checkout,
)
from e2e.harness.environment import Environment
from e2e.harness.git_server import GitSource, serve_git
from e2e.harness.history import checkout_of
from e2e.harness.kube import is_ready
from e2e.harness.pulumi import PulumiStack, Result, read_event_log
from e2e.harness.shape import shape_of
from e2e.harness.toolchain import REPO
from e2e.harness.waiting import wait_for
from e2e.tests.conftest import REPORT, fresh_environment
from kiam_eks.contracts import labels, tokens
from kiam_eks.settings.loader import settings_from_stack_file, stack_file_for
from tools.package_layout import package_dirs

LANGUAGES = ("yaml", "typescript", "python")
GROUP = "kiam-server-made-elsewhere"
NAMESPACE = "kiam"
# What the Python example needs besides the package, pinned to what the provider built here
# expects (e2e/requirements.txt): the package is installed without its dependencies, whose
# pulumi-kubernetes bound asks for a newer provider than this machine has.
PYTHON_DEPENDENCIES = ("pulumi", "pulumi-kubernetes", "pydantic", "PyYAML", "protobuf")
# Where the YAML example's package comes from: OWNER/NAME.git on the test's git server, the
# provider folder in it, the tag.
GIT_OWNER, GIT_NAME, GIT_SUBDIR = "kiam-eks", "kiam-eks", "provider"
# The last commit of main whose `KiamKubernetes` took flat arguments (version 0.1.0), before they
# became `Kiam`'s sections.
FLAT_ARGUMENTS = "8e1943a9b4c8cc011b24cc973b2b4f5cb00b3d37"


@dataclass
class Cluster:
    env: Environment
    checkout: Path
    plugin: Path
    values: MadeElsewhere
    tolerated: list[str]
    """The nodes that are neither dedicated nor tainted against the agents."""


@pytest.fixture(scope="module")
def cluster(bin_dir: Path, session_root: Path) -> Iterator[Cluster]:
    settings, _ = settings_from_stack_file(REPO / stack_file_for("dev"))
    with fresh_environment(session_root, bin_dir, "consumers") as env:
        shape = shape_of(settings)
        shape.apply(env.kube)
        env.kube.apply(dedicated_nodes(settings, GROUP))
        checkout = clean_checkout(env.root / "checkout")
        tolerated = sorted(n for n in shape.node_names if not n.startswith("untolerated-"))
        yield Cluster(
            env, checkout, plugin_in_this_environment(checkout), made_elsewhere(settings, GROUP),
            tolerated,
        )  # fmt: skip


@dataclass
class Consumer:
    language: str
    checkout: Path
    stack: PulumiStack
    up: Result
    events: list[dict[str, Any]]
    served: GitSource | None = None
    """The git server's record, for the consumer whose package was added from it."""


def _timed(what: str, command: list[str], cwd: Path) -> None:
    started = time.monotonic()
    subprocess.run(command, cwd=cwd, check=True, capture_output=True, text=True)
    REPORT.append(f"consumers: {what} in {time.monotonic() - started:.1f} s")


def _python_environment(project: Path) -> Path:
    """A fresh virtualenv with the package's dependencies."""
    venv = project / "venv"
    subprocess.run(["python3", "-m", "venv", str(venv)], check=True, capture_output=True)
    pins = [
        line
        for line in (REPO / "e2e" / "requirements.txt").read_text().splitlines()
        if line.split("=")[0].split(">")[0] in PYTHON_DEPENDENCIES
    ]
    _timed("the Python example's dependencies installed", [*_pip(venv), *pins], project)
    return venv


def _pip(venv: Path) -> list[str]:
    return [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet"]


def _upgrade_from_flat_arguments(stack: PulumiStack, venv: Path, checkout: Path) -> None:
    """The Python example as version 0.1.0 wrote it (`KiamKubernetes`' flat arguments),
    installed with that version by pip; then the package of `checkout` installed over it by pip
    and today's example (the same settings in sections): the preview and the `up` change
    nothing, every URN is the one 0.1.0 made, and the next `up` is judged from the record the
    first one wrote. Destroyed after, so that the install the
    other tests read is made by today's package from the start."""
    project = stack.project_dir
    before = checkout_of(FLAT_ARGUMENTS, project.parent / "python-0.1.0")
    _timed("kiam-eks 0.1.0 installed by pip", [*_pip(venv), "--no-deps", str(before)], project)
    today = (project / "__main__.py").read_text()
    (project / "__main__.py").write_text((before / "examples/python/__main__.py").read_text())
    stack.up()
    installed = sorted(r["urn"] for r in stack.resources())
    _timed("kiam-eks upgraded by pip", [*_pip(venv), "--no-deps", str(checkout)], project)
    (project / "__main__.py").write_text(today)
    stack.preview("--expect-no-changes", "--diff")
    upgraded = stack.up("--expect-no-changes")
    # 0.1.0 recorded nothing of what it installed: this one update is applied as it was, said.
    assert "its last update recorded nothing of what it installed" in upgraded.output
    # The same resources; the state also holds the engine's builtin `pulumi` provider, which
    # the component's read of its record (`readStackResourceOutputs`) goes through: a provider
    # entry of the state, no object anywhere.
    assert sorted(r["urn"] for r in stack.resources()) == sorted(
        [*installed, "urn:pulumi:consumer::kiam-python-consumer::pulumi:providers:pulumi::default"]
    )
    judged = stack.up("--expect-no-changes")
    assert "recorded nothing" not in judged.output, judged.output
    REPORT.append(
        f"consumers: python example upgraded from 0.1.0, {len(installed)} resources, no change, "
        f"in {upgraded.seconds:.1f} s"
    )
    stack.destroy()


def _add_from_git(stack: PulumiStack, root: Path) -> GitSource:
    """`pulumi package add <git URL>` of a clean checkout's provider, served by a git server for
    the length of that command; only that command's environment trusts and reaches it."""
    checkout = served_checkout(root / "served")
    with serve_git(
        checkout, root / "git-server", owner=GIT_OWNER, name=GIT_NAME, subdir=GIT_SUBDIR
    ) as source:
        added = replace(stack, extra_env={**stack.extra_env, **source.env}).run(
            "package", "add", source.url
        )
    REPORT.append(f"consumers: yaml package added from {source.url} in {added.seconds:.1f} s")
    return source


@pytest.fixture(scope="module", params=LANGUAGES)
def consumer(cluster: Cluster, request: pytest.FixtureRequest) -> Iterator[Consumer]:
    language: str = request.param
    env = cluster.env
    project = env.root / "projects" / language
    shutil.copytree(cluster.checkout / "examples" / language, project)
    extra_env: dict[str, str] = {}
    if language == "python":
        venv = _python_environment(project)
        # The program runs with the first python3 on PATH (the sdk v3.68 host): the example's.
        extra_env["PATH"] = os.pathsep.join(
            [str(venv / "bin"), str(env.bin_dir), os.environ.get("PATH", "")]
        )
    stack = PulumiStack(
        stack="consumer",
        project_dir=project,
        backend_dir=env.root / "backend",
        home=env.root / "pulumi-home",
        bin_dir=env.bin_dir,
        kubeconfig=env.plane.kubeconfig,
        state_dir=env.root / "state" / language,
        extra_env=extra_env,
    )
    stack.backend_dir.mkdir(parents=True, exist_ok=True)
    if language == "typescript":
        _timed("npm install of the TypeScript example", ["npm", "install", "--no-audit"], project)
    stack.run("stack", "init", "consumer", "--secrets-provider", "passphrase")
    served = None
    if language == "yaml":
        served = _add_from_git(stack, env.root)
    elif language == "typescript":
        stack.run("package", "add", str(cluster.plugin))
    # The component's Kubernetes objects go through the program's default Kubernetes provider.
    stack.set_config("kubernetes:kubeconfig", env.plane.kubeconfig.read_text(), secret=True)
    for key, value in cluster.values.config.items():
        stack.set_config(key, value)
    for key, value in cluster.values.secrets.items():
        stack.set_config(key, value, secret=True)
    if language == "python":
        # Which installs the checkout's package, as the README says (`pip install <clone>`).
        _upgrade_from_flat_arguments(stack, venv, cluster.checkout)
    log = env.root / f"{language}-up.events.jsonl"
    up = stack.up(event_log=log)
    REPORT.append(f"consumers: {language} example installed in {up.seconds:.1f} s")
    yield Consumer(language, cluster.checkout, stack, up, read_event_log(log), served)
    stack.destroy()
    left = env.kube.items(f"/api/v1/namespaces/{NAMESPACE}/pods")
    assert left == [], f"{language}: pods left after destroy"
    # A namespace the stack released (test_a_namespace_flip_...) outlives the destroy, as
    # released; its owner deletes it, so that the next language creates its own.
    if env.kube.get_or_none(f"/api/v1/namespaces/{NAMESPACE}") is not None:
        env.kube.request("DELETE", f"/api/v1/namespaces/{NAMESPACE}")
        wait_for(
            f"namespace {NAMESPACE} deleted",
            lambda: env.kube.get_or_none(f"/api/v1/namespaces/{NAMESPACE}") is None,
            120,
        )


def test_the_engine_serves_the_committed_schema(cluster: Cluster) -> None:
    stack = cluster.env.stack("schema")
    stack.project_dir.mkdir(parents=True, exist_ok=True)
    served = json.loads(stack.run("package", "get-schema", str(cluster.plugin)).stdout)
    committed = json.loads((REPO / "provider" / "schema.json").read_text())
    # The CLI prints the schema it bound (it adds `config`, drops empty sections and the
    # descriptions the provider repeats on a map's items): the public API must be the same.
    assert _public_api(served) == _public_api(committed)
    assert set(served["resources"]) == {tokens.KIAM, tokens.KIAM_KUBERNETES}


def _public_api(schema: dict[str, Any]) -> dict[str, Any]:
    """Each component's arguments and outputs: name, type, plainness, description, required."""

    def top(props: dict[str, Any]) -> dict[str, Any]:
        return {
            name: (prop.get("description"), prop.get("plain", False), _type_of(prop))
            for name, prop in props.items()
        }

    return {
        token: {
            "description": r.get("description"),
            "inputs": top(r.get("inputProperties", {})),
            "requiredInputs": sorted(r.get("requiredInputs", [])),
            "outputs": top(r.get("properties", {})),
            "required": sorted(r.get("required", [])),
        }
        for token, r in schema["resources"].items()
    }


def _type_of(prop: dict[str, Any]) -> Any:
    if "items" in prop:
        return ["array", _type_of(prop["items"])]
    if "additionalProperties" in prop:
        return ["map", _type_of(prop["additionalProperties"])]
    return prop.get("$ref") or prop.get("type")


def test_one_ready_server_on_each_dedicated_node(cluster: Cluster, consumer: Consumer) -> None:
    servers = cluster.env.pods(NAMESPACE, "server")
    assert all(is_ready(p) for p in servers), consumer.language
    assert sorted(p["spec"]["nodeName"] for p in servers) == cluster.env.dedicated_nodes(GROUP)


def test_a_ready_agent_on_every_other_node_it_tolerates(
    cluster: Cluster, consumer: Consumer
) -> None:
    agents = cluster.env.pods(NAMESPACE, "agent")
    assert all(is_ready(p) for p in agents), consumer.language
    assert sorted(p["spec"]["nodeName"] for p in agents) == cluster.tolerated


def test_the_agents_are_created_after_the_servers_are_ready(consumer: Consumer) -> None:
    def sequence(kind: str, type_: str) -> int:
        return next(
            int(e["sequence"])
            for e in consumer.events
            if kind in e
            and e[kind]["metadata"]["type"] == type_
            and e[kind]["metadata"]["op"] == "create"
        )

    deployment_done = sequence("resOutputsEvent", "kubernetes:apps/v1:Deployment")
    assert deployment_done < sequence("resourcePreEvent", "kubernetes:apps/v1:DaemonSet")


def test_the_outputs_reach_the_program(consumer: Consumer) -> None:
    assert consumer.stack.outputs() == {
        "serverAddress": "kiam-server.kiam.svc.cluster.local:9610",
        "namespace": NAMESPACE,
    }


def test_the_certificates_given_are_the_ones_mounted(cluster: Cluster, consumer: Consumer) -> None:
    import base64

    secret = cluster.env.kube.get(f"/api/v1/namespaces/{NAMESPACE}/secrets/kiam-server-certificate")
    assert (
        base64.b64decode(secret["data"]["tls.crt"]).decode()
        == (cluster.values.config["serverCertificate"])
    )
    assert secret["type"] == labels.TLS_SECRET_TYPE


def test_a_second_up_changes_nothing(consumer: Consumer) -> None:
    result = consumer.stack.up("--expect-no-changes")
    assert "unchanged" in result.output, consumer.language


def test_the_package_reaches_the_program_as_the_readme_says(consumer: Consumer) -> None:
    project = consumer.stack.project_dir
    if consumer.language == "yaml":
        # `pulumi package add <git URL>` records the clone URL without its scheme, the provider
        # folder in it and the tag under `packages:`; `up` ran it from the plugin cache.
        program = yaml.safe_load((project / "Pulumi.yaml").read_text())
        assert program["packages"] == {
            "kiam": "git.kiam-eks.test/kiam-eks/kiam-eks.git/provider@v1.0.0"
        }
        # ... cloned from the test's server (smart HTTP, through its tunnel), nothing else asked.
        assert consumer.served is not None
        requests = consumer.served.requests
        assert {r for r in requests if r[0] == "CONNECT"} == {("CONNECT", "git.kiam-eks.test:443")}
        assert ("POST", f"/{GIT_OWNER}/{GIT_NAME}.git/git-upload-pack") in requests
        # The plugin cache holds the tagged commit, checked out.
        plugin = f"resource-git.kiam-eks.test_{GIT_OWNER}_{GIT_NAME}.git_{GIT_SUBDIR}-v1.0.0"
        cached = consumer.stack.home / "plugins" / plugin
        head = subprocess.run(
            ["git", "-C", str(cached), "rev-parse", "HEAD"],
            check=True, capture_output=True, text=True,
        ).stdout.strip()  # fmt: skip
        assert head == consumer.served.commit
    elif consumer.language == "typescript":
        # `pulumi package add <folder>` links the SDK it generated from the provider's schema.
        package = json.loads((project / "package.json").read_text())
        assert package["dependencies"]["@pulumi/kiam"] == "file:sdks/kiam"
        sdk = json.loads((project / "sdks" / "kiam" / "package.json").read_text())
        # The version the committed schema names, which the package's own version writes.
        served = json.loads((REPO / "provider" / "schema.json").read_text())["version"]
        assert sdk["pulumi"] == {"resource": True, "name": "kiam", "version": served}
    else:
        # The package pip installed, not this checkout, and nothing of it but `kiam_eks` at the
        # top of site-packages.
        python = project / "venv" / "bin" / "python"
        found = subprocess.run(
            [str(python), "-c", "import kiam_eks, sysconfig; print(kiam_eks.__file__); "
             "print(sysconfig.get_paths()['purelib'])"],
            cwd="/", check=True, capture_output=True, text=True,
        ).stdout.split()  # fmt: skip
        module, site = Path(found[0]), Path(found[1])
        assert module == site / "kiam_eks" / "__init__.py"
        record = next(site.glob("kiam_eks-*.dist-info")) / "RECORD"
        files = {line.split(",")[0] for line in record.read_text().splitlines()}
        assert {f.split("/")[0] for f in files} == {"kiam_eks", record.parent.name}
        # Every module of every folder the package maps, and the type marker.
        modules = {
            f"{name.replace('.', '/')}/{module.name}"
            for name, folder in package_dirs(consumer.checkout).items()
            for module in folder.glob("*.py")
        }
        assert {f for f in files if f.endswith(".py")} == modules
        assert "kiam_eks/py.typed" in files


# A program of each language using `Kiam` with one key of a section (`nodeGroup.minSize`) spelled
# `{key}`: the named types of the package schema make the language's own check refuse the
# misspelt one (TypeScript's compiler, the YAML host's schema check before anything is
# registered, mypy against the package pip installed).
TYPED_CONSUMER = REPO / "e2e" / "fixtures" / "typed_consumer"
TYPESCRIPT_PROGRAM = (TYPED_CONSUMER / "kiam.ts.template").read_text()
# Also what tests/test_argument_types.py type-checks against the working tree.
PYTHON_PROGRAM = (TYPED_CONSUMER / "kiam.py.template").read_text()
YAML_RESOURCE = {
    "type": "kiam:Kiam",
    "properties": {
        "clusterName": "dev",
        "accountId": "111122223333",
        "region": "eu-west-1",
        "kubernetesVersion": "1.33",
        "nodeGroup": {
            "subnets": [{"id": "subnet-0a1b2c3d4e5f60001", "zone": "eu-west-1a"}],
            "{key}": 3,
        },
    },
}
KEYS = {"typescript": "minSize", "python": "min_size", "yaml": "minSize"}
MISSPELT = {"typescript": "minSise", "python": "min_sise", "yaml": "minSise"}


def _checked(consumer: Consumer, key: str) -> subprocess.CompletedProcess[str]:
    """The language's own check of a program using `Kiam` with `key` in `nodeGroup`."""
    project = consumer.stack.project_dir
    if consumer.language == "typescript":
        program = project / f"typed-{key}.ts"
        program.write_text(TYPESCRIPT_PROGRAM.format(key=key))
        return subprocess.run(
            [str(project / "node_modules" / ".bin" / "tsc"), "--noEmit", "--strict",
             "--skipLibCheck", "--esModuleInterop", "--moduleResolution", "node",
             "--module", "commonjs", "--target", "es2020", program.name],
            cwd=project, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
    program = project / f"typed_{key}.py"
    program.write_text(PYTHON_PROGRAM.format(key=key))
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent", "--no-incremental",
         "--cache-dir=/dev/null",
         "--python-executable", str(project / "venv" / "bin" / "python"), program.name],
        cwd=project, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def _yaml_up(consumer: Consumer, key: str) -> tuple[PulumiStack, Result]:
    """`pulumi up` of the YAML consumer's project (its package entry, from the git URL) with
    only a `Kiam` whose `nodeGroup` has `key`, as a stack of its own."""
    source = consumer.stack.project_dir
    project = source.parent / f"yaml-typed-{key}"
    shutil.copytree(source, project)
    program = yaml.safe_load((project / "Pulumi.yaml").read_text())
    resource = json.loads(json.dumps(YAML_RESOURCE).replace("{key}", key))
    program.update(config={}, resources={"kiam": resource}, outputs={})
    (project / "Pulumi.yaml").write_text(yaml.safe_dump(program))
    stack = replace(consumer.stack, stack=f"typed-{key.lower()}", project_dir=project, history=[])
    stack.run("stack", "init", stack.stack, "--secrets-provider", "passphrase")
    return stack, stack.up(check=False)


def test_a_misspelt_section_key_fails_the_languages_own_check(consumer: Consumer) -> None:
    """Issue 37: each section of `Kiam` is a named type in the schema and every SDK, so the
    misspelt key fails where each language checks types, and the right one passes there."""
    right, wrong = KEYS[consumer.language], MISSPELT[consumer.language]
    if consumer.language == "yaml":
        stack, refused = _yaml_up(consumer, wrong)
        assert refused.returncode != 0
        assert wrong in refused.output and "NodeGroupOptions" in refused.output, refused.output
        # Refused by the type check: nothing registered, not even the stack itself.
        exported = json.loads(stack.run("stack", "export").stdout)
        assert not exported["deployment"].get("resources"), exported
        _report_refusal(consumer.language, wrong, refused.output)
        return
    passed, failed = _checked(consumer, right), _checked(consumer, wrong)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert failed.returncode != 0
    message = failed.stdout + failed.stderr
    assert wrong in message and (
        "NodeGroupOptions" in message  # tsc: not in type 'NodeGroupOptionsArgs'; mypy: TypedDict
    ), message
    _report_refusal(consumer.language, wrong, message)
    if consumer.language == "typescript":
        # What no compiler saw reaches the component provider, which refuses it by its path
        # (components/provider_host.py) instead of installing the default in its place.
        unchecked = _unchecked_typescript_preview(consumer, wrong)
        assert unchecked.returncode != 0
        assert f"'nodeGroup.{wrong}' is not an input of 'Kiam'" in unchecked.output, (
            unchecked.output
        )
        _report_refusal("typescript through `any`", wrong, unchecked.output)


# The same program with its arguments typed `any`, as plain JavaScript (or TypeScript through a
# cast) sends them: no compiler sees the key, and the SDK's component provider would drop it.
UNCHECKED_TYPESCRIPT = TYPESCRIPT_PROGRAM.replace(
    'new kiam.Kiam("kiam", {{', 'new kiam.Kiam("kiam", <any>{{'
)


def _unchecked_typescript_preview(consumer: Consumer, key: str) -> Result:
    """`pulumi preview` of the TypeScript consumer's project with only a `Kiam` whose arguments
    are typed `any` and whose `nodeGroup` has `key`, as a stack of its own."""
    source = consumer.stack.project_dir
    project = source.parent / "typescript-unchecked"
    shutil.copytree(source, project, ignore=shutil.ignore_patterns("node_modules", "*.ts"))
    (project / "node_modules").symlink_to(source / "node_modules")
    (project / "index.ts").write_text(UNCHECKED_TYPESCRIPT.format(key=key))
    stack = replace(consumer.stack, stack="unchecked", project_dir=project, history=[])
    stack.run("stack", "init", stack.stack, "--secrets-provider", "passphrase")
    return stack.preview(check=False)


def _report_refusal(language: str, key: str, output: str) -> None:
    line = next(line.strip() for line in output.splitlines() if key in line)
    REPORT.append(f"consumers: {language} refused `{key}`: {line[:200]}")


# Issue 36: each component judges its own change. Where each example's program gets a section
# added: after its `server` section, in the language's own spelling.
PROGRAM_FILES = {"yaml": "Pulumi.yaml", "typescript": "index.ts", "python": "__main__.py"}
AFTER_SERVER = {
    "yaml": "      server:\n        replicas: 2\n",
    "typescript": "    server: { replicas: 2 },\n",
    "python": '        "server": {"replicas": 2},\n',
}


def _with_section(consumer: Consumer, section: str, key: str, value: Any) -> str:
    """Write the example with `section: {key: value}` added; return the program as it was."""
    program = consumer.stack.project_dir / PROGRAM_FILES[consumer.language]
    text = program.read_text()
    written = {
        "yaml": f"      {section}:\n        {key}: {json.dumps(value)}\n",
        "typescript": f"    {section}: {{ {key}: {json.dumps(value)} }},\n",
        "python": f'        "{section}": {{"{key}": {value!r}}},\n',
    }[consumer.language]
    anchor = AFTER_SERVER[consumer.language]
    assert anchor in text, text
    program.write_text(text.replace(anchor, anchor + written))
    return text


def test_an_agent_port_change_is_refused_at_preview_by_the_component(
    cluster: Cluster, consumer: Consumer
) -> None:
    """The agents' port is in every node's DNAT rule, which the running agents keep when they
    stop: `KiamKubernetes` reads what its last update recorded and refuses the change before it
    registers anything, in each language, with the words this repository's program uses."""
    daemon_set = f"/apis/apps/v1/namespaces/{NAMESPACE}/daemonsets/kiam-agent"
    generation = cluster.env.kube.get(daemon_set)["metadata"]["generation"]
    program = consumer.stack.project_dir / PROGRAM_FILES[consumer.language]
    original = _with_section(consumer, "agent", "port", 8182)
    try:
        refusals = [consumer.stack.preview(check=False), consumer.stack.up(check=False)]
    finally:
        program.write_text(original)
    for refused in refusals:
        assert refused.returncode != 0, refused
        assert (
            "KiamKubernetes 'kiam': refused: this change from what the stack's last update "
            "installed would take credentials away (1 problem):" in refused.output
        ), refused.output
        assert (
            "kiam:agent.port: every node's iptables rule sends pods' metadata requests to port "
            "8181, where the running agents listen" in refused.output
        ), refused.output
    REPORT.append(
        f"consumers: {consumer.language} agent port change refused at preview in "
        f"{refusals[0].seconds:.1f} s"
    )
    assert cluster.env.kube.get(daemon_set)["metadata"]["generation"] == generation
    consumer.stack.preview("--expect-no-changes")


def test_a_namespace_flip_releases_the_namespace_and_deletes_nothing(
    cluster: Cluster, consumer: Consumer
) -> None:
    """`namespace.create` switched off for the namespace the component created: the update
    keeps it (in the state, kept on delete), the next forgets it, and it stays in the cluster
    with everything in it. Last of the module's tests for each language: the fixture deletes
    the namespace after the destroy, as its owner would."""
    kube = cluster.env.kube
    path = f"/api/v1/namespaces/{NAMESPACE}"
    uid = kube.get(path)["metadata"]["uid"]
    _with_section(consumer, "namespace", "create", False)
    released = consumer.stack.up()
    assert "sequenced change: kiam:namespace.create" in released.output, released.output
    namespaces = [
        r for r in consumer.stack.resources() if r["type"] == "kubernetes:core/v1:Namespace"
    ]
    assert [r.get("retainOnDelete") for r in namespaces] == [True]
    forgotten = consumer.stack.up()
    assert "kubernetes:core/v1:Namespace" not in {r["type"] for r in consumer.stack.resources()}, (
        forgotten.output
    )
    assert kube.get(path)["metadata"]["uid"] == uid
    assert kube.get(path)["metadata"].get("deletionTimestamp") is None
    assert [p for p in kube.items(f"{path}/pods") if is_ready(p)], "kiam's pods left with it"
    consumer.stack.preview("--expect-no-changes")
    REPORT.append(f"consumers: {consumer.language} namespace released, then forgotten, kept")
