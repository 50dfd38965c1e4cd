// SPDX-License-Identifier: GPL-2.0
/*
 * som_bench regions PID...: what the ordinary anonymous memory of running
 * processes would take in whole 2 MiB blocks, som's unit. Over each
 * private writable mapping with no file of at least 2 MiB (an allocator's
 * heap: somrun turns those into som mappings) but thread stacks (right
 * above their PROT_NONE guard, which somrun leaves ordinary too) and over
 * the brk heap (glibc's and tcmalloc's), /proc/PID/pagemap says
 * which 4 KiB pages are present; a 2 MiB region of the address space with
 * any present page would hold a whole block. Prints
 *
 *	SOMBENCH regions blk_regions=N blk_sparse=S blk_sparse_bytes=Q
 *		blk_thp_unmapped=U bytes=P fill=C1/B1,...,C8/B8
 *
 * N: the 2 MiB regions with a present page; S: of those, the ones at most
 * half full, holding Q bytes; P: all the present bytes; Ck regions with
 * more than (k - 1) * 64 and at most k * 64 of their 512 pages present,
 * holding Bk bytes (how full the regions are: what packing the emptiest
 * of them onto 4 KiB entries would save); U: the bytes of transparent
 * huge pages that these regions map only in part and that are not mapped
 * (a 2 MiB THP that a 4 KiB MADV_DONTNEED split stays whole, on the
 * kernel's deferred split queue, until reclaim splits it: memory the
 * process holds beyond its RssAnon; /proc/kpageflags, as root). The blk_ fields
 * are those of vm/guest/bench_programs.sh's program lines. N * 2 MiB is the
 * least a block-granular allocator needs for the same pages, and S the
 * blocks that packing their pages onto 4 KiB entries would save space on.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "aging.h"

#define REGION_PAGES	512
#define PM_PRESENT	(1ULL << 63)
#define PM_PFN		((1ULL << 55) - 1)
#define KPF_THP		(1ULL << 22)

struct regions {
	uint64_t present, blocks, sparse, sparse_pages, thp_unmapped;
	uint64_t fill[8], fill_pages[8];
};

/* /proc/kpageflags, or -1 (not root: the THP figure is then 0). */
static int regions_kpf = -1;

/*
 * Pages of the THPs [from, from + n pages) maps part of that it does not
 * map: a THP is 512 pages from a 2 MiB aligned PFN.
 */
static uint64_t regions_thp_unmapped(const uint64_t *ents, size_t n)
{
	uint64_t heads[REGION_PAGES], flags, pfn;
	size_t i, j, nr = 0, pages = 0;

	if (regions_kpf < 0)
		return 0;
	for (i = 0; i < n; i++) {
		pfn = ents[i] & PM_PFN;
		if (!(ents[i] & PM_PRESENT) || !pfn ||
		    pread(regions_kpf, &flags, 8, (off_t)(pfn * 8)) != 8 ||
		    !(flags & KPF_THP))
			continue;
		pages++;
		for (j = 0; j < nr && heads[j] != pfn / REGION_PAGES; j++)
			;
		if (j == nr)
			heads[nr++] = pfn / REGION_PAGES;
	}
	return nr * REGION_PAGES - pages;
}

/* Count the present pages of [start, end), a 2 MiB region at a time. */
static int regions_scan(int pm, uint64_t start, uint64_t end,
			struct regions *r)
{
	static uint64_t ents[REGION_PAGES];
	uint64_t a, from, to;
	size_t i, n, live;

	for (a = start & ~(uint64_t)(REGION_PAGES * 4096 - 1); a < end;
	     a += REGION_PAGES * 4096) {
		from = a < start ? start : a;
		to = a + REGION_PAGES * 4096 > end ? end :
		     a + REGION_PAGES * 4096;
		n = (to - from) / 4096;
		if (pread(pm, ents, n * 8, (off_t)(from / 4096 * 8)) !=
		    (ssize_t)(n * 8))
			return -1;
		for (i = 0, live = 0; i < n; i++)
			live += !!(ents[i] & PM_PRESENT);
		/*
		 * A region two mappings share is counted once per mapping:
		 * allocators' heaps are 2 MiB aligned or far larger.
		 */
		if (!live)
			continue;
		r->present += live;
		r->blocks++;
		r->thp_unmapped += regions_thp_unmapped(ents, n);
		r->fill[(live - 1) / 64]++;
		r->fill_pages[(live - 1) / 64] += live;
		if (live <= REGION_PAGES / 2) {
			r->sparse++;
			r->sparse_pages += live;
		}
	}
	return 0;
}

static int regions_of(const char *pid, struct regions *r)
{
	char path[64], line[512], perms[8], file[256];
	uint64_t start, end, guard_end = 0;
	bool heap;
	FILE *maps;
	int pm, ret = 0;

	snprintf(path, sizeof(path), "/proc/%s/maps", pid);
	maps = fopen(path, "r");
	snprintf(path, sizeof(path), "/proc/%s/pagemap", pid);
	pm = open(path, O_RDONLY);
	if (!maps || pm < 0) {
		if (maps)
			fclose(maps);
		if (pm >= 0)
			close(pm);
		return -1;
	}
	while (!ret && fgets(line, sizeof(line), maps)) {
		file[0] = 0;
		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %*s %*s %*s %255s",
			   &start, &end, perms, file) < 3)
			continue;
		heap = !strcmp(file, "[heap]");
		/*
		 * A thread's stack begins where its guard, a page or a few,
		 * ends (larger PROT_NONE areas are reservations, such as
		 * the rest of a glibc arena's heap).
		 */
		if (!strncmp(perms, "---p", 4) && !file[0]) {
			if (end - start <= 16 * 4096)
				guard_end = end;
			continue;
		}
		if ((file[0] && !heap) || strncmp(perms, "rw-p", 4) ||
		    (!heap && (end - start < REGION_PAGES * 4096 ||
			       start == guard_end)))
			continue;
		ret = regions_scan(pm, start, end, r);
	}
	fclose(maps);
	close(pm);
	return ret;
}

int som_bench_regions(int argc, char **argv)
{
	struct regions r;
	int i;

	memset(&r, 0, sizeof(r));
	regions_kpf = open("/proc/kpageflags", O_RDONLY);
	for (i = 0; i < argc; i++) {
		if (regions_of(argv[i], &r)) {
			fprintf(stderr, "som_bench regions: cannot read process %s\n",
				argv[i]);
			return 1;
		}
	}
	printf("SOMBENCH regions blk_regions=%" PRIu64 " blk_sparse=%" PRIu64
	       " blk_sparse_bytes=%" PRIu64 " blk_thp_unmapped=%" PRIu64
	       " bytes=%" PRIu64 " fill=",
	       r.blocks, r.sparse, r.sparse_pages * 4096,
	       r.thp_unmapped * 4096, r.present * 4096);
	for (i = 0; i < 8; i++)
		printf("%s%" PRIu64 "/%" PRIu64, i ? "," : "", r.fill[i],
		       r.fill_pages[i] * 4096);
	printf("\n");
	return 0;
}
