"""Workload rows: the benchmark client's workloads and the Lambda training suites (v1, v2)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from django.db import transaction

from benchmarks_app.models import Workload
from benchmarks_app.services.versions import version_major_minor
from benchmarks_app.services.workload_rules import workload_rules_from_entry

LAMBDA_SOURCE = "https://github.com/lambdal/deeplearning-benchmark (pytorch/, commit aa5addb6a536)"
REPO_ROOT = Path(__file__).resolve().parents[2]
CLIENT_WORKLOADS_FALLBACK = REPO_ROOT / "bench_client" / "gpuatlas_bench" / "workloads.json"
# The client's LLM serving workloads (one GPU; tensor-parallel over several): their results are
# the measured points of the LLM serving model (llm), which follows each write of them.
LLM_DECODE = "llm-decode"
LLM_DECODE_TP = "llm-decode-tp"


@dataclass(frozen=True)
class LambdaModel:
    slug: str
    name: str
    unit: str
    description: str


# Units follow what Lambda's compile script reads from NVIDIA's DeepLearningExamples logs.
LAMBDA_MODELS = {
    m.slug: m
    for m in [
        LambdaModel(
            "resnet50", "ResNet-50 training", "images/s", "ResNet-50 v1.5 on ImageNet (NVIDIA DeepLearningExamples)."
        ),
        LambdaModel("ssd", "SSD300 training", "images/s", "SSD300 object detection on COCO 2017."),
        LambdaModel(
            "bert_base_squad", "BERT-Base SQuAD fine-tuning", "sequences/s", "BERT-Base fine-tuned on SQuAD v1.1."
        ),
        LambdaModel(
            "bert_large_squad", "BERT-Large SQuAD fine-tuning", "sequences/s", "BERT-Large fine-tuned on SQuAD v1.1."
        ),
        LambdaModel("gnmt", "GNMT training", "tokens/s", "GNMT v2 translation on WMT16 English-German."),
        LambdaModel("ncf", "NCF training", "samples/s", "Neural collaborative filtering on MovieLens-20M."),
        LambdaModel("tacotron2", "Tacotron 2 training", "items/s", "Tacotron 2 speech synthesis on LJSpeech."),
        LambdaModel("waveglow", "WaveGlow training", "items/s", "WaveGlow vocoder on LJSpeech."),
        LambdaModel(
            "transformerxlbase", "Transformer-XL Base training", "tokens/s", "Transformer-XL Base on WikiText-103."
        ),
        LambdaModel(
            "transformerxllarge", "Transformer-XL Large training", "tokens/s", "Transformer-XL Large on WikiText-103."
        ),
    ]
}
LAMBDA_SUITES = {
    "1.0": [
        "ssd", "bert_base_squad", "bert_large_squad", "gnmt", "ncf", "resnet50",
        "tacotron2", "transformerxlbase", "transformerxllarge", "waveglow",
    ],
    "2.0": ["ssd", "bert_base_squad", "bert_large_squad", "gnmt", "resnet50", "tacotron2", "waveglow"],
}  # fmt: skip


@dataclass
class WorkloadSeedSummary:
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    client_file: str = ""
    problems: list[str] = field(default_factory=list)

    def as_lines(self) -> list[str]:
        lines = [f"workloads: created {self.created}, updated {self.updated}, unchanged {self.unchanged}"]
        lines.append(f"client workloads read from {self.client_file or '(not found)'}")
        lines.extend(f"problem: {p}" for p in self.problems)
        return lines


def client_workloads_path() -> Path | None:
    """workloads.json of the installed ``gpuatlas_bench`` package, else the repository copy."""
    try:
        candidate = resources.files("gpuatlas_bench").joinpath("workloads.json")
        if candidate.is_file():
            return Path(str(candidate))
    except ModuleNotFoundError:
        pass
    return CLIENT_WORKLOADS_FALLBACK if CLIENT_WORKLOADS_FALLBACK.is_file() else None


_CATEGORIES = {c.value for c in Workload.Category}


def _client_rows(data: Any, where: str) -> list[dict[str, Any]]:
    items = data.get("workloads", data) if isinstance(data, dict) else data
    if isinstance(items, dict):
        items = [{"id": key, **value} for key, value in items.items()]
    if not isinstance(items, list):
        raise ValueError(f"{where}: expected a list of workloads")
    rows = []
    for index, item in enumerate(items):
        slug = item.get("id") or item.get("slug")
        missing = [k for k in ("version", "unit", "category") if not item.get(k)]
        if not slug or missing:
            raise ValueError(f"{where}: workload #{index} lacks {', '.join(['id'] if not slug else missing)}")
        if item["category"] not in _CATEGORIES:
            raise ValueError(
                f"{where}: workload {slug!r} has category {item['category']!r}, not one of {sorted(_CATEGORIES)}"
            )
        version = version_major_minor(item["version"])
        rules = workload_rules_from_entry(item, label=f"{where}: workload {slug} {version}")
        rows.append(
            {
                "slug": slug,
                "version": version,
                "name": item.get("name") or slug,
                "unit": item["unit"],
                "higher_is_better": bool(item.get("higher_is_better", True)),
                "category": item["category"],
                "description": item.get("description", ""),
                "source": item.get("source") or "gpuatlas_bench workloads.json",
                "submission_rules": rules,
            }
        )
    return rows


def _lambda_rows() -> list[dict[str, Any]]:
    rows = []
    for version, slugs in LAMBDA_SUITES.items():
        for slug in slugs:
            model = LAMBDA_MODELS[slug]
            rows.append(
                {
                    "slug": slug,
                    "version": version,
                    "name": f"{model.name} (Lambda suite v{version.split('.')[0]})",
                    "unit": model.unit,
                    "higher_is_better": True,
                    "category": Workload.Category.TRAINING,
                    "description": model.description,
                    "source": LAMBDA_SOURCE,
                    # Lab results only: the client does not run these, so submissions may not report them.
                    "submission_rules": None,
                }
            )
    return rows


def workload_seed_lambda() -> dict[tuple[str, str], Workload]:
    """Make sure the Lambda suite rows exist (the lab import needs them); returns them by key."""
    found = {}
    for row in _lambda_rows():
        workload, _ = Workload.objects.get_or_create(slug=row["slug"], version=row["version"], defaults=row)
        found[(row["slug"], row["version"])] = workload
    return found


def workload_seed(*, client_path: Path | None = None) -> WorkloadSeedSummary:
    """Create or update the Workload rows; idempotent. The client's rows come first."""
    summary = WorkloadSeedSummary()
    path = client_path or client_workloads_path()
    rows: list[dict[str, Any]] = []
    if path is not None:
        summary.client_file = str(path)
        rows.extend(_client_rows(json.loads(Path(path).read_text(encoding="utf-8")), str(path)))
    else:
        summary.problems.append("the client's workloads.json was not found: only the Lambda workloads were seeded")
    client_keys = {(r["slug"], r["version"]) for r in rows}
    for row in _lambda_rows():
        if (row["slug"], row["version"]) in client_keys:
            summary.problems.append(
                f"{row['slug']} v{row['version']} is defined by the client; the Lambda row was skipped"
            )
            continue
        rows.append(row)
    with transaction.atomic():
        existing = {(w.slug, w.version): w for w in Workload.objects.all()}
        for row in rows:
            current = existing.get((row["slug"], row["version"]))
            if current is None:
                Workload.objects.create(**row)
                summary.created += 1
                continue
            changed = [k for k, v in row.items() if getattr(current, k) != v]
            if changed:
                for key in changed:
                    setattr(current, key, row[key])
                current.save(update_fields=changed)
                summary.updated += 1
            else:
                summary.unchanged += 1
    return summary
