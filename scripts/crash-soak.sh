#!/usr/bin/env bash
# Crash soak: against one sim server, N cycles of a tenant SIGKILLed at a random point of
# its work (mid-copy, mid-launch, mid-capture, holding pinned memory, or still
# connecting), while a well-behaved tenant copies known bytes in and out and checks them.
# After each kill, within SETTLE_S seconds: the tenant has left `detshare-ctl status`, the
# tenants' memory and the sim's free memory (cuMemGetInfo) are back to what they were, no
# executor serves it (the server's children are the warm pool and the good tenant's), and
# the server holds as many descriptors, memfds and shared mappings (memfds, shared memory:
# anonymous ones come and go with malloc and ASan's allocator) as before.  Fails at the first
# cycle that does not come back, saying what did not; at the end, the server must exit
# cleanly with no sanitizer report in its log.  docs/reliability.md has recorded runs.
#
# usage: crash-soak.sh [--cycles N] [--seconds S] [--seed N] SERVER CTL SOAK_TENANT FATBIN
#   SERVER, CTL: detshare-server and detshare-ctl; SOAK_TENANT: tests/soak_tenant.c built;
#   FATBIN: tests/kernels/launch.cu built (build/tests/kernels/launch.fatbin).
#   --cycles N (default 200); --seconds S stops early after S seconds (default none).
set -euo pipefail

cycles=200 seconds=0 seed=$((RANDOM * 32768 + RANDOM))
SETTLE_S=${SETTLE_S:-10}
while [ $# -gt 0 ]; do
    case $1 in
    --cycles) cycles=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    -h | --help) sed -n '2,16p' "$0"; exit 0 ;;
    *) break ;;
    esac
