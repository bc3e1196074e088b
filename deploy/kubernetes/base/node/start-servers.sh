#!/bin/bash
# Server container: runs one detshare-server per GPU of the node (node.env's
# DETSHARE_GPUS) and keeps each running.  A server that exits is started again on
# its own, after a pause that grows while it keeps failing, so one GPU's trouble
# never restarts the servers, and so the tenants, of the node's other GPUs.  When
# detshare.conf changes (the kubelet swaps the ConfigMap's files), every server gets
# SIGHUP and reads its quota rules again.  SIGTERM stops every server, which closes
# its tenants, then the script exits.
set -u
run=${DETSHARE_RUN_DIR:?}
conf=${DETSHARE_CONFIG:-/etc/detshare/detshare.conf}
port=${DETSHARE_METRICS_PORT:-9400}
metrics_host=${DETSHARE_METRICS_HOST:-0.0.0.0}
poll=${DETSHARE_POLL_S:-2}

log() { echo "start-servers: $*" >&2; }

# "all": one server per GPU the driver lists (/proc/driver/nvidia/gpus has a
# directory per GPU, whichever devices this container was given).
list_gpus() {
    if [ "${DETSHARE_GPUS:-all}" != all ]; then
        echo "$DETSHARE_GPUS"
        return
    fi
    local n
    n=$(find /proc/driver/nvidia/gpus -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)
    [ "$n" -gt 0 ] && seq -s ' ' 0 $((n - 1))
}

declare -A pid started delay due
start() {
    local g=$1
    # Tenants may open the socket, not add or remove files beside it.  The plugin mounts
    # this directory into pods: the admin socket and MPS's pipes live elsewhere, where
    # no pod reaches (docs/device-plugin.md).
    mkdir -p "$run/gpu$g" "$run/admin" "$run/mps" && chmod 0755 "$run/gpu$g" &&
        chmod 0700 "$run/admin" "$run/mps"
    # $DETSHARE_OPTS is split into words on purpose: it holds several options.
    # shellcheck disable=SC2086
    detshare-server --gpu "$g" --listen "unix:$run/gpu$g/detshare.sock" --unix-token \
        --admin "unix:$run/admin/gpu$g.sock" --mps-dir "$run/mps/gpu$g" --config "$conf" \
        --metrics "tcp:$metrics_host:$((port + g))" ${DETSHARE_OPTS:-} \
        2> >(exec sed -u "s/^/gpu$g: /" >&2) &
    pid[$g]=$!
    started[$g]=$SECONDS
    log "GPU $g: detshare-server pid ${pid[$g]}"
}

# A server that ran a minute before it exited is started again at once; one that
# keeps failing waits 1, 2, 4... up to 16 s, well within the liveness probe's minute.
# The wait is a due time, not a sleep, so SIGTERM and the other GPUs are not held up.
watch_one() {
    local g=$1 rc=0
    if [ -z "${pid[$g]}" ]; then
        [ "$SECONDS" -ge "${due[$g]}" ] && start "$g"
        return
    fi
    kill -0 "${pid[$g]}" 2>/dev/null && return
    wait "${pid[$g]}" || rc=$?
    pid[$g]=""
    if [ $((SECONDS - started[$g])) -ge 60 ]; then
        delay[$g]=0
    fi
    log "GPU $g: detshare-server exited with status $rc; starting it again in ${delay[$g]} s"
    due[$g]=$((SECONDS + delay[$g]))
    delay[$g]=$((delay[$g] == 0 ? 1 : (delay[$g] >= 8 ? 16 : delay[$g] * 2)))
}

stop() {
    log "stopping every server"
    for g in $gpus; do [ -n "${pid[$g]}" ] && kill -TERM "${pid[$g]}" 2>/dev/null; done
    wait
    exit 0
}
trap stop TERM INT

gpus=$(list_gpus)
if [ -z "$gpus" ]; then
    log "no GPU found (DETSHARE_GPUS=${DETSHARE_GPUS:-all}, /proc/driver/nvidia/gpus empty):" \
        "is the pod's runtime class NVIDIA's?"
    exit 1
fi
mkdir -p "$run"
echo "$gpus" >"$run/.gpus.new" && mv -f "$run/.gpus.new" "$run/gpus"
# Tenant sockets open to every user: tenant pods run as any uid, and only pods the
# device plugin gave a replica have the socket directory mounted.  The server makes
# its admin socket 0600 and its MPS directory 0700 whatever the umask.
umask 000
sum=$(cksum <"$conf")
for g in $gpus; do
    delay[$g]=0
    start "$g"
done
while :; do
    # Sleep in the background: a trapped SIGTERM interrupts `wait` at once.
    sleep "$poll" &
    wait $!
    for g in $gpus; do watch_one "$g"; done
    now=$(cksum <"$conf")
    if [ "$now" != "$sum" ]; then
        sum=$now
        log "$conf changed: SIGHUP to every server"
        for g in $gpus; do [ -n "${pid[$g]}" ] && kill -HUP "${pid[$g]}" 2>/dev/null; done
    fi
done
