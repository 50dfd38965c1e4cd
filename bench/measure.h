/* SPDX-License-Identifier: GPL-2.0 */
/*
 * measure: what the benchmark (bench/som_bench.c) and the demo
 * (demo/som_demo.c) measure about a piece of memory: time, page faults,
 * page-table bytes, the entry size that maps it, and the kernel's own
 * metadata (memmap, slab objects). Plain numbers from files, the som
 * pool's counters and fault counts come from tests/som_util.h
 * (som_read_ll(), som_stat(), som_minflt()), shared with the tests.
 *
 * Every reader returns -1 when its file or field is missing.
 */
#ifndef SOM_MEASURE_H
#define SOM_MEASURE_H

#include <stddef.h>
#include <stdint.h>

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t measure_ns(void);

/* A "Key:  N kB" line of /proc/self/status (VmPTE, VmRSS), in bytes. */
long long measure_status(const char *key);

/* A "key N" line of /proc/vmstat. */
long long measure_vmstat(const char *key);

/*
 * Objects in use in a slab cache and the bytes each takes in its slab
 * (object, alignment and free pointer), from /proc/slabinfo. Exact only
 * for caches with slab debugging on (slab_debug=F,<cache>): SLUB counts
 * the objects of per-CPU slabs as in use otherwise. 0 or -1.
 */
int measure_slab(const char *cache, long long *active, long long *objsize);

/* A "Key:  N kB" field of the smaps entry of the VMA holding @addr, in
 * bytes. */
long long measure_smaps(const void *addr, const char *key);

/*
 * Bytes of memmap (struct page, and page_ext if the kernel has one) per
 * GiB of the RAM it describes: the kernel's memmap counters in /proc/vmstat
 * (nr_memmap_pages + nr_memmap_boot_pages) over the memory blocks in
 * /sys/devices/system/memory. A measurement, not 64 B per 4 KiB taken on
 * trust, but only where all memmap describes RAM: device memory with
 * struct pages (pmem, device DAX) adds memmap and no memory block, and
 * HVO takes memmap away from hugetlb pages.
 */
long long measure_memmap_per_gib(void);

/* Result of touching memory one 4 KiB page after another. */
struct measure_touch {
	long faults;		/* minor faults it took */
	uint64_t ns;		/* how long */
	long long pt_bytes;	/* page-table bytes it added (VmPTE) */
};

/* Write one word into each 4 KiB page of [p, p + len), measured. */
void measure_touch(void *p, size_t len, struct measure_touch *t);

/* A private anonymous mapping of @len at an @align-aligned address (the
 * slack around it unmapped), or MAP_FAILED. */
void *measure_map_anon(size_t len, size_t align);

/* "1 GiB", "2 MiB", "4 KiB", "none" or "mixed". */
const char *measure_size_name(long long size);

#endif /* SOM_MEASURE_H */
