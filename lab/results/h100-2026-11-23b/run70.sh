#!/usr/bin/env bash
# Run 70: gpu_tcp and the copy suites after the TCP merge; bench/overhead part 1 (driver micro in 3 rounds, start-up, idle, PyTorch small ops and copies in 3 rounds).
set -u
out=${OUT:-/tmp/ds-out}; mkdir -p "$out"
mkdir -p /work; ln -sfn "$PWD" /work/main; cd /work/main
export LD_LIBRARY_PATH="$PWD/.dev/libs" PATH=/opt/torch/.venv/bin:$PATH
SUITES="tcp memcpy isolation hostile" OUT=$out timeout 200 bash .dev/run54.sh > /dev/null 2>&1
cp $out/r54.txt $out/r70.txt
COMMIT=${COMMIT:-unknown} BUILD=build-gpu OUT=$out/ov PARTS="micro startup idle torch-micro" ROUNDS=3 TORCH_CAP=60 timeout 360 bash bench/overhead/run.sh > $out/ov.txt 2>&1
echo "overhead exit $?" >> $out/r70.txt
cat $out/r70.txt; grep -E "launch_async|copy_256m|add_|item|rtt|copy_4k" $out/ov/*.md
