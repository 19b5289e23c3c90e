"""Stack settings: defaults, every cross-field rule, and messages that name file, key path and what is allowed."""

from __future__ import annotations

import pulumi
import pytest

from kiam_eks.settings import SettingsError
from kiam_eks.settings.loader import settings_from_values
from kiam_eks.settings.stack import StackSettings
from tests.conftest import EXAMPLE_STACKS, base_config, example_config, run_program

SOURCE = "stacks/Pulumi.test.yaml"


def validate(config: dict) -> StackSettings:
    values = {k.removeprefix("kiam:"): v for k, v in config.items()}
    return settings_from_values(values, SOURCE)


def problems(config: dict) -> list[str]:
    with pytest.raises(SettingsError) as caught:
        validate(config)
    assert str(caught.value).startswith(f"{SOURCE}: invalid kiam settings")
    return caught.value.problems


def test_example_stacks_are_the_dev_and_production_clusters() -> None:
    assert EXAMPLE_STACKS == ["dev", "production"]


@pytest.mark.parametrize("stack", EXAMPLE_STACKS)
def test_every_example_stack_is_valid(stack: str) -> None:
    validate(example_config(stack))


def test_defaults_are_the_production_safe_ones() -> None:
    s = validate(base_config())
    assert s.server.replicas == 3
    assert s.server.image == "quay.io/uswitch/kiam:v4.2"
    assert (s.server.session_duration, s.server.session_refresh) == ("60m", "20m")
    assert s.server.priority_class_name == "system-cluster-critical"
    assert s.agent.priority_class_name == "system-node-critical"
    assert s.agent.remove_iptables_rule_on_exit is False
    assert (s.node_group.min_size, s.node_group.desired_size, s.node_group.max_size) == (3, 3, 4)
    assert (s.node_group.taint.key, s.node_group.taint.value, s.node_group.taint.effect) == (
        "dedicated",
        "kiam-server",
        "NO_SCHEDULE",
    )
    assert (s.iam.application_role_path, s.iam.allow_any_role) == ("/kiam-apps/", False)
    assert s.cluster.kubernetes_auth == "exec"


def test_settings_are_frozen() -> None:
    s = validate(base_config())
    with pytest.raises(Exception, match="frozen"):
        s.server.replicas = 5  # type: ignore[misc]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"server": {"replicas": 4}},
            "kiam:nodeGroup.minSize must be at least kiam:server.replicas (got 3 nodes for 4 "
            "servers): hard anti-affinity puts one server per node, so the extra servers would "
            "stay Pending",
        ),
        (
            {"server": {"replicas": 1}},
            "kiam:server.replicas: Input should be greater than or equal to 2 (got 1)",
        ),
        (
            {"server": {"sessionDuration": "15m"}},
            "kiam:server: sessionDuration 15m must be above 15m and at most 60m (kiam's minimum; "
            "the role-chaining maximum)",
        ),
        (
            {"server": {"sessionDuration": "61m"}},
            "kiam:server: sessionDuration 61m must be above 15m and at most 60m (kiam's minimum; "
            "the role-chaining maximum)",
        ),
        (
            {"server": {"sessionDuration": "30m", "sessionRefresh": "30m"}},
            "kiam:server: sessionRefresh 30m must be below sessionDuration 30m",
        ),
        (
            {
                "node_group": {
                    "subnets": [
                        {"id": "subnet-00000000000000001", "zone": "eu-west-1a"},
                        {"id": "subnet-00000000000000002", "zone": "eu-west-1a"},
                    ]
                }
            },
            "kiam:nodeGroup: subnets are all in eu-west-1a: the servers must span at least two zones",
        ),
        (
            {
                "node_group": {
                    "subnets": [
                        {"id": "subnet-00000000000000001"},
                        {"id": "subnet-00000000000000001"},
                    ]
                }
            },
            "kiam:nodeGroup: subnets lists subnet-00000000000000001 more than once",
        ),
        (
            {"agent": {"tolerations": [{"operator": "Exists"}]}},
            "kiam:agent.tolerations[0] tolerates the server taint dedicated=kiam-server:NoSchedule: "
            "agents must never run on server nodes (they would expose the nodes' credentials)",
        ),
        (
            {"agent": {"tolerations": [{"key": "dedicated", "operator": "Exists"}]}},
            "kiam:agent.tolerations[0] tolerates the server taint dedicated=kiam-server:NoSchedule: "
            "agents must never run on server nodes (they would expose the nodes' credentials)",
        ),
        (
            {"iam": {"applicationRolePath": "/"}},
            "kiam:iam: applicationRolePath '/' with no applicationRoleNamePrefix lets the server "
            "assume every role in the account; narrow it, or set allowAnyRole: true to mean it",
        ),
        (
            {"iam": {"applicationRolePath": "/kiam/"}},
            "kiam:iam: applicationRolePath '/kiam/' with prefix '' also matches kiam's own roles "
            "under kiamRolePath '/kiam/': the server could assume them",
        ),
        (
            {"iam": {"applicationRolePath": "/", "applicationRoleNamePrefix": "ki"}},
            "kiam:iam: applicationRolePath '/' with prefix 'ki' also matches kiam's own roles "
            "under kiamRolePath '/kiam/': the server could assume them",
        ),
        (
            {"node_group": {"amiType": "AL2023_ARM_64_STANDARD"}},
            "kiam:nodeGroup: instanceTypes t3.medium do not match the arm64 amiType AL2023_ARM_64_STANDARD",
        ),
    ],
)
def test_cross_field_rules_have_exact_messages(change: dict, message: str) -> None:
    assert problems(base_config(**change)) == [message]


