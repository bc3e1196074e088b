#!/usr/bin/env bash
# Run 124: (a) --sync-spin-us: first_launch and PyTorch small ops natively, through a
# default server (sync spin 2 ms) and through one with --sync-spin-us 0 (the old
# behaviour), alternating; (b) the hostreg case that failed in run 123, three times, and
# the executor's and a tenant's large PROT_NONE ranges; (c) the device plugin's test on
# the GPU (issue 25: a PyTorch tenant with exactly Allocate's environment); (d) the CUDA
# samples when .dev/samples/bin.tar.xz was carried.
set -u
OUT0=${OUT:-/tmp/ds-out}; out=$OUT0/r; mkdir -p "$out"
mkdir -p /work; ln -sfn "$PWD" /work/main; cd /work/main; [ -e build-gpu ] || ln -s .dev/build-gpu build-gpu
export LD_LIBRARY_PATH="$PWD/.dev/libs"
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader; git log --oneline -1; } > "$out/device.txt" 2>&1
t=$(mktemp -d)
CL="$PWD/build-gpu/client"
start() { # NAME ARGS...: a server on $t/NAME
    local n=$1; shift
    ./build-gpu/server/detshare-server --device cuda --listen "unix:$t/$n" --mps-dir "$t/mps-$n" "$@" 2> "$t/server-$n.log" &
    echo $! > "$t/pid-$n"
    for _ in $(seq 400); do [ -S "$t/$n" ] && break; sleep 0.05; done
}
stop() { kill -TERM "$(cat "$t/pid-$1")"; wait "$(cat "$t/pid-$1")" 2>/dev/null; }
nvcc -arch=sm_90 -O2 -o "$t/first_launch" bench/compat/first_launch.cu
start spin; start nospin --sync-spin-us 0
{
  for r in 1 2 3; do
    echo "== round $r native"; "$t/first_launch" 12
    for s in spin nospin; do echo "== round $r $s"; DETSHARE_SERVER=unix:$t/$s LD_LIBRARY_PATH=$CL:$LD_LIBRARY_PATH "$t/first_launch" 12; done
  done
} > "$out/first_launch.txt" 2>&1
python3 - "$out/first_launch.txt" <<'PY' | tee "$out/first_launch-summary.txt"
import sys, statistics as st, collections
cur=None; d=collections.defaultdict(lambda: ([],[]))
for l in open(sys.argv[1]):
    if l.startswith("=="): cur=l.split()[-1]; continue
    p=l.split()
    if len(p)==3 and p[0].isdigit() and int(p[0])>0:
        d[cur][0].append(float(p[1])); d[cur][1].append(float(p[2]))
for k,(ev,h) in d.items():
    print(f"{k}: n={len(h)} event_ms median {st.median(ev):.3f} host_us median {st.median(h):.1f} p90 {sorted(h)[int(.9*len(h))]:.1f} max {max(h):.1f}")
PY
{
  for r in 1 2; do
    echo "== round $r native"; timeout 100 python3 bench/overhead/sync_bench.py --repeats 100
    for s in spin nospin; do echo "== round $r $s"; DETSHARE_TENANT=sync-$s DETSHARE_SERVER=unix:$t/$s LD_LIBRARY_PATH=$CL:$LD_LIBRARY_PATH timeout 100 python3 bench/overhead/sync_bench.py --repeats 100; done
  done
} > "$out/sync-bench.txt" 2>&1
cat "$out/sync-bench.txt"
# The samples are built here (16 cores) while the untimed parts below run.
if [ ! -f .dev/samples/bin.tar.xz ] && [ -f .dev/samples-src/cs-subset.tar.xz ]; then
  mkdir -p "$t/cs" .dev/samples; tar xJf .dev/samples-src/cs-subset.tar.xz -C "$t/cs"
  (bash bench/breadth/build-samples.sh "$t/cs" .dev/samples/bin.tar.xz 90 12 > "$out/build-samples.txt" 2>&1) &
  bpid=$!
fi
# (b) hostreg, and the address ranges.
for i in 1 2 3; do
  DS_TEST_DEVICE=cuda timeout 120 ./build-gpu/tests/test_hostreg --jobs 1 > "$t/hostreg-$i.log" 2>&1
  echo "hostreg $i: exit $? $(grep -a 'Synthesis' "$t/hostreg-$i.log" | tail -1)" | tee -a "$out/hostreg.txt"
done
DETSHARE_SERVER=unix:$t/spin LD_LIBRARY_PATH=$CL:$LD_LIBRARY_PATH "$t/first_launch" 4000 > /dev/null 2>&1 &
fl=$!; sleep 2
{
  echo "tenant $fl:"; awk '{split($1,a,"-"); s=strtonum("0x" a[2])-strtonum("0x" a[1]); if (s >= 33554432) print $1, $2, s/1048576 " MiB", $6}' /proc/$fl/maps
  for e in $(pgrep -P "$(cat "$t/pid-spin")"); do echo "executor $e:"; awk '{split($1,a,"-"); s=strtonum("0x" a[2])-strtonum("0x" a[1]); if (s >= 33554432) print $1, $2, s/1048576 " MiB", $6}' /proc/$e/maps; done
} > "$out/ranges.txt" 2>&1
kill $fl 2>/dev/null; wait $fl 2>/dev/null
stop spin; stop nospin
head -40 "$out/ranges.txt"
# (c) the device plugin, on the GPU.
mkdir -p "$t/k8s"; tar xJf .dev/k8s-libs.tar.xz -C "$t/k8s"
DSK_PY=$PWD/build-gpu/tests/kubelet_py DSK_PLUGIN=$PWD/build-gpu/k8s/detshare-device-plugin \
DS_SERVER_BIN=$PWD/build-gpu/server/detshare-server DS_CTL_BIN=$PWD/build-gpu/server/detshare-ctl \
DSK_TENANT=$PWD/build-gpu/examples/hello_tenant DSK_SOAK=$PWD/build-gpu/tests/soak_tenant DSK_LIB_DIR=$CL \
DSK_DEVICE=cuda DSK_TORCH="python3 bench/torch_determinism.py resnet" \
LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$t/k8s/k8slibs timeout 280 python3 tests/test_device_plugin.py -v > "$out/device_plugin.txt" 2>&1
echo "device_plugin: exit $?" | tee -a "$out/device.txt"; tail -25 "$out/device_plugin.txt"
# (d) the samples.
[ -n "${bpid:-}" ] && { wait $bpid; tail -3 "$out/build-samples.txt"; }
if [ -f .dev/samples/bin.tar.xz ]; then
  timeout 250 bash bench/breadth/samples.sh --build build-gpu --bin .dev/samples/bin.tar.xz --out "$out/samples" --jobs 5 > "$t/samples.log" 2>&1
  echo "samples: exit $?"; tail -5 "$t/samples.log"
  tar czf "$out/samples-runs.tgz" -C "$out/samples" runs 2>/dev/null && rm -rf "$out/samples/runs"
  head -40 "$out/samples/samples.md" 2>/dev/null
fi
cp .dev/samples/bin.tar.xz "$OUT0/" 2>/dev/null
tar czf "$OUT0/run124.tgz" -C "$OUT0" r && rm -rf "$OUT0/r"
