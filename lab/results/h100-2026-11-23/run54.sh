#!/usr/bin/env bash
# Every gpu-labelled suite after the merges of 2026-11-23 (held calls, pools, metrics, quotas, policies).
set -u
out=${OUT:-/tmp/ds-out}; mkdir -p "$out"
mkdir -p /work; ln -sfn "$PWD" /work/main; cd /work/main
export LD_LIBRARY_PATH="$PWD/.dev/libs" PATH=/opt/torch/.venv/bin:$PATH
r=$out/r54.txt
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader; git log --oneline -1 2>/dev/null; } > $r
start=$(date +%s)
for t in ${SUITES:-gate pool quota metrics admin policy predictor partition launch graph stream waits fastpath memcpy hostfn threads ipc vmm tensormap device context isolation hostile hostmem policy_lib}; do
  [ $(( $(date +%s) - start )) -gt 520 ] && { echo "gpu test $t: not run (time)" >> $r; continue; }
  t0=$(date +%s)
  DS_TEST_DEVICE=cuda timeout 150 ./build-gpu/tests/test_$t --jobs 1 > "$out/gpu-$t.log" 2>&1; rc=$?
  echo "gpu test $t: exit $rc, $(( $(date +%s) - t0 )) s, $(grep -a Synthesis "$out/gpu-$t.log" | cut -c14-)" >> $r
  [ $rc = 0 ] && rm -f "$out/gpu-$t.log"
done
cd "$out" && ls gpu-*.log > /dev/null 2>&1 && tar czf failing-logs.tar.gz gpu-*.log && rm -f gpu-*.log
cat $r
