#!/usr/bin/env bash
# Issue 29's cuSPARSE product (PyTorch CSR x dense), 20 times natively and 20 times
# through a detshare server, in one sitting (PROCS processes each way, alternately, RUNS
# products in each).  An integer-valued product must give the same bytes every time,
# both ways.  The float product: where native gives one result, detshare must give that
# one; where native varies, each detshare result must lie as close to the most frequent
# native one as the native results do (twice their largest distance at most), and the
# digests of both ways are printed with how often each came.  Skipped (77) without a
# GPU or torch.  Usage: test_sparse_repeat.sh BUILD_DIR
set -uo pipefail
build=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
python=${PYTHON:-python3}
procs=${PROCS:-4} runs=${RUNS:-5}
nvidia-smi -L > /dev/null 2>&1 || exit 77
"$python" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' \
    > /dev/null 2>&1 || { echo "no torch with CUDA: skipped"; exit 77; }
t=$(mktemp -d)
"$build/server/detshare-server" --device cuda --mps start --mps-dir "$t/mps" --warm 0 \
    --listen "unix:$t/s" 2> "$t/server.log" &
srv=$!
trap 'kill -TERM $srv 2> /dev/null; wait $srv; rm -rf "$t"' EXIT
for _ in $(seq 400); do [ -S "$t/s" ] && break; sleep 0.05; done
[ -S "$t/s" ] || { echo "FAIL: no server"; cat "$t/server.log"; exit 1; }
for i in $(seq "$procs"); do
    "$python" "$here/sparse_repeat.py" "$runs" "$t/native-$i.pt" >> "$t/native.txt" ||
        { echo "FAIL: native run $i"; exit 1; }
    DETSHARE_SERVER="unix:$t/s" DETSHARE_TENANT=sparse-repeat \
        LD_LIBRARY_PATH="$build/client${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
        "$python" "$here/sparse_repeat.py" "$runs" "$t/detshare-$i.pt" >> "$t/detshare.txt" ||
        { echo "FAIL: run $i through detshare"; tail -20 "$t/server.log"; exit 1; }
done
"$python" - "$t" "$procs" <<'PY'
import collections, sys
import torch
t, procs = sys.argv[1], int(sys.argv[2])
def lines(way):
    rows = [l.split() for l in open(f"{t}/{way}.txt")]
    return [r for r in rows if r[0] == "exact"], {r[1] for r in rows if r[0] == "mode"}
(nat, nmode), (ds, dmode) = lines("native"), lines("detshare")
fail = []
print("modes: native", sorted(nmode), "detshare", sorted(dmode))
exact = collections.Counter(r[1] for r in nat + ds)
if len(exact) != 1:
    fail.append(f"the integer product varies: {dict(exact)}")
nf, df = collections.Counter(r[3] for r in nat), collections.Counter(r[3] for r in ds)
print("float digests, native:", dict(nf))
print("float digests, detshare:", dict(df))
print("detshare digests seen natively:", sum(n for d, n in df.items() if d in nf), "of", len(ds))
if len(nf) == 1:
    if set(df) != set(nf):
        fail.append("native gives one result and detshare another")
else:
    nv = torch.cat([torch.load(f"{t}/native-{i}.pt") for i in range(1, procs + 1)])
    dv = torch.cat([torch.load(f"{t}/detshare-{i}.pt") for i in range(1, procs + 1)])
    modal = nf.most_common(1)[0][0]
    ref = nv[[r[3] for r in nat].index(modal)]
    spread = (nv - ref).abs().max().item()
    far = (dv - ref).abs().amax(dim=(1, 2))
    print(f"largest distance from the modal native result: native {spread:.3g}, "
          f"detshare {far.max().item():.3g}")
    if (far > 2 * spread).any():
        fail.append(f"{int((far > 2 * spread).sum())} detshare results farther from native "
                    f"than native varies ({far.max().item():.3g} > 2 x {spread:.3g})")
for f in fail:
    print("FAIL:", f)
sys.exit(1 if fail else 0)
PY
