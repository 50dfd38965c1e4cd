// SPDX-License-Identifier: GPL-2.0
/*
 * som_bench: the guest side of `vm/run bench`. Each call makes one
 * measurement and prints it as one line,
 *
 *	SOMBENCH <kind> key=value key=value ...
 *
 * which vm/guest/bench.sh passes to the console and bench/report.py reads
 * back on the host. A measurement the guest cannot make prints
 * "SOMBENCH skip ... reason=..." and exits 0; a failure exits 1.
 *
 *   som_bench info
 *	the machine: kernel, CPUs, memory, memmap bytes per GiB of RAM,
 *	HugeTLB vmemmap optimisation, THP, the som pool and its metadata
 *   som_bench warmup
 *	touch what memory the guest can spare once, so that the host backs
 *	it before the first measurement
 *   som_bench touch BACKING GIB RUN
 *	map GIB GiB of BACKING, write one word per 4 KiB page, then run a
 *	random-update loop over it and free it. BACKING is anon4k (THP off),
 *	thp, hugetlb (1 GiB pages, allocated when first needed and kept),
 *	memfd, som (pool zeroed ahead) or som-cold (the pool not zeroed yet:
 *	som.ko just loaded)
 *   som_bench meta LAYOUT
 *	som's metadata, part by part, with the whole pool empty, mapped
 *	by 1 GiB entries or split into 2 MiB blocks; or (hvo) struct page
 *	with and without HVO (metadata.c)
 *   som_bench age 1g|2m|4k|mglru-4k|mglru-thp RUN
 *	one aging scan of som memory mapped with entries of that size, and
 *	the refaults and time of the owner's next touch (aging.c); or one
 *	MGLRU aging pass of anonymous 4 KiB pages or THP (aging_mglru.c)
 *   som_bench tier 2m|1g|kernel-thp RUN
 *	demote som memory to a slow tier and promote it back, 2 MiB blocks
 *	or a GiB whole; or move anonymous THP between nodes with
 *	move_pages(2), for comparison (tiering.c)
 *   som_bench swap som|kernel RUN
 *	page 256 MiB out to a RAM disk and fault it back 2 MiB at a time:
 *	som's SOM_IOC_PAGEOUT and store, or the kernel's MADV_PAGEOUT and
 *	swap area, for comparison (swapping.c)
 *   som_bench pressure som|kernel RUN
 *	touch 96 MiB twice with 64 MiB to hold it: som's overcommitting
 *	pool paging out as faults wait, or anonymous memory in a memory
 *	cgroup with swap, for comparison (pressure.c)
 *   som_bench churn KIND OPS RUN
 *	allocate, write once and free OPS times: som-2m, som-1g (libsom
 *	som_alloc/som_free), thp-2m (mmap over a reserved 2 MiB, and a
 *	PROT_NONE mmap over it to free), hugetlb-1g (mmap/munmap), for
 *	reference.
 *	som starts from a pre-zeroed pool; after the loop it waits until the
 *	pool is zeroed again and reports what zeroing cost meanwhile, in the
 *	loop's faults and in the worker (sysfs zero_*)
 *
 * som's metadata is sysfs metadata_bytes: the pool's and sources' part
 * per GiB of pool, plus region_metadata_bytes, the mapping's region and
 * its table, read while it is mapped. The xarray nodes /proc/slabinfo
 * counts are a cross-check of the table (and memfd's page-cache figure).
 *
 * Environment: SOM_BENCH_GUPS_OPS, updates of the random loop (4194304);
 * SOM_BENCH_MEMMAP_PER_GIB, the memmap per GiB of RAM that "info" measured
 * before any hugetlb page was allocated (else measured now).
 *
 * Needs root (THP and hugetlb settings) and, for som backings, som.ko.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/mman.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <linux/som.h>

#include "aging.h"
#include "libsom.h"
#include "measure.h"
#include "metadata.h"
#include "som_util.h"

#define THP_ENABLED	"/sys/kernel/mm/transparent_hugepage/enabled"
#define HUGE_1G		"/sys/kernel/mm/hugepages/hugepages-1048576kB/"
#define RADIX_CACHE	"radix_tree_node"
#define RADIX_DEBUG	"/sys/kernel/slab/radix_tree_node/sanity_checks"
/* What som's sysfs counts per xarray node: sizeof(struct xa_node). */
#define XA_NODE_BYTES	576

