// SPDX-License-Identifier: GPL-2.0
/*
 * Chunk source: 1 GiB runs taken from the page allocator at run time.
 *
 * alloc_contig_range() migrates whatever movable pages sit in an aligned
 * 1 GiB range and hands the whole range over; free_contig_range() gives
 * it back. It succeeds reliably where the memory is movable: ZONE_MOVABLE
 * (movablecore= or memory blocks onlined movable); in ZONE_NORMAL one
 * unmovable kernel page in the range is enough to fail it, and the next
 * aligned range is tried. CMA areas are not used (their pageblocks would
 * need MIGRATE_CMA). This memory keeps its struct pages, so the pool
 * saves nothing on metadata here; what it offers is 1 GiB pages on a
 * machine that was not booted for them.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/gfp.h>
#include <linux/memory_hotplug.h>
#include <linux/mm.h>
#include <linux/mmzone.h>
#include <linux/nodemask.h>
#include <linux/sched/signal.h>

#include "pool.h"
#include "som.h"
#include "source.h"

#define SOM_CHUNK_PAGES	(SOM_CHUNK_SIZE >> PAGE_SHIFT)

#ifdef CONFIG_CONTIG_ALLOC

static void som_buddy_release(struct som_source *src)
{
	unsigned long i;

	for (i = 0; i < src->nr_chunks; i++) {
		free_contig_range(PHYS_PFN(src->chunks[i]), SOM_CHUNK_PAGES);
		cond_resched();
	}
}

static const struct som_source_ops som_buddy_ops = {
	.kind = "buddy",
	.release = som_buddy_release,
};

/*
 * Worth trying alloc_contig_range() on? Every page online, in @zone, not
 * reserved and not a hugetlb page (what alloc_contig_pages() checks), and
 * not in the pool already.
 */
static bool som_buddy_range_ok(struct zone *zone, unsigned long pfn)
{
	unsigned long end = pfn + SOM_CHUNK_PAGES;
	struct page *page;

	if (som_pool_contains(&som_pool, PFN_PHYS(pfn), SOM_CHUNK_SIZE))
		return false;
	for (; pfn < end; pfn++) {
		page = pfn_to_online_page(pfn);
		if (!page || page_zone(page) != zone || PageReserved(page) ||
		    PageHuge(page))
			return false;
		if (!(pfn & 0x3fff))
			cond_resched();
	}
	return true;
}

/**
 * struct som_buddy_scan - one pass over the candidate runs
 * @src:	the source being filled
 * @found:	runs taken so far, in @src->chunks
 * @runs:	aligned runs looked at
 * @pinned:	of those, holding reserved, offline or hugetlb pages
 * @busy:	of those, what alloc_contig_range() could not empty
 * @err:	its last error
 */
struct som_buddy_scan {
	struct som_source *src;
	unsigned long found;
	unsigned int runs, pinned, busy;
	int err;
};

/* Take aligned 1 GiB runs of @nid's movable, then normal zone. */
static void som_buddy_scan_node(struct som_buddy_scan *scan, int nid)
{
	static const enum zone_type zones[] = { ZONE_MOVABLE, ZONE_NORMAL };
	struct zone *zone;
	unsigned long pfn;
	unsigned int z;
	int err;

	for (z = 0; z < ARRAY_SIZE(zones); z++) {
		zone = &NODE_DATA(nid)->node_zones[zones[z]];
		if (!populated_zone(zone))
			continue;
		for (pfn = ALIGN(zone->zone_start_pfn, SOM_CHUNK_PAGES);
		     pfn + SOM_CHUNK_PAGES <= zone_end_pfn(zone);
		     pfn += SOM_CHUNK_PAGES) {
			if (scan->found == scan->src->nr_chunks ||
			    fatal_signal_pending(current))
				return;
			scan->runs++;
			if (!som_buddy_range_ok(zone, pfn)) {
				scan->pinned++;
				continue;
			}
			err = alloc_contig_range(pfn, pfn + SOM_CHUNK_PAGES,
						 MIGRATE_MOVABLE,
						 GFP_KERNEL | __GFP_NOWARN);
			if (err) {
				scan->busy++;
				scan->err = err;
				continue;
			}
			scan->src->chunks[scan->found++] = PFN_PHYS(pfn);
		}
	}
}

/**
 * som_buddy_add() - take 1 GiB runs from the page allocator into the pool
 * @nid: the node to take them from, or NUMA_NO_NODE for any node with
 *	memory, tried in order
 * @size: bytes, a non-zero multiple of 1 GiB, at most the memory the page
 *	allocator manages
 * @flags: SOM_SOURCE_* flags: its chunks serve unmovable claims only,
 *	its memory is of the slow tier
 * @name: the source's name, or "" for one made up; set on success
 *
 * Context: Process context, may sleep for long: it migrates up to @size of
 * other memory away. A fatal signal stops it.
 * Return: 0; -EINVAL for a bad size or node; -ENOMEM if not enough aligned
 * runs could be freed (what was taken is given back); -EINTR; or an error
 * from som_source_add().
 */
int som_buddy_add(int nid, u64 size, unsigned int flags, char *name)
{
	struct som_buddy_scan scan = { };
	int n;

	if (!size || !IS_ALIGNED(size, SOM_CHUNK_SIZE) ||
	    size >> PAGE_SHIFT > totalram_pages() ||
	    (nid != NUMA_NO_NODE &&
	     (nid < 0 || nid >= nr_node_ids || !node_state(nid, N_MEMORY))))
		return -EINVAL;
	scan.src = som_source_alloc(&som_buddy_ops, size >> SOM_CHUNK_SHIFT,
				    flags);
	if (!scan.src)
		return -ENOMEM;
	scan.src->struct_page = true;
	if (nid != NUMA_NO_NODE) {
		som_buddy_scan_node(&scan, nid);
	} else {
		for_each_node_state(n, N_MEMORY)
			som_buddy_scan_node(&scan, n);
	}
	if (scan.found < scan.src->nr_chunks) {
		pr_err_ratelimited("buddy: found %lu of %lu free 1 GiB runs%s; of %u runs tried, %u hold reserved, offline or hugetlb pages, %u could not be emptied (%d)\n",
				   scan.found, scan.src->nr_chunks,
				   fatal_signal_pending(current) ?
				   " (interrupted)" : "",
				   scan.runs, scan.pinned, scan.busy, scan.err);
		scan.src->nr_chunks = scan.found;
		som_buddy_release(scan.src);
		som_source_free(scan.src);
		return fatal_signal_pending(current) ? -EINTR : -ENOMEM;
	}
	return som_source_add(scan.src, name);
}

#else /* !CONFIG_CONTIG_ALLOC */

int som_buddy_add(int nid, u64 size, unsigned int flags, char *name)
{
	return -ENODEV;
}

#endif /* CONFIG_CONTIG_ALLOC */
