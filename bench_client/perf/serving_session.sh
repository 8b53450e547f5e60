#!/usr/bin/env bash
# One GPU call on a 1- or 2-GPU host (H100 or H200): GPU info; the llm-decode serving sweep on device 0;
# the hand-written batch-1 decode step and the client's ratio to it; on 2+ GPUs the tensor-parallel
# 70B sweep at TP 1..N and allreduce-busbw + transformer-train-ddp over all devices (on one GPU: the
# 70B fp8 TP1 sweep alone); every result validated; a short table last.
#
#   bash bench_client/perf/serving_session.sh            # from the repository root; results in $OUT
#   SWEEP=short bash bench_client/perf/serving_session.sh   # 1,024-token context only, concurrency <= 64
#
#   TP_SWEEP=full ...   # the TP sweep at both contexts and every concurrency that fits (default: 1,024, <= 64)
#   SWEEP=energy ...    # one GPU, about 7 minutes: the 8B sweep (1,024 then 4,096 tokens) and 70B fp8 TP1
#                       # (1,024 tokens, concurrency <= 128), each point with its energy window of at least
#                       # 5 s; no reference, no prefill; a per-point energy table last (BUDGET default 470)
#
# Outputs (at most 8 files, all directly in $OUT): log.txt (everything printed), info.json
# (gpuatlas-bench info --json), serve-gpu0.json (llm-decode serving sweep), reference.json (the
# hand-written step and the ratios), tp-host.json (llm-decode-tp), multigpu-host.json (all-reduce and
# DDP; 2+ GPUs only), phases-gpu0.json (llm-decode prefill and 128-token decode, when time is left),
# summary.txt (the final table); SWEEP=energy: serve-gpu0.json (1,024 tokens), serve4096-gpu0.json,
# tp-host.json (70B fp8 TP1), with the energy table in summary.txt.
# Stages run in order of importance, each under `timeout`, sized from what is left of BUDGET seconds
# (default 540) minus a reserve for the stages after it, so a hang in one stage loses that stage only.
# No network needed: it runs from the source tree.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/gpuatlas-serving}
SWEEP=${SWEEP:-full}
if [ "$SWEEP" = energy ]; then BUDGET=${BUDGET:-470}; else BUDGET=${BUDGET:-540}; fi
mkdir -p "$OUT"
cd "$(dirname "$0")/../.." || exit 2
export PYTHONPATH="$PWD/bench_client${PYTHONPATH:+:$PYTHONPATH}"
exec > >(tee -a "$OUT/log.txt") 2>&1
B="python3 -m gpuatlas_bench"
T0=$(date +%s)
elapsed() { echo $(( $(date +%s) - T0 )); }
stage() { echo; echo "== [$(elapsed) s] $*"; }
# seconds a stage may take: at most $1, leaving $2 for the stages after it
allow() { local left=$(( BUDGET - $(elapsed) - $2 )); [ "$left" -gt "$1" ] && left=$1; [ "$left" -lt 20 ] && left=20; echo "$left"; }

# CPU_TEST=1: the same stages on the CPU at tiny sizes (gloo), to test this script without a GPU.
CPU=(); SHORT_CONTEXT=1024; LONG_CONTEXT=4096
[ "${CPU_TEST:-0}" = 1 ] && CPU=(--allow-cpu) && SHORT_CONTEXT=16 && LONG_CONTEXT=64
# The tensor-parallel sweep keeps to the 1,024-token context and concurrency up to 64 unless
# TP_SWEEP=full: 70B points are the slow ones, and a stage cut by its timeout writes nothing.
if [ "$SWEEP" = short ]; then
  SERVE=(--serve-contexts "$SHORT_CONTEXT" --serve-max-concurrency 64)
else
  SERVE=()
fi
if [ "${TP_SWEEP:-short}" = full ]; then SERVE_TP=("${SERVE[@]}"); else SERVE_TP=(--serve-contexts "$SHORT_CONTEXT" --serve-max-concurrency 64); fi

stage "GPUs"
nvidia-smi --query-gpu=index,name,memory.total,driver_version,clocks.sm,clocks.max.sm,power.limit,temperature.gpu --format=csv
nvidia-smi topo -m 2>/dev/null | head -20
NGPU=${NGPU:-$(nvidia-smi --list-gpus 2>/dev/null | wc -l)}
python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'gpus', torch.cuda.device_count())"
$B info
$B info --json >"$OUT/info.json" || echo "(no GPU information)"
echo "sweep: $SWEEP; GPUs: $NGPU; env: NCCL_NVLS_ENABLE=$NCCL_NVLS_ENABLE TORCH_SYMM_MEM_DISABLE_MULTICAST=$TORCH_SYMM_MEM_DISABLE_MULTICAST NVSHMEM_DISABLE_NVLS=$NVSHMEM_DISABLE_NVLS"

