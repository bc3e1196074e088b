/*
 * nvmlInternalGetExportTable: the undocumented table of NVIDIA's through which
 * nvidia-smi takes its device handles and its process lists, answered from the tenant's
 * view like the rest of this library (docs/nvml.md, "nvidia-smi").
 *
 * Measured by detshare (run 119, H200, driver 580.159.04): nvidia-smi -L, plain and -q
 * ask this function for a table before anything that prints, and when it fails they print
 * "Mismatch in versions between nvidia-smi and NVML" and exit 255.
 *
 * Known from NVIDIA's Apache-2.0 mock NVML (github.com/NVIDIA/k8s-test-infra,
 * pkg/gpu/mocknvml, measured by its authors against nvidia-smi 580.65.06; facts taken,
 * nothing copied):
 *  - the one table id nvidia-smi asks for is 6c3efec4-8fc9-4e6c-a327-ee696e12f7c4, in
 *    memory c4 fe 3e 6c  c9 8f  6c 4e  a3 27 ee 69 6e 12 f7 c4;
 *  - word 0 is the table's size in bytes; nvidia-smi accepts 0x1000 (512 words) with every
 *    word after it a function;
 *  - slot 81: (unsigned index, nvmlDevice_t *out, 0x22): the handle of device `index`,
 *    which nvidia-smi then passes to the public functions;
 *  - slots 213, 214, 215: (nvmlDevice_t, unsigned *count, entries): a process list; *count
 *    is the room on entry (250 or 500 seen) and the number written on return; an entry is
 *    nvmlProcessDetail_v1_t followed by the process's name inline, 4128 bytes;
 *  - slot 230: (nvmlDevice_t, unsigned *) the host's highest PCIe generation; slot 249:
 *    (nvmlDevice_t, unsigned *) sparse operation mode, whose error nvidia-smi prints N/A;
 *  - the mock answers every slot it does not know with NVML_SUCCESS, writing an unsigned
 *    0 through the second argument when the first is one of its device handles; with that,
 *    nvidia-smi's plain view, -q and `topo -m` print (topo stops at the first error).
 * Measured by detshare (run 120, driver 580.159.04): with every unknown slot failing, -L
 * prints, but plain and -q print "Internal NVML error" and exit 255 right after slot 26
 * fails, and `pmon` asks for slot 72 as well; no public source says what 26 and 72 are.
 * Measured later (H200, driver 580.159.04, slot 26 acknowledged): plain and -q still
 * exit 255 with "Internal NVML error", and slot 26's logged first call has the arguments
 * ("nvidia-smi %s: %...", "ERROR quit", "Internal NVML error", a function): slot 26 is
 * nvidia-smi's error logger, called after the failure, not its cause, which was
 * nvmlEventSetCreate's NVML_ERROR_NOT_SUPPORTED just before (events.c now serves it).
 * Guessed: that 580.159 lays the table out as 580.65 does; that 213 is the compute list
 * and 214, 215 the graphics and MPS ones (another shim's reading of a later driver, which
 * fits nvidia-smi typing a process M+C+G when the mock listed it in all three); that the
 * third argument of slot 81 asks for nothing a tenant needs; that -L, plain and -q go on
 * printing (N/A) when the other unknown slots fail; that 26 and 72 take what the
 * mock's answer assumes (a device handle first, then a count, or no handle at all).
 *
 * So slot 81 and the three lists are served as their public equivalents are
 * (lib.c, share.c): the one device, and the calling process alone.  Slots 26 and 72 are
 * acknowledged as the mock acknowledges what it does not know (above), the one answer
 * nvidia-smi is known to accept, and their first call's arguments are logged (debug) so
 * that a GPU run shows what they are.  Every other slot is a function that touches none
 * of its arguments and returns NVML_ERROR_NOT_SUPPORTED, logging its number once (debug),
 * so that what nvidia-smi asks for shows in the log and nothing of the device's or the
 * host's reaches the tenant unasked.
 */
#define _GNU_SOURCE /* process_vm_readv */
#include "nvml_int.h"

#include "ds_log.h"

#include <ctype.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

typedef void *slot_t;