done
[ $# -eq 4 ] || { sed -n '12,16p' "$0" >&2; exit 2; }
server=$1 ctl=$2 tenant=$3 fatbin=$4
RANDOM=$seed

tmp=$(mktemp -d /tmp/ds-soak.XXXXXX)
spid= gpid=
cleanup() {
    [ -z "$gpid" ] || kill -KILL "$gpid" 2>/dev/null || true
    if [ -n "$spid" ]; then
        kill -TERM "$spid" 2>/dev/null || true
        wait "$spid" 2>/dev/null || true
    fi
    rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
    echo "crash-soak: FAIL (seed $seed): $*" >&2
    echo "--- server log (last 40 lines)" >&2
    tail -n 40 "$tmp/server.log" >&2 || true
    exit 1
}

sock=$tmp/ds.sock
export DETSHARE_SERVER=unix:$sock
status() { "$ctl" --admin "unix:$sock.admin" status --json; }
# The server's own resources, as one comparable line.
resources() {
    local fds memfds shared execs
    fds=$(ls "/proc/$spid/fd" | wc -l)
    memfds=$(find "/proc/$spid/fd" -lname '*memfd:*' 2>/dev/null | wc -l)
    shared=$(awk '$2 ~ /s/' "/proc/$spid/maps" | wc -l)
    execs=$(pgrep -P "$spid" | wc -l)
    echo "fds=$fds memfds=$memfds shared-maps=$shared executors=$execs"
}
# Tenants other than the good one, and every tenant's memory_used summed.
others() { status | jq '[.tenants[] | select(.name != "good")] | length'; }
tenant_memory() { status | jq '[.tenants[].memory_used] | add // 0'; }
sim_free() { DETSHARE_TENANT=probe "$tenant" meminfo | cut -d' ' -f1; }
now_ms() { date +%s%3N; }

"$server" --device sim --sim-memory 2G --warm 1 --listen "unix:$sock" 2>"$tmp/server.log" &
spid=$!
for _ in $(seq 200); do
    [ -S "$sock.admin" ] && break
    kill -0 "$spid" 2>/dev/null || fail "the server did not start"
    sleep 0.05
done

DETSHARE_TENANT=good "$tenant" good "$tmp/good.ready" "$tmp/good.stop" >"$tmp/good.out" \
    2>"$tmp/good.err" &
gpid=$!
for _ in $(seq 200); do
    [ -e "$tmp/good.ready" ] && break
    kill -0 "$gpid" 2>/dev/null || fail "the good tenant did not start: $(cat "$tmp/good.err")"
    sleep 0.05
done

# Wait until nothing but the good tenant (and the warm pool) is left and the server's
# resources read `want`; $1 names the cycle for the failure message.
settle() {
    local what=$1 want=$2 deadline got o m
    deadline=$(($(now_ms) + SETTLE_S * 1000))
    while :; do
        o=$(others) m=$(tenant_memory) got=$(resources)
        if [ "$o" -eq 0 ] && [ "$m" -eq "$base_mem" ] && [ "$got" = "$want" ] &&
            { [ -z "$epid" ] || [ ! -e "/proc/$epid" ]; }; then
            return 0
        fi
        [ "$(now_ms)" -lt "$deadline" ] ||
            fail "$what: after ${SETTLE_S}s: other tenants $o, tenants' memory $m (was" \
                "$base_mem), resources $got (were $want), executor ${epid:-?}" \
                "$([ -n "$epid" ] && [ -e "/proc/$epid" ] && echo "still there" || echo gone)"
        sleep 0.02
    done
}

epid=
base_mem=$(tenant_memory)
# The warm pool refills in the background: take the baseline once it has.
sleep 0.5
base_free=$(sim_free)
sleep 0.2
base_res=$(resources)
settle "baseline" "$base_res"
echo "crash-soak: seed $seed, baseline: $base_res, tenants' memory $base_mem," \
    "sim free $base_free"

modes=(copy launch capture pinned)
declare -A killed
early=0 done_cycles=0
t0=$(now_ms)
for ((i = 0; i < cycles; i++)); do
    if [ "$seconds" -gt 0 ] && [ $(($(now_ms) - t0)) -ge $((seconds * 1000)) ]; then
        break
    fi
    mode=${modes[RANDOM % ${#modes[@]}]}
    ready=$tmp/victim.ready epid=
    rm -f "$ready"
    DETSHARE_TENANT=victim-$i "$tenant" "$mode" "$ready" "$fatbin" >/dev/null \
        2>"$tmp/victim.err" &
    vpid=$!
    if [ $((RANDOM % 5)) -eq 0 ]; then
        # Before it reaches its loop: connecting, allocating, loading the module.
        sleep "0.0$((RANDOM % 40 + 10))"
        mode=early
        early=$((early + 1))
    else
        for _ in $(seq 500); do
            [ -e "$ready" ] && break
            kill -0 "$vpid" 2>/dev/null || fail "cycle $i: $mode tenant died: $(cat "$tmp/victim.err")"
            sleep 0.01
        done
        [ -e "$ready" ] || fail "cycle $i: $mode tenant never reached its loop"
        epid=$(status | jq -r --arg n "victim-$i" '.tenants[] | select(.name == $n) | .pid')
        sleep "0.$(printf %03d $((RANDOM % 150)))"
    fi
    kill -KILL "$vpid" 2>/dev/null || fail "cycle $i: $mode tenant exited before its kill: $(cat "$tmp/victim.err")"
    wait "$vpid" 2>/dev/null || true
    killed[$mode]=$((${killed[$mode]:-0} + 1))
    settle "cycle $i ($mode)" "$base_res"
    free=$(sim_free)
    [ "$free" -eq "$base_free" ] || fail "cycle $i ($mode): sim free memory $free, was $base_free"
    epid=
    settle "cycle $i ($mode), after the probe" "$base_res"
    kill -0 "$gpid" 2>/dev/null || fail "cycle $i: the good tenant failed: $(cat "$tmp/good.err")"
    done_cycles=$((i + 1))
done
elapsed=$(($(now_ms) - t0))

touch "$tmp/good.stop"
rc=0
wait "$gpid" || rc=$?
gpid=
[ "$rc" -eq 0 ] || fail "the good tenant exited with $rc: $(cat "$tmp/good.err")"
rounds=$(cat "$tmp/good.out")
kill -TERM "$spid"
rc=0
wait "$spid" || rc=$?
spid=
[ "$rc" -eq 0 ] || fail "the server exited with $rc"
if grep -E "ERROR: (Address|Leak)Sanitizer|runtime error:" "$tmp/server.log" >&2; then
    fail "sanitizer report in the server log"
fi
# A killed tenant disconnected: nothing it sent may be taken for a broken protocol.
if grep -E "not an RPC call of ours|left: protocol" "$tmp/server.log" >&2; then
    fail "a killed tenant was logged as breaking the protocol"
fi
summary=
for m in copy launch capture pinned early; do
    summary+=" $m=${killed[$m]:-0}"
done
echo "crash-soak: ok: $done_cycles cycles in $((elapsed / 1000)).$((elapsed % 1000 / 100))s," \
    "kills:$summary; good tenant: $rounds rounds checked; no leaks (seed $seed)"
