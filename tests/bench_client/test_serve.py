"""The llm-decode serving sweep and its tensor-parallel variant: memory plan, figures, checks, energy, CLI."""

from __future__ import annotations

import json

import pytest
from gpuatlas_bench.cli import main
from gpuatlas_bench.schema import submission_validate

torch = pytest.importorskip("torch", reason="the serving sweep runs through PyTorch")

from gpuatlas_bench import energy  # noqa: E402
from gpuatlas_bench.workloads import llm, serve  # noqa: E402
from gpuatlas_bench.workloads.common import CPU_TINY_SIZES, GPU_SIZES, ServePlan  # noqa: E402

from tests.bench_client.support import cpu_context  # noqa: E402

GIB = 2**30
LLAMA_8B = llm.shape_from(GPU_SIZES.llm)
LLAMA_70B = llm.shape_from(GPU_SIZES.llm_tp)


def _plan(shape, precision, *, tp=1, context=1024, free_gib=78.5, plan_max=1024):
    return serve.point_plan(
        shape,
        precision,
        tp=tp,
        context=context,
        free=int(free_gib * GIB),
        plan_max=plan_max,
        max_len=4097,
        reserve=serve.RESERVE_BYTES,
    )


def test_llama3_70b_shape_has_the_published_parameter_count():
    # Meta-Llama-3-70B: 70,553,706,496 parameters (model card and safetensors index).
    assert LLAMA_70B.parameters == 70_553_706_496
    # bf16 KV cache: 80 layers x (K and V) x 8 heads x 128 x 2 bytes = 320 KiB per token.
    assert LLAMA_70B.kv_bytes_per_token() == 327_680


def test_concurrency_doubles_until_the_kv_cache_is_full_and_the_first_that_does_not_fit_is_named():
    plan = _plan(LLAMA_8B, "bf16", context=4096)
    # 78.5 GiB free, 15 GiB of weights: 512 MiB of cache per 4,096-token sequence -> about 120 of them.
    assert plan.concurrencies == (1, 2, 4, 8, 16, 32, 64)
    assert 100 < plan.kv_limit_sequences < 128
    assert plan.first_unfit == 128
    assert "128 sequences at context 4096" in plan.unfit_reason
    assert f"holds at most {plan.kv_limit_sequences} such sequences" in plan.unfit_reason
    # The cap of --serve-max-concurrency stops the sweep without calling it a memory limit.
    capped = _plan(LLAMA_8B, "bf16", context=4096, plan_max=16)
    assert capped.concurrencies == (1, 2, 4, 8, 16) and capped.first_unfit is None


@pytest.mark.parametrize("precision", ["bf16", "fp8"])
@pytest.mark.parametrize("tp", [1, 2, 4, 8])
def test_more_memory_never_fewer_sequences_and_fp8_weights_leave_more_room(precision, tp):
    for context in (1024, 4096):
        limits = [
            _plan(LLAMA_70B, precision, tp=tp, context=context, free_gib=gib).kv_limit_sequences
            for gib in (40, 80, 141)
        ]
        assert limits == sorted(limits)
        assert (
            _plan(LLAMA_70B, "fp8", tp=tp, context=context).kv_limit_sequences
            >= _plan(LLAMA_70B, "bf16", tp=tp, context=context).kv_limit_sequences
        )
        # A longer context holds fewer sequences.
        assert _plan(LLAMA_70B, precision, tp=tp, context=4096).kv_limit_sequences <= limits[1]


def test_llama3_70b_fits_one_80gb_gpu_only_in_fp8_and_says_how_much_bf16_needs():
    bf16 = _plan(LLAMA_70B, "bf16")
    assert bf16.concurrencies == () and bf16.first_unfit == 1
    assert "131.6 GiB of weights" in bf16.unfit_reason  # 70.6 B parameters, the head and embedding in bf16
    fp8 = _plan(LLAMA_70B, "fp8")  # an 80 GB H100 holds it with a little KV cache
    assert fp8.concurrencies[0] == 1 and 16 <= fp8.kv_limit_sequences < 64
    # Two GPUs hold bf16 with room to serve.
    assert _plan(LLAMA_70B, "bf16", tp=2).concurrencies[-1] >= 32


