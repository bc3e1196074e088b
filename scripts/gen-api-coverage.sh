#!/bin/sh
# Write docs/api-coverage.md: every entry point of cuda.h and cudaProfiler.h, as served
# (a real definition in detshare's libcuda, listed in client/compat/entry_points.h for
# cuGetProcAddress), refused by design (with the reason), or not served yet.  Also
# fails when the library defines an entry point that entry_points.h does not list, which
# cuGetProcAddress would then never find.  Its table of the CUDA samples comes from the
# committed records of the latest samples run ($samples below), with a reason for each
# sample that fails.  The api_coverage test runs it and compares with the committed file.
# Usage: gen-api-coverage.sh CC CUDA_INCLUDE_DIR LIBCUDA ENTRY_POINTS_H OUT
set -eu
cc=$1 inc=$2 lib=$3 eps=$4 out=$5
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
repo=$(cd "$(dirname "$0")/.." && pwd)
# The latest CUDA samples run committed (bench/breadth/samples.sh's records), for the
# samples table; a newer run's records replace this path.  Run 127's records, with run
# 129's for the three graph samples it ran again after their fixes (their commit fields
# are the trees those runs carried: samples.sh had read the build's configure-time one).
samples=lab/results/h200-2026-11-27c/samples.jsonl

# Names as a program writes them: cuda.h's version suffixes (_v2, ...) dropped.
for h in cuda.h cudaProfiler.h; do
    "$cc" -E -P -I"$inc" "$inc/$h" | tr -s ' \n' ' ' |
        grep -oE 'CUresult (CUDAAPI )?cu[A-Za-z0-9_]+ ?\(' | grep -oE 'cu[A-Za-z0-9_]+'
done | sed -E 's/_v[0-9]+$//' | sort -u > "$tmp/all"
nm -D --defined-only "$lib" | awk '$2 == "T" && $3 ~ /^cu/ { print $3 }' | sort -u > "$tmp/defined"
tr -d '\\\n' < "$eps" | grep -oE 'EP\( *cu[A-Za-z0-9_]+, *[0-9]+, *cu[A-Za-z0-9_]+ *\)' |
    sed -E 's/.*, *(cu[A-Za-z0-9_]+) *\)/\1/' | sort -u > "$tmp/listed"
missing=$(comm -23 "$tmp/defined" "$tmp/listed")
if [ -n "$missing" ]; then
    echo "defined in $lib but not in $eps (cuGetProcAddress cannot find them): $missing" >&2
    exit 1
fi
sed -E 's/_v[0-9]+$//' "$tmp/defined" | sort -u > "$tmp/served"

