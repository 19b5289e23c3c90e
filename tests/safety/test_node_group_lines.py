"""components/node_group.py: what the mutants the other tests let live would change."""

from __future__ import annotations

from kiam_eks.components.node_group import NodeGroupArgs
from tests.conftest import base_config
from tests.safety import assert_frozen_and_keyword_only, stack_settings
from tools.mock_engine import Recording

LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"


def test_the_args_are_a_frozen_keyword_only_value() -> None:
    settings = stack_settings(base_config()).node_group
    assert_frozen_and_keyword_only(
        NodeGroupArgs,
        cluster_name="test",
        kubernetes_version="1.33",
        subnet_ids=[subnet.id for subnet in settings.subnets],
        settings=settings,
        node_role_arn="arn:aws:iam::111122223333:role/node",
        node_role_policies=[],
    )


def test_each_launch_template_version_becomes_the_default(base_run: Recording) -> None:
    # The group names the latest version explicitly; the default follows it, so a node EKS
    # launches from the template outside the group's rollout gets the same configuration.
    assert base_run.one(LAUNCH_TEMPLATE).inputs["updateDefaultVersion"] is True
