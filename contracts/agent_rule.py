"""The kiam agent's metadata DNAT rule on a node, as kiam v4.2 writes and removes it: what a pod's
request to the metadata address reaches, at any moment, on any node.

From kiam's source at tag v4.2 (github.com/uswitch/kiam), spelled out by
tests/contracts/test_agent_rule.py:

- `cmd/kiam/agent.go`: only an agent started with `--iptables` touches iptables
  (`if opts.iptables`), and it does so at the start of its run, before it dials a server. The
  flag `--iptables-remove` ("Remove iptables rules at shutdown") defaults to true; only then is
  `rules.Remove()` deferred, so the rule goes when the agent's run returns (a graceful stop), and
  an agent started with `--no-iptables-remove` leaves it.
- `cmd/kiam/iptables.go`: `Add` is `ipt.AppendUnique("nat", "PREROUTING", ruleSpec...)` with
  `-p tcp -d 169.254.169.254 --dport 80 -j DNAT --to-destination <host>:<port>` and
  `[!] -i <interface>` (a leading `!` of `--host-interface` negates the match). The rule's text
  carries the agent's `--host` and `--port`: an agent whose port differs appends a second rule
  after the first, one with the same text holds the existing one (unique), and `Remove` deletes
  exactly that text.
- A DNAT target is terminating (iptables-extensions(8), DNAT: "...and no further rules are
  examined") and a chain is traversed in order, so the first rule that matches a packet decides
  where it goes; a rule pointing where nothing listens answers "connection refused".

The e2e stand-in (e2e/harness/node_rules.py) keeps these rules per node from the agents it sees
start and stop, and the credential judge asks them where each pod's request goes; the transition
rules (transitions/) refuse any change that would stop an agent for good while its
rule stays behind.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

# cmd/kiam/iptables.go: `metadataAddress = "169.254.169.254"`, port "80".
METADATA_ADDRESS = "169.254.169.254"
METADATA_PORT = 80
# The rule lives in the nat table's PREROUTING chain.
TABLE, CHAIN = "nat", "PREROUTING"
# cmd/kiam/agent.go flags: `iptables` (default false), `iptables-remove` (default true), `port`
# (default 3100), `host`, `host-interface` (default docker0).
IPTABLES_FLAG = "--iptables"
REMOVE_FLAG = "--iptables-remove"
KEEP_FLAG = "--no-iptables-remove"
PORT_FLAG = "--port"
HOST_FLAG = "--host"
INTERFACE_FLAG = "--host-interface"
DEFAULT_PORT = 3100
DEFAULT_INTERFACE = "docker0"
REMOVES_BY_DEFAULT = True


@dataclass(frozen=True)
class Rule:
    """One DNAT rule: metadata requests arriving on `interface` go to `host:port`."""

    host: str
    port: int
    interface: str
    """As `--host-interface` gives it: `eni+`, `!eth0`..."""

    def spec(self) -> list[str]:
        """The rule as kiam's `ruleSpec()` builds it."""
        negated = self.interface.startswith("!")
        return [
            "-p", "tcp", "-d", METADATA_ADDRESS, "--dport", str(METADATA_PORT),
            "-j", "DNAT", "--to-destination", f"{self.host}:{self.port}",
            *(["!"] if negated else []), "-i", self.interface.removeprefix("!"),
        ]  # fmt: skip


@dataclass(frozen=True)
class AgentCommand:
    """What of an agent's command line decides its rule."""

    adds_rule: bool
    """Started with `--iptables`."""
    removes_rule_on_exit: bool
    """`--iptables-remove` in effect (kiam's default unless `--no-iptables-remove`)."""
    port: int
    interface: str

    def rule(self, host: str) -> Rule:
        return Rule(host=host, port=self.port, interface=self.interface)


def agent_command(args: Sequence[str]) -> AgentCommand:
    """Read an agent's arguments the way kingpin does: `--flag=value` or `--flag value`, a boolean
    `--flag` / `--no-flag`, the last occurrence winning."""
    adds, removes = False, REMOVES_BY_DEFAULT
    port, interface = DEFAULT_PORT, DEFAULT_INTERFACE
    items = list(args)
    for index, arg in enumerate(items):
        name, equals, value = arg.partition("=")
        if name in (PORT_FLAG, INTERFACE_FLAG) and not equals and index + 1 < len(items):
            value = items[index + 1]
        if name == IPTABLES_FLAG:
            adds = True
        elif name == "--no-iptables":
            adds = False
        elif name == REMOVE_FLAG:
            removes = True
        elif name == KEEP_FLAG:
            removes = False
        elif name == PORT_FLAG and value:
            port = int(value)
        elif name == INTERFACE_FLAG and value:
            interface = value
    return AgentCommand(
        adds_rule=adds, removes_rule_on_exit=removes, port=port, interface=interface
    )


@dataclass
class NodeRules:
    """The PREROUTING rules kiam agents left on one node, in chain order."""

    rules: list[Rule] = field(default_factory=list)

    def agent_started(self, command: AgentCommand, host: str) -> None:
        """`AppendUnique`: a rule already there is kept where it is, a new one goes last."""
        if not command.adds_rule:
            return
        rule = command.rule(host)
        if rule not in self.rules:
            self.rules.append(rule)

    def agent_stopped(self, command: AgentCommand, host: str) -> None:
        """The deferred `Remove` of an agent that stops gracefully with `--iptables-remove`."""
        if command.adds_rule and command.removes_rule_on_exit:
            rule = command.rule(host)
            if rule in self.rules:
                self.rules.remove(rule)

    def destination(self, interface: str) -> Rule | None:
        """The rule a metadata request arriving on `interface` meets first, if any (None: the
        request reaches the node's own metadata service)."""
        return next((r for r in self.rules if interface_matches(r.interface, interface)), None)


def interface_matches(pattern: str, interface: str) -> bool:
    """iptables' `-i` match: a trailing `+` is a prefix wildcard, a leading `!` negates."""
    negated = pattern.startswith("!")
    name = pattern.removeprefix("!")
    hit = interface.startswith(name[:-1]) if name.endswith("+") else interface == name
    return hit != negated
