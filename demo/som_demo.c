// SPDX-License-Identifier: GPL-2.0
/*
 * som_demo: touch 1 GiB of som memory next to 1 GiB of anonymous memory
 * (4 KiB pages, and transparent huge pages) and print what each cost:
 * page faults, the size of the entries that map it, page-table bytes,
 * first-touch time, and memory-management metadata per GiB.
 *
 * Needs som.ko loaded with at least 1 GiB in its pool.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <sys/mman.h>

#include "measure.h"
#include "som_util.h"

struct backing {
	const char *name;
	long faults;
	long long pt_bytes;
	double seconds;
	const char *entry;
	long long meta_per_gib;
	const char *meta_what;
};

/* Write one word per 4 KiB page of [p, p + len) and measure the cost. */
static void touch(struct backing *b, char *p, size_t len)
{
	struct measure_touch t;

	measure_touch(p, len, &t);
	b->seconds = t.ns / 1e9;
	b->faults = t.faults;
	b->pt_bytes = t.pt_bytes;
}

/* Which entries map anonymous [p, p + len): from AnonHugePages of smaps. */
static const char *anon_entry(char *p, size_t len)
{
	long long thp = measure_smaps(p, "AnonHugePages");

	if (thp == (long long)len)
		return "2 MiB";
	return thp == 0 ? "4 KiB" : "mixed";
}

static int run_anon(struct backing *b, int huge)
{
	char *p = measure_map_anon(GiB, 2 * MiB);

	if (p == MAP_FAILED) {
		perror("mmap anonymous");
		return -1;
	}
	madvise(p, GiB, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
	touch(b, p, GiB);
	b->entry = anon_entry(p, GiB);
	b->meta_per_gib = (GiB / 4096) * 64;
	b->meta_what = "struct page";
	munmap(p, GiB);
	return 0;
}

static int run_som(struct backing *b, long long *free_during)
{
	int fd = open("/dev/som", O_RDWR);
	char *p;

	if (fd < 0) {
		perror("/dev/som (is som.ko loaded?)");
		return -1;
	}
	p = mmap(NULL, GiB, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		perror("mmap /dev/som");
		close(fd);
		return -1;
	}
	touch(b, p, GiB);
	b->entry = measure_size_name(som_page_size(fd, p));
	b->meta_per_gib = som_stat("metadata_bytes") /
			  (som_stat("total_bytes") / (long long)GiB);
	b->meta_what = "som pool";
	*free_during = som_stat("free_bytes");
	munmap(p, GiB);
	close(fd);
	return 0;
}

int main(void)
{
	struct backing b[3] = {
		{ .name = "anonymous 4 KiB" },
		{ .name = "anonymous THP" },
		{ .name = "som" },
	};
	long long free_before, free_during = 0, free_after, total;
	int i;

	/* The vDSO's data page faults at first use: not in a measurement. */
	measure_ns();
	total = som_stat("total_bytes");
	if (total < (long long)GiB) {
		fprintf(stderr, "som_demo: som.ko must be loaded with at least 1 GiB in its pool\n");
		return 1;
	}
	free_before = som_stat("free_bytes");
	if (run_anon(&b[0], 0) || run_anon(&b[1], 1) ||
	    run_som(&b[2], &free_during))
		return 1;
	free_after = som_stat("free_bytes");

	printf("\nTouching 1 GiB, one write per 4 KiB page:\n\n");
	printf("%-28s", "");
	for (i = 0; i < 3; i++)
		printf("%18s", b[i].name);
	printf("\n%-28s", "page faults");
	for (i = 0; i < 3; i++)
		printf("%18ld", b[i].faults);
	printf("\n%-28s", "mapped with entries of");
	for (i = 0; i < 3; i++)
		printf("%18s", b[i].entry);
	printf("\n%-28s", "page-table bytes added");
	for (i = 0; i < 3; i++)
		printf("%18lld", b[i].pt_bytes);
	printf("\n%-28s", "first-touch time (s)");
	for (i = 0; i < 3; i++)
		printf("%18.3f", b[i].seconds);
	printf("\n%-28s", "metadata bytes per GiB");
	for (i = 0; i < 3; i++)
		printf("%18lld", b[i].meta_per_gib);
	printf("\n%-28s", "  (what it is)");
	for (i = 0; i < 3; i++)
		printf("%18s", b[i].meta_what);
	printf("\n\nsom pool: %.2f GiB total; free %.2f GiB before, %.2f GiB while mapped, %.2f GiB after\n",
	       (double)total / GiB, (double)free_before / GiB,
	       (double)free_during / GiB, (double)free_after / GiB);
	printf("struct page would cost %lld bytes per GiB; som's pool spends %lld (%.0fx less)\n",
	       b[0].meta_per_gib, b[2].meta_per_gib,
	       (double)b[0].meta_per_gib / b[2].meta_per_gib);
	printf("(first-touch times are under QEMU TCG here: indicative only)\n");
	return free_after == free_before ? 0 : 1;
}
