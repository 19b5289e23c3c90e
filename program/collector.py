"""How often Python's cyclic garbage collector runs while the program registers its resources.

CPython collects its youngest generation each time container allocations exceed deallocations by
`threshold0` (700 by default; the older generations every 10 collections of the one below:
docs.python.org/3/library/gc.html, `gc.set_threshold`), and an older generation's collection
walks every object that survived into it. A Pulumi program allocates its resource graph (each
resource's Outputs, futures and tasks) and keeps it until the engine has every registration, so
those collections find almost nothing while each walks more of the graph. Measured on the offline
plan of 1,000 applications (docs/performance.md, issue 39): 1,916 collections took 2.26 s of its
6 s of CPU; with `threshold0` at `GENERATION0_ALLOCATIONS`, 215 took 0.56 s, at the same peak
memory (203 MB against 201 MB). Cycles are still collected, less often.
"""

from __future__ import annotations

import gc

GENERATION0_ALLOCATIONS = 50_000
"""Net container allocations between two collections of the youngest generation: about what
the program allocates for 50 applications' resources, so a stack of 1,000 sees about 200
collections where it saw 1,900."""


def collect_less_often() -> None:
    """Raise the youngest generation's threshold, keeping the older generations' ratios."""
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(GENERATION0_ALLOCATIONS, older, oldest)