#ifndef MAP_HUGE_1GB
#define MAP_HUGE_1GB	(30 << MAP_HUGE_SHIFT)
#endif

/* One mapping under test. */
struct mem {
	const struct backing *b;
	int gib;
	size_t len;
	char *p;
	int fd;
	char thp_saved[16];	/* THP "enabled" before prepare */
	long long hvo_pages;	/* hugetlb pages allocated for this run */
	long long memmap_delta;	/* memmap bytes their allocation changed */
	long long entry;	/* entry size mapping all of it, or -1: mixed */
	long long thp_bytes;	/* anonymous THP: bytes on 2 MiB entries */
	long long region_open;	/* som: region_metadata_bytes once opened */
};

struct backing {
	const char *name;
	int (*prepare)(struct mem *m);
	int (*map)(struct mem *m);
	void (*entry)(struct mem *m);
	void (*unmap)(struct mem *m);
	void (*finish)(struct mem *m);
	int som;		/* memory from the som pool */
};

static void skip(const char *what, const struct mem *m, const char *reason)
{
	printf("SOMBENCH skip what=%s backing=%s gib=%d reason=%s\n", what,
	       m->b->name, m->gib, reason);
}

/* The THP mode in brackets of "always [madvise] never". */
static int thp_mode(char *buf, size_t len)
{
	char line[128], *l, *r;
	FILE *f = fopen(THP_ENABLED, "r");

	if (!f)
		return -1;
	l = fgets(line, sizeof(line), f) ? strchr(line, '[') : NULL;
	fclose(f);
	r = l ? strchr(l, ']') : NULL;
	if (!r)
		return -1;
	snprintf(buf, len, "%.*s", (int)(r - l - 1), l + 1);
	return 0;
}

static int thp_set(struct mem *m, const char *mode)
{
	if (thp_mode(m->thp_saved, sizeof(m->thp_saved)))
		return -1;
	return som_write_file(THP_ENABLED, mode);
}

static void thp_restore(struct mem *m)
{
	som_write_file(THP_ENABLED, m->thp_saved);
}

static int anon4k_prepare(struct mem *m)
{
	return thp_set(m, "never");
}

static int thp_prepare(struct mem *m)
{
	return thp_set(m, "always");
}

static int anon_map(struct mem *m, int advice)
{
	m->p = measure_map_anon(m->len, 2 * MiB);
	if (m->p == MAP_FAILED)
		return -1;
	return madvise(m->p, m->len, advice);
}

static int anon4k_map(struct mem *m)
{
	return anon_map(m, MADV_NOHUGEPAGE);
}

static int thp_map(struct mem *m)
{
	return anon_map(m, MADV_HUGEPAGE);
}

static void anon_entry(struct mem *m)
{
	m->thp_bytes = measure_smaps(m->p, "AnonHugePages");
	if (m->thp_bytes == 0)
		m->entry = 4 * KiB;
	else if (m->thp_bytes == (long long)m->len)
		m->entry = 2 * MiB;
	else
		m->entry = -1;
}

static void munmap_only(struct mem *m)
{
	munmap(m->p, m->len);
}

/* Memmap pages now: HVO gives back some of a hugetlb page's. */
static long long memmap_pages(void)
{
	return measure_vmstat("nr_memmap_pages") +
	       measure_vmstat("nr_memmap_boot_pages");
}

/*
 * At least @n free 1 GiB hugetlb pages. New ones are allocated now, and
 * what their allocation did to the memmap (HVO) is measured then. Pages
 * are never given back: Debian's 6.12.118 with hugetlb_free_vmemmap=on
 * reports "BUG: Bad page state" and leaks the page when it frees an
 * optimised hugetlb page (Documentation/kernel-facts.md).
 */