def _serve_run(tmp_path, *extra):
    out = tmp_path / "serve.json"
    code = main(
        ["run", "--allow-cpu", "--quick", "--quiet", "--workloads", "llm-decode", "--llm-phases", "serve"]
        + list(extra)
        + ["--out", str(out)]
    )
    assert code == 0
    payload = json.loads(out.read_text())
    assert submission_validate(payload, require_schema=True) == []
    return payload


def test_cpu_sweep_measures_every_point_and_records_where_the_cache_is_full(tmp_path):
    payload = _serve_run(tmp_path)
    points = [r for r in payload["results"] if r["workload"] == "llm-decode"]
    assert {r["params"]["phase"] for r in points} == {"serve"}
    series: dict = {}
    for result in points:
        params = result["params"]
        series.setdefault((result["precision"], params["context_len"]), []).append(params["concurrency"])
        assert result["correctness"]["passed"], result["correctness"]
        extra = result["extra"]
        # One token per sequence per step.
        assert extra["tokens_per_s_per_user"] == pytest.approx(1000 / extra["step_ms"], rel=1e-3)
        assert result["median"] == pytest.approx(params["concurrency"] * extra["tokens_per_s_per_user"], rel=1e-3)
        assert extra["tokens_per_s_per_gpu"] == pytest.approx(result["median"], rel=1e-5)
        assert extra["joules_per_token"] is None and extra["power_w"] is None  # no energy counter here
        assert extra["bytes_per_step"] > 0 and extra["flops_per_step"] > 0
        assert params["concurrency"] <= extra["kv_limit_sequences"]
    assert set(series) == {(p, c) for p in ("bf16", "fp8") for c in CPU_TINY_SIZES.llm["serve_contexts"]}
    for concurrencies in series.values():
        assert concurrencies == [2**i for i in range(len(concurrencies))]
    limits = [s for s in payload["skipped"] if s["workload"] == "llm-decode"]
    assert len(limits) == len(series)  # exactly one "does not fit" per series
    for entry in limits:
        key = (entry["precision"], entry["params"]["context_len"])
        assert entry["params"]["concurrency"] == 2 * series[key][-1]
        assert "such sequences" in entry["reason"]


def test_sweep_knobs_shorten_it_and_bad_values_are_refused(tmp_path, capsys):
    payload = _serve_run(tmp_path, "--serve-contexts", "16", "--serve-max-concurrency", "2")
    assert sorted((r["precision"], r["params"]["concurrency"]) for r in payload["results"]) == [
        ("bf16", 1),
        ("bf16", 2),
        ("fp8", 1),
        ("fp8", 2),
    ]
    assert payload["skipped"] == []
    code = main(["run", "--allow-cpu", "--serve-contexts", "100", "--out", str(tmp_path / "x.json")])
    assert code == 2
    assert "--serve-contexts 100" in capsys.readouterr().err
    assert main(["run", "--allow-cpu", "--serve-max-concurrency", "0", "--out", str(tmp_path / "x.json")]) == 2


def _point(ctx, *, precision="bf16", batch=2, context=16):
    model = llm.Decoder(ctx, llm.shape_from(CPU_TINY_SIZES.llm), precision, max_len=65)
    if precision == "fp8":
        model.calibrate_decode(ctx)
    return serve.serve_prepared(ctx, model, context=context, batch=batch, kv_limit=8)


def test_the_served_step_matches_a_plain_step_and_the_check_catches_a_wrong_position(monkeypatch):
    prepared = _point(cpu_context())
    prepared.fn()
    good = prepared.check()
    assert good["passed"] and good["rel_error"] < 0.02
    tables = llm.Decoder.step_tables
    monkeypatch.setattr(llm.Decoder, "step_tables", lambda self, position: tables(self, position - 1))
    prepared = _point(cpu_context())
    prepared.fn()
    bad = prepared.check()
    assert bad["passed"] is False and bad["rel_error"] > 0.05


