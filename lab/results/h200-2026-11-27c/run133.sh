#!/usr/bin/env bash
# Run 133: capture_hostfn's forked case (the fork now after captured work); TCP copy rates
# with DETSHARE_TCP_STREAMS=4 against one connection (bench/overhead/copy_ratio.sh);
# train-small alone and time-sliced with the new queueing/CPU columns (a results folder
# of its own, 2 repeats); then the scale experiment's first quick cells.
set -u
out=${OUT:-/tmp/ds-out}; mkdir -p "$out"
mkdir -p /work; ln -sfn "$PWD" /work/main; cd /work/main; [ -e build-gpu ] || ln -s .dev/build-gpu build-gpu
export LD_LIBRARY_PATH="$PWD/.dev/libs"
t=$(mktemp -d)
{
  for s in capture_hostfn; do
    DS_TEST_DEVICE=cuda timeout 120 ./build-gpu/tests/test_$s --jobs 1 > "$t/gpu-$s.log" 2>&1
    echo "gpu test $s: exit $? $(grep -a 'Synthesis' "$t/gpu-$s.log" | tail -1)"
    grep -a -v "^  server" "$t/gpu-$s.log" | grep -a -B2 -A14 "Assertion\|FAIL" | head -30
  done
  for n in 1 4; do
    echo "== DETSHARE_TCP_STREAMS=$n"
    DETSHARE_TCP_STREAMS=$n BUILD=build-gpu timeout 130 bash bench/overhead/copy_ratio.sh 2>&1 | tail -12
  done
} > "$out/checks.txt" 2>&1
RESULTS=lab/results/eval-cuda-host BUDGET=100 LIMIT=170 OUT=$t/host \
    bash bench/eval/gpu-run.sh --quick --calibrate --repeats 2 --modes native-timesliced train-small > "$t/host.txt" 2>&1
tar czf "$out/host.tgz" -C "$t" host host.txt
RESULTS=lab/results/eval-cuda-quick BUDGET=150 LIMIT=220 OUT=$t/scale \
    bash bench/eval/gpu-run.sh --quick --calibrate scale > "$t/scale.txt" 2>&1
tar czf "$out/scale.tgz" -C "$t" scale scale.txt
cat "$out/checks.txt"; tail -12 "$t/host.txt"; tail -12 "$t/scale.txt"
