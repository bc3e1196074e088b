#!/usr/bin/env bash
# Final checks of the late evening: GPU suites, two-thread PyTorch, breadth.
set -u
out=${OUT:-/tmp/ds-out}; mkdir -p "$out"
export PATH=/opt/torch/.venv/bin:$PATH PYTHONUNBUFFERED=1
mkdir -p /work; ln -sfn "$PWD" /work/main; cd /work/main
export LD_LIBRARY_PATH="$PWD/.dev/libs"
t0=$(date +%s)
r=$out/r46.txt
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >> $r
for t in waits threads ipc launch stream fastpath memcpy hostfn graph partition policy context hostmem isolation hostile vmm tensormap runtime; do
  [ $(( $(date +%s) - t0 )) -gt 300 ] && { echo "stopped before $t" >> $r; break; }
  DS_TEST_DEVICE=cuda timeout 150 ./build-gpu/tests/test_$t --jobs 1 > "$out/gpu-$t.log" 2>&1
  rc=$?; echo "gpu test $t: exit $rc, $(grep -a Synthesis "$out/gpu-$t.log" | cut -c14-)" >> $r
  [ $rc = 0 ] && rm -f "$out/gpu-$t.log"
done
dir=$(mktemp -d)
./build-gpu/server/detshare-server --device cuda --listen "unix:$dir/s" 2> "$out/srv46.log" &
srv=$!; for _ in $(seq 200); do [ -S "$dir/s" ] && break; sleep 0.05; done; sleep 1
DS="DETSHARE_SERVER=unix:$dir/s LD_LIBRARY_PATH=$PWD/build-gpu/client:$LD_LIBRARY_PATH"
for i in 1 2; do
  echo "mt native: $(timeout 60 python3 .dev/mt.py 2>&1 | tail -1)" >> $r
  echo "mt detshare: $(env $DS timeout 60 python3 .dev/mt.py 2>&1 | tail -1)" >> $r
done
for m in add item; do
  echo "mt2 native $(timeout 60 python3 .dev/mt2.py $m 2>&1 | tail -1)" >> $r
  echo "mt2 detshare $(env $DS timeout 60 python3 .dev/mt2.py $m 2>&1 | tail -1)" >> $r
done
for v in thread thread-after-add thread-add; do
  echo "mt3 native: $(timeout 60 python3 .dev/mt3.py $v 2>&1 | tail -1) / detshare: $(env $DS timeout 60 python3 .dev/mt3.py $v 2>&1 | tail -1)" >> $r
done
for w in cupy cupy2 triton compile jax loader mp; do
  [ $(( $(date +%s) - t0 )) -gt 540 ] && { echo "stopped before $w" >> $r; break; }
  n=$(timeout 100 python3 .dev/breadth.py $w 2> /dev/null | tail -1)
  d=$(env $DS timeout 100 python3 .dev/breadth.py $w 2> "$out/$w-ds.err" | tail -1)
  if [ -n "$d" ] && [ "$n" = "$d" ]; then v=identical; else v=DIFFERENT; fi
  echo "$w: native [$n] detshare [$d] $v" >> $r
  [ "$v" = identical ] && rm -f "$out/$w-ds.err"
done
kill -TERM $srv; wait $srv; echo "server exit $?" >> $r
echo "done at $(( $(date +%s) - t0 )) s" >> $r
(cd "$out" && tar czf logs46.tgz --remove-files $(ls | grep -E "\.log$|\.err$") 2>/dev/null)
cat $r