#define SLOTS 512
#define SLOT_HANDLE_BY_INDEX 81
#define SLOT_COMPUTE_PROCESSES 213
#define SLOT_GRAPHICS_PROCESSES 214
#define SLOT_MPS_PROCESSES 215
#define SLOT_ASKED_BY_PLAIN_AND_Q 26
#define SLOT_ASKED_BY_PMON 72

static const unsigned char smi_table_id[16] = { 0xc4, 0xfe, 0x3e, 0x6c, 0xc9, 0x8f, 0x6c, 0x4e,
                                                0xa3, 0x27, 0xee, 0x69, 0x6e, 0x12, 0xf7, 0xc4 };

/* An entry of the process lists. */
struct smi_process {
    nvmlProcessDetail_v1_t info;
    char name[4096];
};
_Static_assert(sizeof(struct smi_process) == 4128, "nvidia-smi steps 4128 bytes an entry");
_Static_assert(offsetof(struct smi_process, name) == 32, "the name follows the numbers");

static nvmlReturn_t handle_by_index(unsigned index, nvmlDevice_t *out)
{
    return nvmlDeviceGetHandleByIndex_v2(index, out);
}

static nvmlReturn_t compute_processes(nvmlDevice_t h, unsigned *count, struct smi_process *out)
{
    unsigned long long used;
    int is;
    nvmlReturn_t rc = ds__nvml_running(h, &used, &is);

    if (rc != NVML_SUCCESS || (rc = ds__nvml_room(count, out, is ? 1 : 0)) != NVML_SUCCESS ||
        !is)
        return rc;
    memset(&out[0], 0, sizeof(out[0]));
    out[0].info.pid = (unsigned)getpid();
    out[0].info.usedGpuMemory = used;
    out[0].info.gpuInstanceId = 0xFFFFFFFFu;
    out[0].info.computeInstanceId = 0xFFFFFFFFu;
    if (nvmlSystemGetProcessName(out[0].info.pid, out[0].name, sizeof(out[0].name)) !=
        NVML_SUCCESS)
        out[0].name[0] = '\0';
    return NVML_SUCCESS;
}

static nvmlReturn_t no_processes(nvmlDevice_t h, unsigned *count)
{
    return ds__nvml_no_processes(h, count);
}

static atomic_uint logged[SLOTS / 32];

static int first_call(unsigned slot)
{
    unsigned bit = 1u << (slot % 32);

    return (atomic_fetch_or(&logged[slot / 32], bit) & bit) == 0;
}

/* What an argument of an unknown slot points at, for the log: the text there when it
 * reads as text, else its first bytes.  process_vm_readv on this process reads without
 * faulting where nothing is mapped: the arguments are the caller's, of unknown kind. */
static const char *pointee(const void *p, char *buf, size_t len)
{
    unsigned char b[32];
    struct iovec local = { b, sizeof(b) }, remote = { (void *)p, sizeof(b) };
    ssize_t n = p == NULL ? -1 : process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
    size_t text = 0, at = 0;

    if (n <= 0)
        return "(unreadable)";
    while (text < (size_t)n && b[text] != 0 && isprint(b[text]))
        text++;
    if (text >= 3 && (text == (size_t)n || b[text] == 0)) {
        snprintf(buf, len, "\"%.*s\"", (int)text, (const char *)b);
        return buf;
    }
    for (ssize_t i = 0; i < n && i < 16 && at + 3 < len; i++)
        at += (size_t)snprintf(buf + at, len - at, "%02x", b[i]);
    return buf;
}

/* Success, and the zero count the mock writes when handed a device handle: nothing of
 * the device's is in it, and a count of nothing is the least a caller can misread. */
