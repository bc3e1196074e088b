#!/usr/bin/env bash
# Records the committed fuzz seed corpus (fuzz/corpus) again, as fuzz/README.md
# describes: every session the corpus holds, each through ds-fuzz-record between one
# example tenant and a sim server.  Run it after each change of DS_PROTO_VERSION, or the
# seeds stop at a refused handshake and the fuzzing stays shallow.
#
#   bash scripts/record-seeds.sh BUILD RECORDER
#
# BUILD: a build of the examples and the server (plain or sanitized); RECORDER: a
# ds-fuzz-record binary (build-fuzz/fuzz/ds-fuzz-record, scripts/fuzz.sh builds one).
set -euo pipefail
build=$(cd "${1:?usage: record-seeds.sh BUILD RECORDER}" && pwd)
rec=${2:?usage: record-seeds.sh BUILD RECORDER}
repo=$(cd "$(dirname "$0")/.." && pwd)
corpus=$repo/fuzz/corpus
t=$(mktemp -d)
srv=
trap '[ -n "$srv" ] && kill "$srv" 2> /dev/null; rm -rf "$t"' EXIT

"$build/server/detshare-server" --device sim --listen "unix:$t/srv.sock" --admin none \
    2> "$t/server.log" &
srv=$!
for _ in $(seq 200); do [ -S "$t/srv.sock" ] && break; sleep 0.05; done

# corpus name, then the example program that makes the session
sessions="hello_tenant:hello_tenant vector_add:vector_add streams:streams params:params
mapped:mapped graphs:graphs graph_nodes:graph_nodes malloc_async:malloc_async
pitched:pitched curand_normal:curand_normal_shared cublas_gemm:cublas_gemm_shared
managed:managed_shared arrays:textures_shared graph_host:graph_host_shared"

for s in $sessions; do
    name=${s%%:*} prog=${s#*:}
    out=$t/$name
    mkdir -p "$out"
    "$rec" "$t/rec.sock" "$t/srv.sock" "$out" 2> "$t/rec-$name.log" &
    r=$!
    for _ in $(seq 200); do [ -S "$t/rec.sock" ] && break; sleep 0.05; done
    DETSHARE_SERVER="unix:$t/rec.sock" DETSHARE_RING=0 DETSHARE_TENANT="seed-$name" \
        LD_LIBRARY_PATH="$build/client${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
        timeout 60 "$build/examples/$prog" > "$t/$name.out" 2>&1 ||
        echo "record-seeds: $prog exited $? (kept: a session cut short is still a seed)" >&2
    # The recorder writes the session's seeds once the tenant has left.
    for _ in $(seq 100); do [ -e "$out/reply-1" ] && break; sleep 0.05; done
    kill "$r"; wait "$r" 2> /dev/null || true
    rm -f "$t/rec.sock"
    [ -e "$out/exec-1" ] || { echo "record-seeds: no seed for $name" >&2; exit 1; }
    cp "$out/exec-1" "$corpus/exec/$name"
    cp "$out/exec-ring-1" "$corpus/exec/$name-ring"
    cp "$out/reply-1" "$corpus/reply/$name"
    echo "$name: $(wc -c < "$corpus/exec/$name") bytes"
done
