// SPDX-License-Identifier: GPL-2.0
/*
 * Holes that memory errors leave in a region. When a page a region holds
 * goes bad, the region forgets what it held there: the page offset is
 * recorded in the region's poison xarray, and from then on a fault there
 * gets VM_FAULT_HWPOISON (SIGBUS, BUS_MCEERR_AR, si_addr_lsb PAGE_SHIFT,
 * as on anonymous memory), a debugger reads -EIO, and no entry larger
 * than 4 KiB maps the 2 MiB or 1 GiB around it. The rest of the region
 * keeps its data (poison.c moves it off the bad block when it can).
 *
 * A hole lasts until its index is released (munmap() of /dev/som,
 * truncation or a whole-block hole punch of a som file), or until a punch
 * covers the page while the block behind it is healthy (the data was
 * moved): then the page reads as zeros again.
 *
 * Context: every function here expects the region lock held.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/mm.h>
#include <linux/xarray.h>

#include "region.h"

/**
 * som_region_poison_page() - make a page of a region a poisoned hole
 * @region: the region
 * @pgoff: page offset in the region
 *
 * The caller zaps what maps the page. The record cannot fail: without
 * it the next fault would map the bad page again.
 *
 * Context: Process context, may sleep. Caller holds the region lock.
 */
void som_region_poison_page(struct som_region *region, pgoff_t pgoff)
{
	lockdep_assert_held(&region->lock);
	if (xa_load(&region->poison, pgoff))
		return;
	xa_store(&region->poison, pgoff, xa_mk_value(1),
		 GFP_KERNEL_ACCOUNT | __GFP_NOFAIL);
	region->nr_poisoned++;
}

/**
 * som_region_poisoned() - is any page of a range a poisoned hole?
 * @region: the region
 * @pgoff: first page offset
 * @nr_pages: pages from @pgoff
 *
 * Context: Caller holds the region lock.
 */
bool som_region_poisoned(struct som_region *region, pgoff_t pgoff,
			 unsigned long nr_pages)
{
	unsigned long index = pgoff;

	lockdep_assert_held(&region->lock);
	if (!region->nr_poisoned)
		return false;
	return xa_find(&region->poison, &index, pgoff + nr_pages - 1,
		       XA_PRESENT);
}

/**
 * som_region_unpoison() - forget the holes of a range
 * @region: the region
 * @first: first page offset
 * @last: last page offset
 * @healthy: forget only the holes whose page the region's block now
 *	backs with memory that is not poisoned (a punch clears those);
 *	false: forget all (the indices are being released)
 *
 * Context: Caller holds the region lock.
 */
void som_region_unpoison(struct som_region *region, pgoff_t first,
			 pgoff_t last, bool healthy)
{
	unsigned long pgoff, entry;
	void *hole;

	lockdep_assert_held(&region->lock);
	if (!region->nr_poisoned)
		return;
	xa_for_each_range(&region->poison, pgoff, hole, first, last) {
		if (healthy) {
			entry = som_table_get(&region->table,
					      pgoff >> SOM_PAGES_PER_BLOCK_SHIFT);
			if (!som_table_is_block(entry) ||
			    som_pool_page_poisoned(region->pool,
						   som_bfn_to_pfn(entry) +
						   (pgoff & (SOM_PAGES_PER_BLOCK - 1))))
				continue;
		}
		xa_erase(&region->poison, pgoff);
		region->nr_poisoned--;
	}
}
