"""A dry run: judge a submission as the intake and the ingest would, and store nothing.

For anyone trying the whole loop (client, token, server) before submitting for real, and for those
without a GPU the client measures: their ``run --device cpu`` result is checked here by every rule
of the format and answered, never stored nor published. A GPU run gets the verdict it would get now
(the GPU match, the datasheet peaks, the energy checks); what a dry run cannot tell is whether it
would be an outlier among other submissions (judged at ingest, against the results stored by then)
and whether its run UUID is already taken.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from benchmarks_app.services.derive import submission_judge
from benchmarks_app.services.errors import FieldError, SubmissionInvalid
from benchmarks_app.services.payload import body_decode, json_parse_strict
from benchmarks_app.services.report import ResultReport, report_from_document
from benchmarks_app.services.snapshot import catalog_snapshot
from catalog.models import Gpu

CHECKED = "checked"  # a CPU trial's verdict: valid, and never stored
CPU_TRIAL_NOTE = (
    "a CPU-only run (the client's tiny sizes): checked against the schema and every rule but the workloads' "
    "params, which only a GPU run meets; a CPU is not in the catalogue, so no GPU match, peak or energy check "
    "applies. It is never stored nor published: run the client on an NVIDIA GPU to submit."
)
GPU_DRY_RUN_NOTE = (
    "dry run: nothing was stored. At ingest each result is also compared with the accepted results of the same "
    "GPU and configuration, which may flag an outlier."
)


@dataclass(frozen=True)
class DryRunOutcome:
    verdict: str  # the status the submission would get now, or CHECKED for a CPU trial
    cpu_only: bool
    reasons: list[dict[str, str]] = field(default_factory=list)
    results: list[dict[str, Any]] = field(default_factory=list)
    gpu: dict[str, str] | None = None


def _result_lines(results: list[ResultReport]) -> list[dict[str, Any]]:
    return [
        {
            "path": result.path,
            "workload": result.workload,
            "workload_version": result.workload_version,
            "precision": result.precision,
            "gpu_count": result.gpu_count,
            "params": result.params,
            "unit": result.unit,
            "value": result.median,
        }
        for result in results
    ]


def submission_dry_run(*, body: bytes | str) -> DryRunOutcome:
    """Judge one submission body without storing it.

    Raises SubmissionInvalid (400) or SubmissionTooLarge (413) for what the intake would refuse,
    with the field and the reason, as a real submission gets them.
    """
    document = json_parse_strict(body_decode(body))
    snapshot = catalog_snapshot()
    if isinstance(document, dict) and document.get("cpu_only") is True:
        report, errors = report_from_document(document, snapshot, cpu_trial=True)
        if errors or report is None:
            raise SubmissionInvalid(errors or [FieldError("$", "not a submission")])
        return DryRunOutcome(
            verdict=CHECKED,
            cpu_only=True,
            reasons=[{"field": "$.cpu_only", "reason": CPU_TRIAL_NOTE, "verdict": "note"}],
            results=_result_lines(report.results),
        )
    judged = submission_judge(document=document, snapshot=snapshot)
    if judged.invalid:
        raise SubmissionInvalid(judged.invalid)
    assert judged.report is not None  # a valid document has a report
    matched = Gpu.objects.filter(pk=judged.gpu_id).values("slug", "name").first() if judged.gpu_id else None
    gpu = {"slug": matched["slug"], "name": matched["name"]} if matched else None
    return DryRunOutcome(
        verdict=str(judged.status),
        cpu_only=False,
        reasons=[*judged.reasons, {"field": "$", "reason": GPU_DRY_RUN_NOTE, "verdict": "note"}],
        results=_result_lines(judged.report.results),
        gpu=gpu,
    )


__all__ = ["CHECKED", "DryRunOutcome", "submission_dry_run"]
