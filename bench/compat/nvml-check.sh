#!/usr/bin/env bash
# nvidia-smi natively and inside a detshare tenant, outputs saved side by side: what a
# tenant under a memory quota sees through detshare's libnvidia-ml.so.1 (docs/nvml.md).
# Run on the GPU box from the repository root, with a build in build-gpu and its bundled
# libraries in .dev/libs, as bench/run-on-gpu.sh expects:
#   OUT=/tmp/nvml-out bash bench/compat/nvml-check.sh
# While a neighbour tenant holds NEIGHBOUR_MIB, it runs nvidia-smi -L, plain and -q
# natively and as tenant "nvcheck" under QUOTA_MIB, then plain and -q again as a tenant that
# itself holds HOLD_MIB (a library preloaded into nvidia-smi allocates it before main), and
# topo -m and pmon -c 1 as a tenant.  Writes under $OUT: native-*.txt, detshare-*.txt
# (and .log, the library's debug log), held-*.txt, table.txt (the driver's own
# nvmlInternalGetExportTable, natively), probe.txt (tests/nvml_probe as a tenant),
# which-lib.txt, unserved.txt (the NVML functions and export-table slots nvidia-smi asked
# for that detshare does not serve), server.log, and summary.txt, whose PASS/FAIL lines
# say whether the tenant's outputs show the quota as total memory, the tenant's own
# process alone, and exit 0; its last line is "issue 29: fixed" or "issue 29: NOT fixed".
set -uo pipefail
out=${OUT:-/tmp/nvml-out}
mkdir -p "$out"
build=${BUILD:-build-gpu}
[ -d .dev/libs ] && export LD_LIBRARY_PATH="$PWD/.dev/libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
quota_mib=${QUOTA_MIB:-4096}
hold_mib=${HOLD_MIB:-256}
neighbour_mib=${NEIGHBOUR_MIB:-512}
dir=$(mktemp -d)
srv= nb=
trap '[ -n "$nb" ] && kill -TERM $nb 2>/dev/null; [ -n "$srv" ] && kill -TERM $srv 2>/dev/null; rm -rf "$dir"' EXIT
summary=$out/summary.txt
: > "$summary"
failed=0
pass() { echo "PASS $*" >> "$summary"; }
fail() { echo "FAIL $*" >> "$summary"; failed=1; }
check() { local what=$1; shift; if "$@"; then pass "$what"; else fail "$what"; fi; }

# A library that, preloaded, makes its process hold HOLD_MIB on the device through the
# libcuda.so.1 its LD_LIBRARY_PATH finds (detshare's, as a tenant) before main runs, and
# writes its pid to HOLD_PIDFILE unless a process before it did.
cat > "$dir/hold.c" <<'EOF'
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
__attribute__((constructor)) static void hold(void)
{
    void *cu = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    int (*init)(unsigned), (*get)(int *, int), (*retain)(void **, int), (*set)(void *);
    int (*alloc)(unsigned long long *, size_t);
    const char *mib = getenv("HOLD_MIB"), *pidfile = getenv("HOLD_PIDFILE");
    unsigned long long p;
    void *ctx;
    int dev;
    FILE *f;

    if (cu == NULL || mib == NULL)
        return;
    *(void **)&init = dlsym(cu, "cuInit");
    *(void **)&get = dlsym(cu, "cuDeviceGet");
    *(void **)&retain = dlsym(cu, "cuDevicePrimaryCtxRetain");
    *(void **)&set = dlsym(cu, "cuCtxSetCurrent");
    *(void **)&alloc = dlsym(cu, "cuMemAlloc_v2");
    if (!init || !get || !retain || !set || !alloc || init(0) || get(&dev, 0) ||
        retain(&ctx, dev) || set(ctx) || alloc(&p, strtoull(mib, NULL, 10) << 20)) {
        fprintf(stderr, "hold: could not hold %s MiB\n", mib);
        return;
    }
    if (pidfile != NULL && (f = fopen(pidfile, "wx")) != NULL) {
        fprintf(f, "%d\n", (int)getpid());
        fclose(f);
    }
}
EOF
# The driver's own table for nvidia-smi's id: its size word and how many words are set.
cat > "$dir/table.c" <<'EOF'
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
int main(void)
{
    static const unsigned char id[16] = { 0xc4, 0xfe, 0x3e, 0x6c, 0xc9, 0x8f, 0x6c, 0x4e,
                                          0xa3, 0x27, 0xee, 0x69, 0x6e, 0x12, 0xf7, 0xc4 };
    void *nv = dlopen("libnvidia-ml.so.1", RTLD_NOW);
    int (*init)(void), (*get)(const void **, const void *);
    const uintptr_t *t = NULL;
    int before, after, set = 0;

    if (nv == NULL)
        return printf("no libnvidia-ml.so.1: %s\n", dlerror()), 1;
    *(void **)&init = dlsym(nv, "nvmlInit_v2");
    *(void **)&get = dlsym(nv, "nvmlInternalGetExportTable");
    if (!init || !get)
        return printf("no nvmlInit_v2 or nvmlInternalGetExportTable\n"), 1;
    before = get((const void **)&t, id);
    printf("before nvmlInit: %d\n", before);
    printf("nvmlInit_v2: %d\n", init());
    after = get((const void **)&t, id);
    if (after != 0 || t == NULL)
        return printf("after nvmlInit: %d, no table\n", after), 1;
    for (uintptr_t i = 1; i < t[0] / sizeof(*t); i++)
        set += t[i] != 0;
    printf("after nvmlInit: 0, size word %#lx (%lu slots), %d set\n", (unsigned long)t[0],
           (unsigned long)(t[0] / sizeof(*t)), set);
    return 0;
}
EOF
${CC:-cc} -shared -fPIC -o "$dir/hold.so" "$dir/hold.c" -ldl &&
    ${CC:-cc} -o "$dir/table" "$dir/table.c" -ldl || fail "the helpers do not compile"
