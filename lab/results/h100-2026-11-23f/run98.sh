#!/usr/bin/env bash
# Run 98: gatemodes with `stamp` loaded before the resident kernel and gaps counted against
# half a period (relay measured at last?), then bench/coloc's first pair under every mode.
set -u
out=${OUT:-/tmp/ds-out}; mkdir -p "$out"
mkdir -p /work; ln -sfn "$PWD" /work/main; cd /work/main
export LD_LIBRARY_PATH="$PWD/.dev/libs" PATH=/opt/torch/.venv/bin:$PATH
OUT=$out ROUNDS=1 KERNELS=50000 timeout 200 bash bench/sharing/gatemodes-check.sh > $out/gatemodes.txt 2>&1
echo "gatemodes exit $?"; sort -u $out/gatemodes/results.jsonl; tail -8 $out/gatemodes/progress.log
mv $out/gatemodes/results.jsonl $out/gatemodes-results.jsonl; mv $out/gatemodes/progress.log $out/gatemodes-progress.log; rm -rf $out/gatemodes
PAIR=${PAIR:-decode+resnet}
BUILD=build-gpu OUT=$out SECS=${SECS:-10} REPEATS=1 PAIRS="$PAIR" COMMIT=${COMMIT:-unknown} \
  timeout ${LEFT:-380} bash bench/coloc/run.sh > $out/coloc.txt 2>&1; echo "coloc exit $?"
tail -30 $out/coloc.txt
