#!/bin/sh
# Probe of the server container: asks each served GPU's server for its status on
# its admin socket.  `probe.sh all` (readiness) passes when every server answers;
# `probe.sh any` (startup, liveness) when at least one does, so that one GPU whose
# server is down, which start-servers.sh restarts on its own and whose replicas the
# device plugin reports unhealthy, does not take the other GPUs' tenants down with it.
set -u
run=${DETSHARE_RUN_DIR:?}
mode=${1:-all}
read -r gpus 2>/dev/null <"$run/gpus" || { echo "probe: no $run/gpus yet"; exit 1; }
up=0 down=""
for g in $gpus; do
    if detshare-ctl --admin "unix:$run/admin/gpu$g.sock" status >/dev/null 2>&1; then
        up=$((up + 1))
    else
        down="$down $g"
    fi
done
[ -z "$down" ] && exit 0
[ "$mode" = any ] && [ "$up" -gt 0 ] && exit 0
echo "probe: no answer from the server of GPU(s)$down"
exit 1
