#!/bin/sh
# Device plugin container: waits for the list of GPUs the server container serves,
# then runs detshare-device-plugin with one --server per GPU.  The plugin's flags are
# spelled here and nowhere else in the manifests.
set -eu
run=${DETSHARE_RUN_DIR:?}
while [ ! -s "$run/gpus" ]; do
    echo "start-plugin: waiting for $run/gpus (written by the server container)"
    sleep 2
done
set -- --replicas "${DETSHARE_REPLICAS:?}" --lib-dir "${DETSHARE_CLIENT_DIR:?}"
# The file is one line of GPU indices separated by spaces.
read -r gpus <"$run/gpus"
for g in $gpus; do
    set -- "$@" --server "$g=unix:$run/gpu$g/detshare.sock,admin=unix:$run/admin/gpu$g.sock"
done
echo "start-plugin: detshare-device-plugin $*" >&2
exec detshare-device-plugin "$@"
