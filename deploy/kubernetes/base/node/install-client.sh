#!/bin/sh
# Init container: puts the tenant side of detshare (our libcuda.so.1 and
# libnvidia-ml.so.1, with the libraries they need beyond glibc, which tenant images
# rarely carry: libtirpc and its Kerberos libraries) in the host directory the device
# plugin mounts read-only into tenant pods.  Each file is replaced by a rename, so
# tenants running now keep the copy they mapped and new ones get the new one.
set -eu
dst=${DETSHARE_CLIENT_DIR:?}
src=${DETSHARE_CLIENT_SRC:-/usr/lib/detshare}
# glibc's own libraries come from the tenant's image: theirs must match its loader.
deps=$(ldd "$src/libcuda.so.1" "$src/libnvidia-ml.so.1" |
    awk '$2 == "=>" && $3 ~ /^\// { print $3 }' |
    grep -Ev '/(libc|libm|libdl|libpthread|librt|libresolv)\.so|/ld-linux' | sort -u)
for f in "$src"/lib*.so.1 $deps; do
    name=${f##*/}
    cp -L "$f" "$dst/.$name.new"
    mv -f "$dst/.$name.new" "$dst/$name"
done
# Programs that dlopen "libcuda.so" (no version) find it too.
ln -sfn libcuda.so.1 "$dst/libcuda.so"
ln -sfn libnvidia-ml.so.1 "$dst/libnvidia-ml.so"
echo "install-client: $(cd "$dst" && echo lib*) in $dst"
