#!/usr/bin/env bash
# Run 135: gpu_multiserver after cross-device waits (protocol 25: interprocess shadow
# events between two servers' executors, both on GPU 0 with --mps off); the training
# pairs alone and time-sliced with the queueing columns (eval-cuda-host: train-small's
# last cell, train-compute); scale's cells left.
set -u
out=${OUT:-/tmp/ds-out}; mkdir -p "$out"
mkdir -p /work; ln -sfn "$PWD" /work/main; cd /work/main; [ -e build-gpu ] || ln -s .dev/build-gpu build-gpu
export LD_LIBRARY_PATH="$PWD/.dev/libs"
t=$(mktemp -d)
{
  DS_TEST_DEVICE=cuda timeout 150 ./build-gpu/tests/test_multiserver --jobs 1 > "$t/gpu-multiserver.log" 2>&1
  echo "gpu test multiserver: exit $? $(grep -a 'Synthesis' "$t/gpu-multiserver.log" | tail -1)"
  grep -a -v "^  server" "$t/gpu-multiserver.log" | grep -a -B2 -A10 "Assertion\|FAIL" | head -40
  grep -a "wait for another device\|on the host" "$t/gpu-multiserver.log" | sort | uniq -c | head
} > "$out/checks.txt" 2>&1
RESULTS=lab/results/eval-cuda-host BUDGET=230 LIMIT=290 OUT=$t/host \
    bash bench/eval/gpu-run.sh --quick --calibrate --repeats 2 --modes native-timesliced,detshare-shared train-small train-compute > "$t/host.txt" 2>&1
tar czf "$out/host.tgz" -C "$t" host host.txt
RESULTS=lab/results/eval-cuda-quick BUDGET=${B:-140} LIMIT=200 OUT=$t/scale \
    bash bench/eval/gpu-run.sh --quick --calibrate scale > "$t/scale.txt" 2>&1
tar czf "$out/scale.tgz" -C "$t" scale scale.txt
cat "$out/checks.txt"; tail -6 "$t/host.txt"; tail -4 "$t/scale.txt"
