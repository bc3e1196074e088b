#!/usr/bin/env bash
# Run 74: gpu_devout with an executor that does not synchronise on passed fences (device output's print_out made a no-op): does the device-assert test still hang?
set -u
out=${OUT:-/tmp/ds-out}; mkdir -p "$out"
mkdir -p /work; ln -sfn "$PWD" /work/main; cd /work/main
export LD_LIBRARY_PATH="$PWD/.dev/libs"
cp .dev/exp/detshare-server-noprint build-gpu/server/detshare-server
r=$out/r74.txt; date -u > $r
t0=$(date +%s)
DS_TEST_DEVICE=cuda timeout 40 ./build-gpu/tests/test_devout --jobs 1 --filter 'devout/a_failed_device_assert*' > $out/devout.log 2>&1
echo "devout (no print_out) exit $?, $(( $(date +%s) - t0 )) s: $(grep -a Synthesis $out/devout.log)" >> $r
grep -a "FAIL\|Assert" $out/devout.log | head -10 >> $r
cat $r
