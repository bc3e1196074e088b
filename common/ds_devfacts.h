/*
 * What NVML says of a device beyond the driver API: the facts and telemetry that
 * detshare's libnvidia-ml.so.1 serves a tenant as the device's own (docs/nvml.md).  The
 * executor's backend reads them (the real NVML, or the sim's fixed values), DS_DEVICE_FACTS
 * carries them (rpcgen/detshare.x, struct ds_facts) and the client hands them to the NVML
 * library through DETSHARE_SHARE (client/compat/share.h).  One list numbers them for all
 * three; each carries the largest value a device could report, beyond which the client
 * takes the value for garbage and serves nothing.
 */
#ifndef DS_DEVFACTS_H
#define DS_DEVFACTS_H

#include <stdint.h>

/* X(name, largest value).  Clocks in MHz, four in NVML's nvmlClockType_t order
 * (graphics, SM, memory, video); temperatures in degrees C; power in mW; energy in mJ
 * since the driver loaded; enable states 0 or 1; PState 0-15, or 32 for unknown;
 * INFOROM_VALID 1 when nvmlDeviceValidateInforom succeeds, 0 when it finds the infoROM
 * corrupted. */
#define DS_DEVFACTS(X)                                                                  \
    X(BRAND, 255)                                                                       \
    X(TEMP_GPU, 1000)                                                                   \
    X(TEMP_SHUTDOWN, 1000)                                                              \
    X(TEMP_SLOWDOWN, 1000)                                                              \
    X(TEMP_GPU_MAX, 1000)                                                               \
    X(TEMP_MEM_MAX, 1000)                                                               \
    X(POWER_USAGE, 100000000)                                                           \
    X(POWER_LIMIT, 100000000)                                                           \
    X(POWER_DEFAULT_LIMIT, 100000000)                                                   \
    X(POWER_ENFORCED_LIMIT, 100000000)                                                  \
    X(POWER_MIN_LIMIT, 100000000)                                                       \
    X(POWER_MAX_LIMIT, 100000000)                                                       \
    X(ENERGY, UINT64_MAX)                                                               \
    X(CLOCK_GRAPHICS, 100000)                                                           \
    X(CLOCK_SM, 100000)                                                                 \
    X(CLOCK_MEM, 100000)                                                                \
    X(CLOCK_VIDEO, 100000)                                                              \
    X(APP_CLOCK_GRAPHICS, 100000)                                                       \
    X(APP_CLOCK_SM, 100000)                                                             \
    X(APP_CLOCK_MEM, 100000)                                                            \
    X(APP_CLOCK_VIDEO, 100000)                                                          \
    X(DEFAULT_APP_CLOCK_GRAPHICS, 100000)                                               \
    X(DEFAULT_APP_CLOCK_SM, 100000)                                                     \
    X(DEFAULT_APP_CLOCK_MEM, 100000)                                                    \
    X(DEFAULT_APP_CLOCK_VIDEO, 100000)                                                  \
    X(MAX_CLOCK_VIDEO, 100000)                                                          \
    X(PSTATE, 32)                                                                       \
    X(CLOCKS_EVENT_REASONS, UINT64_MAX)                                                 \
    X(SUPPORTED_CLOCKS_EVENT_REASONS, UINT64_MAX)                                       \
    X(PCIE_GEN, 64)                                                                     \
    X(PCIE_GEN_MAX, 64)                                                                 \
    X(PCIE_GEN_GPU_MAX, 64)                                                             \
    X(PCIE_WIDTH, 64)                                                                   \
    X(PCIE_WIDTH_MAX, 64)                                                               \
    X(PERSISTENCE, 1)                                                                   \
    X(DISPLAY_MODE, 1)                                                                  \
    X(DISPLAY_ACTIVE, 1)                                                                \
    X(BOARD_ID, UINT32_MAX)                                                             \
    X(MULTI_GPU_BOARD, 1)                                                               \
    X(PCI_DEVICE_ID, UINT32_MAX)                                                        \
    X(PCI_SUBSYSTEM_ID, UINT32_MAX)                                                     \
    X(FAN_SPEED, 1000)                                                                  \
    X(NUMA_NODE, UINT32_MAX)                                                            \
    X(ECC_CORRECTED_VOLATILE, UINT64_MAX)                                               \
    X(ECC_UNCORRECTED_VOLATILE, UINT64_MAX)                                             \
    X(ECC_CORRECTED_AGGREGATE, UINT64_MAX)                                              \
    X(ECC_UNCORRECTED_AGGREGATE, UINT64_MAX)                                            \
    X(VIRTUALIZATION_MODE, 255)                                                         \
    X(INFOROM_VALID, 1)

enum ds_devfact {
#define DS_DEVFACT_ENUM(name, max) DS_FACT_##name,
    DS_DEVFACTS(DS_DEVFACT_ENUM)
#undef DS_DEVFACT_ENUM
    DS_FACT_COUNT
};

/* The texts, printable ASCII of fewer than DS_FACT_TEXT_LEN bytes.  HOST_BOOT is not
 * NVML's but the server host's boot id (/proc/sys/kernel/random/boot_id), which the
 * executor adds whatever its backend: two devices of one tenant with the same one are on
 * one host, which the NVML library's topology and peer answers need (docs/nvml.md). */
#define DS_DEVFACT_TEXTS(X) \
    X(DRIVER_VERSION) X(NVML_VERSION) X(VBIOS) X(SERIAL) X(PART_NUMBER) X(HOST_BOOT)

enum ds_devfact_text {
#define DS_DEVFACT_TEXT_ENUM(name) DS_TEXT_##name,
    DS_DEVFACT_TEXTS(DS_DEVFACT_TEXT_ENUM)
#undef DS_DEVFACT_TEXT_ENUM
    DS_TEXT_COUNT
};

/* The bounds the wire gives (detshare.x: DS_FACTS_MAX, DS_FACT_TEXTS_MAX,
 * DS_FACT_TEXT_MAX + 1, DS_FACT_CPU_WORDS, DS_FACT_NODE_WORDS). */
#define DS_FACTS_ROOM 64
#define DS_FACT_TEXTS_ROOM 8
#define DS_FACT_TEXT_LEN 96
#define DS_FACT_CPU_WORDS_ROOM 16
#define DS_FACT_NODE_WORDS_ROOM 4

_Static_assert(DS_FACT_COUNT <= DS_FACTS_ROOM, "served is one 64-bit mask");
_Static_assert(DS_TEXT_COUNT <= DS_FACT_TEXTS_ROOM, "the wire holds the texts");

struct ds_devfacts {
    uint64_t served;                   /* bit DS_FACT_x: v[DS_FACT_x] is the device's */
    uint64_t v[DS_FACT_COUNT];
    char text[DS_TEXT_COUNT][DS_FACT_TEXT_LEN]; /* "": not served */
    uint64_t cpus[DS_FACT_CPU_WORDS_ROOM];      /* CPUs near the device, bit i CPU i */
    unsigned ncpu_words;                        /* words of cpus served; 0: none */
    uint64_t nodes[DS_FACT_NODE_WORDS_ROOM];    /* NUMA nodes near the device */
    unsigned nnode_words;
};

/* Set fact f of *d to v, served. */
void ds_devfacts_set(struct ds_devfacts *d, enum ds_devfact f, uint64_t v);

/* Keep of *d only what is well formed: a served value no larger than its fact's bound
 * (an unserved value reads 0), texts of printable ASCII NUL-terminated in their room
 * (else ""), word counts within their rooms.  Returns how many things it dropped. */
unsigned ds_devfacts_sanitize(struct ds_devfacts *d);

#endif
