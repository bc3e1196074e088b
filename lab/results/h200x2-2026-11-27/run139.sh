#!/usr/bin/env bash
# Run 139, a two-GPU box: our NVML now shows every device of a tenant of several
# servers (it showed one: torch.cuda.can_device_access_peer(0, 1) failed and NCCL with
# one rank a process stopped, run 137).  bench/multigpu again (NCCL's transports both
# ways; ddp again with NCCL_P2P_DISABLE=1 if it fails), gpu_jax_solve, and gpu_nvml_multi
# with the servers on the two GPUs.
set -u
out=${OUT:-/tmp/ds-out}; mkdir -p "$out"
mkdir -p /work; ln -sfn "$PWD" /work/main; cd /work/main; [ -e build-gpu ] || ln -s .dev/build-gpu build-gpu
export LD_LIBRARY_PATH="$PWD/.dev/libs"
t=$(mktemp -d)
{ date -u; nvidia-smi -L; cat build-gpu/COMMIT; } > "$out/device.txt" 2>&1
BUILD=build-gpu OUT=$t/multigpu timeout 150 bash bench/multigpu/run.sh > "$t/multigpu.out" 2>&1
grep -q "^ddp    detshare exit 0" "$t/multigpu/multigpu.txt" ||
    NCCL_P2P_DISABLE=1 BUILD=build-gpu OUT=$t/multigpu-nop2p timeout 60 bash bench/multigpu/run.sh ddp > "$t/multigpu-nop2p.out" 2>&1
{
  [ -x /opt/torch/.venv/bin/python3 ] && export PATH="/opt/torch/.venv/bin:$PATH"
  timeout 100 bash tests/test_jax_solve.sh build-gpu; echo "gpu_jax_solve: exit $?"
  for s in nvml_multi; do
    DS_TEST_GPU_PAIR=1 DS_TEST_DEVICE=cuda timeout 150 ./build-gpu/tests/test_$s --jobs 1 > "$t/gpu-$s.log" 2>&1
    echo "gpu test $s (pair): exit $? $(grep -a 'Synthesis' "$t/gpu-$s.log" | tail -1)"
    grep -a -v "^  server" "$t/gpu-$s.log" | grep -a -B2 -A10 "Assertion\|FAIL\|CRASH" | head -24
  done
} > "$out/checks.txt" 2>&1
tar czf "$out/multigpu.tgz" -C "$t" $(cd "$t" && ls -d multigpu*)
cat "$t/multigpu.out" | tail -12; tail -4 "$t/multigpu-nop2p.out" 2>/dev/null; cat "$out/checks.txt"
