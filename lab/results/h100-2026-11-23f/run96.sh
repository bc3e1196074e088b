#!/usr/bin/env bash
# Run 96: moves that reuse parked streams and contexts made ahead (02314b9): GPU suites
# around moves, mechanism-check's moves and gate under MPS and its fault part with
# --mps off, then the determinism check (moves every 20 ms) again.
set -u
out=${OUT:-/tmp/ds-out}; mkdir -p "$out"
mkdir -p /work; ln -sfn "$PWD" /work/main; cd /work/main
export LD_LIBRARY_PATH="$PWD/.dev/libs" PATH=/opt/torch/.venv/bin:$PATH
r=$out/r96.txt; { date -u; nvidia-smi -L; } > $r
start=$(date +%s)
for t in partition policy gate stream launch graph fastpath context devout fault isolation; do
  t0=$(date +%s)
  DS_TEST_DEVICE=cuda timeout 100 ./build-gpu/tests/test_$t --jobs 1 > "$out/gpu-$t.log" 2>&1; rc=$?
  echo "gpu test $t: exit $rc, $(( $(date +%s) - t0 )) s, $(grep -a Synthesis "$out/gpu-$t.log" | cut -c14-)" >> $r
  [ $rc = 0 ] && rm -f "$out/gpu-$t.log"
done
echo "suites done at $(( $(date +%s) - start )) s" >> $r
OUT=$out PARTS="moves gate" timeout 200 bash bench/sharing/mechanism-check.sh > $out/mechanism.txt 2>&1
echo "mechanism (mps start) exit $?" >> $r
mv $out/mechanism $out/mechanism-mps
OUT=$out PARTS=fault MPS=off timeout 100 bash bench/sharing/mechanism-check.sh > $out/fault-off.txt 2>&1
echo "mechanism fault (mps off) exit $?" >> $r
mv $out/mechanism $out/mechanism-fault-off
echo "mechanism done at $(( $(date +%s) - start )) s" >> $r
left=$(( 570 - ($(date +%s) - start) ))
OUT=$out TRIALS=100 timeout $left bash bench/sharing/determinism-check.sh > $out/determinism.txt 2>&1
echo "determinism exit $? at $(( $(date +%s) - start )) s" >> $r
cat $r; tail -12 $out/mechanism.txt; tail -25 $out/fault-off.txt; tail -15 $out/determinism.txt
