#!/usr/bin/env bash
# detshare against the native driver in one run on one machine: every figure natively,
# through detshare over a Unix socket, and over TCP loopback, all tenants served by one
# warm server.  Writes to $OUT (default lab/results):
#   overhead-<device>-<date>.json, .md (table with targets), .png (where matplotlib is),
#   overhead-<device>-<date>-raw.tar.gz (every run's output and stderr, the server's log).
#
#   BUILD=build-gpu bash bench/overhead/run.sh   # GPU box: driver API and PyTorch parts
#   BUILD=build bash bench/overhead/run.sh       # no GPU: the sim device, driver API only
#
# Environment: BUILD (build directory, default build), OUT, DEVICE (auto|cuda|sim; auto
# takes the GPU when nvidia-smi sees one), PYTHON (default python3), TORCH=0 (skip the
# PyTorch part), TORCH_CAP (seconds per PyTorch workload and mode, default 150), COPY_MIB
# (large-copy size; 256 on a GPU, 16 on the sim, whose copies cross the socket at a few
# GB/s), MPS (the server's --mps, default off: one tenant at a time, as natively; runs A
# and B of 2026-11-22 predate the option and ran without MPS).
# A failed or hung tenant run is recorded (exit status, stderr tail) and the suite goes on.
set -uo pipefail
export LC_ALL=C

repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo" || exit 1
build=$(cd "${BUILD:-build}" && pwd) || { echo "run.sh: no build directory ${BUILD:-build}" >&2; exit 1; }
out=${OUT:-$repo/lab/results}
mkdir -p "$out" && out=$(cd "$out" && pwd) || exit 1
python=${PYTHON:-python3}
bench=$build/bench/driver_bench
here=$repo/bench/overhead
# Bundled libraries of a GPU box (lab/gpu-runs.md): for the server and the client.
if [ -d .dev/libs ]; then export LD_LIBRARY_PATH="$repo/.dev/libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; fi

device=${DEVICE:-auto}
if [ "$device" = auto ]; then
    if nvidia-smi -L > /dev/null 2>&1; then device=cuda; else device=sim; fi
fi
case $device in cuda | sim) ;; *) echo "run.sh: DEVICE is auto, cuda or sim, not $device" >&2; exit 1 ;; esac
[ -x "$bench" ] || { echo "run.sh: $bench is not built (it needs nvcc at build time)" >&2; exit 1; }
if [ "$device" = cuda ]; then
    gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
    driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)
    slug=$(echo "$gpu" | tr '[:upper:]' '[:lower:]' | sed -e 's/^nvidia //' -e 's/[^a-z0-9]\+/-/g' -e 's/^-//;s/-$//')
    slug=${slug:-gpu}
    modes=(native unix tcp tls)
    copy_mib=${COPY_MIB:-256} limit=300 nrounds=${ROUNDS:-3}
else
    driver="none (sim device)" slug=sim
    # The sim cannot run a program natively: detshare columns only.
    modes=(unix tcp tls)
    copy_mib=${COPY_MIB:-16} limit=120 nrounds=${ROUNDS:-1}
fi
model_rounds=${MODEL_ROUNDS:-$nrounds}
parts=${PARTS:-micro startup idle torch-micro torch-resnet50 torch-gpt2 torch-decode}
date_utc=$(date -u +%Y-%m-%dT%H:%M:%SZ)
name=overhead-$slug-${date_utc%%T*}
raw=$out/$name-raw
rm -rf "$raw" && mkdir -p "$raw" || exit 1

