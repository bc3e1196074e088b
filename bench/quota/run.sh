#!/usr/bin/env bash
# The memory quota's cost (docs/admin.md, "Quotas"): the check alone, inside the
# executor's code, and allocations per second of a tenant through a sim server without
# and with a quota for it (through a server, the round trip dominates: compare the best
# of several runs).
#   BUILD=build bash bench/quota/run.sh
set -euo pipefail
export LC_ALL=C

repo=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${BUILD:-$repo/build}" && pwd)
tmp=$(mktemp -d)
srv=
trap '[ -n "$srv" ] && kill -TERM "$srv" 2> /dev/null; wait; rm -rf "$tmp"' EXIT

"$build/bench/quota_check_bench"

# One sim server per case; the tenant is alone on it.
alloc() {
    local config=$1
    printf '%s\n' "$config" > "$tmp/detshare.conf"
    "$build/server/detshare-server" --device sim --mps off --warm 1 --listen "unix:$tmp/ds.sock" \
        --config "$tmp/detshare.conf" 2> "$tmp/server.log" &
    srv=$!
    for _ in $(seq 100); do [ -S "$tmp/ds.sock" ] && break; sleep 0.05; done
    LD_LIBRARY_PATH="$build/client" DETSHARE_SERVER="unix:$tmp/ds.sock" DETSHARE_TENANT=bench-1 \
        "$build/bench/quota_alloc_bench"
    kill -TERM "$srv"
    wait "$srv" || true
    srv=
}
# Alternated, REPEAT times each (default 3): on a loaded machine, compare the best.
for _ in $(seq "${REPEAT:-3}"); do
    printf 'no quota:         '
    alloc "# none"
    printf 'quota (64GiB):    '
    alloc "quota bench-* memory=64GiB"
done
