/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A som region: the memory behind one open /dev/som file or one som file.
 * Its table, from 2 MiB offset index to pool block, is the truth; page
 * tables are only a cache of it and may be zapped and refaulted at any time.
 */
#ifndef _SOM_REGION_H
#define _SOM_REGION_H

#include <linux/fs.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mm_types.h>
#include <linux/mutex.h>
#include <linux/xarray.h>

#include "age.h"
#include "charge.h"
#include "pool.h"
#include "table.h"

/**
 * struct som_region - one region and its owner
 * @lock:	protects every field below but @mapping and @pool, and is held
 *		from looking a block up until its page-table entry is in, so
 *		that nothing frees a block a fault is about to map. Lock
 *		order: a som file's i_rwsem, then the owner's mmap_lock (or
 *		VMA lock, in a fault), then @lock, then the file's
 *		i_mmap_rwsem and page-table locks, or the pool lock.
 * @table:	2 MiB index (byte offset >> 21) -> absent, reserved
 *		(capacity promised, no block yet) or the block that backs
 *		the index
 * @mm:		the owner: the mm of the first mmap(), pinned with mmgrab()
 *		so that its address cannot be reused by another process
 * @nr_vmas:	live VMAs mapping this region
 * @vm_start:	with @vm_end, an address range of the owner's that holds
 *		every live VMA of the region: walks over them look only there
 *		(som_region_next_vma()). It grows with each VMA mapped, split
 *		or moved (->open sees the new VMA at its final addresses), and
 *		starts again empty when the last VMA goes. A som VMA never
 *		grows otherwise: VM_SPECIAL VMAs are never merged (mm/vma.c)
 *		and VM_DONTEXPAND refuses mremap() growth; splits and partial
 *		unmaps only shrink one. Written under @lock and the owner's
 *		mmap_lock.
 * @vm_end:	see @vm_start
 * @nr_blocks:	indices holding a block
 * @mapping:	som files: the file's address_space, through which every
 *		user mapping of a block is zapped before the block is freed.
 *		NULL for a /dev/som region, whose indices live exactly as long
 *		as some VMA maps them. The file's i_size, written only under
 *		@lock, is the region's size: an absent index below it
 *		is a hole, one at or above it is past EOF.
 * @pool:	where the blocks come from
 * @claim:	the region's reservations and placement policy in @pool
 * @dead:	its file is gone: it holds nothing and @mm and @mapping are
 *		not to be used; only references taken to walk all regions
 *		keep the structure
 * @ref:	the file's reference and the walkers' (som_regions_get())
 * @list:	entry in the list of all regions, under som_regions_lock
 * @poison:	page offset -> a hole a memory error left (region_poison.c)
 * @nr_poisoned: entries in @poison
 * @ages:	how long each index has gone unused (age.h)
 * @charges:	the cgroup and the user its indices are charged to, 2 MiB
 *		each (charge.c): bound at the first reservation, NULL until
 *		then and once @dead
 * @swap:	2 MiB index -> slot of the swap store that holds its data
 *		(region_swap.c). Such an index is reserved in @table: it
 *		keeps its promise of a block for when it is read back.
 * @sparse:	2 MiB index -> the pack slots of a sparse index of a som
 *		file (pack.c); such an index is absent in @table
 * @packs:	pack index - SOM_PACK_FIRST -> the reverse map of that pack
 *		block
 * @pack_candidates: indices a packing pass is to look at
 * @nr_sparse:	entries in @sparse
 * @nr_packs:	entries in @packs
 */
struct som_region {
	struct mutex lock;		/* see above */
	struct som_table table;
	struct mm_struct *mm;
	unsigned long nr_vmas;
	unsigned long vm_start;
	unsigned long vm_end;
	unsigned long nr_blocks;
	struct address_space *mapping;
	struct som_pool *pool;
	struct som_claim claim;
	bool dead;
	struct kref ref;
	struct list_head list;
	struct xarray poison;
	unsigned long nr_poisoned;
	struct som_ages ages;
	struct som_charges charges;
	struct xarray swap;
	struct xarray sparse;
	struct xarray packs;
	struct xarray pack_candidates;
	unsigned long nr_sparse;
	unsigned long nr_packs;
};

