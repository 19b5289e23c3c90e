"""Contract tests for the agent's metadata DNAT rule (`contracts.agent_rule`): each spells out what
kiam v4.2's source (github.com/uswitch/kiam at tag v4.2) writes, naming the file, so the e2e
stand-in and the credential judge that model it cannot drift from kiam."""

from __future__ import annotations

import pytest

from kiam_eks.contracts import agent_rule
from kiam_eks.contracts.agent_rule import NodeRules, Rule, agent_command, interface_matches
from kiam_eks.settings.agent import AgentSettings
from kiam_eks.specs import kiam_flags


def test_the_flags_and_defaults_kiams_agent_declares() -> None:
    # cmd/kiam/agent.go, Bind: parser.Flag("port", "HTTP port").Default("3100"),
    # parser.Flag("iptables", "Add IPTables rules").Default("false"),
    # parser.Flag("iptables-remove", "Remove iptables rules at shutdown").Default("true"),
    # parser.Flag("host-interface", ...).Default("docker0").
    assert agent_rule.PORT_FLAG == "--port" and agent_rule.DEFAULT_PORT == 3100
    assert agent_rule.IPTABLES_FLAG == "--iptables"
    assert agent_rule.REMOVE_FLAG == "--iptables-remove" and agent_rule.REMOVES_BY_DEFAULT is True
    assert agent_rule.KEEP_FLAG == "--no-iptables-remove"  # kingpin's negation of a BoolVar
    assert agent_rule.INTERFACE_FLAG == "--host-interface"
    assert agent_rule.DEFAULT_INTERFACE == "docker0"


def test_the_rule_text_carries_host_port_and_interface() -> None:
    # cmd/kiam/iptables.go, ruleSpec: "-p", "tcp", "-d", metadataAddress, "--dport", "80",
    # "-j", "DNAT", "--to-destination", r.kiamAddress() (fmt.Sprintf("%s:%d", host, kiamPort)),
    # then "!" if the interface starts with "!", then "-i", the interface without it;
    # metadataAddress = "169.254.169.254"; Add is ipt.AppendUnique("nat", "PREROUTING", ...).
    assert (agent_rule.TABLE, agent_rule.CHAIN) == ("nat", "PREROUTING")
    assert Rule("10.0.1.5", 8181, "eni+").spec() == [
        "-p", "tcp", "-d", "169.254.169.254", "--dport", "80", "-j", "DNAT",
        "--to-destination", "10.0.1.5:8181", "-i", "eni+",
    ]  # fmt: skip
    assert Rule("10.0.1.5", 8181, "!eth0").spec()[-3:] == ["!", "-i", "eth0"]


def test_the_programs_agent_command_line_reads_as_kiam_reads_it() -> None:
    flags = kiam_flags.agent_flags(AgentSettings(), server_address="kiam-server:9610")
    assert agent_command(flags) == agent_rule.AgentCommand(
        adds_rule=True, removes_rule_on_exit=False, port=8181, interface="eni+"
    )
    removing = kiam_flags.agent_flags(
        AgentSettings(remove_iptables_rule_on_exit=True, port=9000, host_interface="!eth0"),
        server_address="kiam-server:9610",
    )
    assert agent_command(removing) == agent_rule.AgentCommand(
        adds_rule=True, removes_rule_on_exit=True, port=9000, interface="!eth0"
    )
    # kingpin: `--flag value` as well as `--flag=value`, the last occurrence winning.
    assert agent_command(["agent", "--port", "9100", "--port=9200"]).port == 9200
    assert agent_command(["agent"]) == agent_rule.AgentCommand(
        adds_rule=False, removes_rule_on_exit=True, port=3100, interface="docker0"
    )


def test_a_restart_on_the_same_port_holds_one_rule_and_another_port_appends_a_second() -> None:
    keep = agent_command(["agent", "--iptables", "--no-iptables-remove", "--port=8181"])
    rules = NodeRules()
    rules.agent_started(keep, "10.0.0.1")
    rules.agent_stopped(keep, "10.0.0.1")  # --no-iptables-remove: the rule stays
    rules.agent_started(keep, "10.0.0.1")  # AppendUnique: still one
    assert rules.rules == [Rule("10.0.0.1", 8181, "docker0")]
    other = agent_command(["agent", "--iptables", "--port=9000"])
    rules.agent_started(other, "10.0.0.1")
    assert [r.port for r in rules.rules] == [8181, 9000]
    # DNAT is terminating: the first matching rule decides.
    first = rules.destination("docker0")
    assert first is not None and first.port == 8181


def test_only_an_agent_that_removes_its_rule_takes_it_away() -> None:
    removing = agent_command(["agent", "--iptables", "--iptables-remove", "--host-interface=eni+"])
    rules = NodeRules()
    rules.agent_started(removing, "10.0.0.2")
    assert rules.destination("eni3a4f") == Rule("10.0.0.2", 3100, "eni+")
    rules.agent_stopped(removing, "10.0.0.2")
    assert rules.rules == [] and rules.destination("eni3a4f") is None
    # Without --iptables an agent never touches iptables (cmd/kiam/agent.go: `if opts.iptables`).
    silent = agent_command(["agent", "--port=8181"])
    rules.agent_started(silent, "10.0.0.2")
    assert rules.rules == []


@pytest.mark.parametrize(
    ("pattern", "interface", "matches"),
    [
        ("eni+", "eni0abc", True),
        ("eni+", "eth0", False),
        ("!eth0", "eni0abc", True),
        ("!eth0", "eth0", False),
        ("cali+", "cali123", True),
        ("docker0", "docker0", True),
        ("docker0", "docker01", False),
    ],
)
def test_interface_matching_as_iptables_matches_minus_i(
    pattern: str, interface: str, matches: bool
) -> None:
    # iptables(8), -i: "If the interface name ends in a "+", then any interface which begins with
    # this name will match"; "!" inverts the sense.
    assert interface_matches(pattern, interface) is matches
