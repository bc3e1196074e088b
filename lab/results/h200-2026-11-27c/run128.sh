#!/usr/bin/env bash
# Run 128: bench/eval on the GPU: the rest of infer's quick cells with the SM-floor
# slo-aware (lab/results/eval-cuda-quick-floor), then the first calibrated cells of llm
# and determinism (lab/results/eval-cuda-quick).  Each part's outputs tarred into $OUT.
set -u
out=${OUT:-/tmp/ds-out}; mkdir -p "$out"
t=$(mktemp -d)
RESULTS=lab/results/eval-cuda-quick-floor BUDGET=${B1:-110} LIMIT=${L1:-190} OUT=$t/floor \
    bash bench/eval/gpu-run.sh --quick --calibrate infer > "$t/floor.txt" 2>&1
tar czf "$out/floor.tgz" -C "$t" floor floor.txt
RESULTS=lab/results/eval-cuda-quick BUDGET=${B2:-290} LIMIT=${L2:-360} OUT=$t/llm \
    bash bench/eval/gpu-run.sh --quick --calibrate llm determinism > "$t/llm.txt" 2>&1
tar czf "$out/llm.tgz" -C "$t" llm llm.txt
tail -5 "$t/floor.txt"; tail -45 "$t/llm.txt"
