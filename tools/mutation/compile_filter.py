"""`python -m tools.mutation.compile_filter SESSION`: mark the mutants that do not compile as
skipped, before any test runs for them.

cosmic-ray reads a dict display's `**` unpacking as the power operator and a signature's bare `*`
as multiplication, and offers to replace them: `{**labels}` becomes `{*labels}`, which Python
refuses to compile. Such a mutant is no program at all; every test run would "kill" it at import,
and cost a run. Run inside the tree the session mutates, with cosmic-ray installed (it is imported
here by name at run time only: `make test` does not install it).
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any


def main(argv: list[str]) -> int:
    (session,) = argv
    plugins: Any = importlib.import_module("cosmic_ray.plugins")
    mutating: Any = importlib.import_module("cosmic_ray.mutating")
    work_db: Any = importlib.import_module("cosmic_ray.work_db")
    work_item: Any = importlib.import_module("cosmic_ray.work_item")
    skipped = 0
    with work_db.use_db(session, mode=work_db.WorkDB.Mode.open) as db:
        for item in list(db.pending_work_items):
            for mutation in item.mutations:
                code = Path(mutation.module_path).read_text()
                operator = plugins.get_operator(mutation.operator_name)(**mutation.operator_args)
                mutated = mutating.mutate_code(code, operator, mutation.occurrence)
                try:
                    compile(mutated or code, str(mutation.module_path), "exec")
                except SyntaxError as error:
                    db.set_result(
                        item.job_id,
                        work_item.WorkResult(
                            output=f"does not compile: {error}",
                            worker_outcome=work_item.WorkerOutcome.SKIPPED,
                        ),
                    )
                    skipped += 1
                    break
    print(f"{skipped} mutants do not compile")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
