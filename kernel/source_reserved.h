/* SPDX-License-Identifier: GPL-2.0 */
#ifndef _SOM_SOURCE_RESERVED_H
#define _SOM_SOURCE_RESERVED_H

#include <linux/types.h>

struct som_pool;

int som_reserved_parse(const char *s, u64 *size, u64 *start,
		       const char **next);
int som_reserved_add(struct som_pool *pool, u64 start, u64 size);
int som_reserved_add_list(struct som_pool *pool, const char *list);

#endif /* _SOM_SOURCE_RESERVED_H */
