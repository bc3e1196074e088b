#!/usr/bin/env bash
# Run 136, a two-GPU box: issue 26's first checks across two real GPUs.  gpu_multiserver
# with the servers on GPUs 0 and 1, each with its MPS daemon (DS_TEST_GPU_PAIR: waits
# through interprocess events and peer copies across two daemons), then both on GPU 0
# (the cross-device copies' GPU variants); capture_hostfn with its cases in order;
# bench/multigpu: a tensor to the other device, the peer copy rate, NCCL in one process
# and under torchrun, natively and as a tenant of two servers.
set -u
out=${OUT:-/tmp/ds-out}; mkdir -p "$out"
mkdir -p /work; ln -sfn "$PWD" /work/main; cd /work/main; [ -e build-gpu ] || ln -s .dev/build-gpu build-gpu
export LD_LIBRARY_PATH="$PWD/.dev/libs"
t=$(mktemp -d)
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader; nvidia-smi topo -m; cat build-gpu/COMMIT; } > "$out/device.txt" 2>&1
{
  for pair in 1 ""; do
    DS_TEST_GPU_PAIR=$pair DS_TEST_DEVICE=cuda timeout 170 ./build-gpu/tests/test_multiserver --jobs 1 > "$t/gpu-multiserver-$pair.log" 2>&1
    echo "gpu test multiserver (pair '$pair'): exit $? $(grep -a 'Synthesis' "$t/gpu-multiserver-$pair.log" | tail -1)"
    grep -a -v "^  server" "$t/gpu-multiserver-$pair.log" | grep -a -B2 -A8 "Assertion\|FAIL" | head -40
    grep -a "wait for another device\|on the host" "$t/gpu-multiserver-$pair.log" | sed 's/^[0-9:.]* //' | sort | uniq -c | head -4
  done
  DS_TEST_DEVICE=cuda timeout 120 ./build-gpu/tests/test_capture_hostfn --jobs 1 > "$t/gpu-capture_hostfn.log" 2>&1
  echo "gpu test capture_hostfn: exit $? $(grep -a 'Synthesis' "$t/gpu-capture_hostfn.log" | tail -1)"
  grep -a "forked\|unrecorded\|Assertion" "$t/gpu-capture_hostfn.log" | head -12
} > "$out/checks.txt" 2>&1
BUILD=build-gpu OUT=$t/multigpu timeout 330 bash bench/multigpu/run.sh > "$t/multigpu.out" 2>&1
tar czf "$out/multigpu.tgz" -C "$t" multigpu multigpu.out gpu-multiserver-1.log
cat "$out/checks.txt"; cat "$t/multigpu.out" | tail -20
