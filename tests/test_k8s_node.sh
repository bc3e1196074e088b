#!/usr/bin/env bash
# The Kubernetes DaemonSet's node scripts (deploy/kubernetes/base/node/) on the sim:
# install-client.sh copies the client with the libraries it needs beyond glibc and a
# tenant runs from that copy; start-servers.sh starts one server per listed GPU,
# probe.sh sees them; a killed server is started again alone (the other keeps its
# pid); a changed detshare.conf reaches every server (SIGHUP); start-plugin.sh runs
# the plugin with one --server per GPU; SIGTERM stops every server.
# The servers run with the base's detshare.conf and node.env's options.
# usage: test_k8s_node.sh SOURCE_DIR SERVER CTL LIBCUDA LIBNVML HELLO_TENANT
set -euo pipefail
src=$1 server=$2 ctl=$3 libcuda=$4 libnvml=$5 hello=$6
node=$src/deploy/kubernetes/base/node
tmp=$(mktemp -d /tmp/ds-k8snode.XXXXXX)
sup=
cleanup() {
    if [ -n "$sup" ]; then
        kill -TERM "$sup" 2>/dev/null || true
        wait "$sup" 2>/dev/null || true
    fi
    rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; [ -f "$tmp/sup.log" ] && cat "$tmp/sup.log" >&2; exit 1; }
# Waits up to 20 s for a command to succeed.
until_ok() {
    for _ in $(seq 200); do "$@" && return 0; sleep 0.1; done
    return 1
}

# The programs as the image has them: on PATH under their installed names.
mkdir -p "$tmp/bin" "$tmp/lib" "$tmp/client" "$tmp/run" "$tmp/etc"
ln -s "$server" "$tmp/bin/detshare-server"
ln -s "$ctl" "$tmp/bin/detshare-ctl"
cp "$libcuda" "$tmp/lib/libcuda.so.1"
cp "$libnvml" "$tmp/lib/libnvidia-ml.so.1"
export PATH="$tmp/bin:$PATH" DETSHARE_RUN_DIR=$tmp/run DETSHARE_CLIENT_DIR=$tmp/client

DETSHARE_CLIENT_SRC=$tmp/lib sh "$node/install-client.sh" >/dev/null || fail "install-client.sh"
for f in libcuda.so.1 libnvidia-ml.so.1 libcuda.so libtirpc.so.3; do
    [ -e "$tmp/client/$f" ] || fail "install-client.sh did not install $f: $(ls "$tmp/client")"
done
[ ! -e "$tmp/client/libc.so.6" ] || fail "install-client.sh copied glibc"

# The servers run with the base's own quota rules and options (node.env), on the sim.
cp "$src/deploy/kubernetes/base/detshare.conf" "$tmp/etc/detshare.conf"
opts=$(sed -n 's/^DETSHARE_OPTS=//p' "$src/deploy/kubernetes/base/node.env")
port=$((20000 + RANDOM % 20000))
DETSHARE_GPUS="0 1" DETSHARE_OPTS="$opts --device sim" DETSHARE_METRICS_PORT=$port \
    DETSHARE_METRICS_HOST=127.0.0.1 DETSHARE_CONFIG=$tmp/etc/detshare.conf DETSHARE_POLL_S=0.2 \
    bash "$node/start-servers.sh" 2>"$tmp/sup.log" &
