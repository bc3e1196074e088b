#!/usr/bin/env bash
# Run 94: what moves cost now that a tenant giving SMs up waits for its context
# (mechanism-check.sh's moves, gate and fault parts), then gatemodes-check.sh once with
# fewer kernels and its new progress log and offset-free gap figures.
set -u
out=${OUT:-/tmp/ds-out}; mkdir -p "$out"
mkdir -p /work; ln -sfn "$PWD" /work/main; cd /work/main
export LD_LIBRARY_PATH="$PWD/.dev/libs" PATH=/opt/torch/.venv/bin:$PATH
OUT=$out timeout 320 bash bench/sharing/mechanism-check.sh > $out/mechanism.txt 2>&1; echo "mechanism exit $?"
tail -30 $out/mechanism.txt
OUT=$out ROUNDS=1 KERNELS=50000 timeout 240 bash bench/sharing/gatemodes-check.sh > $out/gatemodes.txt 2>&1; echo "gatemodes exit $?"
cat $out/gatemodes/results.jsonl; tail -20 $out/gatemodes/progress.log