"$dir/table" > "$out/table.txt" 2>&1
echo "INFO driver's table for nvidia-smi: $(tail -n 1 "$out/table.txt")" >> "$summary"

printf 'quota nvcheck memory=%sMiB\n' "$quota_mib" > "$dir/detshare.conf"
"./$build/server/detshare-server" --device "${DEVICE:-cuda}" --listen "unix:$dir/s" \
    --config "$dir/detshare.conf" 2> "$out/server.log" &
srv=$!
for _ in $(seq 200); do [ -S "$dir/s" ] && break; sleep 0.05; done
tenant() {
    DETSHARE_SERVER="unix:$dir/s" DETSHARE_TENANT=${TENANT:-nvcheck} DETSHARE_LOG=debug \
        LD_LIBRARY_PATH="$PWD/$build/client${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$@"
}

# Another tenant holding memory: native nvidia-smi shows its executor, the tenant's not.
TENANT=nvneighbour HOLD_MIB=$neighbour_mib HOLD_PIDFILE=$dir/nb.pid \
    tenant env LD_PRELOAD="$dir/hold.so" sleep 60 2> "$out/neighbour.log" &
nb=$!
for _ in $(seq 100); do [ -s "$dir/nb.pid" ] && break; sleep 0.1; done
[ -s "$dir/nb.pid" ] || fail "the neighbour tenant could not hold ${neighbour_mib} MiB"

declare -A rc pid
for v in "L -L" "smi" "q -q"; do
    set -- $v
    nvidia-smi "${@:2}" > "$out/native-$1.txt" 2>&1
    echo "INFO native nvidia-smi ${*:2}: exit $?" >> "$summary"
    tenant nvidia-smi "${@:2}" > "$out/detshare-$1.txt" 2> "$out/detshare-$1.log"
    rc[$1]=$?
done
for v in "smi" "q -q"; do
    set -- $v
    rm -f "$dir/held.pid"
    HOLD_MIB=$hold_mib HOLD_PIDFILE=$dir/held.pid tenant env LD_PRELOAD="$dir/hold.so" \
        nvidia-smi "${@:2}" > "$out/held-$1.txt" 2> "$out/held-$1.log"
    rc[held-$1]=$?
    pid[$1]=$(cat "$dir/held.pid" 2>/dev/null)
done
for v in "topo topo -m" "pmon pmon -c 1"; do
    set -- $v
    tenant timeout 30 nvidia-smi "${@:2}" > "$out/detshare-$1.txt" 2> "$out/detshare-$1.log"
    n=$?
    if [ $n = 124 ] || { [ $n -gt 128 ] && [ $n -lt 255 ]; }; then
        fail "tenant nvidia-smi ${*:2}: exit $n (crashed or hung)"
    else
        echo "INFO tenant nvidia-smi ${*:2}: exit $n (a refusal is expected)" >> "$summary"
    fi
done

# The first "Total"/"Used" under "FB Memory Usage" of nvidia-smi -q, in MiB.
fb() { awk -v k="$2" '/FB Memory Usage/ { on = 1 } on && $1 == k { print $3; exit }' "$1"; }
# The "USED / TOTAL" of the plain view's memory column, as "USED TOTAL".
usage() { grep -oE '[0-9]+MiB +/ +[0-9]+MiB' "$1" | head -n 1 | tr -d 'MiB/' | tr -s ' '; }
# The pids of the plain view's process table and of -q's Processes section.
rows() { awk '/Processes:/ { on = 1 } on && /^\| +[0-9]+ / { print $5 }' "$1"; }
qpids() { awk '$1 == "Process" && $2 == "ID" { print $4 }' "$1"; }
# The Type of -q's first process.
ptype() { awk '$1 == "Processes" { on = 1 } on && $1 == "Type" { print $3; exit }' "$1"; }

