#!/usr/bin/env bash
# packaging/container/build.sh makes an OCI archive from a fresh package build; its
# image holds our programs and client, no NVIDIA driver file, and, started with chroot
# in new mount and pid namespaces (no container engine here), runs
# `detshare-server --help` and the DaemonSet's node scripts: install-client.sh, then
# start-servers.sh serving the sim, which probe.sh and detshare-ctl reach, stopped by
# SIGTERM.  Slow (a Debian root from the network, a full build): label `image`.
# Skipped (77) without root, mmdebstrap or umoci.
# usage: test_container_image.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1 build=$2
for t in mmdebstrap umoci unshare chroot; do
    command -v "$t" >/dev/null || { echo "skipped: no $t (apt install mmdebstrap umoci)"; exit 77; }
done
[ "$(id -u)" -eq 0 ] || { echo "skipped: needs root (chroot, mount namespaces)"; exit 77; }
tmp=$(mktemp -d /tmp/ds-imagetest.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

bash "$src/packaging/container/build.sh" --build-dir "$build/image-build" \
    -o "$tmp/detshare.oci.tar" || fail "build.sh"
mkdir "$tmp/layout"
tar -C "$tmp/layout" -xf "$tmp/detshare.oci.tar"
tag=$(dpkg-deb -f "$build"/image-build/detshare_*.deb Version)
umoci unpack --image "$tmp/layout:$tag" "$tmp/bundle" >/dev/null || fail "umoci unpack of tag $tag"
root=$tmp/bundle/rootfs
args=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["process"]["args"])' \
    "$tmp/bundle/config.json")
[ "$args" = "['/usr/bin/detshare-server']" ] || fail "the image's command: $args"
for f in usr/bin/detshare-server usr/bin/detshare-ctl usr/lib/detshare/libcuda.so.1 \
        usr/lib/detshare/libnvidia-ml.so.1 usr/bin/bash usr/bin/awk usr/bin/ldd; do
    [ -e "$root/$f" ] || fail "the image lacks /$f"
done
# The driver comes from the host at run time, never from the image.
baked=$(find "$root" \( -name 'libcuda.so*' -o -name 'libnvidia-ml.so*' -o -name 'nvidia-*' \) \
    -not -path "$root/usr/lib/detshare/*" -not -path "$root/usr/share/doc/*")
[ -z "$baked" ] || fail "NVIDIA files in the image: $baked"

chroot "$root" /usr/bin/detshare-server --help >"$tmp/help" || fail "detshare-server --help"
grep -q -- '--listen unix:PATH' "$tmp/help" || fail "detshare-server --help said: $(cat "$tmp/help")"

# The node scripts as the DaemonSet mounts them, on the sim.
mkdir -p "$root/etc/detshare-node" "$root/etc/detshare" "$root/run/detshare" \
    "$root/var/lib/detshare/client"
cp "$src"/deploy/kubernetes/base/node/*.sh "$root/etc/detshare-node/"
echo 'quota in-image memory=1GiB' >"$root/etc/detshare/detshare.conf"
# The script runs inside the image: its $ are for the shell there.
# shellcheck disable=SC2016
timeout 120 unshare --mount --pid --fork --mount-proc="$root/proc" chroot "$root" /bin/bash -c '
    set -u
    export DETSHARE_RUN_DIR=/run/detshare DETSHARE_CLIENT_DIR=/var/lib/detshare/client
    sh /etc/detshare-node/install-client.sh || exit 1
    [ -e /var/lib/detshare/client/libtirpc.so.3 ] || { echo "no libtirpc.so.3 installed"; exit 1; }
    DETSHARE_GPUS=0 DETSHARE_OPTS="--device sim --warm 0" DETSHARE_METRICS_HOST=127.0.0.1 \
        bash /etc/detshare-node/start-servers.sh & s=$!
    for _ in $(seq 100); do sh /etc/detshare-node/probe.sh all >/dev/null && break; sleep 0.2; done
    sh /etc/detshare-node/probe.sh all || exit 1
    detshare-ctl --admin unix:/run/detshare/admin/gpu0.sock quota | grep -q in-image ||
        { echo "the server did not read detshare.conf"; exit 1; }
    kill -TERM $s
    wait $s' >"$tmp/node.log" 2>&1 || { cat "$tmp/node.log" >&2; fail "the node scripts in the image"; }
echo "ok: $(du -h "$tmp/detshare.oci.tar" | cut -f1) OCI archive, tag $tag; its server and node scripts ran"
