#include "ds_jit.h"

#include <cuda.h>

int ds_jit_scalar_option(int o)
{
    switch ((CUjit_option)o) {
    case CU_JIT_MAX_REGISTERS: case CU_JIT_THREADS_PER_BLOCK: case CU_JIT_OPTIMIZATION_LEVEL:
    case CU_JIT_TARGET_FROM_CUCONTEXT: case CU_JIT_TARGET: case CU_JIT_FALLBACK_STRATEGY:
    case CU_JIT_GENERATE_DEBUG_INFO: case CU_JIT_LOG_VERBOSE: case CU_JIT_GENERATE_LINE_INFO:
    case CU_JIT_CACHE_MODE: case CU_JIT_FAST_COMPILE: case CU_JIT_LTO: case CU_JIT_FTZ:
    case CU_JIT_PREC_DIV: case CU_JIT_PREC_SQRT: case CU_JIT_FMA:
    case CU_JIT_OPTIMIZE_UNUSED_DEVICE_VARIABLES: case CU_JIT_POSITION_INDEPENDENT_CODE:
    case CU_JIT_MIN_CTA_PER_SM: case CU_JIT_MAX_THREADS_PER_BLOCK:
    case CU_JIT_OVERRIDE_DIRECTIVE_VALUES: case CU_JIT_SPLIT_COMPILE:
        return 1;
    default:
        return 0;
    }
}
