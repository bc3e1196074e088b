/* cuGetExportTable: the hidden tables cudart needs from its driver (docs/export-tables.md). */
#ifndef DS_EXPORT_H
#define DS_EXPORT_H

#include <stdint.h>

/* Run and forget the context-local-storage entries of context ctx (its end: destroy,
 * reset, last release), calling each destructor outside any lock. */
void ds__export_context_gone(uint64_t ctx);

#endif
