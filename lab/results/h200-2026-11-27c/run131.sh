#!/usr/bin/env bash
# Run 131: plain nvidia-smi in a tenant with MIG/inforom/virtualization served; gpu suites
# nvml nvml_smi tcp multiserver capture_hostfn (its cases now print each graph's node
# types: the forked case's native graph); bench/breadth's cuSPARSE and JAX-solve rows
# (issue 29); TCP/TLS copy rates against the Unix socket's (bench/overhead/copy_ratio.sh);
# bench/overhead micro and torch-micro, 3 rounds, after the several-servers client change.
set -u
out=${OUT:-/tmp/ds-out}; mkdir -p "$out"
mkdir -p /work; ln -sfn "$PWD" /work/main; cd /work/main; [ -e build-gpu ] || ln -s .dev/build-gpu build-gpu
export LD_LIBRARY_PATH="$PWD/.dev/libs"
t=$(mktemp -d)
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader; } > "$out/device.txt" 2>&1
{
  ./build-gpu/server/detshare-server --device cuda --listen "unix:$t/s" --mps-dir "$t/mps" 2> "$t/server.log" &
  srv=$!
  for _ in $(seq 400); do [ -S "$t/s" ] && break; sleep 0.05; done
  for a in "" "-q" "topo -m"; do
    echo "== nvidia-smi $a"
    DETSHARE_LOG=debug DETSHARE_SERVER=unix:$t/s LD_LIBRARY_PATH=$PWD/build-gpu/client:$LD_LIBRARY_PATH timeout 30 nvidia-smi $a > "$t/smi.out" 2> "$t/smi.err"
    echo "exit $?"; [ -z "$a" ] && cat "$t/smi.out"; grep -a "not served" "$t/smi.err" | head -30
  done
  kill -TERM $srv; wait $srv
  for s in nvml nvml_smi tcp multiserver capture_hostfn; do
    DS_TEST_DEVICE=cuda timeout 120 ./build-gpu/tests/test_$s --jobs 1 > "$t/gpu-$s.log" 2>&1
    echo "gpu test $s: exit $? $(grep -a 'Synthesis' "$t/gpu-$s.log" | tail -1)"
    grep -a -v "^  server" "$t/gpu-$s.log" | grep -a -B2 -A14 "Assertion\|FAIL" | head -30
  done
  grep -a "forked" "$t/gpu-capture_hostfn.log" | head -12
} > "$out/smi.txt" 2>&1
BUILD=build-gpu timeout 120 bash bench/overhead/copy_ratio.sh > "$out/copy_ratio.txt" 2>&1
WHAT="sparse jaxsolve" CAP=60 BUILD=build-gpu OUT=$t/breadth timeout 240 bash bench/breadth/run.sh > "$t/breadth.txt" 2>&1
tar czf "$out/breadth.tgz" -C "$t" breadth breadth.txt
mkdir -p "$t/ovh"; PARTS="micro torch-micro" ROUNDS=3 BUILD=build-gpu OUT=$t/ovh timeout 200 bash bench/overhead/run.sh > "$t/ovh/run.log" 2>&1
tar czf "$out/ovh.tgz" -C "$t" ovh
head -c 4000 "$out/smi.txt"; cat "$out/copy_ratio.txt" | tail -15; tail -8 "$t/breadth.txt"; grep -E "^\|" "$t"/ovh/overhead-*.md | head -30
