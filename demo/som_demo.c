// SPDX-License-Identifier: GPL-2.0
/*
 * som_demo: touch 1 GiB of som memory next to 1 GiB of anonymous memory
 * (4 KiB pages, and transparent huge pages) and print what each cost:
 * page faults, the size of the entries that map it, page-table bytes,
 * first-touch time, memory-management metadata per GiB, and what zeroing
 * som's memory cost and who paid for it.
 *
 * som is measured twice: cold, first thing after som.ko was loaded (its
 * pool not zeroed yet: the fault zeroes what the worker has not reached),
 * and pre-zeroed, after the zeroing worker has cleared the whole pool.
 *
 * Needs som.ko loaded just before it runs (vm/guest/demo.sh), with at
 * least 1 GiB in its pool.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdio.h>
#include <sys/mman.h>

#include "measure.h"
#include "som_util.h"

#define NR_BACKINGS	4

struct backing {
	const char *name;
	long faults;
	long long pt_bytes;
	double seconds;
	const char *entry;
	long long meta_per_gib;
	const char *meta_what;
};

/* What som's counters said around one som run. */
struct som_run {
	long long zeroed_before;	/* pool bytes zeroed when it mapped */
	long long chunks;		/* chunk descriptors, sources' tables */
	long long table;		/* its table, while mapped */
	long long pool;			/* the pool, its sets, spare bits */
	long long sources;		/* the sources' descriptors */
	long long region;		/* its region's descriptor */
	long long charges;		/* records of its cgroups and user */
	long long fault_bytes;		/* zeroed in its faults */
	long long fault_ns;
	long long free_during;
	long long struct_page;		/* the kernel's, per GiB of pool */
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

/*
 * Bytes of the pool that the kernel keeps struct pages for anyway (a
 * source's struct_page file says 1): hugetlb and buddy memory, and on
 * arm64 a no-map reserved range (Documentation/kernel-facts.md).
 */
static long long pool_struct_page_bytes(void)
{
	DIR *dir = opendir(SOM_SYSFS "sources");
	char path[512];
	struct dirent *d;
	long long bytes = 0;

	if (!dir)
		return 0;
	while ((d = readdir(dir))) {
		if (d->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), SOM_SYSFS "sources/%s/struct_page",
			 d->d_name);
		if (som_read_ll(path) != 1)
			continue;
		snprintf(path, sizeof(path), SOM_SYSFS "sources/%s/bytes",
			 d->d_name);
		bytes += som_read_ll(path);
	}
	closedir(dir);
	return bytes;
}

/* @bytes per GiB of @total, rounded. */
static long long per_gib(long long bytes, long long total)
{
	long long gib = total / (long long)GiB;

	return (bytes + gib / 2) / gib;
}

/*
 * Map and touch 1 GiB of som. Its metadata per GiB counts everything som
 * allocates that grows with memory: the chunk descriptors and the
 * sources' chunk tables per GiB of pool, and, read while the mapping
 * lives, its region's table. The rest (the pool, its sets and spare
 * per-block bits, the sources' descriptors, the region's descriptor, the
 * records of the cgroups and the user it is charged to) is fixed, and
 * printed apart; the parts add up to metadata_bytes. (With the mapping a
 * whole chunk, no chunk's blocks differ: the per-block bits are only the
 * pool's one spare.)
 */
