#!/usr/bin/env bash
# Run 137, a two-GPU box, after run 136: cudart's integrity message had room for one
# device, so every CUDA runtime program of a two-server tenant crashed (fixed).
# bench/multigpu (a tensor to the other device, the peer copy rate, NCCL in one process
# and under torchrun) natively and through two servers; examples/two_devices natively and
# through them; copy_ratio.sh's striped column (tcp4: executor threads per connection).
set -u
out=${OUT:-/tmp/ds-out}; mkdir -p "$out"
mkdir -p /work; ln -sfn "$PWD" /work/main; cd /work/main; [ -e build-gpu ] || ln -s .dev/build-gpu build-gpu
export LD_LIBRARY_PATH="$PWD/.dev/libs"
t=$(mktemp -d)
{ date -u; nvidia-smi -L; cat build-gpu/COMMIT; } > "$out/device.txt" 2>&1
BUILD=build-gpu OUT=$t/multigpu timeout 300 bash bench/multigpu/run.sh > "$t/multigpu.out" 2>&1
{
  ./build-gpu/server/detshare-server --device cuda --gpu 0 --mps-dir "$t/m0" --listen "unix:$t/a" 2> "$t/a.log" &
  ./build-gpu/server/detshare-server --device cuda --gpu 1 --mps-dir "$t/m1" --listen "unix:$t/b" 2> "$t/b.log" &
  for _ in $(seq 400); do [ -S "$t/a" ] && [ -S "$t/b" ] && break; sleep 0.05; done
  for x in two_devices two_devices_shared; do
    echo "== $x native"; LD_LIBRARY_PATH=/usr/local/cuda/lib64:$LD_LIBRARY_PATH timeout 60 ./build-gpu/examples/$x; echo "exit $?"
    echo "== $x detshare"; DETSHARE_SERVER=unix:$t/a,unix:$t/b LD_LIBRARY_PATH=$PWD/build-gpu/client:/usr/local/cuda/lib64:$LD_LIBRARY_PATH timeout 60 ./build-gpu/examples/$x; echo "exit $?"
  done
  kill -TERM %1 %2; wait
} > "$out/two_devices.txt" 2>&1
BUILD=build-gpu timeout 150 bash bench/overhead/copy_ratio.sh > "$out/copy_ratio.txt" 2>&1
tar czf "$out/multigpu.tgz" -C "$t" multigpu multigpu.out
cat "$t/multigpu.out" | tail -12; cat "$out/two_devices.txt" | tail -30; tail -12 "$out/copy_ratio.txt"