static int hugetlb_grow(struct mem *m, int n)
{
	long long before = memmap_pages(), nr, free;
	char buf[24];

	nr = som_read_ll(HUGE_1G "nr_hugepages");
	free = som_read_ll(HUGE_1G "free_hugepages");
	if (nr < 0 || free < 0)
		return -1;
	if (free >= n)
		return 0;
	snprintf(buf, sizeof(buf), "%lld", nr + n - free);
	if (som_write_file(HUGE_1G "nr_hugepages", buf))
		return -1;
	m->hvo_pages = som_read_ll(HUGE_1G "nr_hugepages") - nr;
	m->memmap_delta = (memmap_pages() - before) * getpagesize();
	if (som_read_ll(HUGE_1G "free_hugepages") < n) {
		errno = ENOMEM;
		return -1;
	}
	return 0;
}

static int hugetlb_prepare(struct mem *m)
{
	return hugetlb_grow(m, m->gib);
}

static int hugetlb_map(struct mem *m)
{
	m->p = mmap(NULL, m->len, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | MAP_HUGE_1GB,
		    -1, 0);
	return m->p == MAP_FAILED ? -1 : 0;
}

static void hugetlb_entry(struct mem *m)
{
	m->entry = measure_smaps(m->p, "KernelPageSize");
}

static int memfd_map(struct mem *m)
{
	m->fd = memfd_create("som_bench", MFD_CLOEXEC);
	if (m->fd < 0 || ftruncate(m->fd, m->len))
		return -1;
	m->p = mmap(NULL, m->len, PROT_READ | PROT_WRITE, MAP_SHARED, m->fd, 0);
	return m->p == MAP_FAILED ? -1 : 0;
}

static void memfd_entry(struct mem *m)
{
	long long pmd = measure_smaps(m->p, "ShmemPmdMapped");

	if (pmd == 0)
		m->entry = 4 * KiB;
	else if (pmd == (long long)m->len)
		m->entry = 2 * MiB;
	else
		m->entry = -1;
}

/* munmap, then close: a file's memory is freed with its last reference. */
static void unmap_close(struct mem *m)
{
	munmap(m->p, m->len);
	close(m->fd);
}

/* Until the pool has zeroed all its free memory; ns waited, or -1. */
static long long som_wait_zeroed(int timeout_s)
{
	uint64_t t0 = measure_ns();

	while (som_stat("zeroed_bytes") != som_stat("free_bytes")) {
		if (measure_ns() - t0 > timeout_s * 1000000000ULL)
			return -1;
		usleep(1000);
	}
	return measure_ns() - t0;
}

/* What zeroing som memory has cost: sysfs zero_{worker,fault}_{bytes,ns}. */
struct zero_cost {
	long long worker_bytes, worker_ns, fault_bytes, fault_ns;
};

static void zero_cost_read(struct zero_cost *z)
{
	z->worker_bytes = som_stat("zero_worker_bytes");
	z->worker_ns = som_stat("zero_worker_ns");
	z->fault_bytes = som_stat("zero_fault_bytes");
	z->fault_ns = som_stat("zero_fault_ns");
}

/* @z becomes what zeroing cost since it was read. */
static void zero_cost_since(struct zero_cost *z)
{
	struct zero_cost now;

	zero_cost_read(&now);
	z->worker_bytes = now.worker_bytes - z->worker_bytes;
	z->worker_ns = now.worker_ns - z->worker_ns;
	z->fault_bytes = now.fault_bytes - z->fault_bytes;
	z->fault_ns = now.fault_ns - z->fault_ns;
}

static int som_prepare(struct mem *m)
{
	if (som_stat("total_bytes") < (long long)m->len ||
	    som_stat("reserved_bytes") != 0) {
		errno = ENOSPC;
		return -1;
	}
	return som_wait_zeroed(600) < 0 ? -1 : 0;
}

/* som.ko was just loaded: most of the pool is still to be zeroed. */
static int som_cold_prepare(struct mem *m)
{
	if (som_stat("total_bytes") < (long long)m->len) {
		errno = ENOSPC;
		return -1;
	}
	return 0;
}

static int som_map(struct mem *m)
{
	m->fd = open(SOM_DEV, O_RDWR | O_CLOEXEC);
	if (m->fd < 0)
		return -1;
	/* The new region, its table still empty. */
	m->region_open = som_stat("region_metadata_bytes");
	m->p = mmap(NULL, m->len, PROT_READ | PROT_WRITE, MAP_SHARED, m->fd, 0);
	return m->p == MAP_FAILED ? -1 : 0;
}

