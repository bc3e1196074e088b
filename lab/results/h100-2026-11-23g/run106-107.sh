#!/usr/bin/env bash
# Runs 106 and 107, as they were given to the device one after the other (each its own
# command there; run 106 with OUT=$OUT/r).
# Run 106: issue 9's bursty scenario, slo-aware against tpot-first, one repeat of 20 s.
# Run 107: ResNet-50 with cudnn.benchmark, with and without cudnn.deterministic, each run
# natively twice and once through detshare (programs.py resnetdet and resnet).
set -u
out=${OUT:-/tmp/ds-out}; mkdir -p "$out"
mkdir -p /work; ln -sfn "$PWD" /work/main; cd /work/main
export LD_LIBRARY_PATH="$PWD/.dev/libs" PATH=/opt/torch/.venv/bin:$PATH
BUILD=build-gpu OUT=$out/r SECS=20 REPEATS=1 PAIRS="decode+prefill" MODES="slo-aware tpot-first" \
  COMMIT=${COMMIT:-unknown} timeout 470 bash bench/coloc/run.sh > $out/run106.txt 2>&1
BUILD=build-gpu OUT=$out WHAT="resnetdet resnet" COMMIT=${COMMIT:-unknown} timeout 280 \
  bash bench/breadth/run.sh > $out/run107.txt 2>&1
