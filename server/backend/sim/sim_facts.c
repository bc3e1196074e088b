/*
 * What the sim's NVML would say (common/ds_devfacts.h): fixed values of an H100 SXM at
 * rest, as the sim's attributes are (docs/sim-device.md), with texts that say it is the
 * sim, so that the path from backend to a tenant's NVML is tested without a GPU.
 */
#include "sim_core.h"

#include "ds_devfacts.h"

#include <nvml.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const struct {
    enum ds_devfact f;
    uint64_t v;
} values[] = {
    { DS_FACT_BRAND, NVML_BRAND_NVIDIA },
    { DS_FACT_TEMP_GPU, 34 },
    { DS_FACT_TEMP_SHUTDOWN, 92 },
    { DS_FACT_TEMP_SLOWDOWN, 89 },
    { DS_FACT_TEMP_GPU_MAX, 87 },
    { DS_FACT_TEMP_MEM_MAX, 95 },
    { DS_FACT_POWER_USAGE, 71000 },
    { DS_FACT_POWER_LIMIT, 700000 },
    { DS_FACT_POWER_DEFAULT_LIMIT, 700000 },
    { DS_FACT_POWER_ENFORCED_LIMIT, 700000 },
    { DS_FACT_POWER_MIN_LIMIT, 200000 },
    { DS_FACT_POWER_MAX_LIMIT, 700000 },
    { DS_FACT_ENERGY, 1000000 },
    { DS_FACT_CLOCK_GRAPHICS, 345 },
    { DS_FACT_CLOCK_SM, 345 },
    { DS_FACT_CLOCK_MEM, 2619 },
    { DS_FACT_CLOCK_VIDEO, 765 },
    { DS_FACT_APP_CLOCK_GRAPHICS, 1980 },
    { DS_FACT_APP_CLOCK_SM, 1980 },
    { DS_FACT_APP_CLOCK_MEM, 2619 },
    { DS_FACT_APP_CLOCK_VIDEO, 1545 },
    { DS_FACT_DEFAULT_APP_CLOCK_GRAPHICS, 1980 },
    { DS_FACT_DEFAULT_APP_CLOCK_SM, 1980 },
    { DS_FACT_DEFAULT_APP_CLOCK_MEM, 2619 },
    { DS_FACT_DEFAULT_APP_CLOCK_VIDEO, 1545 },
    { DS_FACT_MAX_CLOCK_VIDEO, 1545 },
    { DS_FACT_PSTATE, NVML_PSTATE_0 },
    { DS_FACT_CLOCKS_EVENT_REASONS, nvmlClocksEventReasonGpuIdle },
    { DS_FACT_SUPPORTED_CLOCKS_EVENT_REASONS, nvmlClocksEventReasonAll },
    { DS_FACT_PCIE_GEN, 5 },
    { DS_FACT_PCIE_GEN_MAX, 5 },
    { DS_FACT_PCIE_GEN_GPU_MAX, 5 },
    { DS_FACT_PCIE_WIDTH, 16 },
    { DS_FACT_PCIE_WIDTH_MAX, 16 },
    { DS_FACT_PERSISTENCE, NVML_FEATURE_ENABLED },
    { DS_FACT_DISPLAY_MODE, NVML_FEATURE_DISABLED },
    { DS_FACT_DISPLAY_ACTIVE, NVML_FEATURE_DISABLED },
    { DS_FACT_BOARD_ID, 0x1900 },
    { DS_FACT_MULTI_GPU_BOARD, 0 },
    { DS_FACT_VIRTUALIZATION_MODE, NVML_GPU_VIRTUALIZATION_MODE_NONE },
    { DS_FACT_INFOROM_VALID, 1 },
    { DS_FACT_PCI_DEVICE_ID, 0x233010de },
    { DS_FACT_PCI_SUBSYSTEM_ID, 0x16c110de },
    { DS_FACT_ECC_CORRECTED_VOLATILE, 0 },
    { DS_FACT_ECC_UNCORRECTED_VOLATILE, 0 },
    { DS_FACT_ECC_CORRECTED_AGGREGATE, 0 },
    { DS_FACT_ECC_UNCORRECTED_AGGREGATE, 0 },
};

/* No fan (a datacenter board) and no NUMA node of its own memory: unserved, as NVML
 * answers for an H100.  Every CPU of the host, on node 0: the sim is near all of them. */
void ds__sim_device_facts(struct ds_backend *b, struct ds_devfacts *out)
{
    long cpus = sysconf(_SC_NPROCESSORS_CONF);

    for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++)
        ds_devfacts_set(out, values[i].f, values[i].v);
    snprintf(out->text[DS_TEXT_DRIVER_VERSION], DS_FACT_TEXT_LEN, "580.00-sim");
    snprintf(out->text[DS_TEXT_NVML_VERSION], DS_FACT_TEXT_LEN, "13.580.00-sim");
    snprintf(out->text[DS_TEXT_VBIOS], DS_FACT_TEXT_LEN, "00.00.00.00.00");
    snprintf(out->text[DS_TEXT_SERIAL], DS_FACT_TEXT_LEN, "detshare-sim-%d", b->cfg.gpu);
    snprintf(out->text[DS_TEXT_PART_NUMBER], DS_FACT_TEXT_LEN, "detshare-sim");
    if (cpus < 1)
        cpus = 1;
    if (cpus > 64 * DS_FACT_CPU_WORDS_ROOM)
        cpus = 64 * DS_FACT_CPU_WORDS_ROOM;
    for (long c = 0; c < cpus; c++)
        out->cpus[c / 64] |= 1ull << (c % 64);
    out->ncpu_words = (unsigned)((cpus + 63) / 64);
    out->nodes[0] = 1;
    out->nnode_words = 1;
}
