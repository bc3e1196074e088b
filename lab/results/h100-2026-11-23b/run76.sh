#!/usr/bin/env bash
# Run 76: a failing device assert natively, through detshare with --mps off, and with --mps start: which one hangs.
set -u
out=${OUT:-/tmp/ds-out}; mkdir -p "$out"
mkdir -p /work; ln -sfn "$PWD" /work/main; cd /work/main
export LD_LIBRARY_PATH="$PWD/.dev/libs"
r=$out/r76.txt; date -u > $r
K=build-gpu/tests/kernels/devout.fatbin
echo "== native" >> $r; timeout 20 .dev/assertprobe $K >> $r 2>&1; echo "exit $?" >> $r
for m in off start; do
  tmp=$(mktemp -d)
  DETSHARE_LOG=debug build-gpu/server/detshare-server --device cuda --mps $m --mps-dir $tmp/mps --listen unix:$tmp/s 2> $out/srv-$m.log & pid=$!
  for i in $(seq 100); do [ -S $tmp/s ] && break; sleep 0.05; done
  echo "== detshare --mps $m" >> $r
  DETSHARE_SERVER=unix:$tmp/s LD_LIBRARY_PATH=build-gpu/client:$LD_LIBRARY_PATH timeout 20 .dev/assertprobe $K >> $r 2>&1; echo "exit $?" >> $r
  sleep 1; ps -eo pid,stat,wchan:30,etime,args | grep "detshare-server --executor" | grep -v grep >> $r
  kill -TERM $pid; sleep 3; kill -KILL $pid 2>/dev/null; wait $pid 2>/dev/null
  grep -a "device context\|left:\|error\|warn" $out/srv-$m.log | tail -8 >> $r
done
cat $r