sup=$!
until_ok sh "$node/probe.sh" all >/dev/null || fail "probe.sh all never passed"
[ "$(cat "$tmp/run/gpus")" = "0 1" ] || fail "gpus file: $(cat "$tmp/run/gpus")"
[ "$(stat -c %a "$tmp/run/gpu0")" = 755 ] || fail "socket directory mode $(stat -c %a "$tmp/run/gpu0")"
grep -q '^gpu1: ' "$tmp/sup.log" || fail "server logs lack their GPU prefix"
q=$(detshare-ctl --admin "unix:$tmp/run/admin/gpu1.sock" quota)
case $q in *ml-training/*) ;; *) fail "the base's detshare.conf not in force: $q" ;; esac
curl_ok() { exec 3<>"/dev/tcp/127.0.0.1/$1" && printf 'GET /metrics HTTP/1.0\r\n\r\n' >&3 &&
    grep -q detshare_tenants <&3; }
( curl_ok $((port + 1)) ) || fail "GPU 1's metrics are not on port $((port + 1))"

# A tenant loads the installed copy of the client and reaches GPU 0's server, with a
# token minted as the plugin mints one (the servers run with --unix-token).
tok=$(detshare-ctl --admin "unix:$tmp/run/admin/gpu0.sock" token add hello | tail -n 1)
LD_LIBRARY_PATH=$tmp/client DETSHARE_SERVER=unix:$tmp/run/gpu0/detshare.sock \
    DETSHARE_TOKEN=$tok DETSHARE_TENANT=hello-1 "$hello" \
    >"$tmp/hello.out" 2>&1 || { cat "$tmp/hello.out" >&2; fail "tenant through the installed client"; }

pidof_gpu() { grep "GPU $1: detshare-server pid" "$tmp/sup.log" | tail -1 | awk '{print $NF}'; }
p0=$(pidof_gpu 0) p1=$(pidof_gpu 1)
kill -KILL "$p1"
new1() { [ "$(pidof_gpu 1)" != "$p1" ]; }
until_ok new1 || fail "GPU 1's server was not started again"
until_ok sh "$node/probe.sh" all >/dev/null || fail "probe.sh all after the restart"
if [ "$(pidof_gpu 0)" != "$p0" ] || ! kill -0 "$p0"; then fail "GPU 0's server was restarted too"; fi

# probe.sh any passes while one server of two is down; all does not.
kill -STOP "$sup"
kill -TERM "$(pidof_gpu 1)"
gone1() { ! detshare-ctl --admin "unix:$tmp/run/admin/gpu1.sock" status >/dev/null 2>&1; }
until_ok gone1 || fail "GPU 1's server did not stop"
sh "$node/probe.sh" any >/dev/null || fail "probe.sh any with one server up"
out=$(sh "$node/probe.sh" all) && fail "probe.sh all passed with GPU 1's server down"
[ "$out" = "probe: no answer from the server of GPU(s) 1" ] || fail "probe.sh said: $out"
kill -CONT "$sup"
until_ok sh "$node/probe.sh" all >/dev/null || fail "GPU 1's server not back after SIGTERM"

echo 'quota second sm-share=50' >"$tmp/etc/detshare.conf.new"
mv "$tmp/etc/detshare.conf.new" "$tmp/etc/detshare.conf"
reloaded() { [ "$(grep -c 'SIGHUP handled' "$tmp/sup.log")" -ge 2 ]; }
until_ok reloaded || fail "the servers did not read the changed config"
for g in 0 1; do
    q=$(detshare-ctl --admin "unix:$tmp/run/admin/gpu$g.sock" quota)
    case $q in *second*) ;; *) fail "GPU $g's quotas after the change: $q" ;; esac
done

# start-plugin.sh: the plugin's command line, through a stand-in that prints it.
cat >"$tmp/bin/detshare-device-plugin" <<'PLUGIN'
#!/bin/sh
for a in "$@"; do echo "$a"; done
PLUGIN
chmod +x "$tmp/bin/detshare-device-plugin"
DETSHARE_REPLICAS=4 sh "$node/start-plugin.sh" >"$tmp/plugin.args" 2>"$tmp/plugin.log"
r=$tmp/run
printf '%s\n' --replicas 4 --lib-dir "$tmp/client" \
    --server "0=unix:$r/gpu0/detshare.sock,admin=unix:$r/admin/gpu0.sock" \
    --server "1=unix:$r/gpu1/detshare.sock,admin=unix:$r/admin/gpu1.sock" >"$tmp/want"
diff -u "$tmp/want" "$tmp/plugin.args" >&2 || fail "start-plugin.sh's arguments"

kill -TERM "$sup"
rc=0
wait "$sup" || rc=$?
sup=
[ "$rc" -eq 0 ] || fail "start-servers.sh exited with $rc on SIGTERM"
for p in "$p0" "$(pidof_gpu 1)"; do
    ! kill -0 "$p" 2>/dev/null || fail "server $p still runs after SIGTERM"
done
echo "ok: node scripts served two sim GPUs, restarted one, reloaded, stopped"