if [ "$SWEEP" = energy ]; then
  # Each point: about 0.5 s of set-up and timing, 1 s of warm-up and a 5.5 s energy window.
  stage "llm-decode serving sweep with energy, context $SHORT_CONTEXT, on device 0 (bf16, fp8)"
  timeout -k 10 "$(allow 200 200)" $B run "${CPU[@]}" --device 0 --workloads llm-decode --llm-phases serve --serve-contexts "$SHORT_CONTEXT" --out "$OUT/serve-gpu0.json"
  echo "rc=$?"
  stage "llm-decode serving sweep with energy, context $LONG_CONTEXT, on device 0 (bf16, fp8)"
  timeout -k 10 "$(allow 170 90)" $B run "${CPU[@]}" --device 0 --workloads llm-decode --llm-phases serve --serve-contexts "$LONG_CONTEXT" --out "$OUT/serve4096-gpu0.json"
  echo "rc=$?"
  if [ $(( BUDGET - $(elapsed) )) -ge 60 ]; then
    stage "llm-decode-tp at TP1 on device 0 with energy: Llama 3 70B fp8, context $SHORT_CONTEXT, concurrency <= 128"
    timeout -k 10 "$(allow 120 0)" $B run "${CPU[@]}" --device 0 --workloads llm-decode-tp --precisions fp8 --serve-contexts "$SHORT_CONTEXT" --serve-max-concurrency 128 --out "$OUT/tp-host.json"
    echo "rc=$?"
  fi
  stage "validate"
  for file in "$OUT"/serve-gpu0.json "$OUT"/serve4096-gpu0.json "$OUT"/tp-host.json; do
    [ -e "$file" ] && $B validate "$file"
  done
  stage "done in $(elapsed) s"
  python3 bench_client/perf/serving_summary.py --energy "$OUT" | tee "$OUT/summary.txt"
  exit "${PIPESTATUS[0]}"
fi

# Stages in order of importance; each gets at most its cap and leaves the reserve for the ones after.
if [ "$NGPU" -ge 2 ]; then R1=200; R2=160; else R1=100; R2=60; fi
stage "llm-decode serving sweep on device 0 (bf16, fp8; contexts; concurrency 1, 2, 4, ... until the KV cache is full)"
timeout -k 10 "$(allow 240 $R1)" $B run "${CPU[@]}" --device 0 --workloads llm-decode --llm-phases serve "${SERVE[@]}" --out "$OUT/serve-gpu0.json"
echo "rc=$?"

stage "hand-written batch-1 decode step (one CUDA graph per step) and the client's ratio to it"
timeout -k 10 "$(allow 90 $R2)" python3 bench_client/perf/decode_reference.py --client-json "$OUT/serve-gpu0.json" --out "$OUT/reference.json"
echo "rc=$?"

if [ "$NGPU" -ge 2 ]; then
  stage "llm-decode-tp: Llama 3 70B, tensor parallel over 1, 2, ... $NGPU GPUs (NCCL)"
  timeout -k 10 "$(allow 200 60)" $B run "${CPU[@]}" --all-devices --workloads llm-decode-tp "${SERVE_TP[@]}" --out "$OUT/tp.json"
  echo "rc=$?"
  [ -e "$OUT/tp.json" ] && mv "$OUT/tp.json" "$OUT/tp-host.json"  # the CPU test writes one file
  stage "allreduce-busbw and transformer-train-ddp over all $NGPU GPUs"
  timeout -k 10 "$(allow 120 0)" $B run "${CPU[@]}" --all-devices --workloads allreduce-busbw transformer-train-ddp --out "$OUT/multigpu.json"
  echo "rc=$?"
  [ -e "$OUT/multigpu.json" ] && mv "$OUT/multigpu.json" "$OUT/multigpu-host.json"
else
  stage "llm-decode-tp at TP1 on device 0: Llama 3 70B fp8 (bf16 does not fit one GPU)"
  timeout -k 10 "$(allow 150 0)" $B run "${CPU[@]}" --device 0 --workloads llm-decode-tp "${SERVE_TP[@]}" --out "$OUT/tp-host.json"
  echo "rc=$?"
fi

if [ "$SWEEP" != short ] && [ $(( BUDGET - $(elapsed) )) -ge 90 ]; then
  stage "llm-decode prefill and the 128-token decode graph on device 0 (batch 1 and 128)"
  timeout -k 10 "$(allow 150 0)" $B run "${CPU[@]}" --device 0 --quick --workloads llm-decode --llm-phases prefill decode --out "$OUT/phases-gpu0.json"
  echo "rc=$?"
fi

stage "validate"
for file in "$OUT"/serve-gpu0.json "$OUT"/tp-host.json "$OUT"/multigpu-host.json "$OUT"/phases-gpu0.json; do
  [ -e "$file" ] && $B validate "$file"
done
stage "done in $(elapsed) s"
python3 bench_client/perf/serving_summary.py "$OUT" | tee "$OUT/summary.txt"