static int run_som(struct backing *b, struct som_run *r)
{
	long long fault_bytes = som_stat("zero_fault_bytes");
	long long fault_ns = som_stat("zero_fault_ns");
	int fd = open("/dev/som", O_RDWR);
	char *p;

	if (fd < 0) {
		perror("/dev/som (is som.ko loaded?)");
		return -1;
	}
	r->zeroed_before = som_stat("zeroed_bytes");
	p = mmap(NULL, GiB, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		perror("mmap /dev/som");
		close(fd);
		return -1;
	}
	touch(b, p, GiB);
	r->fault_bytes = som_stat("zero_fault_bytes") - fault_bytes;
	r->fault_ns = som_stat("zero_fault_ns") - fault_ns;
	b->entry = measure_size_name(som_page_size(fd, p));
	r->chunks = som_stat("metadata/chunks_bytes") +
		    som_stat("metadata/source_tables_bytes");
	r->table = som_stat("metadata/table_split_bytes") +
		   som_stat("metadata/table_node_bytes");
	r->pool = som_stat("metadata/pool_bytes") +
		  som_stat("metadata/chunk_bits_bytes");
	r->sources = som_stat("metadata/sources_bytes");
	r->region = som_stat("metadata/regions_bytes");
	r->charges = som_stat("metadata/charges_bytes");
	if (r->charges < 0)	/* a som.ko without charges */
		r->charges = 0;
	r->struct_page = per_gib(pool_struct_page_bytes() / 4096 * 64,
				 som_stat("total_bytes"));
	b->meta_per_gib = per_gib(r->chunks, som_stat("total_bytes")) +
			  r->table + r->struct_page;
	b->meta_what = r->struct_page ? "+ struct page" : "chunk + table";
	r->free_during = som_stat("free_bytes");
	munmap(p, GiB);
	close(fd);
	return 0;
}

/* Until the worker has zeroed the whole (unused) pool; 0, or -1 after
 * @timeout_s seconds. */
static int som_wait_zeroed(int timeout_s)
{
	uint64_t t0 = measure_ns();

	while (som_stat("zeroed_bytes") != som_stat("total_bytes")) {
		if (measure_ns() - t0 > timeout_s * 1000000000ULL)
			return -1;
		usleep(1000);
	}
	return 0;
}

/* CPU milliseconds per GiB that zeroing @bytes in @ns took. */
static double ms_per_gib(long long ns, long long bytes)
{
	return bytes > 0 ? ns / 1e6 / ((double)bytes / GiB) : 0;
}

static void print_table(const struct backing *b)
{
	int i;

	printf("\nTouching 1 GiB, one write per 4 KiB page:\n\n");
	printf("%-28s", "");
	for (i = 0; i < NR_BACKINGS; i++)
		printf("%18s", b[i].name);
	printf("\n%-28s", "page faults");
	for (i = 0; i < NR_BACKINGS; i++)
		printf("%18ld", b[i].faults);
	printf("\n%-28s", "mapped with entries of");
	for (i = 0; i < NR_BACKINGS; i++)
		printf("%18s", b[i].entry);
	printf("\n%-28s", "page-table bytes added");
	for (i = 0; i < NR_BACKINGS; i++)
		printf("%18lld", b[i].pt_bytes);
	printf("\n%-28s", "first-touch time (s)");
	for (i = 0; i < NR_BACKINGS; i++)
		printf("%18.3f", b[i].seconds);
	printf("\n%-28s", "metadata bytes per GiB");
	for (i = 0; i < NR_BACKINGS; i++)
		printf("%18lld", b[i].meta_per_gib);
	printf("\n%-28s", "  (what it is)");
	for (i = 0; i < NR_BACKINGS; i++)
		printf("%18s", b[i].meta_what);
	printf("\n");
}

