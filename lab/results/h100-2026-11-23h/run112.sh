#!/usr/bin/env bash
# Run 112 (prepared, not run: this session's device time was spent): why jobs run faster
# alone through detshare than natively (1.09-1.23x in runs 103-110, native always first).
# Each job alone natively, under native MPS, and through detshare, two repeats, the
# second in the opposite order (bench/coloc/run.sh); no pairs (MODES=" ").  If
# alone-native-mps matches alone-detshare, MPS is the cause; if the even repeat flips the
# ratio, the order is; if neither, the launch work detshare moves off the program's own
# thread into the executor is the candidate left.
set -u
out=${OUT:-/tmp/ds-out}; mkdir -p "$out"
mkdir -p /work; ln -sfn "$PWD" /work/main; cd /work/main
export LD_LIBRARY_PATH="$PWD/.dev/libs" PATH=/opt/torch/.venv/bin:$PATH
BUILD=build-gpu OUT=$out SECS=15 REPEATS=2 ALONE_MPS=1 PAIRS="decode+resnet" MODES=" " \
  COMMIT=${COMMIT:-unknown} timeout 560 bash bench/coloc/run.sh > $out/coloc.txt 2>&1
tail -14 $out/coloc.txt
