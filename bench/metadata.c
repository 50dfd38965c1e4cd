// SPDX-License-Identifier: GPL-2.0
/*
 * som_bench meta LAYOUT: what som's metadata costs, part by part
 * (/sys/kernel/mm/som/metadata/), with the whole pool in one of three
 * states, as one line:
 *
 *	SOMBENCH meta layout=L pool_gib=N mapped_gib=M entries_1g=A
 *		entries_2m=B total=... chunks=... chunk_bits=... pool=...
 *		sources=... source_tables=... regions=... table_split=...
 *		table_nodes=...
 *
 *   empty	nothing mapped: what the pool and its sources cost alone
 *   whole	one region maps the whole pool, each GiB by one 1 GiB entry
 *   split	one region maps the whole pool 2 MiB past a 1 GiB boundary
 *		(no 1 GiB entry fits), the odd 2 MiB pieces touched before
 *		the even ones, so that no GiB of it holds its chunk's blocks
 *		in order: every GiB is split into 2 MiB blocks. (What a
 *		split GiB costs is the same whether its blocks come from one
 *		chunk or from up to 7.)
 *
 * and, for the comparison, "som_bench meta hvo": the memmap per GiB of
 * RAM (struct page) and what one more 1 GiB HugeTLB page leaves of it
 * with HVO, as "SOMBENCH meta layout=hvo memmap_per_gib=...
 * hvo_per_gib=..." (the page is kept: see hugetlb_grow() in som_bench.c).
 *
 * vm/guest/bench.sh runs it over pools of several sizes; bench/report.py
 * fits a line through the totals: its slope is what one more GiB costs,
 * its intercept the fixed part.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "measure.h"
#include "metadata.h"
#include "som_util.h"

static const char *const som_meta_parts[] = {
	"chunks", "chunk_bits", "pool", "sources", "source_tables", "regions",
	"table_split", "table_nodes", "charges",
};

#define NR_HUGEPAGES_1G \
	"/sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages"

/* Memmap pages now: HVO gives back some of a hugetlb page's. */
static long long som_meta_memmap_pages(void)
{
	return measure_vmstat("nr_memmap_pages") +
	       measure_vmstat("nr_memmap_boot_pages");
}

static int som_meta_hvo(void)
{
	long long memmap = measure_memmap_per_gib();
	long long before = som_meta_memmap_pages(), nr, got;
	char buf[24];

	nr = som_read_ll(NR_HUGEPAGES_1G);
	if (nr < 0)
		return -1;
	snprintf(buf, sizeof(buf), "%lld", nr + 1);
	if (som_write_file(NR_HUGEPAGES_1G, buf))
		return -1;
	got = som_read_ll(NR_HUGEPAGES_1G) - nr;
	if (got != 1)
		return -1;
	printf("SOMBENCH meta layout=hvo memmap_per_gib=%lld hvo_per_gib=%lld\n",
	       memmap, memmap + (som_meta_memmap_pages() - before) *
	       getpagesize());
	return 0;
}

/* The line, with @mapped GiB mapped by @e1g 1 GiB and @e2m 2 MiB entries. */
static void som_meta_print(const char *layout, long long mapped,
			   long long e1g, long long e2m)
{
	char path[64];
	unsigned int i;

	printf("SOMBENCH meta layout=%s pool_gib=%lld mapped_gib=%lld entries_1g=%lld entries_2m=%lld total=%lld",
	       layout, som_stat("total_bytes") / (long long)GiB, mapped, e1g,
	       e2m, som_stat("metadata_bytes"));
	for (i = 0; i < sizeof(som_meta_parts) / sizeof(*som_meta_parts); i++) {
		snprintf(path, sizeof(path), "metadata/%s_bytes",
			 strcmp(som_meta_parts[i], "table_nodes") ?
			 som_meta_parts[i] : "table_node");
		printf(" %s=%lld", som_meta_parts[i], som_stat(path));
	}
	printf("\n");
}

/* Count the entries of @fd's mapping [p, p + len) by size, every 2 MiB. */
static void som_meta_entries(int fd, char *p, size_t len, long long *e1g,
			     long long *e2m)
{
	size_t off;

	for (off = 0; off < len; off += 2 * MiB) {
		long long size = som_page_size(fd, p + off);

		if (size == (long long)GiB && !(off % GiB))
			(*e1g)++;
		else if (size == 2 * (long long)MiB)
			(*e2m)++;
	}
}

static int som_meta_whole(size_t pool)
{
	long long e1g = 0, e2m = 0;
	int fd = open("/dev/som", O_RDWR);
	size_t off;
	char *p;

	if (fd < 0)
		return -1;
	p = som_map_shared(fd, pool);
	if (p == MAP_FAILED) {
		perror("som_bench meta: mmap");
		close(fd);
		return -1;
	}
	for (off = 0; off < pool; off += GiB)
		p[off] = 1;
	som_meta_entries(fd, p, pool, &e1g, &e2m);
	som_meta_print("whole", pool / GiB, e1g, e2m);
	munmap(p, pool);
	close(fd);
	return e1g == (long long)(pool / GiB) ? 0 : -1;
}

static int som_meta_split(size_t pool)
{
	long long e1g = 0, e2m = 0;
	int fd = open("/dev/som", O_RDWR), pass;
	size_t off;
	char *p;

	if (fd < 0)
		return -1;
	p = som_map_past(fd, pool, GiB, 2 * MiB);
	if (p == MAP_FAILED) {
		perror("som_bench meta: mmap");
		close(fd);
		return -1;
	}
	/* Odd 2 MiB pieces first: no GiB gets its chunk's blocks in order. */
	for (pass = 1; pass >= 0; pass--)
		for (off = pass * 2 * MiB; off < pool; off += 4 * MiB)
			p[off] = 1;
	som_meta_entries(fd, p, pool, &e1g, &e2m);
	som_meta_print("split", pool / GiB, e1g, e2m);
	munmap(p, pool);
	close(fd);
	return e2m == (long long)(pool / (2 * MiB)) ? 0 : -1;
}

/**
 * som_bench_meta() - measure one layout of the whole pool
 * @layout: "empty", "whole", "split" or "hvo"
 *
 * Return: 0; 1 if the layout could not be made (the line, if printed,
 * says which entries there were) or is unknown.
 */
int som_bench_meta(const char *layout)
{
	long long total = som_stat("total_bytes");

	if (!strcmp(layout, "hvo"))
		return som_meta_hvo() ? 1 : 0;
	if (total < (long long)GiB) {
		fprintf(stderr, "som_bench meta: no pool (is som.ko loaded?)\n");
		return 1;
	}
	if (!strcmp(layout, "empty")) {
		som_meta_print("empty", 0, 0, 0);
		return 0;
	}
	if (!strcmp(layout, "whole"))
		return som_meta_whole(total) ? 1 : 0;
	if (!strcmp(layout, "split"))
		return som_meta_split(total) ? 1 : 0;
	return 1;
}
