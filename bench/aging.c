// SPDX-License-Identifier: GPL-2.0
/*
 * som_bench age ENTRY RUN: one aging scan (sysfs aging/scan) of som
 * memory mapped with ENTRY entries (1g, 2m or 4k: a GiB of each of the
 * first two, 128 MiB of 4 KiB entries), and what it costs its owner: a
 * scan unmaps the entries, so the next touch of every entry refaults.
 * Prints
 *
 *	SOMBENCH age entry=E run=N bytes=B scan_ns=S refaults=F
 *		warm_ns=W after_ns=A
 *
 * scan_ns from aging/scan_ns (the scan's own clock), refaults from the
 * fault counter of that entry size (exact), warm_ns and after_ns the time
 * to write one byte per entry before and after the scan. The pool holds
 * nothing else while it runs, so the scan is this mapping's.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "aging.h"
#include "measure.h"
#include "som_util.h"

/* Write one byte in every @step of [@p, @p + @len); the time it took. */
uint64_t age_touch_every(volatile char *p, size_t len, size_t step)
{
	uint64_t t0 = measure_ns();
	size_t off;

	for (off = 0; off < len; off += step)
		p[off]++;
	return measure_ns() - t0;
}

int som_bench_age(const char *entry, int run)
{
	long long size, ns, refaults;
	uint64_t warm, after;
	const char *stat;
	size_t len = GiB;
	int fd, err = 1;
	char *p;

	if (!strcmp(entry, "1g")) {
		size = GiB;
		stat = "faults_pud";
	} else if (!strcmp(entry, "2m")) {
		size = 2 * MiB;
		stat = "faults_pmd";
	} else if (!strcmp(entry, "4k")) {
		size = 4096;
		len = 128 * MiB;
		stat = "faults_pte";
	} else {
		fprintf(stderr, "som_bench: unknown entry size %s\n", entry);
		return 2;
	}
	if (access(SOM_SYSFS "aging/scan", W_OK)) {
		printf("SOMBENCH skip what=age entry=%s reason=no_aging\n", entry);
		return 0;
	}
	if (size == GiB && !som_cpu_has_gbpages()) {
		printf("SOMBENCH skip what=age entry=%s reason=no_1g_entries\n",
		       entry);
		return 0;
	}
	fd = open(SOM_DEV, O_RDWR);
	if (fd < 0)
		return 1;
	/* A GiB aligned mapping gets 1 GiB entries; one 2 MiB off, not. */
	p = size == GiB ? som_map_shared(fd, len) :
			  som_map_past(fd, len, GiB, 2 * MiB);
	if (p == MAP_FAILED)
		goto out_close;
	if (size == 4096 && madvise(p, len, MADV_NOHUGEPAGE))
		goto out_unmap;
	age_touch_every(p, len, size);
	if (som_page_size(fd, p) != size) {
		fprintf(stderr, "som_bench: age %s: mapped with %lld-byte entries\n",
			entry, som_page_size(fd, p));
		goto out_unmap;
	}
	warm = age_touch_every(p, len, size);
	ns = som_stat("aging/scan_ns");
	if (som_sysfs_write("aging/scan", "1"))
		goto out_unmap;
	ns = som_stat("aging/scan_ns") - ns;
	refaults = som_stat(stat);
	after = age_touch_every(p, len, size);
	refaults = som_stat(stat) - refaults;
	printf("SOMBENCH age entry=%s run=%d bytes=%zu scan_ns=%lld refaults=%lld"
	       " warm_ns=%llu after_ns=%llu\n", entry, run, len, ns, refaults,
	       (unsigned long long)warm, (unsigned long long)after);
	err = 0;
out_unmap:
	munmap(p, len);
out_close:
	close(fd);
	return err;
}
