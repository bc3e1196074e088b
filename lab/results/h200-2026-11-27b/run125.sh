#!/usr/bin/env bash
# Run 125: (a) synchronisation latency, the client's spin (DETSHARE_SPIN_US 200, the
# default, against 2000) with the executor's sync spin (default 2000 us, and 0);
# (b) the CUDA samples built here (bench/breadth/build-samples.sh) and run natively and
# through detshare; (c) the device plugin's test with a client directory as
# install-client.sh makes it; (d) nvidia-smi in a tenant, the NVML and cuSPARSE gpu tests;
# (e) the graph, host registration and address-range gpu suites.
# Outputs are saved to $OUT/run125.tgz after each part, so a cut leaves what was done.
set -u
T0=$(date +%s)
OUT0=${OUT:-/tmp/ds-out}; out=$OUT0/r; mkdir -p "$out"
save() { tar czf "$OUT0/run125.tgz" -C "$OUT0" r; }
left() { echo $(( ${BUDGET:-560} - ($(date +%s) - T0) )); }
mkdir -p /work; ln -sfn "$PWD" /work/main; cd /work/main; [ -e build-gpu ] || ln -s .dev/build-gpu build-gpu
export LD_LIBRARY_PATH="$PWD/.dev/libs"
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader; } > "$out/device.txt" 2>&1
t=$(mktemp -d)
CL="$PWD/build-gpu/client"
start() { local n=$1; shift
    ./build-gpu/server/detshare-server --device cuda --listen "unix:$t/$n" --mps-dir "$t/mps-$n" "$@" 2> "$t/server-$n.log" &
    echo $! > "$t/pid-$n"; for _ in $(seq 400); do [ -S "$t/$n" ] && break; sleep 0.05; done; }
stop() { kill -TERM "$(cat "$t/pid-$1")"; wait "$(cat "$t/pid-$1")" 2>/dev/null; }
ten() { local s=$1 c=$2; shift 2; DETSHARE_SERVER=unix:$t/$s DETSHARE_SPIN_US=$c LD_LIBRARY_PATH=$CL:$LD_LIBRARY_PATH "$@"; }
# (a)
nvcc -arch=sm_90 -O2 -o "$t/first_launch" bench/compat/first_launch.cu
start spin; start nospin --sync-spin-us 0
{
  for r in 1 2; do
    echo "== native"; "$t/first_launch" 12
    for c in 200 2000; do for s in spin nospin; do echo "== $s-c$c"; ten $s $c "$t/first_launch" 12; done; done
  done
} > "$out/first_launch.txt" 2>&1
python3 - "$out/first_launch.txt" <<'PY' | tee "$out/first_launch-summary.txt"
import sys, statistics as st, collections
cur=None; d=collections.defaultdict(list)
for l in open(sys.argv[1]):
    if l.startswith("=="): cur=l.split()[-1]; continue
    p=l.split()
    if len(p)==3 and p[0].isdigit() and int(p[0])>0: d[cur].append(float(p[2]))
