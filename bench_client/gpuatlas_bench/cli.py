"""The ``gpuatlas-bench`` command: run, submit, info, validate, workloads.

Exit codes: 0 done; 1 a workload failed or the output was invalid; 2 bad input (arguments, files);
3 no CUDA GPU (or no PyTorch); 4 the server refused the submission; 5 the server could not be reached
after every retry.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from . import CLIENT_NAME, __version__
from .schema import SchemaUnavailable, submission_validate
from .submit import SubmitError, submission_post, submissions_endpoint
from .workloads.common import CPU_TINY_SIZES, GPU_SIZES, ServePlan

SERVE_CONTEXTS = tuple(GPU_SIZES.llm["serve_contexts"])
MAX_SERVE_CONCURRENCY = 1024
LLM_PHASES = ("prefill", "decode", "serve")

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_NO_GPU, EXIT_REFUSED, EXIT_UNREACHABLE = 0, 1, 2, 3, 4, 5

CPU_ONLY_NOTE = (
    "Without one, --device cpu runs the same code at tiny sizes on the CPU and marks the result cpu_only: "
    "'submit' sends such a result to the server's dry run, which checks it and answers, and never stores or "
    "publishes it."
)


class CliError(Exception):
    def __init__(self, message: str, code: int = EXIT_USAGE) -> None:
        super().__init__(message)
        self.code = code


def _err(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _split(values: list[str] | None) -> list[str]:
    return [part.strip() for value in values or [] for part in value.split(",") if part.strip()]


def _import_torch() -> Any:
    try:
        import torch
    except ImportError:
        raise CliError(
            "PyTorch is not installed. gpuatlas-bench measures NVIDIA GPUs through PyTorch: install a CUDA build "
            "of PyTorch (see pytorch.org, 'Get started'), then run this again.",
            EXIT_NO_GPU,
        ) from None
    return torch


def _no_cuda_message(torch: Any) -> str:
    build = f"built with CUDA {torch.version.cuda}" if torch.version.cuda else "a CPU-only build"
    return (
        f"No CUDA GPU is available to PyTorch (torch {torch.__version__}, {build}). gpuatlas-bench measures "
        "NVIDIA GPUs: check that the driver sees the GPU (nvidia-smi), that CUDA_VISIBLE_DEVICES does not hide it, "
        f"and that this PyTorch is a CUDA build. {CPU_ONLY_NOTE}"
    )


def _write_json_atomically(path: Path, payload: Any) -> None:
    """Write to a temporary file beside ``path``, then rename: a crash never leaves half a file."""
    text = json.dumps(payload, indent=2, allow_nan=False) + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _out_path(out: str, index: int | str, several: bool) -> Path:
    """The result file of one device (or, with index 'host', of the host's multi-GPU run)."""
    if "{device}" in out:
        return Path(out.replace("{device}", str(index)))
    path = Path(out)
    if not several:
        return path
    name = "host" if index == "host" else f"gpu{index}"
    return path.with_name(f"{path.stem}-{name}{path.suffix or '.json'}")


def _credentials(args: argparse.Namespace) -> tuple[str, str]:
    url = args.url or os.environ.get("GPUATLAS_URL", "")
    token = args.token or os.environ.get("GPUATLAS_TOKEN", "")
    if not url:
        raise CliError("no server address: pass --url https://... or set GPUATLAS_URL")
    if not token:
        raise CliError("no API token: pass --token or set GPUATLAS_TOKEN (create one on your GPU Atlas account page)")
    try:
        submissions_endpoint(url)
    except SubmitError as error:
        raise CliError(str(error)) from None
    return url, token


def _post(path: Path, payload: dict[str, Any], args: argparse.Namespace) -> int:
    url, token = _credentials(args)
    dry_run = bool(getattr(args, "dry_run", False))
    if payload.get("cpu_only") and not dry_run:
        _err(f"{path}: a cpu_only result (measured on the CPU): sent as a dry run, checked and never stored")
        dry_run = True
    body = json.dumps(payload, allow_nan=False, separators=(",", ":")).encode("utf-8")
    try:
        response = submission_post(
            body=body,
            url=url,
            token=token,
            run_uuid=str(payload.get("run_uuid", "")) or None,
            attempts=args.attempts,
            backoff_s=args.backoff,
            log=lambda line: _err(f"{path}: {line}"),
            dry_run=dry_run,
        )
    except SubmitError as error:
        _err(f"{path}: {'dry run refused' if dry_run else 'not submitted'}: {error}")
        return EXIT_UNREACHABLE if error.retryable else EXIT_REFUSED
    if dry_run:
        return _dry_run_report(path, payload, response.body)
    status = response.body.get("status") if isinstance(response.body, dict) else None
    print(
        f"{path}: submitted run {payload.get('run_uuid')} (HTTP {response.status}"
        f"{f', status {status}' if status else ''}, {response.attempts} attempt{'s' if response.attempts > 1 else ''})"
    )
    return EXIT_OK


def _dry_run_report(path: Path, payload: dict[str, Any], answer: Any) -> int:
    """Print the server's dry-run verdict and its reasons; exit 4 when the run would be rejected."""
    if not isinstance(answer, dict) or "verdict" not in answer:
        _err(f"{path}: the server's dry run answered without a verdict: {str(answer)[:300]}")
        return EXIT_REFUSED
    gpu = (answer.get("gpu") or {}).get("name")
    print(
        f"{path}: dry run of run {payload.get('run_uuid')}: verdict {answer['verdict']}"
        f"{f' on {gpu}' if gpu else ''}, {len(answer.get('results') or [])} results checked; nothing was stored"
    )
    for reason in answer.get("reasons") or []:
        print(f"  {reason.get('verdict')}: {reason.get('field')}: {reason.get('reason')}")
    return EXIT_REFUSED if answer["verdict"] == "rejected" else EXIT_OK


def _load_submission(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise CliError(f"{path}: cannot read: {error.strerror or error}") from None
    try:
        payload = json.loads(text, parse_constant=_reject_constant)
    except ValueError as error:
        raise CliError(f"{path}: not valid JSON: {error}") from None
    problems = submission_validate(payload)
    if problems:
        raise CliError(f"{path}: not a valid submission:\n  " + "\n  ".join(problems))
    return payload


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not allowed in a submission (every measurement is a finite number)")


def command_run(args: argparse.Namespace) -> int:
    from .runner import RunOptions, device_run
    from .workloads import COLLECTIVE_WORKLOADS, MATMUL_PRECISIONS, WORKLOAD_ORDER

    workloads = _split(args.workloads) or list(WORKLOAD_ORDER)
    unknown = [name for name in workloads if name not in WORKLOAD_ORDER]
    if unknown:
        raise CliError(f"unknown workload {', '.join(unknown)}; choose from {', '.join(WORKLOAD_ORDER)}")
    precisions = _split(args.precisions) or list(MATMUL_PRECISIONS)
    unknown = [name for name in precisions if name not in MATMUL_PRECISIONS]
    if unknown:
        raise CliError(f"unknown precision {', '.join(unknown)}; choose from {', '.join(MATMUL_PRECISIONS)}")
    if args.soak_seconds is not None and args.soak_seconds <= 0:
        raise CliError("--soak-seconds must be positive")
    if not 1 <= args.serve_max_concurrency <= MAX_SERVE_CONCURRENCY:
        raise CliError(f"--serve-max-concurrency must be from 1 to {MAX_SERVE_CONCURRENCY}")
    if args.submit:
        _credentials(args)  # fail before an hour of measuring, not after

    torch = _import_torch()
    if args.device == "cpu":
        devices: list[int | None] = [None]
    elif torch.cuda.is_available():
        count = torch.cuda.device_count()
        if args.all_devices:
            devices = list(range(count))
        else:
            index = args.device if args.device is not None else 0
            if not 0 <= index < count:
                raise CliError(f"--device {index}: PyTorch sees {count} GPU(s), numbered 0 to {count - 1}")
            devices = [index]
    elif args.allow_cpu:
        devices = [None]
    else:
        raise CliError(_no_cuda_message(torch), EXIT_NO_GPU)
    contexts = SERVE_CONTEXTS if devices != [None] else CPU_TINY_SIZES.llm["serve_contexts"]
    unknown_contexts = sorted(set(args.serve_contexts or ()) - set(contexts))
    if unknown_contexts:
        raise CliError(
            f"--serve-contexts {', '.join(map(str, unknown_contexts))}: the serving sweep measures "
            f"{' and '.join(map(str, contexts))} tokens of context"
        )

    from .runner import DEFAULT_SOAK_SECONDS, Progress

    mode = "quick" if args.quick else "sustained" if args.sustained else "standard"
    options = RunOptions(
        workloads=tuple(workloads),
        precisions=tuple(precisions),
        run_mode=mode,
        soak_seconds=args.soak_seconds or DEFAULT_SOAK_SECONDS,
        serve=ServePlan(
            contexts=tuple(args.serve_contexts) if args.serve_contexts else None,
            max_concurrency=args.serve_max_concurrency,
            phases=tuple(args.llm_phases or LLM_PHASES),
            precisions=tuple(precisions),
        ),
    )
    progress = Progress(quiet=args.quiet)
    code = EXIT_OK
    # One submission per GPU for the single-GPU workloads; on a host of several GPUs the multi-GPU
    # workloads (1..N GPUs together) go into one more submission, the host's.
    jobs: list[tuple[int | None, RunOptions, list[int] | None, Path]] = []
    several = len(devices) > 1
    single = tuple(name for name in workloads if name not in COLLECTIVE_WORKLOADS)
    multi = tuple(name for name in workloads if name in COLLECTIVE_WORKLOADS)
    if several:
        if single:
            jobs += [
                (device, dataclasses.replace(options, workloads=single), None, _out_path(args.out, device or 0, True))
                for device in devices
            ]
        if multi:
            host_mode = "standard" if mode == "sustained" else mode  # multi-GPU figures are burst only
            host_options = dataclasses.replace(options, workloads=multi, run_mode=host_mode)
            gpus = [device for device in devices if device is not None]
            jobs.append((gpus[0], host_options, gpus, _out_path(args.out, "host", True)))
    else:
        jobs.append((devices[0], options, None, _out_path(args.out, devices[0] or 0, False)))
    for device, job_options, collective_devices, path in jobs:
        submission, errors = device_run(
            torch, device_index=device, options=job_options, progress=progress, collective_devices=collective_devices
        )
        if not submission["results"]:
            _err(f"device {device or 0}: no workload produced a result, so nothing was written:")
            _err("  " + "\n  ".join(f"{entry['workload']}: {entry['reason']}" for entry in submission["skipped"]))
            code = EXIT_FAILED
            continue
        try:
            problems = submission_validate(submission)
        except SchemaUnavailable:  # pragma: no cover - submission_validate only raises when asked
            problems = []
        if problems:
            invalid = path.with_name(path.name + ".invalid.json")
            _write_json_atomically(invalid, submission)
            _err(f"the result does not match the submission schema (a client bug); kept in {invalid}:")
            _err("  " + "\n  ".join(problems))
            code = EXIT_FAILED
            continue
        _write_json_atomically(path, submission)
        failed_checks = [
            f"{result['workload']} {result['precision']}"
            for result in submission["results"]
            if result.get("correctness") and not result["correctness"]["passed"]
        ]
        progress.line(f"wrote {path}: {len(submission['results'])} results, {len(submission['skipped'])} skipped")
        if errors or failed_checks:
            for line in errors:
                _err(f"error: {line}")
            for line in failed_checks:
                _err(f"correctness check failed: {line}")
            code = EXIT_FAILED
        if args.submit:
            submitted = _post(path, submission, args)
            code = code or submitted
    return code


def command_submit(args: argparse.Namespace) -> int:
    code = EXIT_OK
    _credentials(args)
    for name in args.files:
        path = Path(name)
        payload = _load_submission(path)
        code = code or _post(path, payload, args)
    return code


def command_validate(args: argparse.Namespace) -> int:
    code = EXIT_OK
    for name in args.files:
        path = Path(name)
        try:
            payload = _load_submission(path)
        except CliError as error:
            _err(str(error))
            code = EXIT_FAILED
            continue
        print(f"{path}: valid ({len(payload['results'])} results, run {payload['run_uuid']})")
    try:
        submission_validate({}, require_schema=True)
    except SchemaUnavailable as missing:
        _err(f"note: {missing}; only the cross-field checks ran")
    return code


def command_workloads(args: argparse.Namespace) -> int:
    from .workloads import workloads_load

    entries = workloads_load()
    if args.json:
        print(json.dumps(list(entries.values()), indent=2))
        return EXIT_OK
    for entry in entries.values():
        print(f"{entry['id']:<18} v{entry['version']}  {entry['unit']:<9} {entry['category']:<9} {entry['name']}")
    return EXIT_OK


def command_info(args: argparse.Namespace) -> int:
    from .environment import cpu_model, device_describe, environment_collect, ram_gib, telemetry_open

    torch = _import_torch()
    print(f"{CLIENT_NAME} {__version__}; Python {sys.version.split()[0]}; torch {torch.__version__}")
    print(f"CPU: {cpu_model()}, {os.cpu_count()} logical CPUs, {ram_gib():g} GiB RAM")
    if not torch.cuda.is_available():
        _err(_no_cuda_message(torch))
        return EXIT_NO_GPU
    environments = []
    for index in range(torch.cuda.device_count()):
        torch.cuda.set_device(index)
        torch.ones(8, 8, device=f"cuda:{index}") @ torch.ones(8, 8, device=f"cuda:{index}")  # loads cuBLAS
        info = device_describe(torch, index=index)
        telemetry = telemetry_open(torch_index=index, uuid=info.uuid, pci_bus_id=info.pci_bus_id)
        static = telemetry.static()
        sample = telemetry.sample()
        environment = environment_collect(
            torch=torch,
            device=info,
            telemetry=telemetry,
            static=static,
            before=sample,
            after=sample,
            cpu_only=False,
        )
        telemetry.close()
        environments.append(environment)
        if args.json:
            continue
        gpu = environment["gpu"]
        print(f"GPU {index}: {gpu['name_torch']} (nvidia-smi: {gpu['name_nvidia_smi']})")
        print(
            f"  memory {gpu['memory_total_mib']} MiB, compute capability {gpu['compute_capability']}, "
            f"{gpu['multiprocessor_count']} SMs, L2 {(gpu['l2_cache_bytes'] or 0) / 2**20:g} MiB"
        )
        print(f"  uuid {gpu['uuid']}, PCI {gpu['pci_bus_id']}")
        print(
            f"  driver {environment['driver_version']} (CUDA {environment['cuda_driver_version']}), "
            f"PyTorch CUDA {environment['cuda_version']}, cuBLAS {environment['cublas_version']}, "
            f"cuDNN {environment['cudnn_version']}"
        )
        clocks = environment["clocks_before"] or {}
        print(
            f"  clocks SM {clocks.get('sm_mhz')} MHz (max {clocks.get('max_sm_mhz')}), memory {clocks.get('mem_mhz')} MHz; "
            f"power {environment['power_draw_before_w']} W of {environment['power_limit_w']} W limit; "
            f"{environment['temperature_before_c']} C; telemetry via {environment['telemetry_source']}"
        )
    if args.json:
        print(json.dumps(environments, indent=2))
    return EXIT_OK


def _device_argument(text: str) -> int | str:
    if text.strip().lower() == "cpu":
        return "cpu"
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is neither a device index (0, 1, ...) nor cpu") from None


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=CLIENT_NAME, description="Measure a GPU for GPU Atlas and submit the result.")
    parser.add_argument("--version", action="version", version=f"{CLIENT_NAME} {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)

    def server_options(sub: argparse.ArgumentParser) -> None:
        sub.add_argument("--url", help="the GPU Atlas server, e.g. https://gpuatlas.example (or GPUATLAS_URL)")
        sub.add_argument("--token", help="your API token (better: set GPUATLAS_TOKEN)")
        sub.add_argument("--attempts", type=int, default=5, help="tries on 5xx / connection errors (default 5)")
        sub.add_argument("--backoff", type=float, default=2.0, help="first wait between tries in seconds, doubling")

    run = commands.add_parser("run", help="measure the GPU and write the result JSON")
    where = run.add_mutually_exclusive_group()
    where.add_argument(
        "--device",
        type=_device_argument,
        help="PyTorch device index (default 0), or cpu: a trial at tiny sizes on the CPU, which the server checks "
        "as a dry run and never publishes",
    )
    where.add_argument("--all-devices", action="store_true", help="measure every GPU, one submission each")
    run.add_argument("--workloads", nargs="+", metavar="ID", help="workload ids (default: all; see 'workloads')")
    run.add_argument(
        "--precisions",
        nargs="+",
        metavar="P",
        help="precisions (default: fp32 tf32 fp16 bf16 fp8; the LLM sweeps run bf16 and fp8 of these)",
    )
    length = run.add_mutually_exclusive_group()
    length.add_argument("--quick", action="store_true", help="shorter caps on repetition (same sizes)")
    length.add_argument("--sustained", action="store_true", help="thermal soak, then burst and sustained figures")
    run.add_argument("--soak-seconds", type=float, help=f"soak length for --sustained (default {120:g})")
    run.add_argument(
        "--llm-phases",
        nargs="+",
        choices=LLM_PHASES,
        help="llm-decode: which phases to run (default: all; serve is the serving sweep)",
    )
    run.add_argument(
        "--serve-contexts",
        nargs="+",
        type=int,
        metavar="TOKENS",
        help=f"llm-decode serving sweep: contexts to measure (default: {' '.join(map(str, SERVE_CONTEXTS))})",
    )
    run.add_argument(
        "--serve-max-concurrency",
        type=int,
        default=MAX_SERVE_CONCURRENCY,
        metavar="N",
        help=f"llm-decode serving sweep: stop doubling concurrency past N (default {MAX_SERVE_CONCURRENCY}; "
        "it stops anyway where the KV cache is full)",
    )
    run.add_argument("--out", required=True, help="result file; with --all-devices '-gpuN' is added (or use {device})")
    run.add_argument("--submit", action="store_true", help="submit the result after writing it")
    run.add_argument("--allow-cpu", action="store_true", help=argparse.SUPPRESS)
    run.add_argument("--quiet", action="store_true", help="no progress lines")
    server_options(run)
    run.set_defaults(handler=command_run)

    submit = commands.add_parser("submit", help="submit result JSON files to a GPU Atlas server")
    submit.add_argument("files", nargs="+")
    submit.add_argument(
        "--dry-run",
        action="store_true",
        help="have the server check the files and answer its verdict, storing nothing (cpu_only results always are)",
    )
    server_options(submit)
    submit.set_defaults(handler=command_submit)

    info = commands.add_parser("info", help="show the GPUs, driver, CUDA, PyTorch, clocks and power limit")
    info.add_argument("--json", action="store_true")
    info.set_defaults(handler=command_info)

    validate = commands.add_parser("validate", help="check result files against the submission schema")
    validate.add_argument("files", nargs="+")
    validate.set_defaults(handler=command_validate)

    workloads = commands.add_parser("workloads", help="list the workloads and their versions")
    workloads.add_argument("--json", action="store_true")
    workloads.set_defaults(handler=command_workloads)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.handler(args)
    except CliError as error:
        _err(f"{CLIENT_NAME}: {error}")
        return error.code
    except KeyboardInterrupt:
        _err(f"{CLIENT_NAME}: interrupted; nothing was written for the device being measured")
        return 130
