"""The shared submission schema: real results pass, each kind of bad input is named and refused."""

from __future__ import annotations

import copy
import json
from importlib import resources

import pytest
from gpuatlas_bench.schema import example_load, schema_load, submission_validate
from gpuatlas_bench.workloads import WORKLOAD_ORDER, workloads_load


@pytest.fixture
def real(h100_run_path):
    return json.loads(h100_run_path.read_text(encoding="utf-8"))


def test_schema_ships_as_package_data_and_is_draft_2020_12():
    text = resources.files("gpuatlas_bench").joinpath("schemas/submission-1.schema.json").read_text()
    schema = json.loads(text)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema == schema_load()
    import jsonschema

    jsonschema.Draft202012Validator.check_schema(schema)


def test_real_h100_result_and_package_example_are_valid(real):
    assert submission_validate(real, require_schema=True) == []
    assert submission_validate(example_load(), require_schema=True) == []
    assert real["environment"]["gpu"]["name_torch"] == "NVIDIA H100 80GB HBM3"
    assert real["cpu_only"] is False


def test_real_sustained_result_is_valid(h100_run_path):
    sustained = json.loads((h100_run_path.parent / "h100_sustained_run.json").read_text())
    assert submission_validate(sustained, require_schema=True) == []
    assert {result["mode"] for result in sustained["results"]} == {"burst", "sustained"}


def _set(payload, path, value):
    target = payload
    for part in path[:-1]:
        target = target[part]
    if value is _DELETE:
        del target[path[-1]]
    else:
        target[path[-1]] = value


_DELETE = object()


@pytest.mark.parametrize(
    ("path", "value", "named"),
    [
        (("results", 0, "median"), 0, "results/0/median"),
        (("results", 0, "median"), -5.0, "results/0/median"),
        (("results", 0, "repetitions", 3), 0.0, "results/0/repetitions/3"),
        (("results", 0, "repetitions"), [51.0] * 9, "results/0/repetitions"),
        (("results", 0, "precision"), "fp64", "results/0/precision"),
        (("results", 0, "unit"), "GFLOPS", "results/0/unit"),
        (("results", 0, "workload"), "<script>alert(1)</script>", "results/0/workload"),
        (("results", 0, "workload_version"), "1", "results/0/workload_version"),
        (("results", 0, "params", "Bad-Key"), 1, "results/0/params"),
        (("results", 0, "surprise"), 1, "results/0"),
        (("results", 0, "mode"), "sustained", "results/0/mode"),  # only in a sustained run
        (("results",), [], "results"),
        (("run_uuid",), "not-a-uuid", "run_uuid"),
        (("created_at",), "2026-11-22T04:00:00+08:00", "created_at"),
        (("schema_version",), 2, "schema_version"),
        (("environment", "gpu", "count"), 0, "environment/gpu/count"),  # a GPU run needs a GPU
        (("environment", "gpu", "name_torch"), "x" * 201, "environment/gpu/name_torch"),
        (("environment", "driver_version"), _DELETE, "environment"),
        (("environment", "ram_gib"), 0, "environment/ram_gib"),
        (("workload_code_sha256",), "abc", "workload_code_sha256"),
        (("extra_top_level",), True, "(top level)"),
    ],
)
def test_bad_input_is_refused_naming_the_field(real, path, value, named):
    payload = copy.deepcopy(real)
    _set(payload, path, value)
    errors = submission_validate(payload, require_schema=True)
    assert errors, f"{path} = {value!r} was accepted"
    assert any(error.startswith(named) for error in errors), errors


def test_cross_field_rules(real):
    payload = copy.deepcopy(real)
    payload["results"][0]["min"] = payload["results"][0]["median"] * 1.1
    assert any("min <= median <= max" in error for error in submission_validate(payload))

    payload = copy.deepcopy(real)
    window_start = payload["results"][0]["stats"]["window_start"]
    payload["results"][0]["repetitions"][window_start] = payload["results"][0]["max"] * 2
    assert any("outside [min, max]" in error for error in submission_validate(payload))

    payload = copy.deepcopy(real)
    payload["results"].append(copy.deepcopy(payload["results"][0]))
    assert any("same workload" in error for error in submission_validate(payload))


def test_cpu_only_runs_may_have_no_gpu_but_gpu_runs_must_use_cuda_events(real):
    payload = copy.deepcopy(real)
    payload["results"][0]["timing"]["method"] = "perf_counter"
    assert any(error.startswith("results/0/timing/method") for error in submission_validate(payload))
    payload["cpu_only"] = True
    payload["environment"]["gpu"]["count"] = 0
    assert submission_validate(payload) == []


def test_workloads_json_matches_the_client_and_the_schema():
    entries = workloads_load()
    assert tuple(sorted(entries)) == tuple(sorted(WORKLOAD_ORDER))
    result_schema = schema_load()["$defs"]["result"]["properties"]
    for entry in entries.values():
        assert entry["unit"] in result_schema["unit"]["enum"]
        assert entry["category"] in {"training", "inference", "micro"}
        assert entry["version"] == "1.0"
        assert entry["higher_is_better"] is True
        assert set(entry["precisions"]) <= set(schema_load()["$defs"]["precision"]["enum"])
        assert len(entry["description"]) > 40


def test_the_client_imports_neither_django_nor_torch_until_it_measures(client_env):
    import subprocess
    import sys

    code = (
        "import sys, gpuatlas_bench.cli, gpuatlas_bench.runner, gpuatlas_bench.schema, gpuatlas_bench.submit\n"
        "print(sorted(name for name in ('django', 'torch') if name in sys.modules))"
    )
    client_env.pop("DJANGO_SETTINGS_MODULE", None)
    finished = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=client_env, timeout=60, check=True
    )
    assert finished.stdout.strip() == "[]"
