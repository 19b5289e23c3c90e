"""settings/node_group.py: what the mutants the other tests let live would change."""

from __future__ import annotations

from typing import Any

import pytest

from kiam_eks.settings.node_group import NodeGroupSettings
from tests.safety import model_problems

SUBNETS = [
    {"id": "subnet-00000000000000001", "zone": "eu-west-1a"},
    {"id": "subnet-00000000000000002", "zone": "eu-west-1b"},
]


def problems(**values: Any) -> list[str]:
    return model_problems(NodeGroupSettings, {"subnets": SUBNETS, **values})


def test_the_defaults_exactly() -> None:
    assert NodeGroupSettings.model_validate({"subnets": SUBNETS}).model_dump() == {
        "subnets": SUBNETS,
        "instance_types": ["t3.medium"],
        "capacity_type": "ON_DEMAND",
        "ami_type": "AL2023_x86_64_STANDARD",
        "min_size": 3,
        "desired_size": 3,
        "max_size": 4,
        "disk_size_gib": 20,
        "labels": {},
        "taint": {"key": "dedicated", "value": "kiam-server", "effect": "NO_SCHEDULE"},
        "max_unavailable": 1,
    }


@pytest.mark.parametrize(
    ("key", "lowest", "highest", "others"),
    [
        ("minSize", 1, 100, {"desiredSize": 100, "maxSize": 100}),
        ("desiredSize", 1, 100, {"minSize": 1, "maxSize": 100}),
        ("maxSize", 1, 100, {"minSize": 1, "desiredSize": 1}),
        ("diskSizeGiB", 20, 1000, {}),
        ("maxUnavailable", 1, 100, {}),
    ],
)
def test_each_bound_is_exactly_where_it_is_documented(
    key: str, lowest: int, highest: int, others: dict[str, int]
) -> None:
    assert problems(**{**others, key: lowest}) == []
    assert problems(**{**others, key: highest}) == []
    assert f"{key}: Input should be greater than or equal to {lowest}" in problems(
        **{**others, key: lowest - 1}
    )
    assert f"{key}: Input should be less than or equal to {highest}" in problems(
        **{**others, key: highest + 1}
    )


def test_one_to_twenty_instance_types() -> None:
    assert problems(instanceTypes=["t3.medium"] * 20) == []
    assert problems(instanceTypes=[]) == [
        "instanceTypes: List should have at least 1 item after validation, not 0"
    ]
    assert problems(instanceTypes=["t3.medium"] * 21) == [
        "instanceTypes: List should have at most 20 items after validation, not 21"
    ]


def test_two_subnets_at_least() -> None:
    assert model_problems(NodeGroupSettings, {"subnets": SUBNETS[:1]}) == [
        "subnets: List should have at least 2 items after validation, not 1"
    ]


def test_a_node_label_key_of_63_characters_is_allowed_and_one_more_refused() -> None:
    key = "example.com/" + "a" * 51
    assert problems(labels={key: "x"}) == []
    assert problems(labels={key + "a": "x"}) == [
        f"labels.{key}a.[key]: Value error, '{key}a' is longer than the 63 characters EKS "
        "allows for a node label key"
    ]


@pytest.mark.parametrize(
    ("sizes", "refused"),
    [((2, 2, 2), False), ((2, 1, 4), True), ((1, 3, 2), True), ((1, 1, 1), False)],
)
def test_sizes_satisfy_min_desired_max(sizes: tuple[int, int, int], refused: bool) -> None:
    low, desired, high = sizes
    assert problems(minSize=low, desiredSize=desired, maxSize=high) == (
        [
            ": Value error, sizes must satisfy minSize <= desiredSize <= maxSize "
            f"(got {low}, {desired}, {high})"
        ]
        if refused
        else []
    )
