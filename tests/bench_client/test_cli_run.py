"""The run command end to end on the CPU (tiny sizes), the no-GPU refusal, and bad arguments."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from gpuatlas_bench.cli import _out_path, main
from gpuatlas_bench.schema import submission_validate

from tests.bench_client.support import cpu_context

torch = pytest.importorskip("torch", reason="the run command measures through PyTorch")


def test_cpu_run_writes_a_schema_valid_cpu_only_result(tmp_path, capsys):
    out = tmp_path / "result.json"
    code = main(
        [
            "run",
            "--allow-cpu",
            "--quick",
            "--workloads",
            "matmul-stress",
            "matmul",
            "membw-triad",
            "pcie-h2d",
            "transformer-infer",
            "--precisions",
            "fp32",
            "bf16",
            "fp8",
            "--out",
            str(out),
        ]
    )
    assert code == 0, capsys.readouterr().err
    payload = json.loads(out.read_text())
    assert submission_validate(payload, require_schema=True) == []
    assert payload["cpu_only"] is True
    assert payload["environment"]["gpu"]["count"] == 0

    measured = {
        (result["workload"], result["precision"], result["params"].get("size")) for result in payload["results"]
    }
    assert measured == {
        ("matmul-stress", "fp32", None),
        ("matmul", "fp32", "fixed"),
        ("matmul", "fp32", "preferred"),
        ("matmul", "bf16", "fixed"),
        ("matmul", "bf16", "preferred"),
        ("membw-triad", "fp32", None),
        ("transformer-infer", "bf16", None),
    }
    skipped = {(entry["workload"], entry["precision"]) for entry in payload["skipped"]}
    assert skipped == {("matmul", "fp8"), ("pcie-h2d", "fp32")}
    for result in payload["results"]:
        assert len(result["repetitions"]) >= 10
        assert result["min"] <= result["median"] <= result["max"]
        assert result["timing"]["method"] == "perf_counter"
        if result["workload"].startswith("matmul") or result["workload"] == "membw-triad":
            assert result["correctness"]["passed"], result["correctness"]
    stress = next(result for result in payload["results"] if result["workload"] == "matmul-stress")
    assert stress["timing"]["inner_iterations"] == 100
    assert stress["extra"]["seconds_per_100"] > 0
    preferred = next(result for result in payload["results"] if result["params"] == {"size": "preferred"})
    assert preferred["extra"]["m"] in (64, 128, 192)
    # Progress goes to stderr, one line per case.
    assert "membw-triad" in capsys.readouterr().err


def test_sustained_cpu_run_has_a_soak_and_both_modes(tmp_path):
    out = tmp_path / "sustained.json"
    code = main(
        ["run", "--allow-cpu", "--sustained", "--soak-seconds", "0.2", "--quiet"]
        + ["--workloads", "membw-copy", "--out", str(out)]
    )
    assert code == 0
    payload = json.loads(out.read_text())
    assert submission_validate(payload, require_schema=True) == []
    assert payload["run_mode"] == "sustained"
    assert [result["mode"] for result in payload["results"]] == ["burst", "sustained"]
    assert payload["soak"]["seconds"] >= 0.2


def test_without_cuda_the_run_says_so_and_exits_non_zero(tmp_path, client_env):
    out = tmp_path / "result.json"
    client_env["CUDA_VISIBLE_DEVICES"] = ""
    finished = subprocess.run(
        [sys.executable, "-m", "gpuatlas_bench", "run", "--out", str(out)],
        capture_output=True,
        text=True,
        env=client_env,
        timeout=120,
        check=False,
    )
    assert finished.returncode == 3
    assert "No CUDA GPU is available to PyTorch" in finished.stderr
    assert "--device cpu" in finished.stderr and "dry run" in finished.stderr
    assert "Traceback" not in finished.stderr
    assert not out.exists()


def test_unknown_workload_and_precision_are_named(tmp_path, capsys):
    assert main(["run", "--workloads", "matmul", "resnet50", "--out", str(tmp_path / "x.json")]) == 2
    assert "unknown workload resnet50" in capsys.readouterr().err
    assert main(["run", "--precisions", "fp64", "--out", str(tmp_path / "x.json")]) == 2
    assert "unknown precision fp64" in capsys.readouterr().err


def test_run_submit_without_credentials_fails_before_measuring(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("GPUATLAS_TOKEN", raising=False)
    monkeypatch.delenv("GPUATLAS_URL", raising=False)
    code = main(["run", "--allow-cpu", "--submit", "--url", "https://example.org", "--out", str(tmp_path / "x.json")])
    assert code == 2
    assert "no API token" in capsys.readouterr().err
    assert not (tmp_path / "x.json").exists()


def test_out_path_for_several_devices():
    assert _out_path("result.json", 0, False) == Path("result.json")
    assert _out_path("result.json", 3, True) == Path("result-gpu3.json")
    assert _out_path("runs/{device}.json", 2, True) == Path("runs/2.json")


def test_a_run_without_any_result_writes_nothing(tmp_path, capsys):
    out = tmp_path / "result.json"
    assert main(["run", "--allow-cpu", "--quiet", "--workloads", "pcie-h2d", "--out", str(out)]) == 1
    assert not out.exists()
    assert "pcie-h2d: needs CUDA" in capsys.readouterr().err


def test_matmul_check_fails_when_the_timed_output_was_never_written():
    from gpuatlas_bench.workloads.matmul import _matmul_prepared

    prepared = _matmul_prepared(cpu_context(), "fp32", 64, 64, 64)
    assert prepared.check()["passed"] is False  # still the NaN poison
    prepared.fn()
    check = prepared.check()
    assert check["passed"] is True and check["rel_error"] < 1e-5
    prepared.teardown()


@pytest.mark.parametrize(("precision", "allowed"), [("tf32", False), ("bf16", False), ("fp16", True)])
def test_pre_ampere_gpus_never_report_tf32_or_bf16(precision, allowed):
    from gpuatlas_bench.workloads.common import Unsupported
    from gpuatlas_bench.workloads.matmul import _matmul_prepared

    # A V100 (7.0): 'tf32' would silently be FP32 and bf16 emulated. Checked before touching the GPU.
    ctx = cpu_context(cpu_only=False, compute_capability=(7, 0), torch=None)
    if allowed:
        with pytest.raises(AttributeError):  # got past the capability check to the (absent) torch
            _matmul_prepared(ctx, precision, 64, 64, 64)
    else:
        with pytest.raises(Unsupported, match="compute capability 8.0"):
            _matmul_prepared(ctx, precision, 64, 64, 64)


def test_device_is_an_index_or_cpu(tmp_path, capsys):
    with pytest.raises(SystemExit) as usage:
        main(["run", "--device", "gpu0", "--out", str(tmp_path / "x.json")])
    assert usage.value.code == 2
    assert "'gpu0' is neither a device index (0, 1, ...) nor cpu" in capsys.readouterr().err