@pytest.mark.parametrize(
    ("routes", "message"),
    [
        # Both compile in Python, and the agent's check once let them through; Go refuses both,
        # so kiam's agent would exit at start.
        (
            r"^/latest/meta-data/instance-id\Z",
            "kiam:agent.allowedMetadataRoutes: '^/latest/meta-data/instance-id\\\\Z' uses "
            "Python's end-of-text escape `\\Z` (Go writes `\\z`), which Go's regexp (kiam's) does "
            "not compile",
        ),
        (
            "^/latest/(meta-data/)?(?(1)instance-id|dynamic/.*)$",
            "kiam:agent.allowedMetadataRoutes: '^/latest/(meta-data/)?(?(1)instance-id|dynamic/.*)$' "
            "uses a conditional `(?(`, which Go's regexp (kiam's) does not compile",
        ),
        (
            "^/latest/(?<=meta-data/)",
            "kiam:agent.allowedMetadataRoutes: '^/latest/(?<=meta-data/)' uses a lookbehind `(?<=`, "
            "which Go's regexp (kiam's) does not compile",
        ),
        (
            "^/latest/(meta-data",
            "kiam:agent.allowedMetadataRoutes: '^/latest/(meta-data' is not a regular expression "
            "(missing ), unterminated subpattern at position 9)",
        ),
        # Go reads \pL; Python cannot, so this check cannot tell whether Go would accept it.
        (
            r"^/latest/\pL+$",
            "kiam:agent.allowedMetadataRoutes: '^/latest/\\\\pL+$' uses a Unicode class `\\pL`, "
            "which this check (Python's re) does not read as Go does",
        ),
    ],
)
def test_metadata_routes_are_refused_unless_go_surely_compiles_them(
    routes: str, message: str
) -> None:
    assert problems(base_config(agent={"allowedMetadataRoutes": routes})) == [message]


def test_every_problem_is_listed_with_its_key_path() -> None:
    config = base_config(server={"replicas": "three", "imagee": "x"}, cluster={"accountId": "1234"})
    config["kiam:sever"] = {}
    assert problems(config) == [
        "kiam:cluster.accountId: '1234' is not a 12-digit AWS account id",
        'kiam:server.replicas: Input should be a valid integer, unable to parse string as an integer (got "three")',
        "kiam:server.imagee: is not a known setting (allowed here: extraArgs, grpcPort, "
        "image, logLevel, maxConnectionAge, maxConnectionAgeGrace, maxConnectionIdle, metricsPort, "
        "priorityClassName, replicas, resources, rolloutTimeoutMinutes, serviceName, sessionDuration, "
        "sessionRefresh, syncInterval, unhealthyNodeTolerationSeconds)",
        "kiam:sever: is not a known setting (allowed here: adoption, agent, applications, applicationsFile, "
        "cluster, existingPermitted, iam, kubeconfig, monitoring, namespace, nodeGroup, podIdentityAgent, retire, server, tls)",
    ]


def test_invalid_settings_stop_the_program_before_any_resource_is_registered(
    registered_types: list[str],
) -> None:
    with pytest.raises(pulumi.RunError) as caught:
        run_program(base_config(server={"replicas": 1}), stack="test")
    assert str(caught.value) == (
        "stacks/Pulumi.test.yaml: invalid kiam settings (1 problem):\n"
        "  - kiam:server.replicas: Input should be greater than or equal to 2 (got 1)"
    )
    # Only the root stack, which the engine registers before the program starts.
    assert registered_types == ["pulumi:pulumi:Stack"]


def test_kubeconfig_is_read_as_a_secret_string() -> None:
    s = validate(base_config() | {"kiam:kubeconfig": '{"apiVersion": "v1"}'})
    assert s.kubeconfig is not None
    assert s.kubeconfig.get_secret_value() == '{"apiVersion": "v1"}'
    assert "apiVersion" not in repr(s)


