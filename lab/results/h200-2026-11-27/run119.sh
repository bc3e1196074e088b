#!/usr/bin/env bash
# Run 119: what last session changed after its last GPU run, or never ran on a GPU, and
# the native facts two fixes need.
#  - bench/compat/driver_facts.c natively: CONTEXT_IDENTITY's answer per kind (JAX asks a
#    kind other than 0) and a pool's reserve per allocation size (gpu_pool_quota failed);
#  - gpu suites: launch_checks and launch (the two cases fixed after run 117), handover
#    (never on a GPU), nvml, pool_quota, escape (its wait for the share is fixed), fault;
#  - bench/compat/nvml-check.sh (nvidia-smi inside a tenant).
# Carries a slim build in .dev/build-gpu (the whole build-gpu is over 64 MiB).
set -u
out=${OUT:-/tmp/ds-out}; mkdir -p "$out"
mkdir -p /work; ln -sfn "$PWD" /work/main; cd /work/main; [ -e build-gpu ] || ln -s .dev/build-gpu build-gpu
export LD_LIBRARY_PATH="$PWD/.dev/libs"
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader; } > "$out/device.txt" 2>&1
t=$(mktemp -d)
gcc -std=c11 -O2 -o "$t/driver_facts" bench/compat/driver_facts.c -I/usr/local/cuda/include -lcuda \
  && timeout 60 "$t/driver_facts" > "$out/driver-facts.jsonl" 2>&1
echo "driver_facts: exit $?" >> "$out/device.txt"
for s in launch_checks launch handover nvml pool_quota escape fault; do
    DS_TEST_DEVICE=cuda timeout 90 ./build-gpu/tests/test_$s --jobs 1 > "$t/gpu-$s.log" 2>&1
    echo "gpu test $s: exit $? $(grep -a 'Synthesis' "$t/gpu-$s.log" | tail -1)" >> "$out/device.txt"
    grep -a -v "^  server" "$t/gpu-$s.log" | grep -a -B2 -A8 "Assertion\|FAIL\|on the GPU" | head -40 >> "$out/gpu-suites.txt"
done
OUT=$t/nvml BUILD=build-gpu timeout 120 bash bench/compat/nvml-check.sh > "$t/nvml-check.out" 2>&1
echo "nvml-check: exit $?" >> "$out/device.txt"
cp "$t/nvml/summary.txt" "$out/nvml-summary.txt" 2>/dev/null
tar czf "$out/run119-raw.tgz" -C "$t" --exclude=driver_facts . 2>/dev/null
cat "$out/device.txt" "$t/nvml/summary.txt" 2>/dev/null; tail -5 "$t/nvml-check.out"
