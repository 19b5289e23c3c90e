"""components/kiam.py: what the mutants the other tests let live would change."""

from __future__ import annotations

import dataclasses

import pytest

from kiam_eks.components.kiam import Composition, RetiredRoles
from kiam_eks.contracts import tokens
from tests.conftest import base_config, run_program
from tests.safety import assert_frozen_and_keyword_only, stack_settings
from tests.test_adoption import CA_CERT, CA_KEY, adoption_config
from tests.test_served_by import config
from tools.mock_engine import Recording


def test_the_running_installs_ca_signs_the_leaves_certificate_and_key_in_place() -> None:
    # (certificate, private key): swapped or doubled, no agent or server would trust the other.
    rec = run_program(adoption_config("servers"))
    leaves = rec.by_type("tls:index/locallySignedCert:LocallySignedCert")
    assert sorted(leaf.name for leaf in leaves) == ["kiam-tls-agent", "kiam-tls-server"]
    for leaf in leaves:
        assert (leaf.inputs["caCertPem"], leaf.inputs["caPrivateKeyPem"]) == (CA_CERT, CA_KEY)


def test_an_association_is_a_child_of_its_role_and_waits_for_the_pod_identity_agent() -> None:
    rec = run_program(config("podIdentity", manage=True))
    association = rec.one("aws:eks/podIdentityAssociation:PodIdentityAssociation")
    assert association.parent == rec.one(tokens.APPLICATION_ROLE, "kiam-app-billing").urn
    assert rec.one("aws:eks/addon:Addon").urn in association.dependencies


def test_the_args_are_a_frozen_keyword_only_value() -> None:
    assert_frozen_and_keyword_only(
        Composition, settings=stack_settings(base_config()), cloud=object(), transition=None
    )


def test_a_retired_stacks_roles_name_no_kiam_role_pattern_or_policy() -> None:
    roles = RetiredRoles(role_base_arn="arn:aws:iam::111122223333:role/kiam-apps/")
    assert (
        roles.server_role_arn,
        roles.node_role_arn,
        roles.application_role_patterns,
        roles.node_role_policies,
    ) == ("", "", [], [])
    with pytest.raises(dataclasses.FrozenInstanceError):
        roles.role_base_arn = "arn:aws:iam::111122223333:role/"  # type: ignore[misc]


def test_a_namespace_the_stack_creates_is_deleted_with_it(base_run: Recording) -> None:
    # Kept on delete only while it is being released (transitions/).
    assert base_run.one("kubernetes:core/v1:Namespace").retain_on_delete is False


@pytest.mark.parametrize(("desired", "surge"), [(3, 0), (4, 1)])
def test_the_servers_spare_nodes_are_the_groups_desired_size_less_the_replicas(
    desired: int, surge: int
) -> None:
    rec = run_program(base_config(node_group={"desiredSize": desired, "maxSize": 6}))
    strategy = rec.one("kubernetes:apps/v1:Deployment").inputs["spec"]["strategy"]
    assert strategy["rollingUpdate"]["maxSurge"] == surge
