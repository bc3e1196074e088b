#!/usr/bin/env bash
# A slim copy of a plain build for a device call (the carry limit is 64 MiB): the server,
# ctl, client libraries, bench programs, the device plugin and the named test binaries
# with the kernels they load.  Tests find their files by the build's absolute path, so the
# run script links /work/main/build-gpu to the copy (lab/gpu-runs.md, "How a run goes").
#   bash lab/slim-build.sh BUILD DEST TEST...
set -euo pipefail
b=${1:?BUILD}; d=${2:?DEST}; shift 2
rm -rf "$d"; mkdir -p "$d/server" "$d/client" "$d/bench" "$d/tests" "$d/k8s"
cp "$b"/server/detshare-server "$b"/server/detshare-ctl "$d/server/"
cp -P "$b"/client/libcuda.so* "$b"/client/libnvidia-ml.so* "$d/client/"
find "$b/bench" -maxdepth 1 -type f -perm -u+x -exec cp {} "$d/bench/" \;
cp "$b"/bench/*.so "$d/bench/" 2>/dev/null || true
[ -x "$b/k8s/detshare-device-plugin" ] && cp "$b/k8s/detshare-device-plugin" "$d/k8s/"
cp -r "$b/tests/kernels" "$d/tests/"
[ -d "$b/tests/kubelet_py" ] && cp -r "$b/tests/kubelet_py" "$d/tests/"
mkdir -p "$d/examples"
for x in hello_tenant soak_tenant; do
    f=$(find "$b/examples" "$b/tests" -maxdepth 1 -type f -name "$x" | head -1)
    [ -n "$f" ] && mkdir -p "$d/${f#"$b"/}" && rmdir "$d/${f#"$b"/}" && cp "$f" "$d/${f#"$b"/}"
done
find "$b/tests" -maxdepth 1 -type f \( -name 'native_*' -o -name '*.so' -o -name 'nvml_probe' \) -exec cp {} "$d/tests/" \;
for t in "$@"; do cp "$b/tests/test_$t" "$d/tests/"; done
strip --strip-debug "$d"/server/* "$d"/tests/test_* "$d"/k8s/* 2>/dev/null || true
# The box's copy of the tree may carry a stale .git: the commit goes with the build.
c=$(git -C "$(dirname "$0")/.." rev-parse --short HEAD)
git -C "$(dirname "$0")/.." diff --quiet HEAD -- || c="$c+changes"
echo "$c" > "$d/COMMIT"
du -sh "$d"
