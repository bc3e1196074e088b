#!/usr/bin/env bash
# Where the device's address space lies (docs/memory.md, "Device addresses and the
# tenant's address space"): the large reserved ranges (private anonymous mappings with no
# access and no name, neighbours merged, 64 MiB or more) of a small program natively, then,
# with the same program as a detshare tenant, of its executor and of the tenant, and
# whether each of the executor's is reserved in the tenant too.  The program maps three
# pages before cuInit, allocates 64 MiB on the device and registers the pages
# (DEVICEMAP); it prints the device allocation's address and the registered pages' host and
# device addresses, which unified addressing makes equal.
# Run on the GPU box from the repository root, with a build in build-gpu:
#   bash bench/compat/va-maps.sh             (BUILD=dir, DEVICE=sim, OUT=dir change it)
# Writes under $OUT (default /tmp/va-maps): native.txt, detshare.txt, server.log, and
# summary.txt, printed at the end; it exits 1 when an executor range is not reserved in
# the tenant or a registered page's device address differs from its host address.
set -uo pipefail
build=${BUILD:-build-gpu}
out=${OUT:-/tmp/va-maps}
min=$((64 << 20))
mkdir -p "$out"
dir=$(mktemp -d)
srv= probe=
trap '[ -n "$probe" ] && kill -TERM $probe 2>/dev/null; [ -n "$srv" ] && kill -TERM $srv 2>/dev/null; rm -rf "$dir"' EXIT
summary=$out/summary.txt
: > "$summary"
failed=0

