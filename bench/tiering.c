// SPDX-License-Identifier: GPL-2.0
/*
 * som_bench tier 2m|1g|kernel-thp RUN: how fast memory moves between a
 * fast and a slow tier. som (2m, 1g): the spare reserved range of node 1
 * (SOM_SPARE_RANGES) is added as the slow tier; a som file on node 0 is
 * filled, aged cold by two scans and demoted by one tiering pass
 * (tiering/run), then touched, scanned and promoted back by the next.
 * 2m: 256 MiB on 2 MiB entries, block by block; 1g: one GiB on one
 * 1 GiB entry, moved whole. kernel-thp: the kernel's own NUMA migration
 * of 256 MiB of anonymous THP, node 0 to node 1 and back with
 * move_pages(2), for comparison (the kernel's demotion moves pages the
 * same way). Prints
 *
 *	SOMBENCH tier entry=E run=N bytes=B demote_ns=D promote_ns=P
 *		demoted=X promoted=Y
 *
 * demote_ns and promote_ns are wall time around the pass (or the
 * move_pages() call); demoted and promoted the bytes the counters say
 * moved (for the kernel, the bytes move_pages() put on the wanted node),
 * the data checked after each move.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "aging.h"
#include "measure.h"
#include "som_util.h"
#include "som_pool_util.h"

#define SLOW	"bench-slow"

static const char *const knobs[] = {
	"tiering/enabled", "tiering/demote_age", "tiering/promote_age",
	"tiering/max_bytes", "aging/interval_ms",
};
#define NR_KNOBS (sizeof(knobs) / sizeof(knobs[0]))

/* One tiering pass; its wall time, and the bytes counter @moved grew. */
static int tier_pass(const char *moved, uint64_t *ns, long long *bytes)
{
	long long before = som_stat(moved);
	uint64_t t0 = measure_ns();

	if (som_sysfs_write("tiering/run", "1"))
		return -1;
	*ns = measure_ns() - t0;
	*bytes = som_stat(moved) - before;
	return 0;
}

static int bench_som(const char *entry, int run)
{
	size_t len = strcmp(entry, "1g") ? 256 * MiB : GiB;
	char saved[NR_KNOBS][32], path[128];
	long long demoted = 0, promoted = 0;
	uint64_t dns = 0, pns = 0, size, start;
	struct som_source_args a;
	int dev, fd = -1, err = 1;
	unsigned int i;
	char *p = MAP_FAILED;

	if (!parse_range(getenv("SOM_SPARE_RANGES"), &size, &start) ||
	    access(SOM_SYSFS "tiering/run", W_OK)) {
		printf("SOMBENCH skip what=tier entry=%s reason=no_spare_range_or_tiering\n",
		       entry);
		return 0;
	}
	if (len == GiB && (!som_cpu_has_gbpages() || size != GiB)) {
		printf("SOMBENCH skip what=tier entry=%s reason=no_1g_entries\n",
		       entry);
		return 0;
	}
	for (i = 0; i < NR_KNOBS; i++) {
		snprintf(path, sizeof(path), SOM_SYSFS "%s", knobs[i]);
		if (som_read_text(path, saved[i], sizeof(saved[i])) <= 0)
			return 1;
	}
	dev = open(SOM_DEV, O_RDWR | O_CLOEXEC);
	if (dev < 0)
		return 1;
	args_init(&a, SOM_SOURCE_RESERVED);
	a.flags = SOM_SOURCE_SLOW;
	a.start = start;
	a.size = size;
	strcpy(a.name, SLOW);
	if (src_add(dev, &a))
		goto out_close;
	if (som_sysfs_write("aging/interval_ms", "0") ||
	    som_sysfs_write("tiering/enabled", "0") ||
	    som_sysfs_write("tiering/demote_age", "1") ||
	    som_sysfs_write("tiering/promote_age", "0") ||
	    som_sysfs_write("tiering/max_bytes", "4294967296"))
		goto out_remove;
	fd = som_file(dev, len, SOM_FILE_CLOEXEC);
	if (fd < 0 || set_policy(fd, SOM_POLICY_PREFERRED, 1, 0))
		goto out_remove;
	p = som_map_shared(fd, len);
	if (p == MAP_FAILED)
		goto out_remove;
	som_fill(p, 0, len, 4096, run);
	/* Two scans: the second finds it untouched, age 1. */
	if (som_sysfs_write("aging/scan", "1") ||
	    som_sysfs_write("aging/scan", "1") ||
	    tier_pass("tiering/demoted_bytes", &dns, &demoted) ||
	    som_check(p, 0, len, 4096, run) != -1)
		goto out_remove;
	/* The check touched it all: the next scan finds it used, age 0. */
	if (som_sysfs_write("aging/scan", "1") ||
	    tier_pass("tiering/promoted_bytes", &pns, &promoted) ||
	    som_check(p, 0, len, 4096, run) != -1)
		goto out_remove;
	printf("SOMBENCH tier entry=%s run=%d bytes=%zu demote_ns=%llu promote_ns=%llu demoted=%lld promoted=%lld\n",
	       entry, run, len, (unsigned long long)dns,
	       (unsigned long long)pns, demoted, promoted);
	err = 0;
out_remove:
	if (p != MAP_FAILED)
		munmap(p, len);
	if (fd >= 0)
		close(fd);
	if (src_remove(dev, SLOW))
		err = 1;
	for (i = 0; i < NR_KNOBS; i++)
		som_sysfs_write(knobs[i], saved[i]);
out_close:
	close(dev);
	if (err)
		fprintf(stderr, "som_bench: tier %s failed\n", entry);
	return err;
}

