"""python manage.py seed_workloads [--client-file workloads.json]"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from benchmarks_app.services.workloads import workload_seed


class Command(BaseCommand):
    help = "Create or update the Workload rows: the benchmark client's workloads.json and the Lambda suites v1/v2."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument(
            "--client-file", type=Path, help="workloads.json (default: the installed gpuatlas_bench package)"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        path = options.get("client_file")
        if path is not None and not path.is_file():
            raise CommandError(f"{path}: file not found")
        try:
            summary = workload_seed(client_path=path)
        except (ValueError, OSError) as exc:
            raise CommandError(str(exc)) from None
        for line in summary.as_lines():
            self.stdout.write(line)