for k,h in d.items(): print(f"{k}: n={len(h)} host_us median {st.median(h):.1f} p90 {sorted(h)[int(.9*len(h))]:.1f}")
PY
{
  echo "== native"; timeout 60 python3 bench/overhead/sync_bench.py --repeats 60
  for c in 200 2000; do for s in spin nospin; do echo "== $s-c$c"; DETSHARE_TENANT=sync-$s-$c ten $s $c timeout 60 python3 bench/overhead/sync_bench.py --repeats 60; done; done
} > "$out/sync-bench.txt" 2>&1
cat "$out/sync-bench.txt"; stop spin; stop nospin; save
# (b) build the samples in the background while (c)-(e) run.
mkdir -p "$t/cs" .dev/samples; tar xJf .dev/samples-src/cs-subset.tar.xz -C "$t/cs"
(bash bench/breadth/build-samples.sh "$t/cs" .dev/samples/bin.tar.xz 90 12 > "$out/build-samples.txt" 2>&1; cp .dev/samples/bin.tar.xz "$OUT0/") &
bpid=$!
# (c) the device plugin, its client directory as install-client.sh makes one.
mkdir -p "$t/k8s" "$t/clientlib"; tar xJf .dev/k8s-libs.tar.xz -C "$t/k8s"
cp -P "$CL"/libcuda.so* "$CL"/libnvidia-ml.so* .dev/libs/* "$t/clientlib/"
DSK_PY=$PWD/build-gpu/tests/kubelet_py DSK_PLUGIN=$PWD/build-gpu/k8s/detshare-device-plugin \
DS_SERVER_BIN=$PWD/build-gpu/server/detshare-server DS_CTL_BIN=$PWD/build-gpu/server/detshare-ctl \
DSK_TENANT=$PWD/build-gpu/examples/hello_tenant DSK_SOAK=$PWD/build-gpu/tests/soak_tenant DSK_LIB_DIR=$t/clientlib \
DSK_DEVICE=cuda DSK_TORCH="python3 bench/torch_determinism.py resnet" \
LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$t/k8s/k8slibs timeout 200 python3 tests/test_device_plugin.py -v > "$out/device_plugin.txt" 2>&1
echo "device_plugin: exit $?" | tee -a "$out/device.txt"; grep -E "ok$|FAIL|Error" "$out/device_plugin.txt" | tail -12; save
# (d) nvidia-smi in a tenant; NVML and cuSPARSE gpu tests.
start smi
for a in "" -q "pmon -c 1" "topo -m"; do echo "== nvidia-smi $a"; DETSHARE_TENANT=smi DETSHARE_LOG=debug ten smi 200 timeout 20 nvidia-smi $a; echo "rc=$?"; done > "$out/smi.txt" 2>&1
stop smi; grep "^rc=\|^== \|slot" "$out/smi.txt" | head -20
for s in nvml_smi nvml managed; do
  [ -x build-gpu/tests/test_$s ] || continue
  DS_TEST_DEVICE=cuda timeout 90 ./build-gpu/tests/test_$s --jobs 1 > "$t/gpu-$s.log" 2>&1
  echo "gpu test $s: exit $? $(grep -a 'Synthesis' "$t/gpu-$s.log" | tail -1)" | tee -a "$out/suites.txt"
  grep -a -v "^  server" "$t/gpu-$s.log" | grep -a -B2 -A10 "Assertion\|FAIL" | head -40 >> "$out/suites-fail.txt"
done
timeout 150 bash tests/test_sparse_repeat.sh "$PWD/build-gpu" > "$out/sparse-repeat.txt" 2>&1
echo "gpu_sparse_repeat: exit $?" | tee -a "$out/suites.txt"; tail -8 "$out/sparse-repeat.txt"
save
# (e) gpu suites of the graph, host registration and address changes, and va-maps.sh.
BUILD=build-gpu OUT=$out/va-maps timeout 60 bash bench/compat/va-maps.sh > "$out/va-maps.txt" 2>&1; echo "va-maps: exit $?" | tee -a "$out/suites.txt"; tail -12 "$out/va-maps.txt"
for s in $GPU_SUITES; do
  [ -x build-gpu/tests/test_$s ] || continue
  DS_TEST_DEVICE=cuda timeout 100 ./build-gpu/tests/test_$s --jobs 1 > "$t/gpu-$s.log" 2>&1
  echo "gpu test $s: exit $? $(grep -a 'Synthesis' "$t/gpu-$s.log" | tail -1)" | tee -a "$out/suites.txt"
  grep -a -v "^  server" "$t/gpu-$s.log" | grep -a -B2 -A10 "Assertion\|FAIL" | head -40 >> "$out/suites-fail.txt"
done
save
# (b) the samples.
wait $bpid; tail -3 "$out/build-samples.txt"
if [ -f .dev/samples/bin.tar.xz ] && [ "$(left)" -gt 60 ]; then
  timeout $(( $(left) - 15 )) bash bench/breadth/samples.sh --build build-gpu --bin .dev/samples/bin.tar.xz --out "$out/samples" --jobs 6 > "$t/samples.log" 2>&1
  echo "samples: exit $?"; tail -3 "$t/samples.log"
  tar czf "$out/samples-runs.tgz" -C "$out/samples" runs 2>/dev/null && rm -rf "$out/samples/runs"
  head -30 "$out/samples/samples.md" 2>/dev/null
fi
save
