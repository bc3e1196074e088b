#!/usr/bin/env bash
# Runs 72-73: bench/coloc decode+ResNet-50 under native MPS, shared and slo-aware, one repeat per device call (joined by report.py).
set -u
out=${OUT:-/tmp/ds-out}; mkdir -p "$out"
export PATH=/opt/torch/.venv/bin:$PATH PYTHONUNBUFFERED=1
mkdir -p /work; ln -sfn "$PWD" /work/main; cd /work/main
export LD_LIBRARY_PATH="$PWD/.dev/libs"
SECS=20 REPEATS=1 PAIRS="decode+resnet" MODES="native-mps shared slo-aware" OUT=$out BUILD=build-gpu timeout 560 bash bench/coloc/run.sh > $out/coloc.txt 2>&1
echo "coloc exit $?" >> $out/coloc.txt
tail -25 $out/coloc.txt
