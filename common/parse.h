/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What somctl, somrun and somrun's preload parse alike: sizes, NUMA node
 * lists and somrun's placement policies. Each returns 0 or -EINVAL and
 * writes its result only on success. Nothing here allocates or prints:
 * the preload calls it under the program's allocator.
 */
#ifndef SOM_PARSE_H
#define SOM_PARSE_H

#include <stddef.h>
#include <linux/som.h>

/* A node mask as wide as struct som_policy's: bit n of [n / 64]. */
#define SOM_NODE_WORDS	(SOM_MAX_NODES / 64)

int som_parse_size(const char *s, unsigned long long *out);
int som_parse_range(const char *s, unsigned long long *size,
		    unsigned long long *start);
int som_parse_threshold(const char *s, size_t *out);
int som_parse_nodes(const char *s, unsigned long long nodes[SOM_NODE_WORDS]);
int som_parse_policy(const char *s, unsigned int *mode,
		     unsigned long long nodes[SOM_NODE_WORDS]);

#endif