cat > "$dir/probe.c" <<'EOF'
#include <dlfcn.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>
int main(void)
{
    unsigned char *pages = mmap(NULL, 3 * 4096, PROT_READ | PROT_WRITE,
                                MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    void *cu = dlopen("libcuda.so.1", RTLD_NOW), *ctx;
    int (*init)(unsigned), (*get)(int *, int), (*retain)(void **, int), (*set)(void *);
    int (*alloc)(unsigned long long *, size_t), (*reg)(void *, size_t, unsigned);
    int (*devptr)(unsigned long long *, void *, unsigned);
    unsigned long long d = 0, dp = 0;
    int dev, rc;

    if (cu == NULL || pages == MAP_FAILED)
        return printf("no libcuda.so.1 (%s) or no pages\n", dlerror()), 1;
    *(void **)&init = dlsym(cu, "cuInit");
    *(void **)&get = dlsym(cu, "cuDeviceGet");
    *(void **)&retain = dlsym(cu, "cuDevicePrimaryCtxRetain");
    *(void **)&set = dlsym(cu, "cuCtxSetCurrent");
    *(void **)&alloc = dlsym(cu, "cuMemAlloc_v2");
    *(void **)&reg = dlsym(cu, "cuMemHostRegister_v2");
    *(void **)&devptr = dlsym(cu, "cuMemHostGetDevicePointer_v2");
    if (!init || !get || !retain || !set || !alloc || !reg || !devptr || init(0) ||
        get(&dev, 0) || retain(&ctx, dev) || set(ctx) || alloc(&d, 64 << 20))
        return printf("could not open the device or allocate\n"), 1;
    rc = reg(pages + 16, 3000, 2);
    if (rc == 0)
        rc = devptr(&dp, pages + 16, 0);
    printf("pid %d\ndevice allocation %#llx\nregistered: host %p device %#llx (%d) %s\n",
           (int)getpid(), d, (void *)(pages + 16), dp, rc,
           rc == 0 && dp == (unsigned long long)(pages + 16) ? "SAME" : "DIFFERENT");
    printf("ready\n");
    fflush(stdout);
    sleep(10);
    return 0;
}
EOF
${CC:-cc} -o "$dir/probe" "$dir/probe.c" -ldl || { echo "FAIL the probe does not compile" >> "$summary"; cat "$summary"; exit 1; }

# The large reserved ranges of process $1, "start end" in decimal, one a line.
reserved() {
    local s=-1 e=-1 range perms inode path a b
    while read -r range perms _ _ inode path; do
        a=$((16#${range%-*})) b=$((16#${range#*-}))
        if [ "$perms" = "---p" ] && [ "$inode" = 0 ] && [ -z "$path" ]; then
            if [ "$a" -eq "$e" ]; then e=$b; continue; fi
            [ "$s" -ge 0 ] && [ $((e - s)) -ge $min ] && echo "$s $e"
            s=$a e=$b
        else
            [ "$s" -ge 0 ] && [ $((e - s)) -ge $min ] && echo "$s $e"
            s=-1 e=-1
        fi
    done < "/proc/$1/maps"
    [ "$s" -ge 0 ] && [ $((e - s)) -ge $min ] && echo "$s $e"
}

show() {
    local s e total=0 n=0
    while read -r s e; do
        printf '  %#x-%#x %8d MiB\n' "$s" "$e" $(((e - s) >> 20))
        total=$((total + e - s)) n=$((n + 1))
    done
    printf '  %d ranges, %d GiB in all\n' "$n" $((total >> 30))
}

# Whether every page of [$2, $3) is mapped, by anything, in process $1.
covered() {
    local at=$2 range a b
    while read -r range _; do
        a=$((16#${range%-*})) b=$((16#${range#*-}))
        [ "$b" -le "$at" ] && continue
        [ "$a" -gt "$at" ] && break
        at=$b
        [ "$at" -ge "$3" ] && break
    done < "/proc/$1/maps"
    [ "$at" -ge "$3" ]
}

# Run the probe ($@: its environment), wait for "ready", leave its pid in $probe.
start_probe() {
    env "$@" "$dir/probe" > "$dir/probe.out" 2>&1 &
    probe=$!
    for _ in $(seq 300); do grep -q '^ready' "$dir/probe.out" && return 0; sleep 0.1; done
    return 1
}

if [ "${DEVICE:-cuda}" = cuda ]; then
    if start_probe X=1; then
        { cat "$dir/probe.out"; echo "its own reserved ranges:"; reserved "$probe" | show; } \
            > "$out/native.txt"
        echo "INFO native: $(grep registered "$dir/probe.out")" >> "$summary"
    else
        echo "INFO native: the probe did not get ready: $(head -c 300 "$dir/probe.out")" >> "$summary"
    fi
    kill -TERM "$probe" 2>/dev/null; wait "$probe" 2>/dev/null; probe=
fi

"./$build/server/detshare-server" --device "${DEVICE:-cuda}" --listen "unix:$dir/s" \
    --admin none 2> "$out/server.log" &
srv=$!
for _ in $(seq 200); do [ -S "$dir/s" ] && break; sleep 0.05; done
if ! start_probe DETSHARE_SERVER="unix:$dir/s" DETSHARE_TENANT=vamaps DETSHARE_LOG=debug \
    LD_LIBRARY_PATH="$PWD/$build/client${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; then
    echo "FAIL the tenant did not get ready: $(head -c 300 "$dir/probe.out")" >> "$summary"
    cat "$summary"
    exit 1
fi
ex=$(grep -o '(executor pid [0-9]*' "$out/server.log" | tail -n 1 | grep -o '[0-9]*$')
{
    grep -v '^ready' "$dir/probe.out"
    echo "executor pid $ex, its reserved ranges:"
    reserved "$ex" | show
    echo "the tenant's (pid $probe) reserved ranges:"
    reserved "$probe" | show
} > "$out/detshare.txt"
while read -r s e; do
    if covered "$probe" "$s" "$e"; then
        printf 'PASS executor range %#x-%#x is reserved in the tenant\n' "$s" "$e" >> "$summary"
    else
        printf 'FAIL executor range %#x-%#x is not reserved in the tenant\n' "$s" "$e" >> "$summary"
        failed=1
    fi
done < <(reserved "$ex")
if grep -q 'registered:.*SAME' "$dir/probe.out"; then
    echo "PASS through detshare: $(grep registered "$dir/probe.out")" >> "$summary"
else
    echo "FAIL through detshare: $(grep registered "$dir/probe.out")" >> "$summary"
    failed=1
fi
cat "$out/native.txt" "$out/detshare.txt" "$summary" 2>/dev/null
exit $failed
