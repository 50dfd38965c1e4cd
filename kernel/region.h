/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A som region: what one open of /dev/som owns. Its table, from 2 MiB
 * offset index to pool block, is the truth; page tables are only a cache
 * of it and may be zapped and refaulted at any time.
 */
#ifndef _SOM_REGION_H
#define _SOM_REGION_H

#include <linux/mm_types.h>
#include <linux/mutex.h>
#include <linux/xarray.h>

struct som_pool;

/**
 * struct som_region - one region and its owner
 * @lock:	protects @slots, @mm and @nr_vmas. Lock order: the owner's
 *		mmap_lock, then @lock, then the pool lock.
 * @slots:	2 MiB index (file offset >> 21) -> slot: present exactly for
 *		the indices some live VMA maps; either reserved (no block yet)
 *		or holding the block that backs the index
 * @mm:		the owner: the mm of the first mmap(), pinned with mmgrab()
 *		so that its address cannot be reused by another process
 * @nr_vmas:	live VMAs mapping this region
 * @pool:	where the blocks come from
 */
struct som_region {
	struct mutex lock;		/* see above */
	struct xarray slots;
	struct mm_struct *mm;
	unsigned long nr_vmas;
	struct som_pool *pool;
};

struct som_region *som_region_create(struct som_pool *pool);
void som_region_destroy(struct som_region *region);
int som_region_map(struct som_region *region, struct vm_area_struct *vma);
void som_region_open(struct som_region *region);
void som_region_unmap(struct som_region *region, struct vm_area_struct *vma);
int som_region_block(struct som_region *region, pgoff_t pgoff,
		     unsigned long *pfn);
int som_region_chunk(struct som_region *region, pgoff_t pgoff,
		     unsigned long *pfn);
int som_region_access(struct som_region *region, loff_t pos, void *buf,
		      int len, bool write);

#endif /* _SOM_REGION_H */
