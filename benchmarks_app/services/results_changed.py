"""What follows every write that changes the published results, whoever writes them (the ingest,
the lab imports, moderation, the rebuild): one rule, called at the end of the writer's transaction.

The cached rankings and GPU pages read the results and their aggregates, so the data version
moves; the ranking watches of the use cases of the workloads written or removed are evaluated once
the transaction commits (the watches app, above this one, is named by its task, never imported).
"""

from __future__ import annotations

from collections.abc import Iterable

from gpuatlas.data_version import data_version_bump
from gpuatlas.followups import followup_after_commit

WATCHES_AFTER_RESULTS_TASK = "watches.tasks.watches_evaluate_after_results"


def results_changed(*, workload_ids: Iterable[int]) -> None:
    """Results of ``workload_ids`` were written, changed or removed in the current transaction."""
    data_version_bump()
    ids = sorted(set(workload_ids))
    if ids:
        followup_after_commit(WATCHES_AFTER_RESULTS_TASK, workload_ids=ids)