#define SOM_PAGES_PER_BLOCK_SHIFT	(SOM_BLOCK_SHIFT - PAGE_SHIFT)
#define SOM_PAGES_PER_BLOCK		BIT(SOM_PAGES_PER_BLOCK_SHIFT)
#define SOM_PAGES_PER_CHUNK		BIT(SOM_CHUNK_SHIFT - PAGE_SHIFT)

struct som_region *som_region_create(struct som_pool *pool,
				     struct address_space *mapping);
void som_region_destroy(struct som_region *region);
void som_region_put(struct som_region *region);
struct som_region **som_regions_get(unsigned long *nr);
void som_regions_put(struct som_region **regions, unsigned long nr);

/**
 * struct som_regions_metadata - what the open regions spend on metadata
 * @regions:	their descriptors and per-node reservation counters
 * @table_split: their split GiBs (som_table_split_bytes())
 * @table_nodes: their tables' xarray nodes (som_table_node_bytes())
 * @ages:	their ages (som_ages_bytes())
 * @swap:	their records of blocks in the swap store (xarray nodes)
 * @pack:	their sparse indices' and pack blocks' maps (pack.c)
 */
struct som_regions_metadata {
	u64 regions;
	u64 table_split;
	u64 table_nodes;
	u64 ages;
	u64 swap;
	u64 pack;
};

void som_regions_count_metadata(struct som_regions_metadata *m);

static inline void som_region_lock(struct som_region *region)
{
	mutex_lock(&region->lock);
}

static inline void som_region_unlock(struct som_region *region)
{
	mutex_unlock(&region->lock);
}

/* VMA life cycle */
int som_region_map(struct som_region *region, struct vm_area_struct *vma);
void som_region_open(struct som_region *region, struct vm_area_struct *vma);
void som_region_unmap(struct som_region *region, struct vm_area_struct *vma);
struct vm_area_struct *som_region_next_vma(struct som_region *region,
					   struct vma_iterator *vmi);

/* Faults and debugger access */
int som_region_block(struct som_region *region, pgoff_t pgoff,
		     unsigned long nr_pages, unsigned long *pfn);
int som_region_chunk(struct som_region *region, pgoff_t pgoff,
		     unsigned long *pfn);
int som_region_access(struct som_region *region, loff_t pos, void *buf,
		      int len, bool write);

/* A hook for the layer above: a GiB found no whole chunk (compaction). */
void som_region_on_chunk_wanted(void (*fn)(void));

void som_region_count(struct som_region *region, long nr);

/* Placement */
void som_region_release(struct som_region *region, pgoff_t first,
			pgoff_t last);
void som_region_release_table(struct som_region *region, pgoff_t first,
			      pgoff_t last);
int som_region_fill(struct som_region *region, pgoff_t idx,
		    unsigned long *bfn);
int som_region_node(struct som_region *region, pgoff_t pgoff,
		    unsigned int *flags);

/* som files */
int som_region_may_modify(struct som_region *region);
int som_region_resize(struct som_region *region, loff_t size);
void som_region_resize_back(struct som_region *region, loff_t size);
int som_region_allocate(struct som_region *region, loff_t from, loff_t to);
int som_region_punch(struct som_region *region, loff_t from, loff_t to);

/* Holes left by memory errors (region_poison.c) */
void som_region_poison_page(struct som_region *region, pgoff_t pgoff);
bool som_region_poisoned(struct som_region *region, pgoff_t pgoff,
			 unsigned long nr_pages);
void som_region_unpoison(struct som_region *region, pgoff_t first,
			 pgoff_t last, bool healthy);

#endif /* _SOM_REGION_H */
