#!/usr/bin/env bash
# Run 104: a second repeat of run 103's decode+GPT-2 part (run 103's 450 s ran out during
# its decode+ResNet-50 pair under slo-aware), then decode+ResNet-50 as far as 560 s go.
# PAIRS=... overrides.
set -u
out=${OUT:-/tmp/ds-out}; mkdir -p "$out"
mkdir -p /work; ln -sfn "$PWD" /work/main; cd /work/main
export LD_LIBRARY_PATH="$PWD/.dev/libs" PATH=/opt/torch/.venv/bin:$PATH
BUILD=build-gpu OUT=$out SECS=20 REPEATS=1 PAIRS="${PAIRS:-decode+gpt2}" MODES="native-mps slo-aware" \
  COMMIT=${COMMIT:-unknown} timeout 560 bash bench/coloc/run.sh > $out/coloc.txt 2>&1
tail -30 $out/coloc.txt
