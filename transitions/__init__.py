"""The change judge: every change from what the stack's last update installed, classified from
one table.

A change of a setting is one of three things on a running cluster:

- **safe**: the change keeps every pod's credentials flowing as it is applied (servers roll behind
  their PodDisruptionBudget and `pulumi up` waits for them; agents roll
  `kiam:agent.rollout.maxUnavailable` nodes at a time, each taking over the metadata DNAT rule of
  the one it replaces);
- **sequenced**: applied in one `pulumi up` only in the order that keeps credentials flowing,
  which the program arranges from what it knows was installed (`Transition`);
- **refused**: no order keeps credentials flowing, so the program stops before it registers
  anything, naming the setting, the running value and the safe way to get there.

`TABLE` (table.py) lists every setting once (docs/transitions.md is generated from it and the
configuration reference links each key to its row); each row that can be anything but safe has a
judge (judges.py, in the words of verdicts.py), which `judge` (judge.py) runs against the facts of
the last update (installed.py). A change judged here is also judged by the transition guarantees
(invariants/transitions.py) on what the program then renders, as every stack is judged by the
other guarantees.
"""
