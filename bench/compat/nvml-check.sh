#!/usr/bin/env bash
# nvidia-smi natively and inside a detshare tenant, outputs saved side by side: what a
# tenant under a memory quota sees through detshare's libnvidia-ml.so.1 (docs/nvml.md).
# Run on the GPU box from the repository root, with a build in build-gpu and its bundled
# libraries in .dev/libs, as bench/run-on-gpu.sh expects:
#   OUT=/tmp/nvml-out bash bench/compat/nvml-check.sh
# Writes under $OUT: native-{L,smi,q}.txt, detshare-{L,smi,q}.txt (nvidia-smi -L, plain
# and -q), probe.txt (tests/nvml_probe as a tenant), the library nvidia-smi loaded each
# time (which-lib.txt), the NVML functions nvidia-smi asked for that detshare does not
# serve (unserved.txt, from the library's debug log), the server's log, and summary.txt.
set -uo pipefail
out=${OUT:-/tmp/nvml-out}
mkdir -p "$out"
build=${BUILD:-build-gpu}
[ -d .dev/libs ] && export LD_LIBRARY_PATH="$PWD/.dev/libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
quota=${QUOTA:-4GiB}
dir=$(mktemp -d)
srv=
trap '[ -n "$srv" ] && kill -TERM $srv 2>/dev/null; rm -rf "$dir"' EXIT
summary=$out/summary.txt
: > "$summary"

for v in "L -L" "smi" "q -q"; do
    set -- $v
    nvidia-smi "${@:2}" > "$out/native-$1.txt" 2>&1
    echo "native nvidia-smi ${*:2}: exit $?" >> "$summary"
done

printf 'quota nvcheck memory=%s\n' "$quota" > "$dir/detshare.conf"
"./$build/server/detshare-server" --device "${DEVICE:-cuda}" --listen "unix:$dir/s" \
    --config "$dir/detshare.conf" 2> "$out/server.log" &
srv=$!
for _ in $(seq 200); do [ -S "$dir/s" ] && break; sleep 0.05; done
tenant() {
    DETSHARE_SERVER="unix:$dir/s" DETSHARE_TENANT=nvcheck DETSHARE_LOG=debug \
        LD_LIBRARY_PATH="$PWD/$build/client${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$@"
}
for v in "L -L" "smi" "q -q"; do
    set -- $v
    tenant nvidia-smi "${@:2}" > "$out/detshare-$1.txt" 2> "$out/detshare-$1.log"
    echo "detshare nvidia-smi ${*:2}: exit $? (quota $quota)" >> "$summary"
done
{
    echo "== native"; LD_DEBUG=libs nvidia-smi -L 2>&1 | grep -E 'libnvidia-ml|libcuda' | grep -i 'calling init'
    echo "== detshare"; tenant env LD_DEBUG=libs nvidia-smi -L 2>&1 | grep -E 'libnvidia-ml|libcuda' | grep -i 'calling init'
} > "$out/which-lib.txt"
grep -ho 'nvml[A-Za-z0-9_]* is not served' "$out"/detshare-*.log | sort | uniq -c | sort -rn \
    > "$out/unserved.txt"
grep -ho 'nvml[A-Za-z0-9_]*: a tenant may not change' "$out"/detshare-*.log | sort -u \
    >> "$out/unserved.txt"
tenant "./$build/tests/nvml_probe" > "$out/probe.txt" 2>&1
echo "nvml_probe: exit $? ($(cat "$out/probe.txt" | tail -n 1))" >> "$summary"
kill -TERM $srv
wait $srv
echo "server: exit $?" >> "$summary"
srv=
cat "$summary"
