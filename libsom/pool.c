// SPDX-License-Identifier: LGPL-2.1-or-later
/* libsom: the pool's counters, read from /sys/kernel/mm/som. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libsom.h"

static int som_read_counter(const char *name, unsigned long long *val)
{
	char path[128], buf[32];
	FILE *f;
	int ok;

	snprintf(path, sizeof(path), "/sys/kernel/mm/som/%s", name);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	ok = fgets(buf, sizeof(buf), f) != NULL;
	fclose(f);
	if (!ok)
		return -EIO;
	*val = strtoull(buf, NULL, 10);
	return 0;
}

int som_pool_info(struct som_pool_info *info)
{
	static const struct {
		const char *name;
		size_t offset;
	} counters[] = {
#define C(f) { #f, offsetof(struct som_pool_info, f) }
		C(total_bytes), C(free_bytes), C(reserved_bytes),
		C(zeroed_bytes), C(unmovable_total_bytes),
		C(unmovable_free_bytes), C(metadata_bytes), C(faults_pud),
		C(faults_pmd), C(faults_pte),
#undef C
	};
	size_t i;
	int err;

	if (!info)
		return -EINVAL;
	memset(info, 0, sizeof(*info));
	for (i = 0; i < sizeof(counters) / sizeof(counters[0]); i++) {
		err = som_read_counter(counters[i].name,
				       (unsigned long long *)
				       ((char *)info + counters[i].offset));
		if (err)
			return err;
	}
	return 0;
}
