/* SPDX-License-Identifier: GPL-2.0 */
/* The SIZE@START syntax of reserved ranges (range_parse.c). */
#ifndef _SOM_SOURCE_RESERVED_H
#define _SOM_SOURCE_RESERVED_H

#include <linux/types.h>

int som_reserved_parse(const char *s, u64 *size, u64 *start,
		       const char **next);

#endif /* _SOM_SOURCE_RESERVED_H */
