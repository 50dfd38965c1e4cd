/* SPDX-License-Identifier: GPL-2.0 */
/*
 * som's own slab caches as /sys/kernel/slab and /proc/slabinfo show them:
 * exact when the guest boots with slab_debug=F,som_* (vm/run).
 */
#ifndef SOM_SLAB_UTIL_H
#define SOM_SLAB_UTIL_H

#include "som_util.h"

/* The size of one object of som's slab cache @name, or -1. */
static inline long long som_slab_object_size(const char *name)
{
	char path[128];

	snprintf(path, sizeof(path), "/sys/kernel/slab/%s/object_size", name);
	return som_read_ll(path);
}

/* Does slab cache @name count its objects exactly (no per-CPU slabs)? */
static inline int som_slab_exact(const char *name)
{
	char path[128];

	snprintf(path, sizeof(path), "/sys/kernel/slab/%s/sanity_checks",
		 name);
	return som_read_ll(path) == 1;
}

/*
 * The active objects /proc/slabinfo shows for cache @name, or -1. The
 * cache is shrunk first: under KASAN, freed objects wait in a quarantine
 * and count as active until a shrink of their cache lets them go.
 */
static inline long long som_slabinfo_active(const char *name)
{
	char line[512], cache[64];
	long long active = -1, n;
	FILE *f;

	snprintf(line, sizeof(line), "/sys/kernel/slab/%s/shrink", name);
	if (som_write_file(line, "1"))
		return -1;
	f = fopen("/proc/slabinfo", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%63s %lld", cache, &n) == 2 &&
		    !strcmp(cache, name))
			active = n;
	fclose(f);
	return active;
}

#endif /* SOM_SLAB_UTIL_H */
