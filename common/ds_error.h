/*
 * Internal error codes.  Internal functions return 0 or a negative DS_E* code;
 * CUresult appears only where the client returns to the application and where an
 * executor writes a reply (ds_error_to_cu).
 */
#ifndef DS_ERROR_H
#define DS_ERROR_H

#define DS_ERRORS(X)                                            \
    X(DS_EINVAL, -1, "invalid argument")                        \
    X(DS_ENOMEM, -2, "out of memory")                           \
    X(DS_EHANDLE, -3, "unknown or stale handle")                \
    X(DS_ERANGE, -4, "address range outside the tenant's memory") \
    X(DS_ENOTREADY, -5, "work not complete")                    \
    X(DS_EIO, -6, "transport failure")                          \
    X(DS_EPROTO, -7, "protocol violation")                      \
    X(DS_EBUSY, -8, "resource busy")                            \
    X(DS_ENOTSUP, -9, "not supported")                          \
    X(DS_EDEVICE, -10, "device error")                          \
    X(DS_EPERM, -11, "not permitted")

enum ds_error {
#define DS_ERROR_ENUM(name, val, text) name = val,
    DS_ERRORS(DS_ERROR_ENUM)
#undef DS_ERROR_ENUM
};

/* A device error that must reach the tenant as the driver's own CUresult r (r > 0):
 * the cuda backend returns these so that, say, an illegal address stays one. */
#define DS_ECU(r) (-1000 - (int)(r))

/* Static text for a DS_E* code or 0; never NULL. */
const char *ds_strerror(int err);

/* The CUresult a tenant sees for internal code `err` (0 maps to CUDA_SUCCESS). */
int ds_error_to_cu(int err);

#endif
