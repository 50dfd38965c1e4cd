// SPDX-License-Identifier: GPL-2.0
/*
 * som regions: the offset -> block table of one open /dev/som file, its
 * reservations and its single owner.
 *
 * A slot exists for every 2 MiB offset index that some live VMA maps. mmap
 * creates the missing slots as "reserved" and reserves one pool block for
 * each, so a fault never finds the pool empty; the first fault of an index
 * turns its reservation into a block. When a VMA goes away, the slots that
 * no other live VMA of the region still maps are released: blocks back to
 * the pool, reservations dropped.
 *
 * Which slots are still mapped is found from the owner's VMA tree rather
 * than from per-VMA bookkeeping: a VMA can be split, moved by mremap() or
 * mapped over with MAP_FIXED, and only the tree knows the result. Every
 * caller holds the owner's mmap_lock, which keeps the tree stable.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/mm.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "pool.h"
#include "region.h"
#include "som.h"

#define SOM_PAGES_PER_BLOCK_SHIFT	(SOM_BLOCK_SHIFT - PAGE_SHIFT)
#define SOM_PAGES_PER_BLOCK		BIT(SOM_PAGES_PER_BLOCK_SHIFT)

/*
 * Slot values are xarray value entries: SOM_SLOT_RESERVED, or the block's
 * frame number plus SOM_SLOT_BLOCK. Marks are scratch state that is only
 * ever set and cleared again within one hold of som_region.lock.
 */
#define SOM_SLOT_RESERVED	xa_mk_value(0)
#define SOM_SLOT_BLOCK		1UL
#define SOM_SLOT_NEW		XA_MARK_0	/* created by this mmap */
#define SOM_SLOT_KEEP		XA_MARK_1	/* another VMA still maps it */

static void *som_slot(unsigned long bfn)
{
	return xa_mk_value(bfn + SOM_SLOT_BLOCK);
}

static unsigned long som_slot_bfn(void *entry)
{
	return xa_to_value(entry) - SOM_SLOT_BLOCK;
}

static pgoff_t som_vma_first(struct vm_area_struct *vma)
{
	return vma->vm_pgoff >> SOM_PAGES_PER_BLOCK_SHIFT;
}

static pgoff_t som_vma_last(struct vm_area_struct *vma)
{
	return (vma->vm_pgoff + vma_pages(vma) - 1) >> SOM_PAGES_PER_BLOCK_SHIFT;
}

/**
 * som_region_create() - a new, empty region with no owner yet
 * @pool: where its blocks will come from
 *
 * Context: Process context, may sleep.
 * Return: the region, or NULL if out of memory.
 */
struct som_region *som_region_create(struct som_pool *pool)
{
	struct som_region *region;

	region = kzalloc(sizeof(*region), GFP_KERNEL_ACCOUNT);
	if (!region)
		return NULL;
	mutex_init(&region->lock);
	xa_init(&region->slots);
	region->pool = pool;
	return region;
}

/*
 * Release every slot in [first, last] that is not marked SOM_SLOT_KEEP,
 * and clear that mark on the others.
 */
static void som_region_release(struct som_region *region, pgoff_t first,
			       pgoff_t last)
{
	unsigned long idx, nr_reserved = 0;
	void *entry;

	lockdep_assert_held(&region->lock);
	xa_for_each_range(&region->slots, idx, entry, first, last) {
		if (xa_get_mark(&region->slots, idx, SOM_SLOT_KEEP)) {
			xa_clear_mark(&region->slots, idx, SOM_SLOT_KEEP);
			continue;
		}
		xa_erase(&region->slots, idx);
		if (entry == SOM_SLOT_RESERVED)
			nr_reserved++;
		else
			som_pool_free_block(region->pool, som_slot_bfn(entry));
	}
	if (nr_reserved)
		som_pool_unreserve(region->pool, nr_reserved);
}

/**
 * som_region_destroy() - free a region that no VMA maps any more
 * @region: the region
 *
 * Context: Process context, may sleep.
 */
void som_region_destroy(struct som_region *region)
{
	mutex_lock(&region->lock);
	WARN_ON_ONCE(region->nr_vmas);
	som_region_release(region, 0, ULONG_MAX);
	mutex_unlock(&region->lock);
	if (region->mm)
		mmdrop(region->mm);
	xa_destroy(&region->slots);
	mutex_destroy(&region->lock);
	kfree(region);
}

/**
 * som_region_map() - account a new mapping of the region
 * @region: the region
 * @vma: the VMA being created by mmap() in the caller's mm
 *
 * The first mapping makes its mm the region's owner. Slots that no live
 * VMA maps yet are created reserved, and their blocks reserved in the pool.
 *
 * Context: Process context, caller holds the owner's mmap_lock for write.
 * Return: 0, -EPERM if another mm owns the region, -ENOMEM if the pool
 * cannot reserve the memory or the table cannot grow.
 */
