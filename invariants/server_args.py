"""Guarantee 7, `server-args`: `server_args` judges it (its docstring states the guarantee, and is the
policy pack's description of it)."""

from __future__ import annotations

from kiam_eks.invariants.model import Resource, Violation, dig, is_unknown
from kiam_eks.invariants.view import SERVER_CONTAINER, KiamView, container, flag_values
from kiam_eks.settings.base import duration_seconds


def server_args(view: KiamView) -> list[Violation]:
    """7. Server flags: assume-role and role-base ARNs, sessions within (15m, 60m] and refresh below, metrics."""
    out = []
    for dep in view.servers:
        args = dig(container(dep, SERVER_CONTAINER), "args")
        if is_unknown(args):
            continue

        def report(reason: str, dep: Resource = dep) -> None:
            out.append(Violation("server-args", dep.urn, reason))

        for flag in ("--assume-role-arn", "--role-base-arn", "--prometheus-listen-addr"):
            values = flag_values(args, flag)
            if len(values) != 1 or not values[0]:
                report(f"needs exactly one non-empty {flag}")
        if "--role-base-arn-autodetect" in (args or []):
            report(
                "autodetects --role-base-arn (needs the metadata API from the pod); set it explicitly"
            )
        durations = flag_values(args, "--session-duration")
        refreshes = flag_values(args, "--session-refresh")
        repeated = [
            flag
            for flag, values in (
                ("--session-duration", durations),
                ("--session-refresh", refreshes),
            )
            if len(values) > 1
        ]
        if repeated:
            # Which one a server would take is not this guarantee's to guess: one of each.
            report(f"repeats {' and '.join(repeated)}")
        else:
            # kiam's defaults: 15m sessions, refreshed every 5m.
            [duration] = durations or ["15m"]
            [refresh] = refreshes or ["5m"]
            seconds = duration_seconds(duration)
            if not 15 * 60 < seconds <= 60 * 60:
                report(
                    f"session duration {durations or ['15m (kiam default)']} is not above 15m and "
                    "at most 60m"
                )
            elif duration_seconds(refresh) >= seconds:
                report(f"session refresh {refresh} is not below the session duration {duration}")
    return out