/* smaps does not see PFN mappings: ask som about each GiB. */
static void som_entry(struct mem *m)
{
	size_t off;

	m->entry = som_page_size(m->fd, m->p);
	for (off = GiB; off < m->len; off += GiB)
		if (som_page_size(m->fd, m->p + off) != m->entry)
			m->entry = -1;
}

static const struct backing backings[] = {
	{ "anon4k", anon4k_prepare, anon4k_map, anon_entry, munmap_only, thp_restore, 0 },
	{ "thp", thp_prepare, thp_map, anon_entry, munmap_only, thp_restore, 0 },
	{ "hugetlb", hugetlb_prepare, hugetlb_map, hugetlb_entry, munmap_only, NULL, 0 },
	{ "memfd", NULL, memfd_map, memfd_entry, unmap_close, NULL, 0 },
	{ "som", som_prepare, som_map, som_entry, unmap_close, NULL, 1 },
	{ "som-cold", som_cold_prepare, som_map, som_entry, unmap_close, NULL, 1 },
};

static const struct backing *backing_find(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(backings) / sizeof(backings[0]); i++)
		if (!strcmp(backings[i].name, name))
			return &backings[i];
	return NULL;
}

/*
 * Radix-tree (xarray) nodes in use, once the count has settled: nodes are
 * freed after an RCU grace period, so frees of a previous measurement can
 * still be on their way.
 */
static long long radix_nodes(long long *objsize)
{
	long long a = -1, b = -1;
	int i, same = 0;

	/*
	 * Nodes are freed after an RCU grace period (radix_tree_node_rcu_free):
	 * one freed by the run before can leave the slab inside this run's
	 * window and cancel a node it added. Wait until the count has held
	 * for three reads 50 ms apart.
	 */
	for (i = 0; i < 100 && same < 3; i++) {
		if (measure_slab(RADIX_CACHE, &b, objsize))
			return -1;
		same = a == b ? same + 1 : 0;
		a = b;
		usleep(50000);
	}
	return b;
}

/* Random read-modify-write of 8-byte words (GUPS-like); ns taken. */
static uint64_t gups(char *p, size_t len, unsigned long ops)
{
	uint64_t *w = (uint64_t *)p, mask = len / 8 - 1, x = 0x9e3779b97f4a7c15ULL;
	uint64_t t0 = measure_ns();
	unsigned long i;

	for (i = 0; i < ops; i++) {
		x = som_rand(&x);
		w[x & mask] ^= x;
	}
	return measure_ns() - t0;
}

