"""The fleet preview's table, as text for the terminal and as Markdown for the pull request."""

from __future__ import annotations

from tools.fleet.preview import COUNTED_OPS, StackPreview

HEADER = ("stack", *COUNTED_OPS, "node group", "servers", "agents", "policy", "notes", "error")


def _cells(row: StackPreview) -> tuple[str, ...]:
    counts = tuple(str(row.changes.get(op, 0)) if row.changes else "-" for op in COUNTED_OPS)
    return (
        row.stack,
        *counts,
        "replaced" if row.node_group_replaced else "-",
        row.servers,
        row.agents,
        row.policy,
        "; ".join(row.notes),
        row.error or "",
    )


def verdict(rows: list[StackPreview]) -> str:
    failed = [r.stack for r in rows if r.failed]
    changed = [r.stack for r in rows if any(r.changes.get(op) for op in COUNTED_OPS)]
    text = f"{len(rows)} stacks previewed: {len(changed)} with changes, {len(failed)} failed"
    return text + (f" ({', '.join(failed)})" if failed else "")


def text_table(rows: list[StackPreview]) -> str:
    table = [HEADER, *(_cells(r) for r in rows)]
    widths = [max(len(line[i]) for line in table) for i in range(len(HEADER))]
    lines = [
        "  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip()
        for line in table
    ]
    return "\n".join([lines[0], "  ".join("-" * w for w in widths), *lines[1:], "", verdict(rows)])


def markdown_table(rows: list[StackPreview]) -> str:
    def line(cells: tuple[str, ...]) -> str:
        return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"

    numeric = {1, 2, 3, 4}
    rule = "|" + "|".join("---:" if i in numeric else "---" for i in range(len(HEADER))) + "|"
    return "\n".join(
        [
            "### Fleet preview",
            "",
            line(HEADER),
            rule,
            *(line(_cells(r)) for r in rows),
            "",
            verdict(rows),
            "",
        ]
    )
