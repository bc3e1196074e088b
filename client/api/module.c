/*
 * Modules, libraries and kernels.  The executor loads an image and, for each kernel the
 * tenant asks for, returns the kernel's parameter layout; the client keeps that layout
 * in the CUfunction it hands out, so that a launch packs its parameters into one buffer
 * and goes as one batched call.
 *
 * A CUlibrary is the same thing as a CUmodule here (the executor always loads libraries,
 * which serve every context), and a CUkernel the same thing as a CUfunction.
 */
#include "cuda_api.h"
#include "module.h"

#include "ctx.h"
#include "ds_image.h"
#include "mem.h"
#include "rpc.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUNC_MAGIC 0x64734b6eu

_Static_assert(CU_FUNC_ATTRIBUTE_MAX <= DS_FUNC_ATTRS, "function attribute cache too small");

/* The attributes the image fixes (the register count, static sizes, versions): those
 * before the first one cuFuncSetAttribute can change. */
#define FIXED_ATTRS ((1ull << CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) - 1)

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct ds_cfunc *functions; /* live functions, for reuse and unload */
/* Functions of unloaded modules.  An application may still hold their CUfunction; it
 * must get INVALID_HANDLE, not a read of freed memory, so the small headers stay. */
static struct ds_cfunc *retired;

struct ds_cfunc *ds__module_func(const void *f)
{
    struct ds_cfunc *cf = (struct ds_cfunc *)f;

    return cf != NULL && cf->magic == FUNC_MAGIC ? cf : NULL;
}

struct ds_cfunc *ds__module_func_of(uint64_t handle)
{
    struct ds_cfunc *f;

    pthread_mutex_lock(&lock);
    for (f = functions; f != NULL && f->handle != handle; f = f->next)
        ;
    pthread_mutex_unlock(&lock);
    return f;
}

/* A library belongs to no context: a thread with none current may load one (cudart
 * loads a kernel's library lazily, on a new thread's first launch, before it makes the
 * primary context current there).  The executor then keeps it with the primary. */
static CUresult load(CUmodule *out, const void *image, int library)
{
    ds_module_load_args a;
    enum ds_image_kind kind;
    const void *start;
    size_t size;
    ds_handle_res r;
    CUresult rc;

    DS_NEED_INIT();
    if (out == NULL || image == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (ds__ctx_current(&a.ctx) != CUDA_SUCCESS) {
        if (!library)
            return CUDA_ERROR_INVALID_CONTEXT;
        a.ctx = ds__rpc_primary(ds__route_current());
    }
    if (ds_image_identify(image, SIZE_MAX, &kind, &start, &size) != 0)
        return CUDA_ERROR_INVALID_IMAGE;
    a.image.image_val = (char *)start;
    a.image.image_len = (u_int)size;
    rc = ds_rpc_module_load(&a, &r);
    if (rc == CUDA_SUCCESS)
        *out = (CUmodule)(uintptr_t)r.ds_handle_res_u.handle;
    return rc;
}

CUresult cuModuleLoadData(CUmodule *module, const void *image)
{
    return load(module, image, 0);
}

/* JIT options only tune how PTX is compiled, and logs; the executor compiles with its
 * defaults. */
CUresult cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int n,
                            CUjit_option *options, void **values)
{
    (void)n;
    (void)options;
    (void)values;
    return load(module, image, 0);
}

CUresult cuModuleLoadFatBinary(CUmodule *module, const void *fatbin)
{
    return load(module, fatbin, 0);
}

void *ds__module_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    long n;

    if (f == NULL)
        return NULL;
    if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (buf = malloc((size_t)n + 1)) != NULL) {
        if (fread(buf, 1, (size_t)n, f) == (size_t)n) {
            buf[n] = '\0';
            *len = (size_t)n;
        } else {
            free(buf);
            buf = NULL;
        }
    }
    fclose(f);
    return buf;
}