int som_region_map(struct som_region *region, struct vm_area_struct *vma)
{
	pgoff_t first = som_vma_first(vma), last = som_vma_last(vma), idx;
	unsigned long nr = 0;
	int err = 0;

	mutex_lock(&region->lock);
	if (region->mm && region->mm != vma->vm_mm) {
		err = -EPERM;
		goto out_unlock;
	}
	for (idx = first; idx <= last; idx++)
		if (!xa_load(&region->slots, idx))
			nr++;
	err = som_pool_reserve(region->pool, nr);
	if (err)
		goto out_unlock;
	for (idx = first; idx <= last; idx++) {
		err = xa_insert(&region->slots, idx, SOM_SLOT_RESERVED,
				GFP_KERNEL_ACCOUNT);
		if (err == -EBUSY)
			continue;
		if (err)
			goto err_erase_new;
		xa_set_mark(&region->slots, idx, SOM_SLOT_NEW);
	}
	for (idx = first; idx <= last; idx++)
		xa_clear_mark(&region->slots, idx, SOM_SLOT_NEW);

	if (!region->mm) {
		mmgrab(vma->vm_mm);
		region->mm = vma->vm_mm;
	}
	region->nr_vmas++;
	goto out_unlock;

err_erase_new:
	while (idx-- > first)
		if (xa_get_mark(&region->slots, idx, SOM_SLOT_NEW))
			xa_erase(&region->slots, idx);
	som_pool_unreserve(region->pool, nr);
out_unlock:
	mutex_unlock(&region->lock);
	return err;
}

/**
 * som_region_open() - account a VMA copied from one of the region's VMAs
 * @region: the region
 *
 * A split or an mremap() move creates the VMA; its slots already exist.
 *
 * Context: Caller holds the owner's mmap_lock for write.
 */
void som_region_open(struct som_region *region)
{
	mutex_lock(&region->lock);
	region->nr_vmas++;
	mutex_unlock(&region->lock);
}

/* Mark the slots of [first, last] that another live VMA of @region maps. */
static void som_region_mark_kept(struct som_region *region,
				 struct vm_area_struct *gone,
				 pgoff_t first, pgoff_t last)
{
	VMA_ITERATOR(vmi, gone->vm_mm, 0);
	struct vm_area_struct *vma;
	pgoff_t idx;

	for_each_vma(vmi, vma) {
		/*
		 * A VMA already closed in this same munmap() batch may still
		 * be in the tree; vma_close() left it the dummy vm_ops.
		 */
		if (vma == gone || vma->vm_ops != &som_vm_ops ||
		    vma->vm_private_data != region)
			continue;
		for (idx = max(first, som_vma_first(vma));
		     idx <= min(last, som_vma_last(vma)); idx++)
			xa_set_mark(&region->slots, idx, SOM_SLOT_KEEP);
	}
}

/**
 * som_region_unmap() - a VMA of the region is going away
 * @region: the region
 * @vma: the VMA, already unmapped and (outside exit) out of the VMA tree
 *
 * Releases the slots of @vma that no other live VMA maps; when the last
 * VMA goes, every slot. At exit the whole tree is being torn down with
 * VMAs freed as they go, so it is not walked then: the slots are released
 * when the last VMA goes.
 *
 * Context: Process context; caller holds the owner's mmap_lock.
 */
void som_region_unmap(struct som_region *region, struct vm_area_struct *vma)
{
	pgoff_t first = som_vma_first(vma), last = som_vma_last(vma);

	mmap_assert_locked(vma->vm_mm);
	mutex_lock(&region->lock);
	region->nr_vmas--;
	if (!region->nr_vmas) {
		som_region_release(region, 0, ULONG_MAX);
	} else if (atomic_read(&vma->vm_mm->mm_users)) {
		som_region_mark_kept(region, vma, first, last);
		som_region_release(region, first, last);
	}
	mutex_unlock(&region->lock);
}

/* Make sure slot @idx holds a block; return its frame number in @bfn. */
static int som_region_fill(struct som_region *region, pgoff_t idx,
			   unsigned long *bfn)
{
	void *entry = xa_load(&region->slots, idx);
	unsigned long block;

	lockdep_assert_held(&region->lock);
	if (!entry)
		return -EFAULT;
	if (entry != SOM_SLOT_RESERVED) {
		*bfn = som_slot_bfn(entry);
		return 0;
	}
	block = som_pool_alloc_block(region->pool);
	if (block == SOM_NO_BLOCK)
		return -ENOMEM;
	/* Replacing a present entry allocates nothing and cannot fail. */
	xa_store(&region->slots, idx, som_slot(block), GFP_KERNEL);
	*bfn = block;
	return 0;
}