def test_extra_args_may_never_repeat_a_flag_the_program_renders() -> None:
    """The managed-flag lists in the settings must cover every flag `specs.kiam_flags` renders,
    or an extraArgs entry could silently override one."""
    from kiam_eks.settings.agent import AGENT_MANAGED_FLAGS
    from kiam_eks.settings.server import SERVER_MANAGED_FLAGS
    from kiam_eks.specs.kiam_flags import agent_flags, server_flags

    s = validate(base_config())
    rendered_server = server_flags(s.server, region="r", role_base_arn="b", assume_role_arn="a")
    rendered_agent = agent_flags(s.agent, server_address="h:1")

    def names(args: list[str]) -> set[str]:
        return {a.split("=", 1)[0] for a in args if a.startswith("--")}

    assert names(rendered_server) <= SERVER_MANAGED_FLAGS
    assert names(rendered_agent) <= AGENT_MANAGED_FLAGS


# Values at the edge of each apply-time rule that AWS and Kubernetes accept: none may be refused.
APP = {"namespace": "billing", "roleName": "billing-api"}
S3_READ = {"Effect": "Allow", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::billing/*"}


@pytest.mark.parametrize(
    "change",
    [
        {"cluster": {"name": "c" * 86}},
        {"cluster": {"kubernetesVersion": "1.25"}},
        # Newer than any schemas kubernetes-validate ships today: EKS's to run, not ours to refuse.
        {"cluster": {"kubernetesVersion": "1.40"}},
        {"cluster": {"clusterDomain": "cluster.example.internal"}},
        {
            "cluster": {"region": "cn-north-1"},
            "node_group": {
                "subnets": [
                    {"id": "subnet-0abc1234", "zone": "cn-north-1a"},
                    {"id": "subnet-0abc5678", "zone": "cn-north-1b"},
                ]
            },
        },
        {
            "cluster": {"region": "us-gov-west-1"},
            "node_group": {
                "subnets": [{"id": "subnet-00000000000000001"}, {"id": "subnet-00000000000000002"}]
            },
        },
        {"node_group": {"instanceTypes": ["c7i.metal-24xl", "m7i.large"]}},
        {"node_group": {"labels": {"example.com/role": "kiam", "team": "platform"}}},
        {"node_group": {"taint": {"key": "kiam.example.com/dedicated", "value": "servers"}}},
        {
            "agent": {
                "tolerations": [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists"}]
            }
        },
        {"server": {"image": "quay.io/uswitch/kiam@sha256:" + "a" * 64}},
        {"server": {"image": "registry.example.com:5000/platform/kiam:V4.2-patched_1"}},
        {"server": {"priorityClassName": "kiam-critical"}},
        {"server": {"extraArgs": ["--fetchers=16", "--session=kiam-prod"]}},
        {"server": {"extraArgs": ["--no-disable-strict-namespace-regexp"]}},
        {"agent": {"extraArgs": ["--pprof-listen-addr=127.0.0.1:9990"]}},
        {"agent": {"keepaliveTime": "10s", "keepaliveTimeout": "3s"}},
        {"monitoring": {"enabled": True, "scrapeInterval": "10s"}},
        {"monitoring": {"enabled": True, "scrapeInterval": "1m15s", "labels": {"release": "kps"}}},
        {"monitoring": {"enabled": True, "prometheusOperator": False, "alerts": False}},
        {"agent": {"allowedMetadataRoutes": "^/latest/meta-data/(placement/.*|instance-id)\\z"}},
        {"agent": {"port": 10251, "metricsPort": 29999}},
        {
            "server": {
                "resources": {"cpuRequest": "1m", "memoryRequest": "1Mi", "memoryLimit": "1Mi"}
            }
        },
        {"tls": {"caValidityHours": 2562047, "certValidityHours": 2562047}},
        {
            "iam": {"managedPoliciesPerRole": 20},
            "applications": {
                "billing": dict(
                    APP,
                    managedPolicyArns=[
                        f"arn:aws:iam::111122223333:policy/billing-{i}" for i in range(20)
                    ],
                )
            },
        },
        {
            "applications": {
                "billing": dict(
                    APP,
                    managedPolicyArns=[
                        "arn:aws:iam::aws:policy/service-role/AmazonEKSWorkerNodePolicy",
                        "arn:aws:iam::111122223333:policy/team/billing/reader",
                    ],
                )
            }
        },
        {
            "applications": {
                "billing": dict(
                    APP,
                    inlinePolicies={
                        "read": {
                            "Version": "2012-10-17",
                            "Id": "billing",
                            "Statement": dict(
                                S3_READ,
                                Sid="Read1",
                                Condition={
                                    "ForAnyValue:StringLike": {"s3:prefix": ["a/*", "b/*"]},
                                    "BoolIfExists": {"aws:SecureTransport": True},
                                    "NumericLessThan": {"s3:max-keys": 10},
                                },
                            ),
                        }
                    },
                )
            }
        },
        {
            "applications": {
                "billing": dict(
                    APP,
                    inlinePolicies={
                        "deny": {
                            "Version": "2012-10-17",
                            "Statement": [
                                {
                                    "Effect": "Deny",
                                    "NotAction": ["s3:Get*", "s3:List*"],
                                    "NotResource": "*",
                                }
                            ],
                        }
                    },
                )
            }
        },
    ],
)
def test_what_aws_and_kubernetes_accept_is_accepted(change: dict) -> None:
    validate(base_config(**change))


def test_a_raised_managed_policy_quota_admits_more_attachments() -> None:
    arns = [f"arn:aws:iam::111122223333:policy/billing-{i}" for i in range(11)]
    config = base_config(applications={"billing": dict(APP, managedPolicyArns=arns)})
    assert problems(config) == [
        "kiam:applications.billing.managedPolicyArns lists 11 policies: IAM attaches at most "
        "kiam:iam.managedPoliciesPerRole (10) to a role (raise the quota, then that setting, up to 20)"
    ]
    validate(config | {"kiam:iam": {"managedPoliciesPerRole": 11}})
    assert problems(base_config(iam={"managedPoliciesPerRole": 21})) == [
        "kiam:iam.managedPoliciesPerRole: Input should be less than or equal to 20 (got 21)"
    ]


@pytest.mark.parametrize(
    ("region", "partition"),
    [
        ("eu-west-1", "aws"),
        ("ap-southeast-7", "aws"),
        ("us-gov-west-1", "aws-us-gov"),
        ("cn-northwest-1", "aws-cn"),
        ("us-iso-east-1", "aws-iso"),
        ("us-isob-east-1", "aws-iso-b"),
        ("eu-isoe-west-1", "aws-iso-e"),
        ("us-isof-south-1", "aws-iso-f"),
        ("eusc-de-east-1", "aws-eusc"),
    ],
)
def test_every_region_belongs_to_its_partition(region: str, partition: str) -> None:
    from kiam_eks.settings.cluster import partition_of

    assert partition_of(region) == partition


def test_the_longest_cluster_name_fits_the_launch_template_name_prefix() -> None:
    """The limit in settings/cluster.py mirrors the prefix components/node_group.py builds."""
    from kiam_eks.contracts.tokens import LAUNCH_TEMPLATE

    recording = run_program(base_config(cluster={"name": "c" * 86}))
    assert len(recording.one(LAUNCH_TEMPLATE).inputs["namePrefix"]) == 99


def test_the_kiam_flag_lists_hold_every_flag_the_program_renders() -> None:
    from kiam_eks.settings.agent import AGENT_BOOLEAN_FLAGS, AGENT_FLAGS, AGENT_REFUSED_FLAGS
    from kiam_eks.settings.server import SERVER_BOOLEAN_FLAGS, SERVER_FLAGS, SERVER_REFUSED_FLAGS

    assert SERVER_BOOLEAN_FLAGS | set(SERVER_REFUSED_FLAGS) <= SERVER_FLAGS
    assert AGENT_BOOLEAN_FLAGS | set(AGENT_REFUSED_FLAGS) <= AGENT_FLAGS


def _yaml_files() -> list[str]:
    from tools.mock_engine import PROJECT_DIR

    skipped = (".venv", "build", "node_modules", ".git", "plan")
    return sorted(
        str(p.relative_to(PROJECT_DIR))
        for pattern in ("*.yaml", "*.yml")
        for p in PROJECT_DIR.rglob(pattern)
        if not any(part in skipped or part.startswith(".venv") for part in p.parts)
    )


def test_the_fast_yaml_reader_reads_every_yaml_file_as_the_pure_python_one() -> None:
    """`load_yaml` (libyaml's parser) against `yaml.safe_load` on every YAML file of the
    repository, the bad stacks' among them: the same value, or the same error type and, from
    the fallback, the pure-Python parser's message."""
    import yaml

    from kiam_eks.settings.loader import load_yaml
    from tools.mock_engine import PROJECT_DIR

    files = _yaml_files()
    assert len(files) > 50, files
    errors = 0
    for name in files:
        text = (PROJECT_DIR / name).read_text()
        try:
            expected = yaml.safe_load(text)
        except yaml.YAMLError as error:
            errors += 1
            with pytest.raises(yaml.YAMLError) as raised:
                load_yaml(text)
            assert str(raised.value) == str(error), name
            continue
        assert load_yaml(text) == expected, name
    assert errors >= 1, "no file with bad YAML: the fallback went untested"