/* move_pages() of every 2 MiB of [@p, @p + @len) to @node; bytes there. */
static long long move_thp(char *p, size_t len, int node, uint64_t *ns)
{
	unsigned long n = len / (2 * MiB), i;
	void **pages = calloc(n, sizeof(*pages));
	int *nodes = calloc(n, sizeof(*nodes));
	int *status = calloc(n, sizeof(*status));
	long long moved = -1;
	uint64_t t0;

	if (!pages || !nodes || !status)
		goto out;
	for (i = 0; i < n; i++) {
		pages[i] = p + i * 2 * MiB;
		nodes[i] = node;
	}
	t0 = measure_ns();
	if (syscall(SYS_move_pages, 0, n, pages, nodes, status, 0) < 0)
		goto out;
	*ns = measure_ns() - t0;
	for (moved = 0, i = 0; i < n; i++)
		moved += status[i] == node ? 2 * MiB : 0;
out:
	free(pages);
	free(nodes);
	free(status);
	return moved;
}

static int bench_kernel_thp(int run)
{
	const size_t len = 256 * MiB;
	unsigned long node0 = 1;
	long long demoted, promoted;
	uint64_t dns = 0, pns = 0;
	char *map, *p;
	int err = 1;

	if (access("/sys/devices/system/node/node1", F_OK)) {
		printf("SOMBENCH skip what=tier entry=kernel-thp reason=one_node\n");
		return 0;
	}
	map = mmap(NULL, len + 2 * MiB, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (map == MAP_FAILED)
		return 1;
	/* 2 MiB aligned, for huge pages from the first byte; on node 0. */
	p = (char *)(((uintptr_t)map + 2 * MiB - 1) & ~(2 * MiB - 1));
	if (madvise(p, len, MADV_HUGEPAGE) ||
	    syscall(SYS_mbind, p, len, 1 /* MPOL_PREFERRED */, &node0,
		    sizeof(node0) * 8, 0))
		goto out;
	som_fill(p, 0, len, 4096, run);
	demoted = move_thp(p, len, 1, &dns);
	if (demoted < 0 || som_check(p, 0, len, 4096, run) != -1)
		goto out;
	promoted = move_thp(p, len, 0, &pns);
	if (promoted < 0 || som_check(p, 0, len, 4096, run) != -1)
		goto out;
	printf("SOMBENCH tier entry=kernel-thp run=%d bytes=%zu demote_ns=%llu promote_ns=%llu demoted=%lld promoted=%lld\n",
	       run, len, (unsigned long long)dns, (unsigned long long)pns,
	       demoted, promoted);
	err = 0;
out:
	munmap(map, len + 2 * MiB);
	if (err)
		fprintf(stderr, "som_bench: tier kernel-thp failed: %s\n",
			strerror(errno));
	return err;
}

int som_bench_tier(const char *entry, int run)
{
	if (!strcmp(entry, "kernel-thp"))
		return bench_kernel_thp(run);
	if (strcmp(entry, "2m") && strcmp(entry, "1g")) {
		fprintf(stderr, "som_bench: unknown tier entry %s\n", entry);
		return 2;
	}
	return bench_som(entry, run);
}
