/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libsom: what its files share and programs do not see. */
#ifndef LIBSOM_INTERNAL_H
#define LIBSOM_INTERNAL_H

#include "libsom.h"

#define SOM_BLOCK	(2UL << 20)

int som_alloc_range(struct som *som, const void *addr, void **start,
		    size_t *len, size_t *size);

#endif