static nvmlReturn_t acknowledged(unsigned slot, void *a0, void *a1, void *a2, void *a3)
{
    const struct ds_nvml_cuda *cu;
    CUdevice dev;
    int device = ds__nvml_device(a0, &cu, &dev) == NVML_SUCCESS;

    if (device && a1 != NULL)
        *(unsigned *)a1 = 0;
    if (first_call(slot)) {
        char t[4][80];

        ds_debug("nvmlInternalGetExportTable slot %u is acknowledged by detshare's NVML "
                 "(NVML_SUCCESS%s); called with %p %p %p %p, pointing at %s %s %s %s",
                 slot, device && a1 != NULL ? ", a zero count" : "", a0, a1, a2, a3,
                 pointee(a0, t[0], sizeof(t[0])), pointee(a1, t[1], sizeof(t[1])),
                 pointee(a2, t[2], sizeof(t[2])), pointee(a3, t[3], sizeof(t[3])));
    }
    return NVML_SUCCESS;
}

static nvmlReturn_t asked_by_plain_and_q(void *a0, void *a1, void *a2, void *a3)
{
    return acknowledged(SLOT_ASKED_BY_PLAIN_AND_Q, a0, a1, a2, a3);
}

static nvmlReturn_t asked_by_pmon(void *a0, void *a1, void *a2, void *a3)
{
    return acknowledged(SLOT_ASKED_BY_PMON, a0, a1, a2, a3);
}

static nvmlReturn_t unserved(unsigned slot)
{
    if (first_call(slot))
        ds_debug("nvmlInternalGetExportTable slot %u is not served by detshare's NVML: "
                 "returning NVML_ERROR_NOT_SUPPORTED",
                 slot);
    return NVML_ERROR_NOT_SUPPORTED;
}

/* One function per slot, so that the log can say which slot was called: slot a*64+b*8+c
 * (three octal digits) is unserved_abc. */
#define UNSERVED(a, b, c)                                                                 \
    static nvmlReturn_t unserved_##a##b##c(void)                                          \
    {                                                                                     \
        return unserved(a * 64 + b * 8 + c);                                              \
    }
#define UNSERVED_ADDR(a, b, c) (slot_t)unserved_##a##b##c,
#define OCT1(m, a, b) m(a, b, 0) m(a, b, 1) m(a, b, 2) m(a, b, 3) m(a, b, 4) m(a, b, 5) \
    m(a, b, 6) m(a, b, 7)
#define OCT2(m, a) OCT1(m, a, 0) OCT1(m, a, 1) OCT1(m, a, 2) OCT1(m, a, 3) OCT1(m, a, 4) \
    OCT1(m, a, 5) OCT1(m, a, 6) OCT1(m, a, 7)
#define OCT3(m) OCT2(m, 0) OCT2(m, 1) OCT2(m, 2) OCT2(m, 3) OCT2(m, 4) OCT2(m, 5) \
    OCT2(m, 6) OCT2(m, 7)

OCT3(UNSERVED)

static const slot_t unserved_slots[SLOTS] = { OCT3(UNSERVED_ADDR) };

static slot_t smi_table[SLOTS];
static pthread_once_t smi_once = PTHREAD_ONCE_INIT;

static void fill_smi_table(void)
{
    memcpy(smi_table, unserved_slots, sizeof(smi_table));
    smi_table[0] = (slot_t)(uintptr_t)sizeof(smi_table);
    smi_table[SLOT_HANDLE_BY_INDEX] = (slot_t)handle_by_index;
    smi_table[SLOT_COMPUTE_PROCESSES] = (slot_t)compute_processes;
    smi_table[SLOT_GRAPHICS_PROCESSES] = (slot_t)no_processes;
    smi_table[SLOT_MPS_PROCESSES] = (slot_t)no_processes;
    smi_table[SLOT_ASKED_BY_PLAIN_AND_Q] = (slot_t)asked_by_plain_and_q;
    smi_table[SLOT_ASKED_BY_PMON] = (slot_t)asked_by_pmon;
}

nvmlReturn_t nvmlInternalGetExportTable(const void **table, const void *id)
{
    if (table == NULL || id == NULL)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (memcmp(id, smi_table_id, sizeof(smi_table_id)) != 0) {
        const unsigned char *b = id;

        *table = NULL;
        ds_debug("nvmlInternalGetExportTable: no table "
                 "%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x",
                 b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11],
                 b[12], b[13], b[14], b[15]);
        return NVML_ERROR_NOT_SUPPORTED;
    }
    pthread_once(&smi_once, fill_smi_table);
    *table = smi_table;
    return NVML_SUCCESS;
}
