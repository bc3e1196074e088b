#!/usr/bin/env bash
# Run 63b: async launch throughput, interleaved rounds of native / detshare / detshare without progress stamps (an experimental build), one server at a time.
set -u
out=${OUT:-/tmp/ds-out}; mkdir -p "$out"
mkdir -p /work; ln -sfn "$PWD" /work/main; cd /work/main
export LD_LIBRARY_PATH="$PWD/.dev/libs"
r=$out/r63.txt; date -u > $r
B=build-gpu/bench/driver_bench
tmp=$(mktemp -d)
la() { grep -a launch_async | sed 's/.*"value": \([0-9.e+]*\).*/\1/' | tr '\n' ' '; }
T="-l 100000 -r 3 -s 1"
for round in 1 2 3 4 5 6 7 8; do
  echo "round $round native $($B $T micro 2>&1 | la)" >> $r
  for v in build-gpu/server/detshare-server .dev/exp/detshare-server-nostamp; do
    $v --device cuda --listen unix:$tmp/s.sock 2> $tmp/s.log & pid=$!
    for i in $(seq 100); do [ -S $tmp/s.sock ] && break; sleep 0.05; done
    echo "round $round $(basename $v) $(DETSHARE_SERVER=unix:$tmp/s.sock LD_LIBRARY_PATH=build-gpu/client:$LD_LIBRARY_PATH $B $T micro 2>&1 | la)" >> $r
    kill -TERM $pid; wait $pid
  done
done
tail -3 $tmp/s.log >> $r
cat $r
