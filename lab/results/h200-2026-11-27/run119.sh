#!/usr/bin/env bash
# Run 119 (prepared, not run: this session's device time was spent): what this session
# changed after its last GPU run, or never ran on a GPU.
#  - gpu suites: launch_checks and launch (the two cases fixed after run 117), handover
#    (an executor that does not take its tenant; the hello deadline), nvml, pool_quota
#    and escape (each failed one test in run 117), fault;
#  - bench/fault/blast.sh after cc73e28 (the first tenant after a fault must succeed at
#    its first try: recovery_tries 1 in every row);
#  - bench/compat/nvml-check.sh (nvidia-smi inside a tenant).
# Needs a build-gpu with those test binaries: build it here, then copy what the run uses
# into .dev/build-gpu as run117.sh's note says (a whole build-gpu is over the 64 MiB a
# call carries), including tests/nvml_probe and build-gpu/client/libnvidia-ml.so.1.
set -u
out=${OUT:-/tmp/ds-out}; mkdir -p "$out"
mkdir -p /work; ln -sfn "$PWD" /work/main; cd /work/main; [ -e build-gpu ] || ln -s .dev/build-gpu build-gpu
export LD_LIBRARY_PATH="$PWD/.dev/libs"
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader; } > "$out/device.txt" 2>&1
t=$(mktemp -d)
nvcc -arch=sm_90 -O2 -o "$t/faultprobe" bench/fault/faultprobe.cu -lcuda
OUT=$out timeout 200 bash bench/fault/blast.sh "$t/faultprobe" build-gpu 2 4 > /dev/null 2>&1
echo "blast: exit $?" >> "$out/device.txt"
for s in launch_checks launch handover nvml pool_quota escape fault; do
    DS_TEST_DEVICE=cuda timeout 60 ./build-gpu/tests/test_$s --jobs 1 > "$t/gpu-$s.log" 2>&1
    echo "gpu test $s: exit $? $(grep -a 'Synthesis' "$t/gpu-$s.log" | tail -1)" >> "$out/device.txt"
    grep -a -v "^  server" "$t/gpu-$s.log" | grep -a -B2 -A8 "Assertion\|FAIL" | head -40 >> "$out/gpu-suites.txt"
done
OUT=$t/nvml BUILD=build-gpu timeout 120 bash bench/compat/nvml-check.sh > /dev/null 2>&1
echo "nvml-check: exit $?" >> "$out/device.txt"
tar czf "$out/run119-raw.tgz" -C "$t" --exclude=faultprobe . 2>/dev/null
cat "$out/device.txt" "$t/nvml/summary.txt" 2>/dev/null
