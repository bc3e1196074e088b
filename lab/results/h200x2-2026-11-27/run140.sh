#!/usr/bin/env bash
# Run 140, a two-GPU box: after the primary-context tag fix (cudart ran "device 1" on
# device 0 in runs 137 and 139, so their two-device results were one-device results):
# examples/two_devices and bench/multigpu (to, p2pbw, ddp1, ddp) through two servers.
set -u
out=${OUT:-/tmp/ds-out}; mkdir -p "$out"
mkdir -p /work; ln -sfn "$PWD" /work/main; cd /work/main; [ -e build-gpu ] || ln -s .dev/build-gpu build-gpu
export LD_LIBRARY_PATH="$PWD/.dev/libs"
t=$(mktemp -d)
{ date -u; nvidia-smi -L; cat build-gpu/COMMIT; } > "$out/device.txt" 2>&1
{
  ./build-gpu/server/detshare-server --device cuda --gpu 0 --mps-dir "$t/m0" --listen "unix:$t/a" 2> "$t/a.log" &
  ./build-gpu/server/detshare-server --device cuda --gpu 1 --mps-dir "$t/m1" --listen "unix:$t/b" 2> "$t/b.log" &
  for _ in $(seq 400); do [ -S "$t/a" ] && [ -S "$t/b" ] && break; sleep 0.05; done
  echo "== native"; LD_LIBRARY_PATH=/usr/local/cuda/lib64:$LD_LIBRARY_PATH timeout 30 ./build-gpu/examples/two_devices_shared; echo "exit $?"
  echo "== detshare"; DETSHARE_SERVER=unix:$t/a,unix:$t/b LD_LIBRARY_PATH=$PWD/build-gpu/client:/usr/local/cuda/lib64:$LD_LIBRARY_PATH timeout 30 ./build-gpu/examples/two_devices_shared; echo "exit $?"
  kill -TERM %1 %2; wait
} > "$out/two_devices.txt" 2>&1
CAP=40 BUILD=build-gpu OUT=$t/multigpu timeout 100 bash bench/multigpu/run.sh > "$t/multigpu.out" 2>&1
tar czf "$out/multigpu.tgz" -C "$t" multigpu multigpu.out
cat "$out/two_devices.txt"; cat "$t/multigpu.out" | tail -10