/**
 * som_region_block() - the page frame backing one page of the region
 * @region: the region
 * @pgoff: page offset in the region
 * @pfn: the frame; the whole 2 MiB block around it is backed contiguously
 *
 * Allocates the block on first use, from the slot's reservation.
 *
 * Context: Process context, may sleep (the allocation may zero 2 MiB).
 * Return: 0, or -EFAULT if no VMA maps @pgoff.
 */
int som_region_block(struct som_region *region, pgoff_t pgoff,
		     unsigned long *pfn)
{
	unsigned long bfn;
	int err;

	mutex_lock(&region->lock);
	err = som_region_fill(region, pgoff >> SOM_PAGES_PER_BLOCK_SHIFT, &bfn);
	mutex_unlock(&region->lock);
	if (!err)
		*pfn = som_bfn_to_pfn(bfn) + (pgoff & (SOM_PAGES_PER_BLOCK - 1));
	return err;
}

/**
 * som_region_chunk() - the frame backing a whole 1 GiB of the region
 * @region: the region
 * @pgoff: page offset in the region, 1 GiB aligned
 * @pfn: the first frame of a physically contiguous, 1 GiB aligned GiB
 *
 * Succeeds if the 512 slots of that GiB already hold the 512 blocks of one
 * chunk in order, or if none holds a block yet and the pool has a whole
 * free chunk, which is then allocated.
 *
 * Context: Process context, may sleep (it may zero up to 1 GiB).
 * Return: 0, -ENOSPC if the GiB cannot be backed by one chunk (the caller
 * maps smaller pieces), or -EFAULT if no VMA maps the whole GiB.
 */
int som_region_chunk(struct som_region *region, pgoff_t pgoff,
		     unsigned long *pfn)
{
	pgoff_t first = pgoff >> SOM_PAGES_PER_BLOCK_SHIFT, i;
	unsigned long base = SOM_NO_BLOCK, nr_reserved = 0;
	int err = 0;
	void *entry;

	mutex_lock(&region->lock);
	for (i = 0; i < SOM_BLOCKS_PER_CHUNK; i++) {
		entry = xa_load(&region->slots, first + i);
		if (!entry) {
			err = -EFAULT;
			goto out_unlock;
		}
		if (entry == SOM_SLOT_RESERVED) {
			nr_reserved++;
			continue;
		}
		if (i == 0)
			base = som_slot_bfn(entry);
		if (base == SOM_NO_BLOCK || som_slot_bfn(entry) != base + i ||
		    !IS_ALIGNED(base, SOM_BLOCKS_PER_CHUNK)) {
			err = -ENOSPC;
			goto out_unlock;
		}
	}
	if (nr_reserved && nr_reserved != SOM_BLOCKS_PER_CHUNK) {
		err = -ENOSPC;
		goto out_unlock;
	}
	if (nr_reserved) {
		base = som_pool_alloc_chunk(region->pool);
		if (base == SOM_NO_BLOCK) {
			err = -ENOSPC;
			goto out_unlock;
		}
		for (i = 0; i < SOM_BLOCKS_PER_CHUNK; i++)
			xa_store(&region->slots, first + i, som_slot(base + i),
				 GFP_KERNEL);
	}
	*pfn = som_bfn_to_pfn(base);
out_unlock:
	mutex_unlock(&region->lock);
	return err;
}

/**
 * som_region_access() - read or write region memory for a debugger
 * @region: the region
 * @pos: byte offset in the region
 * @buf: kernel buffer
 * @len: bytes wanted; at most up to the end of the page at @pos is done
 * @write: copy @buf into the region instead of out of it
 *
 * Memory never touched reads as zeros without being allocated; a write
 * allocates it as a fault would.
 *
 * Context: Process context, may sleep.
 * Return: bytes copied, or -EFAULT if no VMA maps @pos.
 */
int som_region_access(struct som_region *region, loff_t pos, void *buf,
		      int len, bool write)
{
	pgoff_t idx = pos >> SOM_BLOCK_SHIFT;
	unsigned long bfn;
	void *entry, *vaddr;
	int err = 0;

	len = min_t(int, len, PAGE_SIZE - offset_in_page(pos));
	mutex_lock(&region->lock);
	entry = xa_load(&region->slots, idx);
	if (entry == SOM_SLOT_RESERVED && !write) {
		memset(buf, 0, len);
		goto out_unlock;
	}
	err = som_region_fill(region, idx, &bfn);
	if (err)
		goto out_unlock;
	vaddr = som_pool_block_vaddr(region->pool, bfn);
	if (WARN_ON_ONCE(!vaddr)) {
		err = -EFAULT;
		goto out_unlock;
	}
	vaddr += pos & (SOM_BLOCK_SIZE - 1);
	if (write)
		memcpy(vaddr, buf, len);
	else
		memcpy(buf, vaddr, len);
out_unlock:
	mutex_unlock(&region->lock);
	return err ? err : len;
}
