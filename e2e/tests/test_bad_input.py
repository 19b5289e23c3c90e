"""Scenario 8, bad input through the real CLI: an invalid setting stops `pulumi preview` and `up`
with the message the offline plan prints, no traceback, and nothing created; settings set with
`pulumi config set --path` are read as the stack file's would be."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from e2e.harness.environment import Environment, write_stack_file
from e2e.harness.pulumi import PulumiStack
from e2e.tests.conftest import deploy, example_config, with_changes
from kiam_eks.settings import SettingsError
from kiam_eks.settings.loader import settings_from_values, stack_file_for

STACK = "bad"


def expected_message(config: dict[str, object]) -> str:
    """What the plan prints for these settings: the loader's one message."""
    values = {k.removeprefix("kiam:"): v for k, v in config.items()}
    with pytest.raises(SettingsError) as error:
        settings_from_values(values, stack_file_for(STACK))
    return str(error.value)


@pytest.fixture(scope="module")
def bad(env: Environment) -> Iterator[tuple[PulumiStack, dict[str, object]]]:
    config = with_changes(example_config("dev"), server={"replicas": 1})
    # Not `deploy`: that validates the file to shape the cluster; here only the CLI sees it.
    stack = env.stack(STACK)
    stack.create(write_stack_file(env.root / "stack-files" / f"Pulumi.{STACK}.yaml", config))
    yield stack, config
    stack.remove()


@pytest.mark.parametrize("command", ["preview", "up"])
def test_an_invalid_setting_stops_the_cli_with_the_plans_message(
    bad: tuple[PulumiStack, dict[str, object]], command: str
) -> None:
    stack, config = bad
    result = stack.preview(check=False) if command == "preview" else stack.up(check=False)
    assert result.returncode != 0
    message = expected_message(config)
    assert "kiam:server.replicas" in message
    for line in message.splitlines():
        assert line in result.output
    assert "Traceback" not in result.output
    # Nothing was created: the stack holds no resource but the engine's own root (which `up`
    # records before the program runs), not even a provider.
    assert [r["type"] for r in stack.resources()] in ([], ["pulumi:pulumi:Stack"])


def test_settings_set_with_the_cli_are_read(env: Environment) -> None:
    stack, _ = deploy(env, "cli", example_config("dev"))
    for path, value in [
        ("kiam:nodeGroup.minSize", "3"),
        ("kiam:nodeGroup.desiredSize", "3"),
        ("kiam:nodeGroup.maxSize", "4"),
        ("kiam:server.replicas", "3"),
    ]:
        stack.run("config", "set", "--stack", "cli", "--path", path, value)
    try:
        stack.up()
        deployment = env.kube.get("/apis/apps/v1/namespaces/kiam/deployments/kiam-server")
        assert deployment["spec"]["replicas"] == 3
        assert deployment["status"]["readyReplicas"] == 3
        assert len(env.dedicated_nodes()) == 3
    finally:
        stack.destroy()


def test_an_account_id_reaches_the_program_as_the_string_it_is(env: Environment) -> None:
    """About one account id in ten starts with 0: the stack file the harness (and the sandbox)
    writes keeps it a string for the CLI's YAML 1.2 reader, and so does `pulumi config set
    --path` (seen here with CLI v3.276). Written unquoted by hand, the CLI reads it as the
    number without its zero, and the settings refuse it with the fix."""
    config = with_changes(example_config("dev"), cluster={"accountId": "098765432109"})
    stack, _ = deploy(env, "zero", config)
    try:
        assert stack.preview().returncode == 0
        path = "kiam:cluster.accountId"
        stack.run("config", "set", "--stack", "zero", "--path", path, "098765432109")
        assert stack.preview().returncode == 0
        written = stack.stack_file.read_text()
        assert "accountId: '098765432109'" in written
        stack.stack_file.write_text(
            written.replace("accountId: '098765432109'", "accountId: 098765432109")
        )
        refused = stack.preview(check=False)
        assert refused.returncode != 0
        assert (
            "kiam:cluster.accountId: got the number 98765432109, not a string: an account id "
            "must be quoted in the stack file (accountId: '098765432109' if that is the account)"
        ) in refused.output
        assert "Traceback" not in refused.output
    finally:
        stack.remove()