tmp=$(mktemp -d)
sock=$tmp/ds.sock
port=$("$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
srv=
trap '[ -n "$srv" ] && kill -TERM "$srv" 2> /dev/null; rm -rf "$tmp"' EXIT

# TCP tenants show a token, as in production.
(umask 077; echo "overhead-$$-$RANDOM" > "$tmp/tokens")
# The tls column: TCP tenants with TLS 1.3 to a self-signed certificate they trust.
tls_args=()
if openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
        -subj /CN=overhead -addext subjectAltName=IP:127.0.0.1 -keyout "$tmp/tls.key" \
        -out "$tmp/tls.pem" 2> /dev/null; then
    tls_args=(--tls-cert "$tmp/tls.pem" --tls-key "$tmp/tls.key")
else
    echo "run.sh: no openssl to make a certificate: no tls column" >&2
    kept=()
    for m in "${modes[@]}"; do [ "$m" = tls ] || kept+=("$m"); done
    modes=("${kept[@]}")
fi

start_server() {
    "$build/server/detshare-server" --device "$device" --mps "${MPS:-off}" --listen "unix:$sock" \
        --listen "tcp:127.0.0.1:$port" --token-file "$tmp/tokens" "${tls_args[@]}" \
        2> "$raw/server.log" &
    srv=$!
    for _ in $(seq 600); do
        [ -S "$sock" ] && kill -0 "$srv" 2> /dev/null && return 0
        kill -0 "$srv" 2> /dev/null || break
        sleep 0.05
    done
    echo "run.sh: detshare-server did not start; its log:" >&2
    tail -20 "$raw/server.log" >&2
    exit 1
}

# Sets envs to what a tenant of MODE runs with; native adds nothing.
tenant_env() {
    envs=()
    case $2 in
    native) return ;;
    unix) envs=(DETSHARE_SERVER="unix:$sock") ;;
    tcp) envs=(DETSHARE_SERVER="tcp:127.0.0.1:$port" DETSHARE_TOKEN_FILE="$tmp/tokens") ;;
    tls) envs=(DETSHARE_SERVER="tcp:127.0.0.1:$port" DETSHARE_TOKEN_FILE="$tmp/tokens"
               DETSHARE_TLS_CA="$tmp/tls.pem") ;;
    esac
    envs+=(LD_LIBRARY_PATH="$build/client${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
           DETSHARE_TENANT="overhead-$1-$2")
}

# record PART MODE RC START ROUND: one line of runs.jsonl, and one on the console.
record() {
    local secs
    secs=$(awk -v a="$4" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }')
    printf '{"part": "%s", "mode": "%s", "round": %d, "rc": %d, "seconds": %s}\n' \
        "$1" "$2" "$5" "$3" "$secs" >> "$raw/runs.jsonl"
    if [ "$3" -eq 0 ]; then
        printf '  %-16s %-6s r%-2d ok       %6ss\n' "$1" "$2" "$5" "$secs"
    else
        printf '  %-16s %-6s r%-2d FAILED   %6ss  exit %s: %s\n' "$1" "$2" "$5" "$secs" "$3" \
            "$(tail -1 "$raw/$1.$2.r$5.err")"
    fi
}

# tenant PART MODE LIMIT CMD...: one run under timeout, output to PART.MODE.{out,err}.
# tenant PART MODE ROUND LIMIT CMD...: one run under timeout, output to
# PART.MODE.rROUND.{out,err}.
tenant() {
    local part=$1 mode=$2 round=$3 lim=$4 t0
    shift 4
    tenant_env "$part" "$mode"
    t0=$EPOCHREALTIME
    env "${envs[@]}" timeout -k 10 "$lim" "$@" > "$raw/$part.$mode.r$round.out" \
        2> "$raw/$part.$mode.r$round.err"
    record "$part" "$mode" $? "$t0" "$round"
}