static int cmd_touch(const char *name, int gib, int run)
{
	struct mem m = { .gib = gib, .len = (size_t)gib * GiB, .fd = -1 };
	long long nodes0, nodes1, objsize, pool_meta = 0, rezero = -1, struct_page;
	long long region0 = 0, region_meta = 0, region_table = 0;
	struct zero_cost zero = { 0 };
	const char *memmap_env = getenv("SOM_BENCH_MEMMAP_PER_GIB");
	long long memmap, avail;
	const char *ops_env = getenv("SOM_BENCH_GUPS_OPS");
	unsigned long ops = ops_env ? strtoul(ops_env, NULL, 0) : 4UL << 20;
	uint64_t gups_ns, free_ns, t0;
	struct measure_touch t;
	long long zeroed0 = 0;

	/*
	 * HVO gives memmap back as hugetlb pages come: the memmap per GiB of
	 * the rest of RAM is the figure from before the first of them.
	 */
	memmap = memmap_env ? atoll(memmap_env) : measure_memmap_per_gib();
	m.b = backing_find(name);
	if (!m.b || gib < 1 || (gib & (gib - 1))) {
		fprintf(stderr, "som_bench: bad backing or size: %s %d\n", name, gib);
		return 2;
	}
	/* Anonymous memory and memfds must fit, with room to spare. */
	avail = som_meminfo("MemAvailable");
	if (!m.b->som && m.b->prepare != hugetlb_prepare &&
	    avail < (long long)(m.len + GiB)) {
		skip("touch", &m, "not_enough_memory");
		return 0;
	}
	if (m.b->som && access(SOM_DEV, F_OK)) {
		skip("touch", &m, "som.ko_not_loaded");
		return 0;
	}
	if (m.b->prepare && m.b->prepare(&m)) {
		char reason[64];

		snprintf(reason, sizeof(reason), "prepare:%s", strerrorname_np(errno));
		skip("touch", &m, reason);
		return 0;
	}
	/*
	 * som: the pool's and sources' metadata, without any region's,
	 * charged per GiB of pool; then what this mapping's region adds.
	 */
	if (m.b->som) {
		region0 = som_stat("region_metadata_bytes");
		pool_meta = (som_stat("metadata_bytes") - region0) * gib /
			    (som_stat("total_bytes") / GiB);
		zeroed0 = som_stat("zeroed_bytes");
		zero_cost_read(&zero);
	}

	nodes0 = radix_nodes(&objsize);
	if (m.b->map(&m)) {
		perror("som_bench: map");
		goto err;
	}
	measure_touch(m.p, m.len, &t);
	m.b->entry(&m);
	nodes1 = radix_nodes(&objsize);
	if (m.b->som) {
		long long region1 = som_stat("region_metadata_bytes");

		region_meta = region1 - region0;
		region_table = region1 - m.region_open;
	}
	gups_ns = gups(m.p, m.len, ops);

	t0 = measure_ns();
	m.b->unmap(&m);
	free_ns = measure_ns() - t0;
	if (m.b->som) {
		rezero = som_wait_zeroed(600);
		zero_cost_since(&zero);
	}
	if (m.b->finish)
		m.b->finish(&m);

	/*
	 * The struct pages behind the buffer: 0 for som's pool; for hugetlb
	 * pages, what HVO left of them, known when they were allocated for
	 * this run (-1 otherwise); the memmap per GiB for the rest.
	 */
	if (m.b->som)
		struct_page = 0;
	else if (m.b->prepare != hugetlb_prepare)
		struct_page = memmap * gib;
	else if (m.hvo_pages > 0)
		struct_page = (memmap + m.memmap_delta / m.hvo_pages) * gib;
	else
		struct_page = -1;

	printf("SOMBENCH touch backing=%s gib=%d run=%d faults=%ld touch_ns=%llu"
	       " pt_bytes=%lld entry=%lld thp_bytes=%lld"
	       " struct_page_bytes=%lld memmap_delta=%lld hvo_pages=%lld xa_nodes=%lld"
	       " xa_bytes=%lld pool_meta_bytes=%lld gups_ops=%lu gups_ns=%llu"
	       " free_ns=%llu rezero_ns=%lld pool_zeroed_at_start=%lld"
	       " region_meta_bytes=%lld region_table_bytes=%lld"
	       " xa_node_bytes_sysfs=%d zw_bytes=%lld zw_ns=%lld zf_bytes=%lld"
	       " zf_ns=%lld\n",
	       name, gib, run, t.faults, (unsigned long long)t.ns, t.pt_bytes,
	       m.entry, m.b->som ? 0 : m.thp_bytes, struct_page, m.memmap_delta,
	       m.hvo_pages,
	       nodes1 - nodes0, (nodes1 - nodes0) * objsize, pool_meta, ops,
	       (unsigned long long)gups_ns, (unsigned long long)free_ns, rezero,
	       zeroed0, region_meta, region_table, XA_NODE_BYTES,
	       zero.worker_bytes, zero.worker_ns, zero.fault_bytes,
	       zero.fault_ns);
	return 0;
err:
	if (m.b->finish)
		m.b->finish(&m);
	return 1;
}

/* One allocate, write, free of the churn loop; 0 or -1. */
struct churn {
	const char *name;
	size_t size;
	struct som *som;
	char *addr;		/* anonymous: the aligned range it owns */
};

