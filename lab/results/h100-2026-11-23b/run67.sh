#!/usr/bin/env bash
# Run 67: the fault handling (gpu_fault, waits, gate suites) and mechanism-check's gate and fault parts.
set -u
out=${OUT:-/tmp/ds-out}; mkdir -p "$out"
mkdir -p /work; ln -sfn "$PWD" /work/main; cd /work/main
export LD_LIBRARY_PATH="$PWD/.dev/libs" PATH=/opt/torch/.venv/bin:$PATH
r=$out/r67.txt; date -u > $r
for t in fault waits gate; do
  t0=$(date +%s)
  DS_TEST_DEVICE=cuda timeout 150 ./build-gpu/tests/test_$t --jobs 1 > "$out/gpu-$t.log" 2>&1; rc=$?
  echo "gpu test $t: exit $rc, $(( $(date +%s) - t0 )) s, $(grep -a Synthesis "$out/gpu-$t.log" | cut -c14-)" >> $r
  [ $rc = 0 ] && rm -f "$out/gpu-$t.log"
done
OUT=$out PARTS="gate fault" TENANT_LIMIT=60 timeout 200 bash bench/sharing/mechanism-check.sh > $out/mech.txt 2>&1
echo "mechanism exit $?" >> $r
cat $r; tail -30 $out/mech.txt
