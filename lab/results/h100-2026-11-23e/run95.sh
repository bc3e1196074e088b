#!/usr/bin/env bash
# Run 95: decode beside GPT-2 training, slo-aware against native MPS, 2 repeats of 15 s
# (issue 9's second decode pair, not run since the decoder's warm-up request).
set -u
out=${OUT:-/tmp/ds-out}; mkdir -p "$out"
mkdir -p /work; ln -sfn "$PWD" /work/main; cd /work/main
export LD_LIBRARY_PATH="$PWD/.dev/libs" PATH=/opt/torch/.venv/bin:$PATH
BUILD=build-gpu OUT=$out SECS=15 REPEATS=2 PAIRS="decode+gpt2" MODES="native-mps slo-aware" \
  COMMIT=${COMMIT:-unknown} timeout 585 bash bench/coloc/run.sh > $out/r95.txt 2>&1
tail -25 $out/r95.txt