static int churn_one(struct churn *c)
{
	int som = !strncmp(c->name, "som", 3), huge = !strcmp(c->name, "hugetlb-1g");
	void *p;

	if (som) {
		if (som_alloc(c->som, c->size, NULL, &p))
			return -1;
	} else if (huge) {
		p = mmap(NULL, c->size, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | MAP_HUGE_1GB,
			 -1, 0);
	} else {
		/*
		 * Over the PROT_NONE reservation the churn owns, and back to
		 * one to free: a munmap() would leave the aligned range free
		 * for any mmap() to take.
		 */
		p = mmap(c->addr, c->size, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
		if (p != MAP_FAILED)
			madvise(p, c->size, MADV_HUGEPAGE);
	}
	if (p == MAP_FAILED)
		return -1;
	*(volatile char *)p = 1;
	if (som)
		return som_free(c->som, p) ? -1 : 0;
	if (huge)
		return munmap(p, c->size);
	return mmap(p, c->size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS |
		    MAP_NORESERVE | MAP_FIXED, -1, 0) == p ? 0 : -1;
}

static int cmd_churn(const char *name, int ops, int run)
{
	struct churn c = { .name = name };
	long long pud, pmd, pte, rezero = 0;
	struct zero_cost zero = { 0 };
	long flt;
	uint64_t t0, ns;
	int i, err = 0;

	if (!strcmp(name, "som-2m") || !strcmp(name, "thp-2m"))
		c.size = 2 * MiB;
	else if (!strcmp(name, "som-1g") || !strcmp(name, "hugetlb-1g"))
		c.size = GiB;
	else {
		fprintf(stderr, "som_bench: unknown churn kind %s\n", name);
		return 2;
	}
	if (!strncmp(name, "som", 3)) {
		if (som_wait_zeroed(600) < 0 || som_open(&c.som)) {
			printf("SOMBENCH skip what=churn kind=%s reason=som_pool\n", name);
			return 0;
		}
	} else if (c.size == GiB) {
		struct mem m = { .gib = 1 };

		if (hugetlb_grow(&m, 1)) {
			printf("SOMBENCH skip what=churn kind=%s reason=no_1g_page\n", name);
			return 0;
		}
	} else {
		c.addr = measure_map_anon(c.size, c.size);
		if (c.addr == MAP_FAILED ||
		    mprotect(c.addr, c.size, PROT_NONE))
			return 1;
	}

	pud = som_stat("faults_pud");
	pmd = som_stat("faults_pmd");
	pte = som_stat("faults_pte");
	if (c.som)
		zero_cost_read(&zero);
	flt = som_minflt();
	t0 = measure_ns();
	for (i = 0; i < ops && !err; i++)
		err = churn_one(&c);
	ns = measure_ns() - t0;
	flt = som_minflt() - flt;
	/*
	 * The pool was all zeroed before the loop; once it is again, every
	 * byte the loop dirtied has been zeroed once, in its faults (inside
	 * ns) or by the worker (zero.worker_ns, on another CPU or later).
	 */
	if (c.som) {
		rezero = som_wait_zeroed(600);
		zero_cost_since(&zero);
	}
	if (err)
		perror("som_bench: churn");
	else
		printf("SOMBENCH churn kind=%s run=%d ops=%d bytes_per_op=%zu"
		       " ns=%llu faults=%ld som_pud=%lld som_pmd=%lld som_pte=%lld"
		       " rezero_ns=%lld zw_bytes=%lld zw_ns=%lld zf_bytes=%lld"
		       " zf_ns=%lld\n",
		       name, run, ops, c.size, (unsigned long long)ns, flt,
		       som_stat("faults_pud") - pud,
		       som_stat("faults_pmd") - pmd,
		       som_stat("faults_pte") - pte, rezero,
		       zero.worker_bytes, zero.worker_ns, zero.fault_bytes,
		       zero.fault_ns);
	if (c.som)
		som_close(c.som);
	if (c.addr)
		munmap(c.addr, c.size);
	return err ? 1 : 0;
}

static int cmd_info(void)
{
	long long objsize = -1, active, pool = -1, meta = -1, region = -1;
	char thp[16] = "?";
	struct utsname u;

	uname(&u);
	thp_mode(thp, sizeof(thp));
	measure_slab(RADIX_CACHE, &active, &objsize);
	if (!access(SOM_DEV, F_OK)) {
		pool = som_stat("total_bytes");
		meta = som_stat("metadata_bytes");
		region = som_stat("region_metadata_bytes");
	}
	printf("SOMBENCH info kernel=%s cpus=%ld mem_total=%lld memmap_per_gib=%lld"
	       " hvo=%lld thp=%s gbpages=%d pool_bytes=%lld pool_meta_bytes=%lld"
	       " region_meta_bytes=%lld radix_objsize=%lld radix_exact=%lld\n",
	       u.release, sysconf(_SC_NPROCESSORS_ONLN), som_meminfo("MemTotal"),
	       measure_memmap_per_gib(),
	       som_read_ll("/proc/sys/vm/hugetlb_optimize_vmemmap"), thp,
	       som_cpu_has_gbpages(), pool, meta < 0 ? -1 : meta - region, region, objsize,
	       som_read_ll(RADIX_DEBUG));
	return 0;
}

/*
 * Touch all the memory the guest can spare, once: QEMU backs guest memory
 * with host memory at its first use, and a host page fault under each
 * guest page would otherwise land in the first measurements only.
 */
static int cmd_warmup(void)
{
	long long avail = som_meminfo("MemAvailable");
	size_t len = avail > (long long)GiB ? (avail - 512 * MiB) & ~(2 * MiB - 1) : 0;
	struct measure_touch t;
	char *p;

	if (!len)
		return 1;
	p = measure_map_anon(len, 2 * MiB);
	if (p == MAP_FAILED)
		return 1;
	madvise(p, len, MADV_HUGEPAGE);
	measure_touch(p, len, &t);
	munmap(p, len);
	printf("SOMBENCH warmup bytes=%zu ns=%llu faults=%ld\n", len,
	       (unsigned long long)t.ns, t.faults);
	return 0;
}

static int usage(void)
{
	fprintf(stderr, "usage: som_bench info | warmup\n"
		"       som_bench touch anon4k|thp|hugetlb|memfd|som|som-cold GIB RUN\n"
		"       som_bench churn som-2m|som-1g|thp-2m|hugetlb-1g OPS RUN\n"
		"       som_bench meta empty|whole|split|hvo\n"
		"       som_bench age 1g|2m|4k|mglru-4k|mglru-thp RUN\n"
		"       som_bench tier 2m|1g|kernel-thp RUN\n"
		"       som_bench swap som|kernel RUN\n"
		"       som_bench pressure som|kernel RUN\n"
		"       som_bench regions PID...\n");
	return 2;
}

int main(int argc, char **argv)
{
	int ret;

	setvbuf(stdout, NULL, _IOLBF, 0);
	/* The vDSO's data page faults at first use: not in a measurement. */
	measure_ns();
	if (argc == 2 && !strcmp(argv[1], "info"))
		ret = cmd_info();
	else if (argc == 2 && !strcmp(argv[1], "warmup"))
		ret = cmd_warmup();
	else if (argc == 5 && !strcmp(argv[1], "touch"))
		ret = cmd_touch(argv[2], atoi(argv[3]), atoi(argv[4]));
	else if (argc == 5 && !strcmp(argv[1], "churn"))
		ret = cmd_churn(argv[2], atoi(argv[3]), atoi(argv[4]));
	else if (argc == 4 && !strcmp(argv[1], "age") &&
		 !strncmp(argv[2], "mglru-", 6))
		ret = som_bench_age_mglru(argv[2], atoi(argv[3]));
	else if (argc == 4 && !strcmp(argv[1], "age"))
		ret = som_bench_age(argv[2], atoi(argv[3]));
	else if (argc == 4 && !strcmp(argv[1], "tier"))
		ret = som_bench_tier(argv[2], atoi(argv[3]));
	else if (argc == 4 && !strcmp(argv[1], "swap"))
		ret = som_bench_swap(argv[2], atoi(argv[3]));
	else if (argc == 4 && !strcmp(argv[1], "pressure"))
		ret = som_bench_pressure(argv[2], atoi(argv[3]));
	else if (argc >= 3 && !strcmp(argv[1], "regions"))
		ret = som_bench_regions(argc - 2, argv + 2);
	else if (argc == 3 && !strcmp(argv[1], "meta") &&
		 (!strcmp(argv[2], "empty") || !strcmp(argv[2], "whole") ||
		  !strcmp(argv[2], "split") || !strcmp(argv[2], "hvo")))
		ret = som_bench_meta(argv[2]);
	else
		ret = usage();
	return ret;
}
