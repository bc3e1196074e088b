#!/usr/bin/env bash
# Run 83: where a failing device assert hangs detshare under MPS: a green-context probe natively under MPS, then through detshare --mps start with stacks of the stuck executor.
set -u
out=${OUT:-/tmp/ds-out}; mkdir -p "$out"
mkdir -p /work; ln -sfn "$PWD" /work/main; cd /work/main
export LD_LIBRARY_PATH="$PWD/.dev/libs"
r=$out/r83.txt; date -u > $r
K=build-gpu/tests/kernels/devout.fatbin
gcc -O2 -o .dev/assertgreen .dev/assertgreen.c -I/usr/local/cuda/include -L/usr/local/cuda/lib64/stubs -lcuda
gcc -O2 -o .dev/assertprobe .dev/assertprobe.c -I/usr/local/cuda/include -L/usr/local/cuda/lib64/stubs -lcuda
echo "== green, no MPS" >> $r; timeout 20 .dev/assertgreen $K >> $r 2>&1; echo "exit $?" >> $r
d=$(mktemp -d); mkdir -p $d/pipe $d/log
( export CUDA_MPS_PIPE_DIRECTORY=$d/pipe CUDA_MPS_LOG_DIRECTORY=$d/log
  nvidia-cuda-mps-control -d
  echo "== green, MPS" >> $r; timeout 20 .dev/assertgreen $K >> $r 2>&1; echo "exit $?" >> $r
  echo quit | nvidia-cuda-mps-control; sleep 1 )
which gdb eu-stack >> $r 2>&1
tmp=$(mktemp -d)
DETSHARE_LOG=debug build-gpu/server/detshare-server --device cuda --mps start --mps-dir $tmp/mps --listen unix:$tmp/s 2> $out/srv83.log & pid=$!
for i in $(seq 100); do [ -S $tmp/s ] && break; sleep 0.05; done
echo "== detshare --mps start" >> $r
DETSHARE_SERVER=unix:$tmp/s LD_LIBRARY_PATH=build-gpu/client:$LD_LIBRARY_PATH timeout 25 .dev/assertprobe $K >> $r 2>&1 & ap=$!
sleep 6
for e in $(pgrep -f "detshare-server --executor"); do
  echo "-- executor $e" >> $r
  for tk in /proc/$e/task/*; do echo "$(basename $tk) $(cat $tk/comm) $(cat $tk/wchan)" >> $r; done
  if command -v gdb > /dev/null; then timeout 30 gdb -p $e -batch -ex "thread apply all bt 25" 2>&1 | grep -E "^#|^Thread" | cut -c1-160 >> $r; fi
done
wait $ap; echo "probe exit $?" >> $r
kill -TERM $pid; sleep 3; kill -KILL $pid 2>/dev/null; wait $pid 2>/dev/null
grep -a "device context\|left:\|error\|warn\|fault" $out/srv83.log | tail -12 >> $r
tail -20 $tmp/mps/log/server.log >> $r 2>/dev/null
cat $r
