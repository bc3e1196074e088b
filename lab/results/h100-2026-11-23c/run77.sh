#!/usr/bin/env bash
# Run 77: gatemodes-check.sh (host gates against gates relayed by a resident control
# kernel), the GPU suites of the last night's and this morning's commits (faults, waits,
# device output, throttle, crowd), and the failing-assert probe (run 76's).  Run 80 has
# the suites of the three breadth branches merged this morning.
set -u
out=${OUT:-/tmp/ds-out}; mkdir -p "$out"
mkdir -p /work; ln -sfn "$PWD" /work/main; cd /work/main
export LD_LIBRARY_PATH="$PWD/.dev/libs" PATH=/opt/torch/.venv/bin:$PATH
r=$out/r77.txt
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader; } > $r
start=$(date +%s)
OUT=$out timeout 200 bash bench/sharing/gatemodes-check.sh > $out/gatemodes.txt 2>&1; echo "gatemodes exit $?" >> $r
for t in ${SUITES:-fault waits devout graph_events gate throttle crowd}; do
  [ $(( $(date +%s) - start )) -gt 420 ] && { echo "gpu test $t: not run (time)" >> $r; continue; }
  t0=$(date +%s)
  DS_TEST_DEVICE=cuda timeout 120 ./build-gpu/tests/test_$t --jobs 1 > "$out/gpu-$t.log" 2>&1; rc=$?
  echo "gpu test $t: exit $rc, $(( $(date +%s) - t0 )) s, $(grep -a Synthesis "$out/gpu-$t.log" | cut -c14-)" >> $r
  [ $rc = 0 ] && rm -f "$out/gpu-$t.log"
done
gcc -O2 -o .dev/assertprobe .dev/assertprobe.c -I/usr/local/cuda/include -L/usr/local/cuda/lib64/stubs -lcuda &&
  OUT=$out timeout 150 bash lab/results/h100-2026-11-23b/run76.sh > /dev/null 2>&1
cat $out/r76.txt >> $r 2>/dev/null
echo "done at $(( $(date +%s) - start )) s" >> $r
cd "$out" && tar czf logs77.tgz --remove-files $(ls | grep -E "\.log$|\.err$") 2>/dev/null
cat $r
