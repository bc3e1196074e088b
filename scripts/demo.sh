#!/usr/bin/env bash
# Build detshare, start a server (the sim device when there is no GPU) on a private
# socket, run the example tenant through it, and stop the server.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
. scripts/env.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
dir=$(mktemp -d)
trap 'kill "$server" 2>/dev/null || true; rm -rf "$dir"' EXIT
./build/server/detshare-server --listen "unix:$dir/detshare.sock" 2>"$dir/server.log" &
server=$!
for _ in $(seq 100); do [ -S "$dir/detshare.sock" ] && break; sleep 0.05; done
echo "== example tenant (examples/hello_tenant.c) through detshare-server:"
status=0
LD_LIBRARY_PATH="$PWD/build/client" DETSHARE_SERVER="unix:$dir/detshare.sock" \
    ./build/examples/hello_tenant || status=$?
kill -TERM "$server"
wait "$server" || status=$?
echo "== server log:"
cat "$dir/server.log"
exit "$status"