static CUresult load_file(CUmodule *module, const char *path, int library)
{
    void *image;
    size_t len;
    CUresult rc;

    DS_NEED_INIT();
    if (path == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    image = ds__module_read_file(path, &len);
    if (image == NULL)
        return CUDA_ERROR_FILE_NOT_FOUND;
    rc = load(module, image, library);
    free(image);
    return rc;
}

CUresult cuModuleLoad(CUmodule *module, const char *path)
{
    return load_file(module, path, 0);
}

static void forget_functions(uint64_t module)
{
    struct ds_cfunc **p;

    pthread_mutex_lock(&lock);
    for (p = &functions; *p != NULL;) {
        struct ds_cfunc *f = *p;

        if (f->module == module) {
            *p = f->next;
            f->magic = 0;
            free(f->offset);
            free(f->name);
            f->offset = f->size = NULL;
            f->name = NULL;
            f->next = retired;
            retired = f;
        } else {
            p = &f->next;
        }
    }
    pthread_mutex_unlock(&lock);
}

CUresult cuModuleUnload(CUmodule module)
{
    ds_handle h = (ds_handle)(uintptr_t)module;
    ds_void_res r;
    CUresult rc;

    DS_NEED_INIT();
    rc = ds_rpc_module_unload(&h, &r);
    if (rc == CUDA_SUCCESS)
        forget_functions(h);
    return rc;
}

/* The client's copy of a function the executor described; one per server handle. */
static struct ds_cfunc *keep(uint64_t module, const ds_function *fn, const char *name)
{
    struct ds_cfunc *f;
    uint32_t n = fn->params.params_len;

    pthread_mutex_lock(&lock);
    for (f = functions; f != NULL; f = f->next)
        if (f->handle == fn->handle)
            break;
    if (f == NULL && (f = calloc(1, sizeof(*f))) != NULL) {
        f->offset = calloc(2 * (size_t)(n ? n : 1), sizeof(uint32_t));
        f->name = strdup(name);
        if (f->offset == NULL || f->name == NULL) {
            free(f->offset);
            free(f->name);
            free(f);
            f = NULL;
        } else {
            f->size = f->offset + n;
            for (uint32_t i = 0; i < n; i++) {
                f->offset[i] = fn->params.params_val[i].offset;
                f->size[i] = fn->params.params_val[i].size;
            }
            f->magic = FUNC_MAGIC;
            f->handle = fn->handle;
            f->module = module;
            f->nparams = n;
            f->param_bytes = fn->param_bytes;
            for (uint32_t a = 0; a < fn->attrs.attrs_len && a < CU_FUNC_ATTRIBUTE_MAX; a++)
                f->attr[a] = fn->attrs.attrs_val[a];
            f->attr_known = fn->attrs_known & ((1ull << CU_FUNC_ATTRIBUTE_MAX) - 1);
            f->next = functions;
            functions = f;
        }
    }
    pthread_mutex_unlock(&lock);
    return f;
}

CUresult cuModuleGetFunction(CUfunction *out, CUmodule module, const char *name)
{
    ds_symbol_args a = { .module = (ds_handle)(uintptr_t)module, .name = (char *)name };
    ds_function_res r;
    struct ds_cfunc *f;
    CUresult rc;

    DS_NEED_INIT();
    if (out == NULL || name == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (strlen(name) > DS_SYMBOL_MAX)
        return CUDA_ERROR_NOT_FOUND;
    memset(&r, 0, sizeof(r));
    rc = ds_rpc_module_get_function(&a, &r);
    if (rc != CUDA_SUCCESS)
        return rc;
    f = keep(a.module, &r.ds_function_res_u.fn, name);
    ds__rpc_free((xdrproc_t)xdr_ds_function_res, &r);
    if (f == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    *out = (CUfunction)f;
    return CUDA_SUCCESS;
}

CUresult cuModuleGetGlobal_v2(CUdeviceptr *dptr, size_t *bytes, CUmodule module, const char *name)
{
    ds_symbol_args a = { .module = (ds_handle)(uintptr_t)module, .name = (char *)name };
    ds_global_res r;
    CUresult rc;

    DS_NEED_INIT();
    if (name == NULL || strlen(name) > DS_SYMBOL_MAX)
        return CUDA_ERROR_INVALID_VALUE;
    rc = ds_rpc_module_get_global(&a, &r);
    if (rc != CUDA_SUCCESS)
        return rc;
    ds__mem_remember(r.ds_global_res_u.global.ptr, r.ds_global_res_u.global.size);
    if (dptr != NULL)
        *dptr = r.ds_global_res_u.global.ptr;
    if (bytes != NULL)
        *bytes = r.ds_global_res_u.global.size;
    return CUDA_SUCCESS;
}

/* Library options (CU_LIBRARY_HOST_UNIVERSAL_FUNCTION_AND_DATA_TABLE, binary
 * preservation) concern how the driver keeps the image, not what it computes. */
CUresult cuLibraryLoadData(CUlibrary *library, const void *code, CUjit_option *jit_options,
                           void **jit_values, unsigned int njit, CUlibraryOption *options,
                           void **values, unsigned int n)
{
    (void)jit_options;
    (void)jit_values;
    (void)njit;
    (void)options;
    (void)values;
    (void)n;
    return load((CUmodule *)library, code, 1);
}

CUresult cuLibraryLoadFromFile(CUlibrary *library, const char *path, CUjit_option *jit_options,
                               void **jit_values, unsigned int njit, CUlibraryOption *options,
                               void **values, unsigned int n)
{
    (void)jit_options;
    (void)jit_values;
    (void)njit;
    (void)options;
    (void)values;
    (void)n;
    return load_file((CUmodule *)library, path, 1);
}

CUresult cuLibraryUnload(CUlibrary library)
{
    return cuModuleUnload((CUmodule)library);
}

CUresult cuLibraryGetModule(CUmodule *module, CUlibrary library)
{
    DS_NEED_INIT();
    if (module == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *module = (CUmodule)library;
    return CUDA_SUCCESS;
}

CUresult cuLibraryGetKernel(CUkernel *kernel, CUlibrary library, const char *name)
{
    return cuModuleGetFunction((CUfunction *)kernel, (CUmodule)library, name);
}

/* The module's kernel names from the server, and their number. */
static CUresult kernel_names(CUmodule module, ds_names_res *r)
{
    ds_handle h = (ds_handle)(uintptr_t)module;

    DS_NEED_INIT();
    memset(r, 0, sizeof(*r));
    return ds_rpc_module_kernels(&h, r);
}

/* The first max kernels named in r, into out. */
static CUresult functions_of(CUmodule module, const ds_names_res *r, CUfunction *out,
                             unsigned max)
{
    CUresult rc = CUDA_SUCCESS;

    for (unsigned i = 0; i < max && i < r->ds_names_res_u.names.names_len && rc == CUDA_SUCCESS; i++)
        rc = cuModuleGetFunction(&out[i], module, r->ds_names_res_u.names.names_val[i]);
    return rc;
}

CUresult ds__module_kernels(CUmodule module, CUfunction **out, unsigned *count)
{
    ds_names_res r;
    CUresult rc = kernel_names(module, &r);

    *out = NULL;
    *count = 0;
    if (rc != CUDA_SUCCESS)
        return rc;
    *count = r.ds_names_res_u.names.names_len;
    if (*count > 0 && (*out = calloc(*count, sizeof(**out))) == NULL)
        rc = CUDA_ERROR_OUT_OF_MEMORY;
    if (rc == CUDA_SUCCESS)
        rc = functions_of(module, &r, *out, *count);
    ds__rpc_free((xdrproc_t)xdr_ds_names_res, &r);
    if (rc != CUDA_SUCCESS) {
        free(*out);
        *out = NULL;
        *count = 0;
    }
    return rc;
}

CUresult cuModuleGetFunctionCount(unsigned *count, CUmodule module)
{
    ds_names_res r;
    CUresult rc;

    if (count == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    rc = kernel_names(module, &r);
    if (rc != CUDA_SUCCESS)
        return rc;
    *count = r.ds_names_res_u.names.names_len;
    ds__rpc_free((xdrproc_t)xdr_ds_names_res, &r);
    return CUDA_SUCCESS;
}

CUresult cuModuleEnumerateFunctions(CUfunction *functions, unsigned num, CUmodule module)
{
    ds_names_res r;
    CUresult rc;

    if (functions == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    rc = kernel_names(module, &r);
    if (rc != CUDA_SUCCESS)
        return rc;
    rc = functions_of(module, &r, functions, num);
    ds__rpc_free((xdrproc_t)xdr_ds_names_res, &r);
    return rc;
}

CUresult cuLibraryGetKernelCount(unsigned *count, CUlibrary library)
{
    return cuModuleGetFunctionCount(count, (CUmodule)library);
}

CUresult cuLibraryEnumerateKernels(CUkernel *kernels, unsigned num, CUlibrary library)
{
    return cuModuleEnumerateFunctions((CUfunction *)kernels, num, (CUmodule)library);
}

CUresult cuLibraryGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUlibrary library, const char *name)
{
    return cuModuleGetGlobal_v2(dptr, bytes, (CUmodule)library, name);
}

CUresult cuKernelGetFunction(CUfunction *func, CUkernel kernel)
{
    DS_NEED_INIT();
    if (func == NULL || ds__module_func(kernel) == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    *func = (CUfunction)kernel;
    return CUDA_SUCCESS;
}

static CUresult get_attr(int *value, int attr, const void *fn)
{
    struct ds_cfunc *f = ds__module_func(fn);
    ds_func_attr_args a = { .attr = attr };
    ds_int_res r;
    CUresult rc;

    DS_NEED_INIT();
    if (value == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (f == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    if (attr >= 0 && attr < CU_FUNC_ATTRIBUTE_MAX) {
        pthread_mutex_lock(&lock);
        rc = (f->attr_known >> attr) & 1 ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
        if (rc == CUDA_SUCCESS)
            *value = f->attr[attr];
        pthread_mutex_unlock(&lock);
        if (rc == CUDA_SUCCESS)
            return rc;
    }
    a.fn = f->handle;
    rc = ds_rpc_func_get_attribute(&a, &r);
    if (rc == CUDA_SUCCESS) {
        *value = r.ds_int_res_u.value;
        if (attr >= 0 && attr < CU_FUNC_ATTRIBUTE_MAX) {
            pthread_mutex_lock(&lock);
            f->attr[attr] = *value;
            f->attr_known |= 1ull << attr;
            pthread_mutex_unlock(&lock);
        }
    }
    return rc;
}

static CUresult set_attr(int attr, int value, const void *fn)
{
    struct ds_cfunc *f = ds__module_func(fn);
    ds_func_attr_args a = { .attr = attr, .value = value };
    ds_void_res r;
    CUresult rc;

    DS_NEED_INIT();
    if (f == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    a.fn = f->handle;
    /* Frameworks set attributes before every launch of a kernel (measured: one call per
     * launch in transformers' decoding); setting what was last set changes nothing. */
    if (attr >= 0 && attr < CU_FUNC_ATTRIBUTE_MAX) {
        pthread_mutex_lock(&lock);
        rc = (f->set_known >> attr) & 1 && f->set_to[attr] == value;
        pthread_mutex_unlock(&lock);
        if (rc)
            return CUDA_SUCCESS;
    }
    rc = ds_rpc_func_set_attribute(&a, &r);
    /* One settable attribute can bound another (dynamic shared memory and the carveout),
     * so those read before are asked again; what the image fixed stays.  The dynamic
     * shared memory limit reads back as set, and launches are checked against it. */
    pthread_mutex_lock(&lock);
    f->attr_known &= FIXED_ATTRS;
    if (rc == CUDA_SUCCESS && attr == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) {
        f->attr[attr] = value;
        f->attr_known |= 1ull << attr;
    }
    if (attr >= 0 && attr < CU_FUNC_ATTRIBUTE_MAX) {
        f->set_known &= ~(1ull << attr);
        if (rc == CUDA_SUCCESS) {
            f->set_to[attr] = value;
            f->set_known |= 1ull << attr;
        }
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

CUresult ds__module_attr(struct ds_cfunc *f, int attr, int *value)
{
    return get_attr(value, attr, f);
}

void ds__module_attrs(struct ds_cfunc *f, const int *attrs, int n, long long *out)
{
    uint64_t missing = 0;
    int v;

    pthread_mutex_lock(&lock);
    for (int i = 0; i < n; i++) {
        int known = attrs[i] >= 0 && attrs[i] < CU_FUNC_ATTRIBUTE_MAX &&
                    ((f->attr_known >> attrs[i]) & 1);

        out[i] = known ? f->attr[attrs[i]] : -1;
        missing |= (uint64_t)!known << i;
    }
    pthread_mutex_unlock(&lock);
    for (int i = 0; missing != 0 && i < n; i++)
        if ((missing >> i) & 1)
            out[i] = get_attr(&v, attrs[i], f) == CUDA_SUCCESS ? v : -1;
}

CUresult cuFuncGetAttribute(int *value, CUfunction_attribute attr, CUfunction f)
{
    return get_attr(value, attr, f);
}

CUresult cuFuncSetAttribute(CUfunction f, CUfunction_attribute attr, int value)
{
    return set_attr(attr, value, f);
}

CUresult cuKernelGetAttribute(int *value, CUfunction_attribute attr, CUkernel k, CUdevice dev)
{
    if (dev != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    return get_attr(value, attr, k);
}

CUresult cuKernelSetAttribute(CUfunction_attribute attr, int value, CUkernel k, CUdevice dev)
{
    if (dev != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    return set_attr(attr, value, k);
}

/* The cache configuration is a preference the driver may ignore; it changes no result,
 * so it is accepted and not forwarded. */
CUresult cuFuncSetCacheConfig(CUfunction f, CUfunc_cache config)
{
    DS_NEED_INIT();
    if (ds__module_func(f) == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    if ((unsigned)config > CU_FUNC_CACHE_PREFER_EQUAL)
        return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

CUresult cuKernelSetCacheConfig(CUkernel k, CUfunc_cache config, CUdevice dev)
{
    if (dev != 0)
        return CUDA_ERROR_INVALID_DEVICE;
    return cuFuncSetCacheConfig((CUfunction)k, config);
}

static CUresult param_info(const void *fn, size_t i, size_t *offset, size_t *size)
{
    struct ds_cfunc *f = ds__module_func(fn);

    DS_NEED_INIT();
    if (f == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    if (i >= f->nparams)
        return CUDA_ERROR_INVALID_VALUE;
    if (offset != NULL)
        *offset = f->offset[i];
    if (size != NULL)
        *size = f->size[i];
    return CUDA_SUCCESS;
}

CUresult cuFuncGetParamInfo(CUfunction f, size_t i, size_t *offset, size_t *size)
{
    return param_info(f, i, offset, size);
}

CUresult cuKernelGetParamInfo(CUkernel k, size_t i, size_t *offset, size_t *size)
{
    return param_info(k, i, offset, size);
}

CUresult cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int *blocks, CUfunction fn,
                                                             int block_size, size_t smem,
                                                             unsigned int flags)
{
    struct ds_cfunc *f = ds__module_func(fn);
    ds_occupancy_args a = { .query = DS_OCC_BLOCKS, .block_size = block_size,
                            .dynamic_smem = smem, .flags = flags };
    ds_int_res r;
    CUresult rc;

    DS_NEED_INIT();
    if (blocks == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (f == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    a.fn = f->handle;
    rc = ds_rpc_occupancy(&a, &r);
    if (rc == CUDA_SUCCESS)
        *blocks = r.ds_int_res_u.value;
    return rc;
}

CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *blocks, CUfunction fn, int block_size,
                                                     size_t smem)
{
    return cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(blocks, fn, block_size, smem, 0);
}

/* As the driver decides it: CUDA_MODULE_LOADING=EAGER, else lazy (the default since
 * CUDA 12.2).  The executor loads each image whole either way. */
CUresult cuModuleGetLoadingMode(CUmoduleLoadingMode *mode)
{
    const char *env = getenv("CUDA_MODULE_LOADING");

    DS_NEED_INIT();
    if (mode == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *mode = env != NULL && strcmp(env, "EAGER") == 0 ? CU_MODULE_EAGER_LOADING
                                                      : CU_MODULE_LAZY_LOADING;
    return CUDA_SUCCESS;
}

CUresult cuOccupancyAvailableDynamicSMemPerBlock(size_t *smem, CUfunction fn, int num_blocks,
                                                 int block_size)
{
    struct ds_cfunc *f = ds__module_func(fn);
    ds_occupancy_args a = { .query = DS_OCC_DYNAMIC_SMEM, .block_size = block_size,
                            .num_blocks = num_blocks };
    ds_int_res r;
    CUresult rc;

    DS_NEED_INIT();
    if (smem == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (f == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    a.fn = f->handle;
    rc = ds_rpc_occupancy(&a, &r);
    if (rc == CUDA_SUCCESS)
        *smem = (size_t)r.ds_int_res_u.value;
    return rc;
}

/* A cluster query's kernel, launch shape and dynamic shared memory, from cfg. */
static void launch_shape(ds_occupancy_args *a, const struct ds_cfunc *f, const CUlaunchConfig *cfg)
{
    a->fn = f->handle;
    a->grid[0] = cfg->gridDimX;
    a->grid[1] = cfg->gridDimY;
    a->grid[2] = cfg->gridDimZ;
    a->block[0] = cfg->blockDimX;
    a->block[1] = cfg->blockDimY;
    a->block[2] = cfg->blockDimZ;
    a->block_size = (int)(cfg->blockDimX * cfg->blockDimY * cfg->blockDimZ);
    a->dynamic_smem = cfg->sharedMemBytes;
}

/* The launch's shape and shared memory; any cluster dimension among its attributes is
 * what is being asked, so none is sent. */
CUresult cuOccupancyMaxPotentialClusterSize(int *size, CUfunction fn, const CUlaunchConfig *cfg)
{
    struct ds_cfunc *f = ds__module_func(fn);
    ds_occupancy_args a = { .query = DS_OCC_CLUSTER_SIZE };
    ds_int_res r;
    CUresult rc;

    DS_NEED_INIT();
    if (size == NULL || cfg == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (f == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    launch_shape(&a, f, cfg);
    rc = ds_rpc_occupancy(&a, &r);
    if (rc == CUDA_SUCCESS)
        *size = r.ds_int_res_u.value;
    return rc;
}

/* The cluster shape comes from the launch attributes; without one, each block is its own
 * cluster, or the kernel's compiled-in cluster applies (the executor's device decides). */
CUresult cuOccupancyMaxActiveClusters(int *clusters, CUfunction fn, const CUlaunchConfig *cfg)
{
    struct ds_cfunc *f = ds__module_func(fn);
    ds_occupancy_args a = { .query = DS_OCC_CLUSTERS, .cluster = { 1, 1, 1 } };
    ds_int_res r;
    CUresult rc;

    DS_NEED_INIT();
    if (clusters == NULL || cfg == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    if (f == NULL)
        return CUDA_ERROR_INVALID_HANDLE;
    for (unsigned i = 0; i < cfg->numAttrs; i++) {
        if (cfg->attrs[i].id != CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION)
            continue;
        a.cluster[0] = cfg->attrs[i].value.clusterDim.x;
        a.cluster[1] = cfg->attrs[i].value.clusterDim.y;
        a.cluster[2] = cfg->attrs[i].value.clusterDim.z;
    }
    launch_shape(&a, f, cfg);
    rc = ds_rpc_occupancy(&a, &r);
    if (rc == CUDA_SUCCESS)
        *clusters = r.ds_int_res_u.value;
    return rc;
}
