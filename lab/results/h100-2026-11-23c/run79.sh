#!/usr/bin/env bash
# Run 79: issue 9's bursty LLM scenario (decode+prefill): native MPS, slo-aware with the
# decoder's SLO, tpot-first.
set -u
out=${OUT:-/tmp/ds-out}; mkdir -p "$out"
mkdir -p /work; ln -sfn "$PWD" /work/main; cd /work/main
export LD_LIBRARY_PATH="$PWD/.dev/libs" PATH=/opt/torch/.venv/bin:$PATH
BUILD=build-gpu OUT=$out SECS=${SECS:-20} PAIRS="decode+prefill" \
  MODES="native-mps slo-aware tpot-first" COMMIT=${COMMIT:-unknown} timeout 570 bash bench/coloc/run.sh > $out/r79.txt 2>&1
tail -30 $out/r79.txt
