#!/usr/bin/env bash
# What the sharing mechanism costs on a GPU box (issue 8's figures; lab/gpu-runs.md),
# each part with its own server under its own MPS daemon and the measuring policy
# policy_pulse.c:
#   moves  a tenant of burn.cu alone, on half the SMs, moved between the two halves every
#          PULSE_MS (default 10: 100 moves a second) against the same tenant never moved,
#          ROUNDS times each, alternating; and each move's time from the executors' logs;
#   gate   gatelat.cu's kernel start times against the times the gate closed and opened
#          (every PULSE_MS): how long after a close kernels still started, and how long
#          after an open they resumed;
#   fault  wild.cu writes through a wild pointer while steady.cu runs beside it; then a
#          new tenant runs: both must get right answers and the server must go on.
# MPS (default start) is the server's --mps for every part: `off` shows what a fault does
# to a neighbour when tenants time-slice instead of sharing one MPS server.
# Expects build-gpu (and .dev/libs where the box lacks libraries); writes $OUT/mechanism:
# mechanism_report.py's JSON and Markdown, and raw.tar.gz (logs, raw figures).  Every
# tenant runs under a time limit (TENANT_LIMIT, default 120 s).
set -u
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo" || exit 1
out=${OUT:-/tmp/ds-out}/mechanism
mkdir -p "$out"
export LD_LIBRARY_PATH="$repo/.dev/libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
here=bench/sharing
pulse_ms=${PULSE_MS:-10} rounds=${ROUNDS:-3} parts=${PARTS:-moves gate fault}
cc -std=c11 -O2 -shared -fPIC -I include -o "$out/pulse.so" $here/policy_pulse.c || exit 1
for p in burn gatelat wild steady; do
    nvcc -O2 -arch=native -o "$out/$p" $here/$p.cu || exit 1
done
dir=$(mktemp -d)
srv=
trap '[ -n "$srv" ] && kill -TERM $srv 2> /dev/null; rm -rf "$dir"' EXIT

# serve LABEL PULSE: a server with the pulse policy in mode PULSE, or with the built-in
# policy PULSE when it is not one of the pulse's.
serve() {
    local policy=$out/pulse.so
    case $2 in fixed | flip | gate) ;; *) policy=$2 ;; esac
    rm -f "$dir/s"
    DS_PULSE=$2 DS_PULSE_MS=$pulse_ms ./build-gpu/server/detshare-server --device cuda \
        --mps "${MPS:-start}" --mps-dir "$dir/mps-$1" --policy "$policy" --listen "unix:$dir/s" \
        2> "$out/server-$1.log" &
    srv=$!
    for _ in $(seq 400); do [ -S "$dir/s" ] && break; sleep 0.05; done
    sleep 1
}
unserve() { kill -TERM $srv; wait $srv; served=$?; srv=; }
# tenant NAME CMD...: one tenant through the server.
tenant() {
    local name=$1
    shift
    DETSHARE_TENANT=$name DETSHARE_SERVER="unix:$dir/s" \
        LD_LIBRARY_PATH="$repo/build-gpu/client:$LD_LIBRARY_PATH" timeout -k 5 "${TENANT_LIMIT:-120}" "$@"
}

case " $parts " in *" moves "*)
    for r in $(seq "$rounds"); do
        for m in fixed flip; do
            serve "moves-$m-r$r" "$m"
            tenant "moves-$m" "$out/burn" "${BLOCKS:-1056}" "${ITERS:-2000}" "${REPEATS:-20000}" \
                > "$out/moves-$m-r$r.json"
            unserve
        done
    done ;;
esac
case " $parts " in *" gate "*)
    serve gate gate
    tenant gate "$out/gatelat" "${LAUNCHES:-200000}" > "$out/gate-starts.txt"
    echo "exit $?" >> "$out/gate-exit.txt"
    unserve ;;
esac
case " $parts " in *" fault "*)
    serve fault shared
    tenant steady "$out/steady" "${STEADY_ITERS:-300000}" > "$out/fault-steady.json" &
    s=$!
    sleep 1
    tenant wild "$out/wild" > "$out/fault-wild.json"
    echo "wild exit $?" > "$out/fault-exits.txt"
    wait $s
    echo "steady exit $?" >> "$out/fault-exits.txt"
    tenant after "$out/steady" 100 > "$out/fault-after.json"
    echo "after exit $?" >> "$out/fault-exits.txt"
    unserve
    echo "server exit $served" >> "$out/fault-exits.txt" ;;
esac
python3 $here/mechanism_report.py "$out"
# The box brings back only a few files: the logs and raw figures go in one archive.
(cd "$out" && tar czf raw.tar.gz --exclude raw.tar.gz --exclude 'mechanism.*' ./*.log ./*.json ./*.txt 2> /dev/null &&
    find . -maxdepth 1 -type f ! -name raw.tar.gz ! -name 'mechanism.*' -delete)
