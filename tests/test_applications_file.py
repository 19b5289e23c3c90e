"""`kiam:applicationsFile`: applications past what Pulumi can hand a program in its configuration
(contracts/pulumi_config.py: about 700 at the scale stack's shape) in a YAML file of their own,
joined to `kiam:applications` before anything is validated (settings/loader.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from kiam_eks.contracts.pulumi_config import MAX_ARG_STRLEN, config_environment_bytes
from kiam_eks.settings import SettingsError, settings_from_stack_file
from tools.scale_stack import scale_stack

APP = {"namespace": "billing", "roleName": "billing-api"}


def project(tmp_path: Path, config: dict[str, Any], applications: Any = None) -> Path:
    """A project (Pulumi.yaml) with its stack file in stacks/ and, given, an applications file."""
    (tmp_path / "Pulumi.yaml").write_text("name: kiam\nruntime: python\nstackConfigDir: stacks\n")
    (tmp_path / "stacks").mkdir()
    base = yaml.safe_load((Path("stacks") / "Pulumi.dev.yaml").read_text())["config"]
    if applications is not None:
        (tmp_path / "apps").mkdir()
        (tmp_path / "apps" / "dev.yaml").write_text(yaml.safe_dump(applications))
    path = tmp_path / "stacks" / "Pulumi.dev.yaml"
    path.write_text(yaml.safe_dump({"config": {**base, **config}}))
    return path


def test_the_file_s_applications_join_the_stack_file_s(tmp_path: Path) -> None:
    path = project(
        tmp_path,
        {
            "kiam:applicationsFile": "apps/dev.yaml",
            "kiam:applications": {"billing": APP},
        },
        {"applications": {"search": {"namespace": "search", "roleName": "search-api"}}},
    )
    settings, _ = settings_from_stack_file(path)
    assert sorted(settings.applications) == ["billing", "search"]
    assert settings.applications["search"].role_name == "search-api"
    assert settings.applications_file == "apps/dev.yaml"


@pytest.mark.parametrize(
    ("config", "applications", "problem"),
    [
        pytest.param(
            {"kiam:applicationsFile": "apps/none.yaml"},
            {"applications": {}},
            "kiam:applicationsFile: cannot read {root}/apps/none.yaml: No such file or directory",
            id="missing",
        ),
        pytest.param(
            {"kiam:applicationsFile": "apps/dev.yaml"},
            {"billing": APP},
            "kiam:applicationsFile: {root}/apps/dev.yaml must be a mapping with one key, "
            "`applications:`, a mapping of applications",
            id="not-under-applications",
        ),
        pytest.param(
            {"kiam:applicationsFile": "apps/dev.yaml", "kiam:applications": {"billing": APP}},
            {"applications": {"billing": APP}},
            "kiam:applicationsFile: {root}/apps/dev.yaml and kiam:applications both name "
            "billing: each application in one place",
            id="named-twice",
        ),
        pytest.param(
            {"kiam:applicationsFile": 7},
            None,
            "kiam:applicationsFile: must be a file's path (got 7)",
            id="not-a-path",
        ),
        pytest.param(
            {"kiam:applicationsFile": "apps/dev.yaml"},
            {"applications": {"billing": {"namespace": "billing"}}},
            "kiam:applications.billing: needs roleName (a role the stack creates) or roleArn",
            id="an-application-the-model-refuses",
        ),
    ],
)
def test_a_bad_applications_file_is_refused_naming_the_key_and_the_file(
    tmp_path: Path, config: dict[str, Any], applications: Any, problem: str
) -> None:
    path = project(tmp_path, config, applications)
    with pytest.raises(SettingsError) as refused:
        settings_from_stack_file(path)
    assert refused.value.source == str(path)
    expected = problem.format(root=tmp_path.resolve())
    assert any(p.startswith(expected) for p in refused.value.problems), refused.value.problems


def test_a_thousand_applications_fit_once_they_are_in_a_file(tmp_path: Path) -> None:
    """At the scale stack's shape the configuration could not reach the program (over Linux's
    MAX_ARG_STRLEN); with the applications in a file it is the dev stack's size."""
    inline = scale_stack(1000, 50)["config"]
    assert config_environment_bytes(inline) > MAX_ARG_STRLEN
    apps = tmp_path / "apps.yaml"
    document = scale_stack(1000, 50, apps)
    assert config_environment_bytes(document["config"]) < 4096
    path = tmp_path / "Pulumi.scale.yaml"
    path.write_text(yaml.safe_dump(document))
    settings, _ = settings_from_stack_file(path)
    assert len(settings.applications) == 1000
    assert len({a.namespace for a in settings.applications.values()}) == 50