int main(void)
{
	struct backing b[NR_BACKINGS] = {
		{ .name = "anonymous 4 KiB" },
		{ .name = "anonymous THP" },
		{ .name = "som cold" },
		{ .name = "som pre-zeroed" },
	};
	struct som_run cold, warm;
	long long free_before, free_after, total;

	/* The vDSO's data page faults at first use: not in a measurement. */
	measure_ns();
	total = som_stat("total_bytes");
	if (total < (long long)GiB) {
		fprintf(stderr, "som_demo: som.ko must be loaded with at least 1 GiB in its pool\n");
		return 1;
	}
	free_before = som_stat("free_bytes");
	/* som cold first: the worker started zeroing when som.ko loaded. */
	if (run_som(&b[2], &cold) || run_anon(&b[0], 0) || run_anon(&b[1], 1))
		return 1;
	if (som_wait_zeroed(120)) {
		fprintf(stderr, "som_demo: the pool was not zeroed after 120 s\n");
		return 1;
	}
	/* Then the worker re-zeroes it: its cost below includes that. */
	if (run_som(&b[3], &warm) || som_wait_zeroed(120))
		return 1;
	free_after = som_stat("free_bytes");

	print_table(b);
	printf("\nsom cold: mapped right after som.ko was loaded, with %lld MiB of the %lld MiB pool zeroed;\n"
	       "  its fault zeroed %lld MiB itself. som pre-zeroed: mapped once the worker had zeroed it all\n"
	       "  (its fault zeroed %lld MiB).\n",
	       cold.zeroed_before / (long long)MiB, total / (long long)MiB,
	       cold.fault_bytes / (long long)MiB, warm.fault_bytes / (long long)MiB);
	printf("som metadata per GiB, everything som allocates that grows with memory: %lld = %lld for\n"
	       "  the chunk descriptors and the source's chunk table (%lld bytes for %lld GiB of pool) + %lld\n"
	       "  for this 1 GiB mapping's table (a region's first GiB sits in its table's root; a region\n"
	       "  of 2 to 64 GiB has one 576-byte node; a GiB in 2 MiB pieces adds 808); fixed, whatever the\n"
	       "  memory: %lld bytes = %lld pool, sets and spare bits + %lld source + %lld region\n"
	       "  + %lld records of the cgroups and user it is charged to; not counted: the file and\n"
	       "  inode every open file has\n",
	       b[3].meta_per_gib - warm.struct_page,
	       per_gib(warm.chunks, total), warm.chunks,
	       total / (long long)GiB, warm.table,
	       warm.pool + warm.sources + warm.region + warm.charges,
	       warm.pool, warm.sources, warm.region, warm.charges);
	printf("zeroing som memory since som.ko was loaded: the worker %.1f GiB at %.0f ms of CPU per GiB\n"
	       "  (a kernel thread: charged to no process); faults %.1f GiB at %.0f ms per GiB (charged to\n"
	       "  the process that faulted)\n",
	       (double)som_stat("zero_worker_bytes") / GiB,
	       ms_per_gib(som_stat("zero_worker_ns"), som_stat("zero_worker_bytes")),
	       (double)som_stat("zero_fault_bytes") / GiB,
	       ms_per_gib(som_stat("zero_fault_ns"), som_stat("zero_fault_bytes")));
	printf("\nsom pool: %.2f GiB total; free %.2f GiB before, %.2f GiB while mapped, %.2f GiB after\n",
	       (double)total / GiB, (double)free_before / GiB,
	       (double)warm.free_during / GiB, (double)free_after / GiB);
	if (warm.struct_page)
		printf("the kernel keeps struct pages for this pool's memory anyway (%lld bytes per GiB, counted\n"
		       "  above; on arm64 for no-map reserved memory too): som saves no metadata here, and spends\n"
		       "  %lld per GiB of its own plus %lld fixed bytes\n",
		       warm.struct_page, b[3].meta_per_gib - warm.struct_page,
		       warm.pool + warm.sources + warm.region + warm.charges);
	else
		printf("struct page would cost %lld bytes per GiB; som spends %lld per GiB, all counted (%.0fx less),\n"
		       "  plus %lld fixed bytes; a HugeTLB 1 GiB page with HVO keeps 4096 (measured: vm/run bench)\n",
		       b[0].meta_per_gib, b[3].meta_per_gib,
		       (double)b[0].meta_per_gib / b[3].meta_per_gib,
		       warm.pool + warm.sources + warm.region + warm.charges);
	printf("(first-touch times are under QEMU TCG here: indicative only)\n");
	return free_after == free_before ? 0 : 1;
}
