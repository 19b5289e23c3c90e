"""Generate docs/transitions.md from the transitions table (transitions/table.py), so what the
docs say a change does and what the program does cannot drift.

python -m tools.transition_reference           # print it
python -m tools.transition_reference --write   # write docs/transitions.md
"""

from __future__ import annotations

import sys
from pathlib import Path

from kiam_eks.transitions.table import TABLE
from kiam_eks.transitions.verdicts import Kind

REFERENCE = Path(__file__).resolve().parent.parent / "docs" / "transitions.md"

HEADER = """# What a change does on a running cluster

Every `pulumi preview` and `pulumi up` judges the change from what the last update installed
(the `Kiam` component's record, its output `installed`, read back through the engine before
anything is registered, in this repository's program as in any program using `Kiam`; the
program also exports it as the stack output `installed`) and every change of a setting is one of
three things (`KiamKubernetes` records and judges its own Kubernetes side the same way, by the
rows of `kiam:namespace`, `kiam:server` and `kiam:agent`, and refuses a move of the address
agents dial, which `Kiam` sequences: the servers would need a certificate naming both addresses
while the agents move, and `KiamKubernetes` serves the certificates it is given):

- **safe**: credentials keep flowing as it is applied;
- **sequenced**: the program applies it in the order that keeps them flowing, from what it knows
  was installed (for example both the old and the new server names in the certificate while
  agents move from one to the other);
- **refused**: no order keeps them flowing; `pulumi preview` and `pulumi up` stop before anything
  is registered, with a message naming the setting, the running value and the safe way there.

Guarantee 16 ([guarantees.md](guarantees.md)) judges the outcome on what the program renders for
the change. Generated from `transitions/table.py` by `python -m tools.transition_reference
--write`; a test fails when this file and the table disagree. A stack last updated by a version
of the program older than the `installed` output is judged on what its outputs say (the server
address, the namespace, the applications); run one `pulumi up` with no settings change after
upgrading, and every later change is judged in full.
"""


def render() -> str:
    parts = [HEADER, "\n| setting | on a running install |\n|---|---|\n"]
    for row in TABLE:
        kinds = ", ".join(f"**{k.value}**" for k in row.kinds)
        parts.append(f"| [`{row.setting}`](#{anchor(row.setting)}) | {kinds} |\n")
    for row in TABLE:
        kinds = " or ".join(k.value for k in row.kinds)
        judged = (
            ""
            if row.judge is None and row.kinds == (Kind.SAFE,)
            else " Judged before anything is registered."
        )
        parts.append(f"\n## `{row.setting}`\n\n*{kinds}.* {row.what}{judged}\n")
    return "".join(parts)


def anchor(setting: str) -> str:
    """GitHub's anchor for a heading holding `setting` in backticks."""
    return "".join(c for c in setting.lower() if c.isalnum() or c in "-_")


def main(argv: list[str]) -> int:
    text = render()
    if "--write" in argv:
        REFERENCE.write_text(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
