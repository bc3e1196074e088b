#!/usr/bin/env bash
# Run 85: the assert probe through detshare --mps start until one hangs; user-space stack scans of every executor then.
set -u
out=${OUT:-/tmp/ds-out}; mkdir -p "$out"
mkdir -p /work; ln -sfn "$PWD" /work/main; cd /work/main
export LD_LIBRARY_PATH="$PWD/.dev/libs"
r=$out/r85.txt; date -u > $r
K=build-gpu/tests/kernels/devout.fatbin
gcc -O2 -o .dev/assertprobe .dev/assertprobe.c -I/usr/local/cuda/include -L/usr/local/cuda/lib64/stubs -lcuda
for round in 1 2 3; do
tmp=$(mktemp -d)
DETSHARE_LOG=debug build-gpu/server/detshare-server --device cuda --mps start --mps-dir $tmp/mps --listen unix:$tmp/s 2> $out/srv85-$round.log & pid=$!
for i in $(seq 100); do [ -S $tmp/s ] && break; sleep 0.05; done
sleep 1
hung=0
for n in 1 2 3; do
  DETSHARE_SERVER=unix:$tmp/s LD_LIBRARY_PATH=build-gpu/client:$LD_LIBRARY_PATH timeout 12 .dev/assertprobe $K > $out/probe.txt 2>&1 & ap=$!
  sleep 4
  if kill -0 $ap 2>/dev/null; then
    hung=1; echo "== round $round probe $n hung" >> $r; cat $out/probe.txt >> $r
    for e in $(pgrep -f "detshare-server --executor"); do
      echo "-- executor $e $(tr '\0' ' ' < /proc/$e/cmdline)" >> $r
      python3 .dev/stackscan.py $e >> $r 2>&1
    done
    cp build-gpu/server/detshare-server $out/ 2>/dev/null
    grep -a "r-xp" /proc/$(pgrep -f "detshare-server --executor" | head -1)/maps >> $r
  fi
  wait $ap
  echo "round $round probe $n: $(tr '\n' ' ' < $out/probe.txt | cut -c1-150)" >> $r
  [ $hung = 1 ] && break
done
kill -TERM $pid; sleep 3; kill -KILL $pid 2>/dev/null; wait $pid 2>/dev/null
pkill -KILL -f "detshare-server --executor"; echo quit | CUDA_MPS_PIPE_DIRECTORY=$tmp/mps/pipe nvidia-cuda-mps-control 2>/dev/null
[ $hung = 1 ] && break
done
tail -c 20000 $r
