"""The lock that serialises writers of one GPU's results and aggregates."""

from __future__ import annotations

from collections.abc import Iterable

from catalog.models import Gpu


def aggregate_locks(*, gpu_ids: Iterable[int]) -> None:
    """Serialise writers of these GPUs' results and aggregates until the transaction ends.

    Two ingests of one (GPU, comparison key) would otherwise each compute its aggregate without
    the other's result. The GPU rows are locked in id order, so that two writers never wait on
    each other crosswise; FOR NO KEY UPDATE leaves inserts that reference the GPU free. A no-op
    on SQLite, which runs one writer at a time.
    """
    ids = sorted(set(gpu_ids))
    if ids:
        list(Gpu.objects.select_for_update(no_key=True).filter(pk__in=ids).order_by("pk").values_list("pk"))
