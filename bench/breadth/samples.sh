#!/usr/bin/env bash
# NVIDIA's CUDA sample programs (bench/breadth/samples.list), each built with static and
# with shared cudart, run natively and then as tenants of one detshare-server: per program
# and build, the exit status, whether it passed, and whether its output (timings,
# addresses, device names and detshare's log lines taken out: samples.py) is identical to
# the native run's.  GPU box only; the samples are built outside the repository
# (bench/breadth/README.md).
#
# usage: samples.sh [--build DIR] [--bin DIR|TARBALL] [--out DIR] [--only "NAME..."]
#                   [--cudart static|shared|both] [--jobs N] [--timeout SECONDS] [--native-twice]
#   --build    detshare build with server/detshare-server and client/libcuda.so.1
#              (default build-gpu)
#   --bin      the samples: DIR/{static,shared}/NAME/NAME, or a .tar.xz of such a DIR
#              (default .dev/samples/bin, else .dev/samples/bin.tar.xz)
#   --out      where samples.jsonl, samples.md, server.log and runs/ go (default $OUT,
#              else /tmp/samples-out)
#   --jobs     programs run at once (default 3); each program's runs are in sequence
#   --native-twice  run each natively a second time, to tell output that varies natively
# Environment: DEVICE (the server's --device, default cuda), MPS (its --mps, default
# start), CUDA_LIB (the toolkit's libraries, default /usr/local/cuda/lib64), COMMIT.
# Exit status: 0 when every program ran identical to native, 1 when some did not, 2 for
# bad arguments or a server that did not start.
set -u -o pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
usage() { sed -n '/^# usage:/,/^#   --native-twice/p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
die() { echo "samples.sh: $*" >&2; exit 2; }

build=$repo/build-gpu
bin=
out=${OUT:-/tmp/samples-out}
only=
cudart="static shared"
jobs=3
cap=60
twice=
while [ $# -gt 0 ]; do
    [ "$1" = --native-twice ] && { twice=1; shift; continue; }
    [ $# -ge 2 ] || case $1 in -h|--help) usage ;; *) die "$1 needs a value (or is unknown)" ;; esac
    case $1 in
        --build) build=$2 ;;
        --bin) bin=$2 ;;
        --out) out=$2 ;;
        --only) only=$2 ;;
        --cudart) case $2 in static|shared) cudart=$2 ;; both) cudart="static shared" ;;
                  *) die "--cudart: static, shared or both, not '$2'" ;; esac ;;
        --jobs) jobs=$2; [[ $jobs =~ ^[1-9][0-9]?$ ]] || die "--jobs: 1 to 99, not '$2'" ;;
        --timeout) cap=$2; [[ $cap =~ ^[1-9][0-9]{0,3}$ ]] || die "--timeout: seconds, not '$2'" ;;
        *) die "unknown option '$1'" ;;
    esac
    shift 2
