#!/usr/bin/env bash
# Run 75: bench/coloc decode+ResNet-50, native MPS against slo-aware capped at three quarters of the SMs without an SLO (NO_SLO_TOP 1; runs 59-73 had half).
set -u
out=${OUT:-/tmp/ds-out}; mkdir -p "$out"
export PATH=/opt/torch/.venv/bin:$PATH PYTHONUNBUFFERED=1
mkdir -p /work; ln -sfn "$PWD" /work/main; cd /work/main
export LD_LIBRARY_PATH="$PWD/.dev/libs"
COMMIT=${COMMIT:-unknown} SECS=20 REPEATS=1 PAIRS="decode+resnet" MODES="native-mps slo-aware" OUT=$out BUILD=build-gpu timeout 500 bash bench/coloc/run.sh > $out/coloc.txt 2>&1
echo "coloc exit $?" >> $out/coloc.txt
tail -22 $out/coloc.txt