def test_joules_per_token_come_from_the_energy_counter_around_a_window_of_steps():
    readings = iter([1_000_000.0 + 1_000_000.0 * i for i in range(100)])  # mJ: 1 kJ a chunk
    ctx = cpu_context(energy_mj=lambda: next(readings), power_limit_w=700.0)
    prepared = _point(ctx, batch=4)
    figures = prepared.extra(1000.0)  # noqa: S610 - not Django; 4 tokens per step at 1,000 tokens/s: a 4 ms step
    plan = energy.window_plan(step_s=0.004, policy=CPU_TINY_SIZES.serve_energy)
    assert figures["energy_samples"] == plan.chunks + 1 and figures["energy_source"] == "nvml-total-energy"
    assert figures["joules_per_token"] == pytest.approx(1000 * plan.chunks / (plan.window_steps * 4), rel=1e-3)
    assert figures["power_w"] == pytest.approx(1000 * plan.chunks / figures["energy_window_s"], rel=0.05)
    assert figures["power_limit_w"] == 700.0
    # The CPU's window is far under 5 s, and 2 kJ in it far above any board's power.
    assert "shorter than 5 s" in figures["energy_flag"] and "above the board's 700 W limit" in figures["energy_flag"]


def test_a_group_sums_its_gpus_energy_and_checks_each_against_its_limit():
    readings = iter([1_000_000.0 * i for i in range(100)])  # mJ: 1 kJ a chunk on this rank
    ctx = cpu_context(energy_mj=lambda: next(readings), power_limit_w=700.0)
    model = llm.Decoder(ctx, llm.shape_from(CPU_TINY_SIZES.llm), "bf16", max_len=65)
    # A second rank that read 3x this rank's joules, with a limit of 650 W.
    own: list[float] = []

    def gather(value: float) -> list[float]:
        own.append(value)
        return [value, 3 * value] if len(own) == 1 else [value, 650.0]

    prepared = serve.serve_prepared(ctx, model, context=16, batch=2, kv_limit=8, gather=gather)
    figures = prepared.extra(500.0)  # noqa: S610 - not Django
    assert figures["power_limit_w"] == 650.0
    assert figures["power_w"] == pytest.approx(4 * own[0] / figures["energy_window_s"] / 2, rel=1e-2)
    assert "above the board's 650 W limit" in figures["energy_flag"]


def test_no_counter_and_no_power_reading_leave_the_energy_empty_and_unflagged():
    figures = _point(cpu_context(), batch=2).extra(500.0)  # noqa: S610 - not Django
    assert figures["joules_per_token"] is None and figures["power_w"] is None and figures["energy_flag"] is None
    assert figures["energy_source"] is None and figures["energy_samples"] == 0


def test_the_tp_cases_split_llama3_70b_and_skip_what_does_not_split():
    class Group:
        rank, world, backend, dist = 0, 3, "gloo", None

        @staticmethod
        def gather(value):
            return [value] * 3

    ctx = cpu_context(serve=ServePlan(contexts=(16,), max_concurrency=2))
    cases = serve.tp_cases(ctx, Group(), "nvlink")
    # 8 key/value heads do not split over 3 GPUs: one skipped entry per precision and context.
    assert len(cases) == 2
    with pytest.raises(serve.Unsupported, match="do not split over 3 GPUs"):
        cases[0].build(ctx)
    assert cases[0].params == {
        "model": "tiny-test-tp",
        "context_len": 16,
        "tp": 3,
        "interconnect": "nvlink",
        "concurrency": 1,
    }


@pytest.mark.slow
def test_two_gloo_processes_run_the_tensor_parallel_sweep(tmp_path, capsys):
    out = tmp_path / "tp.json"
    code = main(
        ["run", "--allow-cpu", "--quick", "--quiet", "--workloads", "llm-decode-tp"]
        + ["--serve-contexts", "16", "--serve-max-concurrency", "2", "--out", str(out)]
    )
    assert code == 0, capsys.readouterr().err
    payload = json.loads(out.read_text())
    assert submission_validate(payload, require_schema=True) == []
    points = {(r["gpu_count"], r["precision"], r["params"]["concurrency"]): r for r in payload["results"]}
    assert set(points) == {(g, p, c) for g in (1, 2) for p in ("bf16", "fp8") for c in (1, 2)}
    for (gpus, _precision, _batch), result in points.items():
        assert result["params"]["tp"] == gpus
        # The split model computes what the whole one does: the eager check runs the same collectives.
        assert result["correctness"]["passed"], result["correctness"]
        assert result["extra"]["tokens_per_s_per_gpu"] == pytest.approx(result["median"] / gpus, rel=1e-4)
        assert [entry["rank"] for entry in result["per_gpu"]] == list(range(gpus))