# Refused by design: a pattern (grep -E, whole name), '@', and why.
cat > "$tmp/design" <<'DESIGN'
cuGraphics.*@graphics interop: the tenant has no graphics context of the server's, and the GPU is shared
cu(GL|EGL|VDPAU|D3D).*@graphics interop: the tenant has no graphics context of the server's, and the GPU is shared
cuMulticast.*@multicast objects span several GPUs; a detshare server serves one
cuCheckpoint.*@checkpointing acts on the process that owns the driver, which is the executor, not the tenant
cu(GreenCtx.*|CtxFromGreenCtx|CtxGetDevResource|DeviceGetDevResource|DevSmResourceSplitByCount|DevResourceGenerateDesc|StreamGetGreenCtx)@SM placement is the scheduler's: a tenant sees the whole device and never chooses SMs
cuDeviceGetNvSciSyncAttributes@NvSci is for embedded platforms
cu(Param.*|FuncSetBlockShape|FuncSetSharedSize|Launch|LaunchGrid|LaunchGridAsync)@deprecated since CUDA 4.0 (use cuLaunchKernel)
cu(TexRef.*|SurfRef.*|ModuleGetTexRef|ModuleGetSurfRef)@texture and surface references are deprecated (use texture and surface objects)
cu(CtxAttach|CtxDetach)@deprecated since CUDA 4.0
cuLaunchCooperativeKernelMultiDevice@several GPUs; a detshare server serves one
cu(ArrayGetSparseProperties|MipmappedArrayGetSparseProperties|MemMapArrayAsync)@sparse and deferred-mapping CUDA arrays are not made: their memory would be mapped tile by tile outside the executor's accounting of the tenant's arrays
cuGraph(Add|Exec)?ExternalSemaphores.*@external semaphores are imported from other APIs (Vulkan, D3D12, NvSci) in the tenant's process, whose objects the executor cannot reach
cuMemPool(ExportToShareableHandle|ImportFromShareableHandle|ExportPointer|ImportPointer)@a pool's memory belongs to the tenant's executor, and a descriptor of it would hand it to any process; tenants of one user share memory with cuIpcGetMemHandle
cu(MemExportToShareableHandle|MemImportFromShareableHandle|MemGetHandleForAddressRange)@a descriptor (file descriptor or dma-buf) of memory the tenant's executor owns would hand it to any process that gets it; tenants of one user share memory with cuIpcGetMemHandle
cuFlushGPUDirectRDMAWrites@GPUDirect RDMA reaches device memory through a dma-buf of it (cuMemGetHandleForAddressRange), which is refused: a tenant has no RDMA writes to flush
cu(ImportExternalMemory|ExternalMemoryGetMappedBuffer|ExternalMemoryGetMappedMipmappedArray|DestroyExternalMemory|ImportExternalSemaphore|SignalExternalSemaphoresAsync|WaitExternalSemaphoresAsync|DestroyExternalSemaphore)@external memory and semaphores are objects of the tenant's other graphics or compute APIs (Vulkan, Direct3D, NvSci) in its own process, which the executor can neither open nor keep in step
cuCoredump.*@a GPU core dump is written by the process that owns the context, the tenant's executor, on the server's host: its settings and file names are the operator's, not a tenant's
cuLogs.*@the driver's log is the executor's: it records the executor's own driver calls (green contexts, the MPS client), not the tenant's; detshare logs a tenant's refused calls in the server's log
cuCtxResetPersistingL2Cache@persisting L2 lines live in the L2 that all tenants share, so a reset would drop other tenants' lines too (access-policy windows on a tenant's own streams are served)
cu(DeviceRegisterAsyncNotification|DeviceUnregisterAsyncNotification)@device notifications (memory over budget) concern the whole device, which the operator divides among tenants with quotas; a tenant sees its own limit through cuMemGetInfo
cuLibraryGetUnifiedFunction@a unified function is host code at an address of the process that loaded the library, the executor; the tenant's own host code is in its own binary
cuLibraryGetManaged@a library's __managed__ variables are placed by the driver in the address space of the process that loads it, the executor, where the tenant's pointers cannot reach them; memory from cuMemAllocManaged is shared with the tenant
cuMemBatchDecompressAsync@hardware decompression needs the copy engines of Blackwell and later GPUs; detshare serves Hopper (an H100's driver refuses it the same way) and the sim models none
cuProfilerInitialize@deprecated: since CUDA 12.0 the driver itself always returns CUDA_ERROR_NOT_SUPPORTED (use cuProfilerStart)
DESIGN

: > "$tmp/refused"
: > "$tmp/todo"
comm -23 "$tmp/all" "$tmp/served" | while read -r n; do
    why=$(while IFS='@' read -r pat reason; do
        if echo "$n" | grep -qxE "$pat"; then echo "$reason"; break; fi
    done < "$tmp/design")
    if [ -n "$why" ]; then echo "$why@$n" >> "$tmp/refused"; else echo "$n" >> "$tmp/todo"; fi
done

list() { tr '\n' ' ' < "$1" | sed -E 's/ $//; s/([A-Za-z0-9_]+)/`\1`/g; s/` `/`, `/g'; }

# Why a sample fails, natively or through detshare: program@reason.  The table's
# generator fails when a failing sample has no reason here, or a reason names a sample
# that does not fail, so that a new run's records cannot go out with stale reasons.
cat > "$tmp/why" <<'WHY'
memMapIPCDrv@refused by design: shareable handles of VMM memory (another process maps them, outside the tenant's accounting)
streamOrderedAllocationIPC@refused by design: shareable handles of pools ("does not support Memory pool based IPC")
simpleAttributes@refused by design: `cuCtxResetPersistingL2Cache`, the L2 being shared with other tenants
systemWideAtomics@CPU and GPU atomics at once on managed memory, which detshare keeps in host pages that the GPU reaches over the bus: not atomic together ([memory.md](memory.md))
simpleAssert@its device-side assert fires on purpose and it prints "Device assert failed as expected", which samples.py counts as a failure, natively alike
simpleAssert_nvrtc@its device-side assert fires on purpose and it prints "Device assert failed as expected", which samples.py counts as a failure, natively alike
simpleP2P@waived: needs two GPUs
matrixMul_nvrtc@compiles its kernel at run time and looks for `cooperative_groups.h` beside the samples' sources, which run 127 did not carry (it ran prebuilt programs): fails natively alike
WHY

samples_table() {
    python3 - "$repo/$samples" "$samples" "$tmp/why" <<'PY'
import collections, json, sys
path, name, why_file = sys.argv[1:4]
why = dict(l.rstrip("\n").split("@", 1) for l in open(why_file) if l.strip())
runs = collections.defaultdict(dict)
for line in open(path):
    r = json.loads(line)
    runs[r["program"]][r["cudart"]] = r
first = next(iter(next(iter(runs.values())).values()))

def verdict(side):
    return {"passed": "passed", "exit0": "exit 0", "waived": "waived"}.get(
        side["status"], f"failed (exit {side['exit']})")

def both(way, ways):
    v = {c: verdict(r[way]) for c, r in ways.items()}
    return v.popitem()[1] if len(set(v.values())) == 1 else \
        ", ".join(f"{c}: {x}" for c, x in sorted(v.items()))

def same(ways):
    s = sorted(c for c, r in ways.items() if r["identical"])
    return "yes" if len(s) == len(ways) else "no" if not s else f"{'/'.join(s)} only"

fails, rows = set(), []
for prog in sorted(runs, key=str.lower):
    ways = runs[prog]
    bad = any(r[w]["status"] not in ("passed", "exit0") for r in ways.values()
              for w in ("native", "detshare"))
    if bad:
        fails.add(prog)
        if prog not in why:
            sys.exit(f"gen-api-coverage.sh: {prog} fails in {name} and has no reason")
    rows.append(f"| {prog} | {both('native', ways)} | {both('detshare', ways)} | "
                f"{same(ways)} | {why.get(prog, '') if bad else ''} |")
stale = set(why) - fails
if stale:
    sys.exit(f"gen-api-coverage.sh: reasons for samples that do not fail: {sorted(stale)}")
n = {w: sum(all(r[w]["status"] in ("passed", "exit0", "waived") for r in v.values())
            for v in runs.values()) for w in ("native", "detshare")}
print(f"""
## The CUDA samples

NVIDIA's CUDA sample programs (github.com/NVIDIA/cuda-samples), each built with cudart
shared and static, run natively and as tenants of one server by
`bench/breadth/samples.sh`: {first['device']}, driver {first['driver']}, detshare
{first['commit']}, {first['date'][:10]}; generated from the records of that run,
`{name}`. Of {len(runs)} programs, {n['native']} pass or are waived natively and
{n['detshare']} through detshare. "exit 0": the sample prints no verdict and exited 0.
"Same output": its output (timings and addresses normalised) equals native's, for both
builds or the one named; the others differ in timings the samples print, the order of
device `printf` lines or figures they measure.

| program | native | through detshare | same output | why it fails (or is waived) |
| --- | --- | --- | --- | --- |""")
print("\n".join(rows))
PY
}
{
    echo "# Driver API coverage"
    echo
    echo "Generated by \`scripts/gen-api-coverage.sh\` from \`cuda.h\` and \`cudaProfiler.h\`"
    echo "(CUDA $(grep -oE 'define CUDA_VERSION [0-9]+' "$inc/cuda.h" | awk '{print $3}')) and the built client library; the \`api_coverage\` test"
    echo "fails when this file is out of date. Names are as programs write them (without"
    echo "\`_v2\` and similar suffixes). Every entry point exists as a symbol: one not served"
    echo "returns \`CUDA_ERROR_NOT_SUPPORTED\` and logs its name once. NVML, which"
    echo "\`libnvidia-ml.so.1\` beside this library answers from the tenant's share of the"
    echo "device, is covered in \`docs/nvml.md\`."
    echo
    echo "| | entry points |"
    echo "| --- | ---: |"
    echo "| served | $(wc -l < "$tmp/served") |"
    echo "| refused by design | $(wc -l < "$tmp/refused") |"
    echo "| not served yet | $(wc -l < "$tmp/todo") |"
    echo
    echo "## Served"
    echo
    comm -12 "$tmp/all" "$tmp/served" > "$tmp/s1"
    list "$tmp/s1"
    echo
    echo
    echo "## Refused by design"
    echo
    sort "$tmp/refused" | awk -F'@' '$1 != last { if (NR > 1) printf "\n"; printf "- %s: ", $1; last = $1; sep = "" }
        { printf "%s`%s`", sep, $2; sep = ", " } END { printf "\n" }'
    echo
    echo "## Not served yet"
    echo
    list "$tmp/todo"
    echo
    echo
    echo "## Served, with choices to know"
    echo
    cat <<'NOTES'
- Graph copies between host and device memory (`cuGraphAddMemcpyNode`, `cuGraphAddNode`,
  `cuGraphMemcpyNodeSetParams`, `cuGraphExecMemcpyNodeSetParams`, and `cuMemcpyHtoDAsync`,
  `cuMemcpyDtoHAsync` or `cuMemcpyAsync` on a capturing stream). Page-locked, registered and
  managed memory of a local tenant lies on the arena its executor maps, so the graph itself
  reads and writes it at each launch, at its device address, as CUDA's does; a captured
  asynchronous copy of it becomes part of the graph. Other host memory (pageable, or any
  of a remote tenant's) is not the executor's to reach: CUDA accepts it in a memcpy node
  and copies it at the node's turn through its own staging (the cuda-samples'
  jacobiCudaGraphs captures such a copy into a local variable), so detshare makes the node
  one the tenant does itself: the instance runs in stages, as with host nodes, and at the
  node's turn the client copies the bytes in stream order (the launch returns once it
  has). Such a node cannot be in a child graph or a conditional body, cannot switch
  between pageable and reachable memory with a set-params call, and its graph cannot be
  updated with `cuGraphExecUpdate` (each `CUDA_ERROR_NOT_SUPPORTED`, or
  `CUDA_ERROR_INVALID_VALUE` for an instance's set-params).
- Captured copies of pageable memory (`cuMemcpyHtoDAsync`, `cuMemcpyDtoHAsync`,
  `cuMemcpyAsync` on a stream being captured, or on one that joined a capture by waiting
  for an event of it; protocol 18). CUDA records a memcpy node that reads or writes the
  host memory when the graph runs. A plain capture's graph is the backend's and cannot
  be cut into stages around a node, so the capture records a device copy between the
  tenant's device memory and staging memory the graph holds (counted as graph memory),
  and an instance runs in stages: before the graph, the client copies the host memory
  of every copy to the device into its staging memory; once the graph has run, it copies
  the staging memory of every copy to the host into the host memory, in capture order,
  and the launch returns then. The device side of each copy happens at the node's turn;
  the host memory is read at the launch and written when the graph is done, which gives
  the same bytes, as nothing else in such a graph reaches pageable memory. The one graph
  where it would not, a copy from host memory that an earlier copy of the same capture
  writes, is refused with `CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED` and invalidates the
  capture. Each launch waits for its stream before filling the staging memory, so
  launches on one stream follow each other; two instances of one graph launched at once
  on two streams share the staging memory, and may mix each other's bytes. Such a graph
  cannot be updated with `cuGraphExecUpdate` (`CU_GRAPH_EXEC_UPDATE_ERROR_NOT_SUPPORTED`),
  cloned or made a child graph (`CUDA_ERROR_NOT_SUPPORTED`, as for any plain captured
  graph), or launched into a capturing stream. In a capture into a graph
  (`cuStreamBeginCaptureToGraph`), and in one that met a host function (below), each
  copy's host side is instead a copy node of the graph, before or after the part
  captured with it, which the tenant does at its turn (protocol 19), so host functions
  see the copies before them and the copies after them see what the functions wrote.
  The executor never reads the host memory: a buffer freed before a launch is the
  tenant's own undefined behaviour, as natively.
- Host functions on a capturing stream (`cuLaunchHostFunc` on a stream being captured,
  or one that joined the capture by waiting for an event of it; protocol 19). CUDA makes
  the function a host node of the captured graph. The executor's capture cannot hold a
  function of the tenant's process, so it is cut there: the streams that joined the
  capture join the capturing stream, what was captured so far becomes a child graph
  node, the function a host node after it, and the capture goes on after the host node,
  the joined streams joining it again. The captured graph is then a graph built node by
  node: `cuGraphGetNodes` lists the host node (`CU_GRAPH_NODE_TYPE_HOST`, with the
  function and data of the call) among child graph nodes that each hold a part of the
  capture, where CUDA lists the part's nodes one by one; `cuGraphClone` copies it; its
  instances run in stages, as graphs with host nodes do ([graphs.md](graphs.md)). Work
  on other streams of the capture waits for the function where CUDA would let it run
  beside it; a stream that joined the capture and was not joined again before its end
  is joined by the end, where CUDA fails with `CUDA_ERROR_STREAM_CAPTURE_UNJOINED`; and
  a host function in a capture into a conditional node's body is refused
  (`CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED`). `cuStreamAddCallback` on a capturing stream
  is refused with `CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED`, as CUDA refuses it.
  A host function on a stream that is *not* being captured, while another stream captures
  in `CU_STREAM_CAPTURE_MODE_GLOBAL`, is refused with
  `CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED` (and the capture invalidated), where CUDA runs
  it: detshare runs a host function outside captures by synchronising its stream and
  calling it, and a synchronisation is what a global-mode capture forbids (H200, run 136:
  natively the function ran, and only the program's own `cuStreamSynchronize` of that
  stream got the error). Capture in thread-local or relaxed mode, or launch the function
  after the capture ends.
- The graph and dependencies of a capture in progress (`cuStreamGetCaptureInfo` asked
  for them; protocol 21). CUDA hands out the graph being captured and the nodes the next
  captured work depends on, which a program may add nodes after (the cuda-samples'
  graphConditionalNodes adds a WHILE node so). The executor's capture is cut there, as for
  a host function: a plain capture becomes a capture into a graph of its own, the work
  captured so far a child graph node of it, and the answer is that graph and that node
  (none when nothing was captured yet); `cuStreamUpdateCaptureDependencies` then names
  nodes of it, and `cuStreamEndCapture` returns it. A capture into a graph answers with
  that graph. Each ask that finds new work adds a node where CUDA lists the work's nodes
  one by one; a stream that joined the capture gets the capture's dependencies, which
  follow all its work so far; the `_v3` edge data are default edges
  ([graphs.md](graphs.md#the-graph-and-dependencies-of-a-capture-in-progress)).
- CUDA dynamic parallelism (kernels launching kernels, `-rdc=true`): an MPS client cannot
  run it, natively too: on an H200 (driver 580, run 114) the same program ran natively and
  failed with `cudaErrorCdpNotSupported` as an MPS client. So a tenant of the shared
  domain gets that error, and a tenant of a domain of its own (`isolation=own`,
  docs/reliability.md) or of a server with `--mps off` runs it with results identical to
  native (runs 114 and 117).
- Results that vary natively: PyTorch's sparse CSR x dense product (cuSPARSE SpMM,
  float32) gave 6 different results in 10 native runs on an H200 (run 114,
  `bench/breadth/repeat.sh`), and differed from detshare's runs as much as from itself.
  detshare runs the same kernels with the same launch configurations; it cannot make a
  library that is not deterministic run to run deterministic. Compare such programs with
  a tolerance, or pick the library's deterministic algorithms where it has them. The
  `gpu_sparse_repeat` test runs the product 20 times each way in one sitting: an
  integer-valued product (exact in any order) must give the same bytes every time, and
  the float product detshare's results no farther from native's most frequent result
  than twice native's own largest distance from it (or, where native gives one result,
  that result). It does not require detshare's digests to be among native's: of the 10
  detshare runs of run 114's sitting, 2 gave digests none of the 10 native runs gave,
  as 4 native digests came once each (`lab/results/h200-2026-11-27/repeat-sparse.txt`).
- Profiling through CUPTI (`torch.profiler` with CUDA activities, Nsight Systems, any
  CUPTI tool inside the tenant): not served. CUPTI drives the driver's private profiling
  tables, and the tenant's kernels run in its executor, where the tenant's CUPTI is not;
  `cuGetExportTable` refuses those tables with `CUDA_ERROR_NOT_SUPPORTED` and one warning
  on the tenant's stderr, and CUPTI then reports `CUPTI_ERROR_UNKNOWN` and records no
  kernel (docs/export-tables.md 4.14). The tenant's work is unaffected. The device side
  comes from the server instead: `detshare-ctl trace NAME --seconds N > trace.json`
  (docs/admin.md, "Tracing a tenant").
NOTES
    cat <<'EOF'

## A launch's synchronous errors

A launch leaves the client as a batched call, yet `cuLaunchKernel`, `cuLaunchKernelEx`
and `cuLaunchCooperativeKernel` return the errors the driver returns before a launch
returns, from the launch itself (client/api/launchcheck.c), never from a later call. The
client checks what it already holds: the device's attributes and the kernel's, which
come with `cuModuleGetFunction` and follow `cuFuncSetAttribute`. The executor checks
every launch again.

| the launch | returns |
| --- | --- |
| no current context | `CUDA_ERROR_INVALID_CONTEXT` |
| a function that is not one (NULL, unloaded) | `CUDA_ERROR_INVALID_HANDLE` |
| both `kernelParams` and `extra`; `extra` malformed; no `kernelParams` for a kernel with parameters | `CUDA_ERROR_INVALID_VALUE` (an `extra` buffer shorter than the kernel's parameters is taken, as the driver takes it: the rest is zeros) |
| a block dimension of 0 or over `MAX_BLOCK_DIM_X/Y/Z`; more threads than the device's `MAX_THREADS_PER_BLOCK` or the kernel's `__launch_bounds__` | `CUDA_ERROR_INVALID_VALUE` |
| more threads than the kernel's registers allow (its `NUM_REGS` times the threads over the device's `MAX_REGISTERS_PER_BLOCK`) | `CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES` (as the driver on an H200, run 117) |
| a grid dimension of 0 or over `MAX_GRID_DIM_X/Y/Z` | `CUDA_ERROR_INVALID_VALUE` |
| dynamic shared memory over the kernel's `MAX_DYNAMIC_SHARED_SIZE_BYTES` (48 KiB less its static shared memory until raised), or static and dynamic over the device's opt-in limit | `CUDA_ERROR_INVALID_VALUE` |
| a cluster (launch attribute or `__cluster_dims__`) that does not divide the grid, differs from the compiled one, is missing where the kernel requires one, or has more than 8 blocks (16 with `NON_PORTABLE_CLUSTER_SIZE_ALLOWED`) | `CUDA_ERROR_INVALID_CLUSTER_SIZE` |

Errors the client cannot see (a stream of another context or being destroyed,
attributes carrying handles, a cooperative grid too large to be resident) come from
the executor at the next call that waits for it. tests/test_launch_checks.c runs every
case on the sim and compares it with the real driver's on a GPU.
EOF
    samples_table
    cat <<'AREAS'

## What is served, by area

Programs built with nvcc (the CUDA runtime linked statically or shared), plain driver-API
programs and the libraries and frameworks below reach these through detshare's
`libcuda.so.1`; what each area does differently from a local driver is in the page
named.

- **Devices and contexts**: device queries (answered by the client from the description
  the executor sent at the hello), primary and created contexts, limits,
  `cuCtxSetFlags`, `cuCtxRecordEvent` and `cuCtxWaitEvent` (streams created after the
  wait do not wait), `cuGetProcAddress`.
- **Memory**: device, page-locked and mapped host memory; copies in every direction and
  fills, synchronous or on streams; registered host memory (`cuMemHostRegister`) and
  managed memory (`cuMemAllocManaged`, prefetch, advice and range attributes); virtual
  memory management (`cuMemAddressReserve`, `cuMemCreate`, `cuMemMap`, `cuMemSetAccess`
  and the rest); the stream-ordered allocator and memory pools; CUDA IPC between local
  tenants of one user: [memory.md](memory.md), [protocol.md](protocol.md).
- **Pitched memory and 2-D and 3-D copies**: `cuMemAllocPitch` (the driver's own pitch on
  a GPU), `cuMemcpy2D`, `cuMemcpy2DUnaligned`, `cuMemcpy3D`, their asynchronous forms and
  the peer forms within the tenant's one device, between host, device and unified memory
  and CUDA arrays.
- **CUDA arrays and mipmapped arrays** (`cuArray3DCreate`, `cuMipmappedArrayCreate`,
  their levels and descriptors, every copy to and from them, and from the runtime
  `cudaMallocArray` and `cudaMemcpy2DToArray`), and **texture and surface objects** on
  them or on device memory (`cuTexObjectCreate`, `cuSurfObjectCreate`: the device's own
  objects, which kernels receive unchanged), counted as device memory under the tenant's
  quota: [arrays.md](arrays.md).
- **Streams and events** with CUDA's ordering rules, the legacy and per-thread default
  streams included; stream attributes, memory operations and host functions (below).
- **Modules and libraries** from fatbins, cubins and PTX; module globals; kernel
  attributes and occupancy (`cuOccupancyMaxPotentialBlockSize` runs the caller's
  shared-memory callback in the tenant's own process); JIT linking (below).
- **Kernel launches**, with launch attributes; the errors the driver returns from a launch
  itself come from the launch (above, "A launch's synchronous errors").
- **Tensor maps** for Hopper's TMA kernels, as JAX/XLA and Triton make them
  (`cuTensorMapEncodeTiled`, `cuTensorMapEncodeIm2col`, `cuTensorMapEncodeIm2colWide`,
  `cuTensorMapReplaceAddress`).
- **Stream capture and graphs**, also built node by node: [graphs.md](graphs.md).
- **Hidden export tables** that the CUDA runtime, cuBLAS and NVRTC need, NVRTC's compile
  cache included: [export-tables.md](export-tables.md).

Every other entry point exists as a symbol and returns `CUDA_ERROR_NOT_SUPPORTED`, logging
its name once, so a missing piece shows up by name on the program's stderr.

## Stream memory operations and small calls

Stream memory operations (`cuStreamWaitValue32/64`, `cuStreamWriteValue32/64`,
`cuStreamBatchMemOp`) run on the device in stream order, on words of the tenant's own
device memory or mapped host memory. Any other address (another tenant's, the server's
control block, a misaligned one) fails the call with `CUDA_ERROR_INVALID_VALUE` at the
next synchronising call. A wait holds its stream until another stream, or the program's
own store to mapped memory, releases it. Batch memory-operation graph nodes hold the same
operations, checked the same way ([graphs.md](graphs.md)).

Also served: stream attributes (kept per stream and given to each kernel launched on it,
access-policy windows included); `cuStreamGetDevice`; the cache and bank-size preferences
(accepted; the device's carveout stands); peer queries, answered as for a machine with one
GPU; the LUID, 1-D linear texture widths and host atomic capabilities as the device reports
them; `cuDeviceGetProperties`; function and kernel names; `cuOccupancyMaxPotentialClusterSize`;
`cuPointerSetAttribute` (`SYNC_MEMOPS`: detshare's synchronous copies and fills always
complete before they return); and CUDA 12.8/13's batched copies, prefetches and discards
(host and device pointers). Execution affinity is not offered
(`cuDeviceGetExecAffinitySupport` answers 0): SM placement is the scheduler's.

## What runs in the tenant's own process

- **Host functions** (`cuLaunchHostFunc`, `cuStreamAddCallback`) run in the tenant's
  process once their stream has drained, on the calling thread, which waits for them
  (CUDA returns at once). On a capturing stream a host function becomes a host node of
  the captured graph (above), called at each launch in graph order.
- **Device output**: what kernels print (`printf`, failed `assert`s) reaches a local
  tenant's own stdout and stderr. The client hands its descriptors 1 and 2 to its
  executor when it connects, and the driver writes there at the synchronisation that
  follows the kernel, before the synchronising call returns, as natively (the program's
  own buffered output still comes out when it flushes it). They are the descriptors the
  program had when it connected: a later `dup2` onto its stdout (pytest's `capfd`, say)
  does not redirect the device's output. A remote (TCP) tenant has no descriptors to hand
  over: its device output becomes lines of the server's log at the info level, tagged with
  its name (`tenant[NAME] info: device output: ...`).
- **JIT linking** (`cuLinkCreate` to `cuLinkComplete`) runs the device's linker in the
  executor on inputs the client gathered (`cuLinkAddFile` reads the tenant's file) and
  returns the image to load with `cuModuleLoadData`. An input the linker rejects fails
  `cuLinkComplete` rather than `cuLinkAddData`, with the reason in the error log. On the
  sim, a link of one cubin (or of one fatbin with an sm_90 cubin) gives that cubin; PTX
  fails with `CUDA_ERROR_JIT_COMPILER_NOT_FOUND` and several inputs with
  `CUDA_ERROR_NOT_SUPPORTED`.
- Page-locked memory has the same address on the host and the device, as natively under
  unified addressing, when the executor finds the tenant's address free (the client asks
  for one where it usually is): [memory.md](memory.md).

## Programs checked against native

On an H100 these give output byte-identical to the same program run natively, with two
tenants at once ([lab/gpu-runs.md](../lab/gpu-runs.md); `bench/breadth/run.sh` runs each
natively and through a server and compares): programs built with nvcc (kernels, streams,
events, pinned and mapped memory, cuBLAS, cuRAND, CUDA graphs); plain driver-API programs;
PyTorch (training with cuBLAS and cuDNN, generation, streams, CUDA graphs captured by hand
and `torch.compile` with its `reduce-overhead` mode, a DataLoader with pinned memory and
workers, `torch.multiprocessing` handing CUDA tensors between processes, expandable
segments, `backend:cudaMallocAsync`, fused bf16 attention, cuDNN's LSTM, FP8 GEMMs, NCCL
with DDP on one GPU, a bf16 Llama-style model generating and training with transformers);
Triton; CuPy (cuBLAS, cuFFT, cuSOLVER, cuSPARSE, NVRTC kernels, `MemoryAsyncPool`);
numba-cuda; and JAX (`jit`, `grad`) under deterministic XLA settings
(`XLA_FLAGS=--xla_gpu_autotune_level=0` or `--xla_gpu_deterministic_ops=true`: XLA's
autotuner otherwise picks kernels by timing them, natively too). On the sim the same
programs start, copy memory exactly and launch, but kernels compute nothing
([sim-device.md](sim-device.md)).

## Not yet

Launch attributes that carry event handles; mapped and managed memory for remote (TCP)
tenants; JIT of PTX on the sim; batched copies with array operands; freeing memory of a pool on a capturing stream
(`CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED`; an allocation on a capturing stream is served,
as graph memory). Refused by design, each with its reason above: sparse arrays, shareable
handles of VMM memory and pools, external memory and semaphores, graphics interop and the
like.
AREAS
} > "$out"
