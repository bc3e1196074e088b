#!/usr/bin/env bash
# bench/overhead run H: after held calls, progress stamps (one cuStreamWriteValue32 per launch) and per-call metrics counters.
set -u
out=${OUT:-/tmp/ds-out}; mkdir -p "$out"
export PATH=/opt/torch/.venv/bin:$PATH PYTHONUNBUFFERED=1
mkdir -p /work; ln -sfn "$PWD" /work/main; cd /work/main
export LD_LIBRARY_PATH="$PWD/.dev/libs"
OUT=$out BUILD=build-gpu TORCH_CAP=60 timeout 570 bash bench/overhead/run.sh > $out/bench.txt 2>&1
echo "bench exit $?"; tail -45 $out/bench.txt