L=$out/detshare-L.txt smi=$out/detshare-smi.txt q=$out/detshare-q.txt
native_uuid=$(grep -m1 -oE 'GPU-[0-9a-f-]+' "$out/native-L.txt")
for k in L smi q; do
    if grep -q 'Mismatch in versions' "$out/detshare-$k.txt"; then
        fail "tenant nvidia-smi ($k): still 'Mismatch in versions'"
    fi
done
check "tenant nvidia-smi -L: exit ${rc[L]}, one GPU, the device's UUID ($native_uuid)" \
    test "${rc[L]}" = 0 -a "$(grep -c '^GPU ' "$L")" = 1 -a -n "$native_uuid" \
    -a "$(grep -m1 -oE 'GPU-[0-9a-f-]+' "$L")" = "$native_uuid"
read -r used total <<< "$(usage "$smi")"
check "tenant nvidia-smi: exit ${rc[smi]}, memory ${used:-?}MiB / ${total:-?}MiB (want 0 / the quota $quota_mib)" \
    test "${rc[smi]}" = 0 -a "${total:-x}" = "$quota_mib" -a "${used:-x}" = 0
check "tenant nvidia-smi: no process listed (native, at the same time: $(rows "$out/native-smi.txt" | wc -l))" \
    test "${rc[smi]}" = 0 -a -z "$(rows "$smi")"
check "tenant nvidia-smi -q: exit ${rc[q]}, FB total $(fb "$q" Total) MiB used $(fb "$q" Used) MiB, $(qpids "$q" | wc -l) processes (want $quota_mib, 0, 0)" \
    test "${rc[q]}" = 0 -a "$(fb "$q" Total)" = "$quota_mib" -a "$(fb "$q" Used)" = 0 \
    -a -z "$(qpids "$q")"
read -r used total <<< "$(usage "$out/held-smi.txt")"
check "tenant nvidia-smi holding $hold_mib MiB: exit ${rc[held-smi]}, memory ${used:-?} / ${total:-?} MiB, processes [$(rows "$out/held-smi.txt" | tr '\n' ' ')] (want its own pid ${pid[smi]:-?} alone, type C)" \
    test "${rc[held-smi]}" = 0 -a "${total:-x}" = "$quota_mib" -a "${used:-0}" -ge "$hold_mib" \
    -a "$(rows "$out/held-smi.txt")" = "${pid[smi]:-none}" \
    -a -n "$(grep -E "[[:space:]]${pid[smi]:-none}[[:space:]]+C[[:space:]]" "$out/held-smi.txt")"
hq=$out/held-q.txt total=$(fb "$hq" Total) used=$(fb "$hq" Used)
check "tenant nvidia-smi -q holding $hold_mib MiB: exit ${rc[held-q]}, FB total ${total:-?} used ${used:-?} MiB, processes [$(qpids "$hq" | tr '\n' ' ')] type $(ptype "$hq") (want its own pid ${pid[q]:-?} alone, type C)" \
    test "${rc[held-q]}" = 0 -a "${total:-x}" = "$quota_mib" -a "${used:-0}" -ge "$hold_mib" \
    -a "$(qpids "$hq")" = "${pid[q]:-none}" -a "$(ptype "$hq")" = C

{
    echo "== native"; LD_DEBUG=libs nvidia-smi -L 2>&1 | grep -E 'libnvidia-ml|libcuda' | grep -i 'calling init'
    echo "== detshare"; tenant env LD_DEBUG=libs nvidia-smi -L 2>&1 | grep -E 'libnvidia-ml|libcuda' | grep -i 'calling init'
} > "$out/which-lib.txt"
grep -hoE 'nvml[A-Za-z0-9_]*( slot [0-9]+)? is not served' "$out"/detshare-*.log "$out"/held-*.log |
    sort | uniq -c | sort -rn > "$out/unserved.txt"
grep -ho 'nvml[A-Za-z0-9_]*: a tenant may not change' "$out"/detshare-*.log | sort -u \
    >> "$out/unserved.txt"
echo "INFO export-table slots asked for and not served: $(grep -oE 'slot [0-9]+' "$out/unserved.txt" |
    awk '{ print $2 }' | sort -n | tr '\n' ' ')" >> "$summary"
tenant "./$build/tests/nvml_probe" > "$out/probe.txt" 2>&1
echo "INFO nvml_probe: exit $? ($(tail -n 1 "$out/probe.txt"))" >> "$summary"
[ -s "$dir/nb.pid" ] && kill -TERM "$(cat "$dir/nb.pid")" 2>/dev/null
kill -TERM $nb 2>/dev/null
wait $nb 2>/dev/null
nb=
kill -TERM $srv
wait $srv
echo "INFO server: exit $?" >> "$summary"
srv=
if [ $failed = 0 ]; then echo "issue 29: fixed" >> "$summary"; else echo "issue 29: NOT fixed" >> "$summary"; fi
cat "$summary"