done
[ -n "$bin" ] || { bin=$repo/.dev/samples/bin; [ -d "$bin" ] || bin=$repo/.dev/samples/bin.tar.xz; }
[ -x "$build/server/detshare-server" ] || die "no $build/server/detshare-server (--build)"
[ -e "$build/client/libcuda.so.1" ] || die "no $build/client/libcuda.so.1 (--build)"
build=$(cd "$build" && pwd)
mkdir -p "$out" && out=$(cd "$out" && pwd) || die "cannot make $out"
tmp=$(mktemp -d)
srv=
trap '[ -n "$srv" ] && kill -TERM $srv 2> /dev/null && wait $srv; rm -rf "$tmp"' EXIT
if [ -f "$bin" ]; then
    mkdir "$tmp/bin" && tar xJf "$bin" -C "$tmp/bin" || die "cannot unpack $bin"
    bin=$tmp/bin
    [ -d "$bin/static" ] || [ -d "$bin/shared" ] || bin=$(echo "$tmp"/bin/*)
fi
for rt in $cudart; do [ -d "$bin/$rt" ] || die "no $bin/$rt (--bin: DIR/{static,shared}/NAME/NAME)"; done
bin=$(cd "$bin" && pwd)

# The programs: samples.list, narrowed by --only.
grep -v -e '^#' -e '^$' "$here/samples.list" | while IFS='|' read -r name args flags _; do
    [ -z "$only" ] || [[ " $only " == *" $name "* ]] || continue
    printf '%s|%s|%s\n' "$name" "$args" "$flags"
done > "$tmp/programs"
[ -s "$tmp/programs" ] || die "--only '$only' names no program of samples.list"
for n in $only; do grep -q "^$n|" "$tmp/programs" || die "--only: '$n' is not in samples.list"; done

gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2> /dev/null | head -1)
driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2> /dev/null | head -1)
SAMPLES_DATE=$(date -u +%Y-%m-%dT%H:%MZ)
SAMPLES_COMMIT=${COMMIT:-$(git -C "$repo" rev-parse --short HEAD 2> /dev/null)}
export SAMPLES_DEVICE=${gpu:-none} SAMPLES_DRIVER=${driver:-none} SAMPLES_DATE SAMPLES_COMMIT
[ -d "$repo/.dev/libs" ] && export LD_LIBRARY_PATH="$repo/.dev/libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# Tenants and native runs alike find the toolkit's libraries (shared cudart, cuBLAS,
# NVRTC...) and those bundled beside the samples; the server keeps its own path.
tenant_path=${CUDA_LIB:-/usr/local/cuda/lib64}
[ -d "$bin/../libs" ] && tenant_path=$tenant_path:$(cd "$bin/../libs" && pwd)
[ -d "$bin/libs" ] && tenant_path=$tenant_path:$bin/libs
tenant_path=$tenant_path${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

echo "quota samples-own-* isolation=own" > "$tmp/detshare.conf"
"$build/server/detshare-server" --device "${DEVICE:-cuda}" --mps "${MPS:-start}" \
    --listen "unix:$tmp/s" --config "$tmp/detshare.conf" 2> "$out/server.log" &
srv=$!
for _ in $(seq 400); do [ -S "$tmp/s" ] && break; sleep 0.05; done
[ -S "$tmp/s" ] || die "the server did not start (see $out/server.log)"

# One run of NAME's CUDART build, natively or as a tenant; its outputs, exit status and
# seconds under DIR/MODE.*.
run_one() {
    local mode=$1 rt=$2 name=$3 args=$4 flags=$5 dir=$6 t0 rc env=() tenant
    tenant=samples-$name-$rt
    [[ ",$flags," == *,own,* ]] && tenant=samples-own-$name-$rt
    if [ "$mode" = detshare ]; then
        env=(DETSHARE_SERVER="unix:$tmp/s" DETSHARE_TENANT="$tenant"
             LD_LIBRARY_PATH="$build/client:$tenant_path")
    else
        env=(LD_LIBRARY_PATH="$tenant_path")
    fi
    t0=$(date +%s%N)
    # shellcheck disable=SC2086 # ARGUMENTS split into words
    (cd "$bin/$rt/$name" && env "${env[@]}" timeout -k 5 "$cap" "./$name" $args \
        < /dev/null > "$dir/$mode.out" 2> "$dir/$mode.err")
    rc=$?
    echo "$rc" > "$dir/$mode.rc"
    echo "$(( ($(date +%s%N) - t0) / 1000000 ))" | awk '{ printf "%.2f\n", $1 / 1000 }' > "$dir/$mode.sec"
}

# Both runs of one program and build, then its record.
run_pair() {
    local rt=$1 name=$2 args=$3 flags=$4 dir=$tmp/runs/$2-$1
    mkdir -p "$dir"
    if [ ! -x "$bin/$rt/$name/$name" ]; then
        touch "$dir/missing"
    else
        run_one native "$rt" "$name" "$args" "$flags" "$dir"
        [ -z "$twice" ] || run_one native-again "$rt" "$name" "$args" "$flags" "$dir"
        run_one detshare "$rt" "$name" "$args" "$flags" "$dir"
    fi
    python3 "$here/samples.py" record "$dir" "$name" "$rt" "$args" "$flags" > "$dir/record.json"
    python3 - "$dir/record.json" << 'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
print("%-30s %-6s native %-8s %5.1fs  detshare %-8s %5.1fs  %s" % (r["program"], r["cudart"],
      r["native"]["status"], r["native"]["seconds"], r["detshare"]["status"],
      r["detshare"]["seconds"], "identical" if r["identical"] else "DIFFERENT"))
EOF
}

total=$(( $(wc -l < "$tmp/programs") * $(echo $cudart | wc -w) ))
echo "samples.sh: $total programs x builds, each natively then through detshare, on ${gpu:-no GPU} (driver ${driver:-none}), $jobs at a time, $cap s cap each"
n=0
for rt in $cudart; do
    while IFS='|' read -r name args flags; do
        while [ "$(jobs -rp | wc -l)" -gt "$jobs" ]; do wait -n; done
        n=$((n + 1))
        { run_pair "$rt" "$name" "$args" "$flags" | sed "s|^|[$n/$total] |"; } &
    done < "$tmp/programs"
done
for j in $(jobs -rp); do [ "$j" = "$srv" ] || wait "$j"; done
kill -TERM $srv; wait $srv; echo "server exit $?" >> "$out/server.log"; srv=

cat "$tmp"/runs/*/record.json > "$out/samples.jsonl"
rm -rf "$out/runs" && cp -r "$tmp/runs" "$out/runs"
python3 "$here/samples.py" report "$out/samples.jsonl" "$out"
sed -n '1p;/^- cudart/p' "$out/samples.md"
differ=$(grep -c '"identical": false' "$out/samples.jsonl")
echo "samples.sh: $differ of $total differ from native; $out/samples.md"
[ "$differ" -eq 0 ]
