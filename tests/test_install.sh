#!/usr/bin/env bash
# `cmake --install` into a temporary prefix: the files that docs/server.md's "Installing as
# a service" names are there, and the installed server, on the sim, serves the installed
# detshare-ctl and a tenant that loads the installed libcuda.so.1.
# usage: test_install.sh BUILD_DIR HELLO_TENANT
set -euo pipefail
build=$1 hello=$2
tmp=$(mktemp -d /tmp/ds-install.XXXXXX)
server=
cleanup() {
    if [ -n "$server" ]; then
        kill -TERM "$server" 2>/dev/null || true
        wait "$server" 2>/dev/null || true
    fi
    rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; [ -f "$tmp/server.log" ] && cat "$tmp/server.log" >&2; exit 1; }

p=$tmp/prefix
cmake --install "$build" --prefix "$p" >/dev/null
for f in bin/detshare-server bin/detshare-ctl lib/detshare/libcuda.so.1 \
        lib/detshare/libnvidia-ml.so.1 \
        lib/systemd/system/detshare@.service lib/sysusers.d/detshare.conf \
        share/doc/detshare/README.md share/doc/detshare/admin.md \
        share/doc/detshare/security.md share/doc/detshare/metrics.md \
        share/doc/detshare/reliability.md share/doc/detshare/server.md; do
    [ -e "$p/$f" ] || fail "$f not installed"
done
[ -x "$p/bin/detshare-server" ] && [ -x "$p/bin/detshare-ctl" ] || fail "programs not executable"
[ "$(readlink "$p/lib/detshare/libcuda.so")" = libcuda.so.1 ] || fail "libcuda.so link"
# Opt-in only: nothing of detshare's in the default library directory.
[ ! -e "$p/lib/libcuda.so.1" ] || fail "libcuda.so.1 on the default search path"
[ ! -e "$p/lib/libnvidia-ml.so.1" ] || fail "libnvidia-ml.so.1 on the default search path"
unit=$p/lib/systemd/system/detshare@.service
grep -q "^ExecStart=$p/bin/detshare-server --gpu %i " "$unit" || fail "unit's ExecStart"
grep -q '^ExecReload=/bin/kill -HUP $MAINPID' "$unit" || fail "unit's ExecReload"
if command -v systemd-analyze >/dev/null; then
    cp "$unit" "$tmp/detshare@0.service"
    out=$(systemd-analyze verify "$tmp/detshare@0.service" 2>&1) || fail "systemd-analyze: $out"
    [ -z "$out" ] || fail "systemd-analyze: $out"
fi
# Through files: grep -q stops reading at its match, and a longer text then gets SIGPIPE.
"$p/bin/detshare-server" --help >"$tmp/help" || fail "server --help exit status"
grep -q -- '--listen unix:PATH' "$tmp/help" || fail "server --help"
"$p/bin/detshare-ctl" --help >"$tmp/help" || fail "ctl --help exit status"
grep -q 'status \[--json\]' "$tmp/help" || fail "ctl --help"

sock=$tmp/ds.sock
"$p/bin/detshare-server" --device sim --listen "unix:$sock" 2>"$tmp/server.log" &
server=$!
for _ in $(seq 200); do
    [ -S "$sock.admin" ] && break
    kill -0 "$server" 2>/dev/null || fail "installed server exited"
    sleep 0.05
done
status=$("$p/bin/detshare-ctl" --admin "unix:$sock.admin" status --json) || fail "ctl status"
echo "$status" | grep -q '"backend": *"sim"' || fail "status: $status"
LD_LIBRARY_PATH=$p/lib/detshare DETSHARE_SERVER=unix:$sock "$hello" >"$tmp/hello.out" 2>&1 ||
    { cat "$tmp/hello.out" >&2; fail "a tenant through the installed libcuda.so.1"; }
# grep -q stops reading at the first match; under pipefail ldd's SIGPIPE would then
# fail the pipe, so grep reads everything.
LD_LIBRARY_PATH=$p/lib/detshare ldd "$hello" | grep "$p/lib/detshare/libcuda.so.1" > /dev/null ||
    fail "the tenant did not load the installed libcuda.so.1"
kill -TERM "$server"
rc=0
wait "$server" || rc=$?
server=
[ "$rc" -eq 0 ] || fail "installed server exited with $rc"
echo "ok: installed into $p, served status and a tenant"
