#!/usr/bin/env bash
# Builds detshare's container image as an OCI archive, with no container engine: our
# .deb (cpack) installed with apt by mmdebstrap on a minimal Debian root (Essential
# packages, mawk for the node scripts, what the .deb depends on), that root made one
# layer by umoci, the OCI layout written as one tar.  The NVIDIA driver's libraries and
# programs are not in it: the NVIDIA container runtime puts the host's into the
# container at start (docs/kubernetes.md).
#
# usage: packaging/container/build.sh [--deb PATH] [--build-dir DIR] [--suite SUITE]
#                                     [--mirror URL] [-o OUT.tar]
#   --deb        the package to install; without it one is built (plain, no tests) in
#                --build-dir (default build-image) with cmake and cpack
#   --suite      the Debian release of the root (default: this machine's, as the .deb
#                is linked against its libraries)
#   -o           the archive (default BUILD_DIR/detshare-VERSION.oci.tar), tagged VERSION:
#                skopeo copy oci-archive:OUT.tar:VERSION docker://REGISTRY/detshare:VERSION
# Run as root, or as a user with subordinate ids (mmdebstrap's unshare mode).
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
deb='' build=$src/build-image suite='' mirror='' out=''
while [ $# -gt 0 ]; do
    case $1 in
        --deb) deb=$(realpath "$2"); shift 2 ;;
        --build-dir) build=$(realpath -m "$2"); shift 2 ;;
        --suite) suite=$2; shift 2 ;;
        --mirror) mirror=$2; shift 2 ;;
        -o) out=$(realpath -m "$2"); shift 2 ;;
        -h|--help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "build.sh: unknown argument $1 (--help)" >&2; exit 2 ;;
    esac
done
for t in mmdebstrap umoci; do
    command -v "$t" >/dev/null || { echo "build.sh: $t is missing (apt install $t)" >&2; exit 1; }
done
if [ -z "$suite" ]; then
    suite=$(sed -n 's/^VERSION_CODENAME=//p' /etc/os-release)
    [ -n "$suite" ] || { echo "build.sh: name the Debian release with --suite" >&2; exit 2; }
fi

if [ -z "$deb" ]; then
    echo "build.sh: building the .deb in $build"
    cmake -S "$src" -B "$build" -DDETSHARE_TESTS=OFF -DDETSHARE_SANITIZE=OFF \
        -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
    cmake --build "$build" -j"$(nproc)" >/dev/null
    rm -f "$build"/detshare_*.deb
    (cd "$build" && cpack -G DEB >/dev/null)
    deb=$(ls "$build"/detshare_*.deb)
fi
version=$(dpkg-deb -f "$deb" Version)
arch=$(dpkg-deb -f "$deb" Architecture)
[ -n "$out" ] || out=$build/detshare-$version.oci.tar
mkdir -p "$(dirname "$out")"
# The same inputs give the same archive: file times, the image's creation time and
# mmdebstrap's own stamps follow the last commit (or SOURCE_DATE_EPOCH).
: "${SOURCE_DATE_EPOCH:=$(git -C "$src" log -1 --format=%ct 2>/dev/null || date +%s)}"
export SOURCE_DATE_EPOCH
created=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ)

tmp=$(mktemp -d /tmp/ds-image.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
# apt in unshare mode reads the package as another user: give it a copy it can read.
cp "$deb" "$tmp/detshare.deb"
chmod 755 "$tmp"
chmod 644 "$tmp/detshare.deb"

echo "build.sh: Debian $suite root with $(basename "$deb")"
# Documentation, manuals and translations other than ours are left out; the apt lists
# and caches mmdebstrap used go too.
# The hook makes the .deb visible inside the root, where dpkg installs it.
mmdebstrap --quiet --variant=essential --architectures="$arch" \
    --include=mawk --include="$tmp/detshare.deb" \
    --hook-dir=/usr/share/mmdebstrap/hooks/file-mirror-automount \
    --dpkgopt='path-exclude=/usr/share/man/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' \
    --dpkgopt='path-exclude=/usr/share/doc/*' \
    --dpkgopt='path-include=/usr/share/doc/detshare/*' \
    --customize-hook="rm -rf \"\$1\"/var/lib/apt/lists/* \"\$1\"/var/cache/apt/*" \
    "$suite" "$tmp/rootfs.tar" ${mirror:+"$mirror"}

oci=$tmp/oci
umoci init --layout "$oci"
umoci new --image "$oci:$version"
umoci raw add-layer --image "$oci:$version" --history.created "$created" \
    --history.created_by "packaging/container/build.sh (mmdebstrap $suite, $(basename "$deb"))" \
    "$tmp/rootfs.tar"
umoci config --image "$oci:$version" --created "$created" --history.created "$created" \
    --author "$(dpkg-deb -f "$deb" Maintainer)" \
    --config.env PATH=/usr/sbin:/usr/bin:/sbin:/bin \
    --config.cmd /usr/bin/detshare-server \
    --config.label "org.opencontainers.image.title=detshare" \
    --config.label "org.opencontainers.image.version=$version" \
    --config.label "org.opencontainers.image.description=$(dpkg-deb -f "$deb" Description | head -1)"
umoci gc --layout "$oci"
tar --sort=name --mtime="@$SOURCE_DATE_EPOCH" --owner=0 --group=0 --numeric-owner \
    -C "$oci" -cf "$out" .
echo "build.sh: wrote $out (tag $version, $(du -h "$out" | cut -f1))"