# rounds PART N LIMIT CMD...: N rounds of every mode, each round in another order.
rounds() {
    local part=$1 n=$2 lim=$3 r i k
    shift 3
    for ((r = 1; r <= n; r++)); do
        for ((i = 0; i < ${#modes[@]}; i++)); do
            k=$(( (i + r - 1) % ${#modes[@]} ))
            tenant "$part" "${modes[$k]}" "$r" "$lim" "$@"
        done
    done
}

# Whether PART is among those asked for.
wanted() {
    case " $parts " in *" $1 "*) return 0 ;; esac
    return 1
}

# The executor serving a tenant is the server's child that was not there before it.
executor_rss() {
    local before=" $1 " p kb total=0 n=0
    for p in $(pgrep -P "$srv"); do
        case $before in *" $p "*) continue ;; esac
        kb=$(awk '/^VmRSS:/ { print $2 }' "/proc/$p/status" 2> /dev/null) || continue
        total=$((total + ${kb:-0})) n=$((n + 1))
    done
    if [ "$n" -gt 0 ]; then
        awk -v kb="$total" -v n="$n" \
            'BEGIN { printf "{\"metric\": \"executor_rss_mib\", \"value\": %.1f, \"unit\": \"MiB\", \"n\": %d}\n", kb / 1024, n }'
    else
        echo "run.sh: no new executor found among the server's children" >&2
    fi
}

# idle MODE: a tenant that only initialised, left running while its RSS (it prints its
# own) and its executor's are read; SIGTERM is its normal end.
idle() {
    local mode=$1 o=$raw/idle.$1.r1.out before pid t0
    tenant_env idle "$mode"
    before=$(pgrep -P "$srv" | tr '\n' ' ')
    t0=$EPOCHREALTIME
    env "${envs[@]}" timeout -k 5 90 "$bench" idle 80 > "$o" 2> "$raw/idle.$mode.r1.err" &
    pid=$!
    for _ in $(seq 600); do
        grep -q tenant_rss "$o" && break
        kill -0 "$pid" 2> /dev/null || break
        sleep 0.1
    done
    # A moment for the executor to settle after the tenant's last call.
    sleep 0.5
    if [ "$mode" != native ]; then executor_rss "$before" >> "$o" 2>> "$raw/idle.$mode.r1.err"; fi
    kill -TERM "$pid" 2> /dev/null
    wait "$pid"
    record idle "$mode" $? "$t0" 1
}

echo "bench/overhead: device $device${gpu:+ ($gpu)}, build $build, modes ${modes[*]}"
echo "  results: $out/$name.{json,md,png}"
start_server
# The loopback's own TCP costs, once: the floor the tcp column is read against.
if wanted micro && [ -x "$build/bench/loopback_bench" ]; then
    tenant loopback native 1 "$limit" "$build/bench/loopback_bench"
fi
if wanted micro; then rounds micro "$nrounds" "$limit" "$bench" -r 5 -s "$copy_mib" micro; fi
if wanted startup; then rounds startup 1 "$limit" "$bench" -r 10 startup; fi
if wanted idle; then for m in "${modes[@]}"; do idle "$m"; done; fi
if [ "$device" = cuda ] && [ "${TORCH:-1}" != 0 ]; then
    # One process per workload, mode and round, so that a crash loses only that figure;
    # each workload's loops stop early after TORCH_CAP s, well inside its 300 s limit.
    for what in micro resnet50 gpt2 decode; do
        n=$model_rounds
        [ "$what" = micro ] && n=$nrounds
        wanted "torch-$what" || continue
        rounds "torch-$what" "$n" 300 "$python" "$here/torch_bench.py" --what "$what" \
            --cap "${TORCH_CAP:-150}"
    done
fi
kill -TERM "$srv"
wait "$srv"
server_exit=$?
srv=
echo "  server exit $server_exit"

"$python" "$here/report.py" "$raw" "$out/$name" --device-kind "$device" --date-utc "$date_utc" \
    --driver "$driver" --build "${build#"$repo"/}" --server-exit "$server_exit" \
    --host-cpu "$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)" \
    --commit "${COMMIT:-$(git -C "$repo" describe --always --dirty 2> /dev/null || echo unknown)}"
# One archive rather than dozens of files: the GPU box's $OUT brings back only a few.
tar -czf "$raw.tar.gz" -C "$out" "$name-raw" && rm -rf "$raw"
cat "$out/$name.md"
