#!/usr/bin/env bash
# A program run many times natively and many times through detshare, alternately, in
# one sitting: tells a path that is not deterministic run to run from one that differs
# from native (issue 29's cuSPARSE product).  Same environment as run.sh (BUILD, OUT,
# PYTHON, MPS, CAP); REPEATS runs each way (default 10); WHAT the programs of
# programs.py (default sparse).  Prints, per program and way, each distinct output line
# with how many runs printed it, and writes repeat-<gpu>-<date>.json.  GPU box only.
set -u -o pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo" || exit 1
build=$(cd "${BUILD:-build-gpu}" && pwd) || exit 1
out=${OUT:-$repo/lab/results}
mkdir -p "$out" && out=$(cd "$out" && pwd) || exit 1
python=${PYTHON:-python3}
repeats=${REPEATS:-10}
[ -d .dev/libs ] && export LD_LIBRARY_PATH="$repo/.dev/libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PYTHONUNBUFFERED=1 XLA_FLAGS=--xla_gpu_autotune_level=0
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1) || { echo "repeat.sh: no GPU" >&2; exit 1; }
slug=$(echo "$gpu" | tr '[:upper:]' '[:lower:]' | sed -e 's/^nvidia //' -e 's/[^a-z0-9]\+/-/g')
tmp=$(mktemp -d)
"$build/server/detshare-server" --device cuda --mps "${MPS:-start}" --listen "unix:$tmp/s" \
    2> "$out/repeat-server.log" &
srv=$!
trap 'kill -TERM $srv 2> /dev/null; wait $srv; rm -rf "$tmp"' EXIT
for _ in $(seq 400); do [ -S "$tmp/s" ] && break; sleep 0.05; done
: > "$tmp/runs.tsv"
for prog in ${WHAT:-sparse}; do
    for i in $(seq "$repeats"); do
        for mode in native detshare; do
            env=()
            [ "$mode" = detshare ] && env+=(DETSHARE_SERVER="unix:$tmp/s" DETSHARE_TENANT="repeat-$prog"
                LD_LIBRARY_PATH="$build/client:${LD_LIBRARY_PATH:-}")
            line=$(env "${env[@]}" timeout "${CAP:-120}" "$python" bench/breadth/programs.py "$prog" \
                2>> "$out/repeat-$prog-$mode.err" | tail -1)
            printf '%s\t%s\t%s\n' "$prog" "$mode" "${line:-<none: exit $?>}" >> "$tmp/runs.tsv"
        done
    done
done
sort "$tmp/runs.tsv" | uniq -c | sed 's/^ *//' | tee "$out/repeat-summary.txt"
"$python" - "$tmp/runs.tsv" "$gpu" > "$out/repeat-$slug-$(date -u +%Y-%m-%d).json" <<'PY'
import collections, json, sys
runs = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])]
c = collections.Counter((p, m, line) for p, m, line in runs)
print(json.dumps({"device": sys.argv[2], "runs": [{"program": p, "mode": m, "line": line, "count": n}
                                                   for (p, m, line), n in sorted(c.items())]}, indent=1))
PY
