#!/usr/bin/env bash
# Run 62: where an async launch's time goes through detshare (issue 6): CPU placement, executor summary, perf if present.
set -u
out=${OUT:-/tmp/ds-out}; mkdir -p "$out"
mkdir -p /work; ln -sfn "$PWD" /work/main; cd /work/main
export LD_LIBRARY_PATH="$PWD/.dev/libs" PATH=/opt/torch/.venv/bin:$PATH
r=$out/r62.txt
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader; lscpu | head -25; lscpu -e | head -40; for t in perf gdb strace ltrace valgrind; do echo "$t: $(command -v $t)"; done; } > $r 2>&1
B=build-gpu/bench/driver_bench
tmp=$(mktemp -d); sock=$tmp/ds.sock
sib() { cat /sys/devices/system/cpu/cpu$1/topology/thread_siblings_list; }
echo "siblings of 4: $(sib 4); of 6: $(sib 6)" >> $r
la() { grep -a launch_async | sed 's/.*"value": \([0-9.e+]*\).*/\1/' | tr '\n' ' '; }
start_srv() { # $1: taskset cpus or "", rest: env
  local cpus=$1; shift
  env "$@" ${cpus:+taskset -c $cpus} build-gpu/server/detshare-server --device cuda --listen unix:$sock 2> $tmp/srv.log & srv=$!
  for i in $(seq 200); do [ -S $sock ] && break; sleep 0.05; done
}
stop_srv() { kill -TERM $srv; wait $srv; }
T="-l 100000 -r 5 -s 1"
echo "native: $($B $T micro 2>&1 | la)" >> $r
echo "native cpu4: $(taskset -c 4 $B $T micro 2>&1 | la)" >> $r
start_srv "" DETSHARE_LOG=debug
echo "unix free: $(DETSHARE_SERVER=unix:$sock LD_LIBRARY_PATH=build-gpu/client:$LD_LIBRARY_PATH DETSHARE_LOG=debug $B $T micro 2> $tmp/cli.log | la)" >> $r
sleep 0.5; stop_srv
grep -a "launch\|served cuLaunch\|backend" $tmp/srv.log | tail -8 >> $r
grep -a -i "launch" $tmp/cli.log | tail -5 >> $r
# tenant on cpu 4, server on a cpu of another core / on cpu 4's sibling / on cpu 4 itself
other=6; s4=$(sib 4 | tr ',-' '  ' | awk '{print ($1==4)?$2:$1}')
for place in "$other" "$s4" 4; do
  start_srv "$place"
  echo "unix tenant cpu4 server cpu$place: $(taskset -c 4 env DETSHARE_SERVER=unix:$sock LD_LIBRARY_PATH=build-gpu/client:$LD_LIBRARY_PATH $B $T micro 2>/dev/null | la)" >> $r
  stop_srv
done
start_srv ""
echo "unix free again: $(DETSHARE_SERVER=unix:$sock LD_LIBRARY_PATH=build-gpu/client:$LD_LIBRARY_PATH $B $T micro 2>/dev/null | la)" >> $r
if command -v perf > /dev/null; then
  (DETSHARE_SERVER=unix:$sock LD_LIBRARY_PATH=build-gpu/client:$LD_LIBRARY_PATH $B -l 200000 -r 5 -s 1 micro > /dev/null 2>&1) &
  cl=$!; sleep 1.5
  ex=$(pgrep -f "detshare-server" | grep -v "^$srv$" | tail -1)
  timeout 4 perf record -F 4999 -g -o $tmp/perf.data -p $ex > /dev/null 2>&1
  perf report -i $tmp/perf.data --no-children --stdio 2>/dev/null | grep -v "^$" | head -120 > $out/perf-exec.txt
  wait $cl
fi
stop_srv
cat $r
