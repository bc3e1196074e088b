/*
 * What kind of device-code image a pointer holds, and how many bytes it spans.
 *
 * cuModuleLoadData, cuModuleLoadFatBinary and cuLibraryLoadData receive a bare pointer:
 * the client must work out the image's length before it can send it, and the executor
 * re-checks what arrives against the length it received.  The same code serves both, so
 * every length field is validated against `limit`, never trusted.
 *
 * Formats, as far as they matter here (little-endian throughout):
 *  - fatbin container: u32 magic 0xBA55ED50, u16 version, u16 header size, u64 payload
 *    size; the payload is a sequence of entries (parsed by the server's cubin module).
 *  - fatbin wrapper, the struct nvcc emits into .nvFatBinSegment and passes to
 *    __cudaRegisterFatBinary: u32 magic 0x466243B1, u32 version (1 or 2), a pointer to a
 *    container, a pointer the driver ignores here.
 *  - ELF (cubin): extent from the ELF, section and program headers.
 *  - PTX: NUL-terminated text whose first directive is .version.
 */
#ifndef DS_IMAGE_H
#define DS_IMAGE_H

#include <stddef.h>
#include <stdint.h>

enum ds_image_kind { DS_IMAGE_FATBIN, DS_IMAGE_ELF, DS_IMAGE_PTX };

#define DS_FATBIN_MAGIC 0xBA55ED50u
#define DS_FATBIN_WRAPPER_MAGIC 0x466243B1u
#define DS_FATBIN_HEADER_MIN 16u /* magic, version, header size, payload size */

/* The largest image accepted.  On the client the pointer comes from the application and
 * `limit` is SIZE_MAX, so this is what stops a corrupt length from sending us reading
 * across the address space. */
#define DS_IMAGE_MAX ((size_t)1 << 31)

/*
 * Identify the image at p and compute its total size in bytes, reading at most `limit`
 * bytes from p (the client passes SIZE_MAX; the executor passes the length it received).
 *
 * On success sets *kind, *size and *image, where *image is the first byte of the image
 * that *size measures: p itself, except for a fatbin wrapper, where it is the container
 * the wrapper points to and *kind is DS_IMAGE_FATBIN.  A wrapper is followed only when
 * limit == SIZE_MAX and image != NULL, that is, in the process that owns the pointer; in
 * received bytes it is refused, since the pointer inside means nothing there.  image may
 * be NULL when the caller only accepts self-contained images.
 *
 * Returns 0, DS_EINVAL for a NULL argument, unrecognised bytes, a truncated or malformed
 * header, any extent past `limit` or DS_IMAGE_MAX, or a PTX text with no NUL within them.
 * Allocates nothing.
 */
int ds_image_identify(const void *p, size_t limit, enum ds_image_kind *kind,
                      const void **image, size_t *size);

/* Static name of a kind ("fatbin", "elf", "ptx"), or "?"; never NULL. */
const char *ds_image_kind_name(enum ds_image_kind kind);

#endif
