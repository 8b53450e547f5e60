"""python manage.py training_plan GPU --params 70e9 --tokens 1e12 (--days 30 | --gpus 1024) [--lora]"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from fitcalc.selectors.training_plans import DEFAULT_SCALE_OUT_GBS, TrainingPlanError, training_plan
from fitcalc.training_time import DEFAULT_BATCH_TOKENS


class Command(BaseCommand):
    help = (
        "An LLM training plan on one catalogue GPU past one node: how many GPUs finish in --days, or "
        "how long --gpus take (time = FLOPs / (peak x the MFU fitted on MLPerf Training) + the exposed "
        "gradient all-reduce), with its cost at the typical rental price."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("gpu", help="catalogue slug, e.g. h100-sxm5-80-gb")
        parser.add_argument("--params", type=float, required=True, help="model parameters, e.g. 70e9")
        parser.add_argument("--tokens", type=float, required=True, help="training tokens, e.g. 1e12")
        parser.add_argument("--lora", action="store_true", help="LoRA: frozen weights, 4 N FLOPs per token")
        parser.add_argument("--days", type=float)
        parser.add_argument("--gpus", type=int)
        parser.add_argument("--batch-tokens", type=float, default=DEFAULT_BATCH_TOKENS,
                            help="tokens per optimizer step (default 4M, Llama 2's)")  # fmt: skip
        parser.add_argument("--scale-out-gbs", type=float, default=DEFAULT_SCALE_OUT_GBS,
                            help="network per GPU between nodes, GB/s (default 50: 400 Gb/s)")  # fmt: skip

    def handle(self, *args: Any, **options: Any) -> None:
        if options["params"] <= 0 or options["tokens"] <= 0 or options["batch_tokens"] <= 0:
            raise CommandError("--params, --tokens and --batch-tokens must be positive")
        try:
            plan = training_plan(
                gpu_slug=options["gpu"], params=options["params"], tokens=options["tokens"], lora=options["lora"],
                days=options["days"], gpus=options["gpus"], scale_out_gbs=options["scale_out_gbs"],
                batch_tokens=options["batch_tokens"],
            )  # fmt: skip
        except TrainingPlanError as exc:
            raise CommandError(str(exc)) from None
        if plan is None:
            raise CommandError(f"no cluster of {options['gpu']} finishes in {options['days']} days")
        time = plan.time
        cost = f"{plan.cost:,.0f} USD at {plan.price_per_gpu_hour:.2f} USD/GPU-hour" if plan.cost else "no price"
        self.stdout.write(
            f"{plan.gpu_name}: {time.gpus} GPUs ({plan.nodes} x {plan.gpus_per_node}, "
            f"{'ZeRO-3 sharded' if plan.zero3 else f'model split over {plan.model_parallel}'}), {time.days:.1f} days, {time.gpu_hours:,.0f} GPU-hours, {cost}; "
            f"{plan.precision.upper()} peak {plan.peak_tflops:g} TFLOPS x MFU {plan.mfu:.3f}, "
            f"exposed communication {time.exposed_communication_s / 3600:.1f} h"
        )
