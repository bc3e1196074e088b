#!/usr/bin/env bash
# The blast radius of one tenant's GPU fault through detshare (issue 24).  Per round: N
# victims run ~1 ms kernels back to back and check each (bench/fault/faultprobe.cu
# victim), one tenant writes through a wild pointer 2.5 s in; once it has exited, a new
# tenant starts its first kernel, again until it succeeds (recovery).  Scenarios:
#   default     a default server: every tenant in the shared MPS domain
#   own         the culprit's name has isolation=own (its quota rule)
#   quarantine  three rounds on one server: after the first fault every tenant that
#               lost its context is on probation (a domain of its own); in the second
#               the culprit faults alone and is found and quarantined, the others
#               cleared; in the third the victims share the domain again
#   mps-off     --mps off: every tenant has its own context, taking turns
#   group       the culprit's name has isolation=group:g1 (a named domain: an MPS daemon
#               of its own, started when it connects), the victims are shared
# Usage: blast.sh FAULTPROBE BUILD [REPEATS] [N].  SCENARIOS="group ..." runs only those
# (default: all, in the order above).  Writes $OUT/blast.jsonl (one line per round: who
# survived, what the server said, recovery time) and $OUT/blast-logs.tgz.
set -u
fp=$(readlink -f "$1"); build=$(readlink -f "$2"); repeats=${3:-3}; n=${4:-4}
out=${OUT:-/tmp/ds-out}; mkdir -p "$out"
w=$(mktemp -d); logs=$w/logs; mkdir -p "$logs"
res=$out/blast.jsonl; : > "$res"
# Only the tenants get detshare's libcuda: the server's executors need the driver's.
tenant_libs="$build/client${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

start_server() { # name args...
    local name=$1; shift
    rm -f "$w/s"
    "$build/server/detshare-server" --device cuda --listen "unix:$w/s" --mps-dir "$w/mps" "$@" \
        2> "$logs/$name.server.log" &
    srv=$!
    for _ in $(seq 400); do [ -S "$w/s" ] && break; sleep 0.05; done
    sleep 1
}
stop_server() { kill -TERM $srv; wait $srv; }
tenant() { # name args...
    local name=$1; shift
    LD_LIBRARY_PATH=$tenant_libs DETSHARE_SERVER=unix:$w/s DETSHARE_TENANT=$name "$fp" "$@" \
        2> "$logs/$tag.$name.err" | tail -1
}
round() { # scenario repeat round
    local s=$1 r=$2 k=$3 i pids=() probe tries=0 off
    tag=$s.$r.$k
    off=$(stat -c %s "$logs/$s.$r.server.log")
    for i in $(seq "$n"); do tenant "victim-$i" victim 8 > "$w/v$i" & pids+=($!); done
    sleep 0.5
    tenant wild wild 2500 > "$w/wild"
    while :; do
        tries=$((tries + 1))
        probe=$(tenant probe first)
        echo "$probe" | grep -q '"error": "cudaSuccess"' && break
        [ $tries -ge 60 ] && break
        sleep 0.2
    done
    wait "${pids[@]}"
    python3 - "$s" "$r" "$k" "$n" "$w" "$probe" "$tries" "$logs/$s.$r.server.log" "$tag" "$logs" "$off" <<'PY' >> "$res"
import json, sys, glob, re
s, r, k, n, w, probe, tries, log, tag, logs, off = sys.argv[1:]
n = int(n)
def last(path):
    try:
        lines = [l for l in open(path) if l.startswith("{")]
        return json.loads(lines[-1]) if lines else {}
    except OSError:
        return {}
victims = [last(f"{w}/v{i}") for i in range(1, n + 1)]
wild = last(f"{w}/wild")
p = json.loads(probe) if probe.startswith("{") else {}
text = open(log).read()[int(off):]
told = sum("context lost" in open(f).read() for f in glob.glob(f"{logs}/{tag}.victim-*.err"))
launch = None
for l in open(f"{w}/wild"):
    if '"wild-launch"' in l:
        launch = json.loads(l)["at_ns"]
print(json.dumps({
    "scenario": s, "repeat": int(r), "round": int(k), "victims": n,
    "victims_survived": sum(v.get("error") == "cudaSuccess" for v in victims),
    "victim_errors": [v.get("error") for v in victims],
    "wild_error": wild.get("error"),
    "recovery_ms": round((p["end_ns"] - launch) / 1e6, 1) if p.get("error") == "cudaSuccess" and launch else None,
    "recovery_tries": int(tries),
    "log_own_fault": text.count("its own kernel faulted"),
    "log_lost_to_named": text.count("lost its context to tenant"),
    "log_unattributed": text.count("which one cannot be told"),
    "log_quarantined": text.count("is quarantined"),
    "log_probation": text.count("is on probation"),
    "log_culprit_found": text.count("it is the culprit"),
    "log_no_mps_client": text.count("not an MPS client although"),
    "victims_told_on_stderr": told,
    "log_group_daemon_up": text.count("the control daemon of group g1 takes clients"),
}))
PY
}

printf 'quota wild isolation=own\n' > "$w/own.conf"
printf 'quota wild isolation=group:g1\n' > "$w/group.conf"
for r in $(seq "$repeats"); do
    for s in ${SCENARIOS:-default own quarantine mps-off group}; do
        case $s in
        default) start_server "default.$r"; round default "$r" 1; stop_server ;;
        own) start_server "own.$r" --config "$w/own.conf"; round own "$r" 1; stop_server ;;
        quarantine)
            start_server "quarantine.$r" --quarantine 10m; round quarantine "$r" 1; sleep 1.5
            round quarantine "$r" 2; sleep 1.5; round quarantine "$r" 3; stop_server ;;
        mps-off) start_server "mps-off.$r" --mps off; round mps-off "$r" 1; stop_server ;;
        group)
            start_server "group.$r" --config "$w/group.conf"; round group "$r" 1; stop_server
            # The group's daemon must be gone with the server (its pid file with it).
            [ -e "$w/mps/group-g1/daemon.pid" ] && echo "group.$r: g1's daemon outlived the server" >&2 ;;
        *) echo "unknown scenario $s" >&2; exit 2 ;;
        esac
    done
done
tar czf "$out/blast-logs.tgz" -C "$w" logs
cat "$res"
