#!/usr/bin/env bash
# One call on the GPU machine: info, client runs 1 and 2 back to back, hand-written references, a short
# sustained run, and the comparison table. Results go to $OUT (the device tool brings them back).
set -u
OUT=${OUT:-/tmp/gpuatlas-out}
mkdir -p "$OUT"
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-deps --no-build-isolation --no-index . >/tmp/pip.txt 2>&1 || cat /tmp/pip.txt
if command -v gpuatlas-bench >/dev/null; then B=gpuatlas-bench; else B="python3 -m gpuatlas_bench"; export PYTHONPATH=$PWD; fi
echo "== using: $B"
nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.max.sm,power.limit,temperature.gpu --format=csv
echo "== info"; $B info; $B info --json >"$OUT/info.json"
echo "== run 1"; $B run --out "$OUT/run1.json"; echo "rc=$?"
echo "== run 2"; $B run --out "$OUT/run2.json"; echo "rc=$?"
echo "== hand-written"; python3 perf/handwritten_reference.py --client-json "$OUT/run1.json" --out "$OUT/handwritten.json"
echo "== sustained"; $B run --sustained --soak-seconds ${SOAK:-60} --workloads matmul transformer-train --precisions bf16 --out "$OUT/sustained.json"; echo "rc=$?"
echo "== validate"; $B validate "$OUT"/run1.json "$OUT"/run2.json "$OUT"/sustained.json
echo "== compare"; python3 perf/compare.py "$OUT/run1.json" "$OUT/run2.json" "$OUT/handwritten.json" "$OUT/sustained.json" | tee "$OUT/compare.txt"
