#!/usr/bin/env bash
# Run 138: the gpu suites the session's merges touched, after the last fixes: nvml_smi
# (plain nvidia-smi's exit status), capture_hostfn (the cases that match CUDA), runtime
# (two_devices through two servers on one GPU), tcp (executor threads per data
# connection; a striped copy into a failed context), policy_lib (SLOs in microseconds,
# policy ABI 4 and 3), multiserver (cross-device plain copies).
set -u
out=${OUT:-/tmp/ds-out}; mkdir -p "$out"
mkdir -p /work; ln -sfn "$PWD" /work/main; cd /work/main; [ -e build-gpu ] || ln -s .dev/build-gpu build-gpu
export LD_LIBRARY_PATH="$PWD/.dev/libs"
t=$(mktemp -d)
{ date -u; nvidia-smi -L; cat build-gpu/COMMIT; } > "$out/device.txt" 2>&1
for s in nvml_smi capture_hostfn runtime tcp policy_lib multiserver; do
  DS_TEST_DEVICE=cuda timeout 150 ./build-gpu/tests/test_$s --jobs 1 > "$t/gpu-$s.log" 2>&1
  echo "gpu test $s: exit $? $(grep -a 'Synthesis' "$t/gpu-$s.log" | tail -1)"
  grep -a -v "^  server" "$t/gpu-$s.log" | grep -a -B2 -A10 "Assertion\|FAIL\|CRASH" | head -24
done > "$out/checks.txt" 2>&1
cat "$out/checks.txt"
