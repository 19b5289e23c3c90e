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

At the end the whole graph is garbage, and the interpreter's finalization collects the oldest
generation again while it tears the modules down (CPython `Py_FinalizeEx`: `atexit` callbacks
first, then `finalize_modules`, which calls `_PyGC_CollectNoFail`), walking every object the
program kept, only for the process to exit. `gc.freeze` (docs.python.org/3/library/gc.html) moves
every tracked object to the permanent generation, which no collection walks; frozen last thing,
from an `atexit` callback, after the SDK has sent the engine everything. Measured on the real
engine with the stack of 1,000 applications (docs/performance.md): about 0.1 s less per
preview. Nothing the program does depends on a finalizer of a cycle at exit, which Python does not
promise to run anyway (docs.python.org/3/reference/datamodel.html, `object.__del__`).
"""

from __future__ import annotations

import atexit
import gc

GENERATION0_ALLOCATIONS = 50_000
"""Net container allocations between two collections of the youngest generation: about what
the program allocates for 50 applications' resources, so a stack of 1,000 sees about 200
collections where it saw 1,900."""


def collect_less_often() -> None:
    """Raise the youngest generation's threshold, keeping the older generations' ratios, and
    skip the collections of the interpreter's exit."""
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(GENERATION0_ALLOCATIONS, older, oldest)
    # Once however often this is called (atexit.unregister removes every registration of it).
    atexit.unregister(gc.freeze)
    atexit.register(gc.freeze)
