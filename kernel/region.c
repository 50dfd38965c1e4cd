// SPDX-License-Identifier: GPL-2.0
/*
 * som regions: the offset -> block table of one open /dev/som file or one
 * som file, its reservations and its single owner.
 *
 * Every 2 MiB offset index of a region is in one of three states:
 *
 *	absent  --reserve-->  reserved  --first use-->  block
 *	   ^                     |                        |
 *	   +------ release ------+------------------------+
 *
 * Reserving takes one block from the pool's free count, so a fault never
 * finds the pool empty; first use turns the reservation into a block.
 *
 * A /dev/som region holds exactly the indices some live VMA maps: mmap
 * reserves the missing ones, and when a VMA goes away the indices no other
 * live VMA still maps are released. Which those are is found from
 * the owner's VMA tree rather than from per-VMA bookkeeping: a VMA can be
 * split, moved by mremap() or mapped over with MAP_FIXED, and only the tree
 * knows the result. Every such caller holds the owner's mmap_lock.
 *
 * A som file's indices follow its size instead: growing reserves the new
 * indices, shrinking and punching holes release them. An absent index
 * below the size is a hole; touching it reserves and fills it again.
 *
 * Blocks are freed only where no page-table entry maps them: a /dev/som
 * index is released after its last VMA is unmapped, a som file zaps the
 * file's mappings first, and faults hold the region lock from looking the
 * block up until its entry is in.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bitmap.h>
#include <linux/error-injection.h>
#include <linux/mm.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#include "pack.h"
#include "pool.h"
#include "region.h"
#include "som.h"
#include "swap.h"

static pgoff_t som_vma_first(struct vm_area_struct *vma)
{
	return vma->vm_pgoff >> SOM_PAGES_PER_BLOCK_SHIFT;
}

static pgoff_t som_vma_last(struct vm_area_struct *vma)
{
	return (vma->vm_pgoff + vma_pages(vma) - 1) >> SOM_PAGES_PER_BLOCK_SHIFT;
}

/* The 2 MiB indices below @size; sizes are capped well below overflow. */
static pgoff_t som_size_indices(loff_t size)
{
	return (size + SOM_BLOCK_SIZE - 1) >> SOM_BLOCK_SHIFT;
}

/* The pages below @size: a partial last page can be mapped, as in files. */
static pgoff_t som_size_pages(loff_t size)
{
	return (size + PAGE_SIZE - 1) >> PAGE_SHIFT;
}

/* A som file's size; only the region changes it, under its lock. */
static loff_t som_region_size(struct som_region *region)
{
	return i_size_read(region->mapping->host);
}

/* Pack blocks (pack.c) are filled like holes, past every file offset. */
static bool som_region_is_hole(struct som_region *region, pgoff_t idx)
{
	return region->mapping &&
	       (idx < som_size_indices(som_region_size(region)) ||
		som_pack_is_pack(idx));
}

/* Count blocks held; a som file reports them as its st_blocks. */
void som_region_count(struct som_region *region, long nr)
{
	region->nr_blocks += nr;
	if (region->mapping)
		region->mapping->host->i_blocks =
			(blkcnt_t)region->nr_blocks << (SOM_BLOCK_SHIFT - 9);
}

/* What to call when a GiB found no whole chunk: see som_compact_init(). */
static void (*som_region_chunk_wanted_fn)(void);

/**
 * som_region_on_chunk_wanted() - set what to call when a GiB of a region
 *	could not be backed by a whole chunk
 * @fn: the function; it must not sleep
 *
 * Context: Module init, before any region exists.
 */
void som_region_on_chunk_wanted(void (*fn)(void))
{
	som_region_chunk_wanted_fn = fn;
}

static void som_region_chunk_wanted(void)
{
	if (som_region_chunk_wanted_fn)
		som_region_chunk_wanted_fn();
}

/* Every region whose file is open, for migrations to walk. */
static LIST_HEAD(som_regions);
static DEFINE_SPINLOCK(som_regions_lock);
static unsigned long som_nr_regions;

/**
 * som_region_create() - a new, empty region with no owner yet
 * @pool: where its blocks will come from
 * @mapping: the som file's address_space, or NULL for /dev/som
 *
 * Context: Process context, may sleep.
 * Return: the region, or NULL if out of memory.
 */
struct som_region *som_region_create(struct som_pool *pool,
				     struct address_space *mapping)
{
	struct som_region *region;

	region = kzalloc(sizeof(*region), GFP_KERNEL_ACCOUNT);
	if (!region)
		return NULL;
	if (som_claim_init(&region->claim)) {
		kfree(region);
		return NULL;
	}
	mutex_init(&region->lock);
	som_table_init(&region->table);
	xa_init(&region->poison);
	xa_init(&region->swap);
	som_pack_region_init(region);
	som_ages_init(&region->ages);
	region->mapping = mapping;
	region->pool = pool;
	som_pool_add_claim(pool, &region->claim);
	kref_init(&region->ref);
	spin_lock(&som_regions_lock);
	list_add_tail(&region->list, &som_regions);
	som_nr_regions++;
	spin_unlock(&som_regions_lock);
	return region;
}

static void som_region_free(struct kref *ref)
{
	struct som_region *region = container_of(ref, struct som_region, ref);

	som_table_destroy(&region->table);
	xa_destroy(&region->poison);
	WARN_ON_ONCE(!xa_empty(&region->swap));
	xa_destroy(&region->swap);
	som_pack_region_destroy(region);
	som_ages_destroy(&region->ages);
	som_pool_del_claim(region->pool, &region->claim);
	som_claim_destroy(&region->claim);
	mutex_destroy(&region->lock);
	kfree(region);
}

/**
 * som_region_put() - drop a reference taken by som_regions_get()
 * @region: the region
 *
 * Context: Process context.
 */
void som_region_put(struct som_region *region)
{
	kref_put(&region->ref, som_region_free);
}

/**
 * som_regions_get() - every region whose file is open, referenced
 * @nr: set to the number of regions returned
 *
 * A region may die (its file be closed) while the caller holds it: check
 * @dead under its lock.
 *
 * Context: Process context, may sleep.
 * Return: an array for som_regions_put() (empty if there are none), or
 * NULL if memory is short.
 */
struct som_region **som_regions_get(unsigned long *nr)
{
	struct som_region **regions, *region;
	unsigned long want, n;

	*nr = 0;
	want = READ_ONCE(som_nr_regions) + 16;
	for (;;) {
		regions = kvmalloc_array(want, sizeof(*regions), GFP_KERNEL);
		if (!regions)
			return NULL;
		n = 0;
		spin_lock(&som_regions_lock);
		if (som_nr_regions <= want) {
			list_for_each_entry(region, &som_regions, list) {
				kref_get(&region->ref);
				regions[n++] = region;
			}
			spin_unlock(&som_regions_lock);
			*nr = n;
			return regions;
		}
		want = som_nr_regions + 16;
		spin_unlock(&som_regions_lock);
		kvfree(regions);
	}
}

/**
 * som_regions_put() - drop what som_regions_get() returned
 * @regions: its array
 * @nr: its count
 */
void som_regions_put(struct som_region **regions, unsigned long nr)
{
	while (nr--)
		som_region_put(regions[nr]);
	kvfree(regions);
}

/**
 * som_regions_count_metadata() - what the regions spend describing memory
 * @m: filled in
 *
 * Counts each open region's descriptor, its claim's per-node counters, its
 * holes left by memory errors (at most one xarray node each), its
 * table and its ages. Not counted: the inode and file that every open file has.
 *
 * Context: Process context, may sleep; takes each region's lock.
 */
void som_regions_count_metadata(struct som_regions_metadata *m)
{
	struct som_region **regions, *region;
	unsigned long nr, i;

	memset(m, 0, sizeof(*m));
	regions = som_regions_get(&nr);
	if (!regions)
		return;
	for (i = 0; i < nr; i++) {
		region = regions[i];
		mutex_lock(&region->lock);
		if (!region->dead) {
			m->regions += kmalloc_size_roundup(sizeof(*region)) +
				      kmalloc_size_roundup(nr_node_ids *
					sizeof(*region->claim.node_reserved)) +
				      region->nr_poisoned * sizeof(struct xa_node);
			m->table_split += som_table_split_bytes(&region->table);
			m->table_nodes += som_table_node_bytes(&region->table);
			m->ages += som_ages_bytes(&region->ages);
			m->swap += som_xa_nodes(&region->swap) *
				   sizeof(struct xa_node);
			m->pack += som_pack_metadata_bytes(region);
		}
		mutex_unlock(&region->lock);
	}
	som_regions_put(regions, nr);
}

/*
 * Charge @nr more indices to the region's cgroup and user, binding the
 * region to the caller's at its first reservation. -ENOMEM past a limit,
 * counted as a failure of the cgroup or user if @count.
 */
static int som_region_charge(struct som_region *region, unsigned long nr,
			     bool count)
{
	int err;

	lockdep_assert_held(&region->lock);
	if (WARN_ON_ONCE(region->dead))
		return -ENOMEM;
	if (!region->charges.cgroup) {
		err = som_charge_bind(&region->charges);
		if (err)
			return err;
	}
	return som_charge_try(&region->charges, nr, count);
}

/*
 * Reserve every absent index of [first, last], and a pool block for each:
 * all or nothing.
 */
static int som_region_reserve(struct som_region *region, pgoff_t first,
			      pgoff_t last)
{
	unsigned long nr;
	int err;

	lockdep_assert_held(&region->lock);
	nr = som_table_count(&region->table, first, last,
			     SOM_TABLE_KIND_ABSENT);
	if (!nr)
		return 0;
	err = som_region_charge(region, nr, true);
	if (err)
		return err;
	err = som_pool_reserve(region->pool, &region->claim, nr);
	if (err)
		goto err_uncharge;
	err = som_table_reserve(&region->table, first, last,
				GFP_KERNEL_ACCOUNT);
	if (err)
		goto err_unreserve;
	som_charge_commit(&region->charges, nr);
	return 0;

err_unreserve:
	som_pool_unreserve(region->pool, &region->claim, nr);
err_uncharge:
	som_charge_cancel(&region->charges, nr);
	return err;
}

/**
 * som_region_release_table() - release what the table holds at indices
 * @region: the region, locked
 * @first: first index
 * @last: last index
 *
 * Blocks go back to the pool, reservations too. Sparse indices' maps stay
 * (som_region_release() frees them). No page-table entry may map the
 * blocks any more.
 */
void som_region_release_table(struct som_region *region, pgoff_t first,
			      pgoff_t last)
{
	unsigned long entry, nr_reserved = 0, nr_freed = 0, nr_out;
	pgoff_t idx = first;

	lockdep_assert_held(&region->lock);
	for (;;) {
		entry = som_table_next(&region->table, &idx, last);
		if (entry == SOM_TABLE_ABSENT)
			break;
		if (entry == SOM_TABLE_RESERVED) {
			nr_reserved++;
		} else {
			som_pool_free_block(region->pool, entry);
			som_region_count(region, -1);
			nr_freed++;
		}
		cond_resched();
		if (idx++ == last)
			break;
	}
	som_table_clear(&region->table, first, last);
	/* Indices paged out are reserved in the table, not in the pool. */
	nr_out = som_region_drop_swap(region, first, last);
	nr_reserved -= nr_out;
	if (nr_out)
		som_pool_drop_out(region->pool, &region->claim, nr_out);
	som_region_unpoison(region, first << SOM_PAGES_PER_BLOCK_SHIFT,
			    last >= ULONG_MAX >> SOM_PAGES_PER_BLOCK_SHIFT ?
			    ULONG_MAX : ((last + 1) << SOM_PAGES_PER_BLOCK_SHIFT) - 1,
			    false);
	if (nr_reserved)
		som_pool_unreserve(region->pool, &region->claim,
				   nr_reserved);
	if (nr_reserved + nr_freed + nr_out)
		som_charge_undo(&region->charges,
				nr_reserved + nr_freed + nr_out);
}

/**
 * som_region_release() - release indices of a region
 * @region: the region, locked
 * @first: first index
 * @last: last index
 *
 * som_region_release_table(), and the slots of the sparse indices among
 * them are freed (pack.c). No page-table entry may map their pages.
 */
void som_region_release(struct som_region *region, pgoff_t first,
			pgoff_t last)
{
	if (region->mapping && !som_pack_is_pack(first))
		som_pack_drop(region, first, min(last, SOM_PACK_FIRST - 1));
	som_region_release_table(region, first, last);
}

/**
 * som_region_destroy() - free a region that no VMA maps any more
 * @region: the region
 *
 * Context: Process context, may sleep.
 */
void som_region_destroy(struct som_region *region)
{
	spin_lock(&som_regions_lock);
	list_del(&region->list);
	som_nr_regions--;
	spin_unlock(&som_regions_lock);

	mutex_lock(&region->lock);
	WARN_ON_ONCE(region->nr_vmas);
	som_region_release(region, 0, ULONG_MAX);
	region->dead = true;
	/* Nothing is charged now: the records may go at once. */
	som_charge_put(&region->charges);
	mutex_unlock(&region->lock);
	if (region->mm)
		mmdrop(region->mm);
	som_region_put(region);
}

/* @vma is a new live VMA of @region: take its addresses into the span. */
static void som_region_add_vma(struct som_region *region,
			       struct vm_area_struct *vma)
{
	lockdep_assert_held(&region->lock);
	if (!region->nr_vmas++) {
		region->vm_start = vma->vm_start;
		region->vm_end = vma->vm_end;
		return;
	}
	region->vm_start = min(region->vm_start, vma->vm_start);
	region->vm_end = max(region->vm_end, vma->vm_end);
}

/**
 * som_region_next_vma() - the next live VMA of a region in its owner's tree
 * @region: the region
 * @vmi: an iterator over the owner's VMAs, started at @region->vm_start
 *
 * Only the region's span of addresses is walked, not the whole tree.
 *
 * Context: Caller holds the owner's mmap_lock and the region lock.
 * Return: the VMA, or NULL when there are no more.
 */
struct vm_area_struct *som_region_next_vma(struct som_region *region,
					   struct vma_iterator *vmi)
{
	struct vm_area_struct *vma;

	while ((vma = vma_find(vmi, region->vm_end)))
		if (vma->vm_ops == &som_vm_ops && vma->vm_private_data == region)
			return vma;
	return NULL;
}

/**
 * som_region_map() - account a new mapping of the region
 * @region: the region
 * @vma: the VMA being created by mmap() in the caller's mm
 *
 * The first mapping makes its mm the region's owner. For /dev/som, the
 * indices that no live VMA maps yet are reserved; a som file's indices
 * already follow its size.
 *
 * Context: Process context, caller holds the owner's mmap_lock for write.
 * Return: 0, -EPERM if another mm owns the region, -ENOMEM if the pool
 * cannot reserve the memory or the table cannot grow.
 */
int som_region_map(struct som_region *region, struct vm_area_struct *vma)
{
	pgoff_t first = som_vma_first(vma), last = som_vma_last(vma);
	int err = 0;

	mutex_lock(&region->lock);
	if (region->mm && region->mm != vma->vm_mm) {
		err = -EPERM;
		goto out_unlock;
	}
	if (!region->mapping) {
		err = som_region_reserve(region, first, last);
		if (err)
			goto out_unlock;
	}
	if (!region->mm) {
		mmgrab(vma->vm_mm);
		region->mm = vma->vm_mm;
	}
	som_region_add_vma(region, vma);
out_unlock:
	mutex_unlock(&region->lock);
	return err;
}
ALLOW_ERROR_INJECTION(som_region_map, ERRNO);

/**
 * som_region_open() - account a VMA copied from one of the region's VMAs
 * @region: the region
 * @vma: the new VMA, at its final addresses
 *
 * A split or an mremap() move creates the VMA; its indices are held already.
 *
 * Context: Caller holds the owner's mmap_lock for write.
 */
void som_region_open(struct som_region *region, struct vm_area_struct *vma)
{
	mutex_lock(&region->lock);
	som_region_add_vma(region, vma);
	mutex_unlock(&region->lock);
}

/*
 * Release the indices of [first, last] that no live VMA of @region but
 * @gone maps: each gap between the other VMAs' index ranges in turn,
 * found by walking them again (a region has few VMAs; a VMA can be split,
 * moved or mapped over, and only the tree knows the result). A VMA
 * already closed in this same call (a MAP_FIXED mapping over several) may
 * still be in the tree; vma_close() left it the dummy vm_ops, so
 * som_region_next_vma() passes over it.
 */
static void som_region_release_unkept(struct som_region *region,
				      struct vm_area_struct *gone,
				      pgoff_t first, pgoff_t last)
{
	VMA_ITERATOR(vmi, gone->vm_mm, 0);
	struct vm_area_struct *vma;
	pgoff_t pos = first, next, end, f, l;

	while (pos <= last) {
		next = last + 1;
		end = pos;
		vma_iter_set(&vmi, region->vm_start);
		while ((vma = som_region_next_vma(region, &vmi))) {
			f = som_vma_first(vma);
			l = som_vma_last(vma);
			if (vma == gone || l < pos || f > last)
				continue;
			if (f <= pos)
				end = max(end, l + 1);
			else
				next = min(next, f);
		}
		if (end > pos) {
			pos = end;	/* kept up to there; look again */
			continue;
		}
		som_region_release(region, pos, next - 1);
		pos = next;
		cond_resched();
	}
}

/**
 * som_region_unmap() - a VMA of the region is going away
 * @region: the region
 * @vma: the VMA, already unmapped and (outside exit) out of the VMA tree
 *
 * For /dev/som, releases the indices of @vma that no other live VMA maps;
 * when the last VMA goes, every index. At exit the whole tree is being
 * torn down with VMAs freed as they go, so it is not walked then: the
 * indices are released when the last VMA goes. A som file keeps its
 * indices.
 *
 * Context: Process context; caller holds the owner's mmap_lock.
 */
void som_region_unmap(struct som_region *region, struct vm_area_struct *vma)
{
	pgoff_t first = som_vma_first(vma), last = som_vma_last(vma);

	mmap_assert_locked(vma->vm_mm);
	mutex_lock(&region->lock);
	region->nr_vmas--;
	/* A som file holds its memory. */
	if (!region->mapping && !region->nr_vmas)
		som_region_release(region, 0, ULONG_MAX);
	else if (!region->mapping && atomic_read(&vma->vm_mm->mm_users))
		som_region_release_unkept(region, vma, first, last);
	mutex_unlock(&region->lock);
}

/* @nr indices from @idx, in one GiB, got new blocks: age 0 (age.h). */
static void som_region_renew(struct som_region *region, pgoff_t idx,
			     unsigned int nr)
{
	DECLARE_BITMAP(fresh, SOM_BLOCKS_PER_CHUNK);

	bitmap_zero(fresh, SOM_BLOCKS_PER_CHUNK);
	bitmap_set(fresh, idx & (SOM_BLOCKS_PER_CHUNK - 1), nr);
	som_ages_renew(&region->ages,
		       round_down(idx, SOM_BLOCKS_PER_CHUNK), fresh);
}

/**
 * som_region_fill() - make sure a 2 MiB index of the region holds a block
 * @region: the region
 * @idx: the index
 * @bfn: set to the block's frame number
 *
 * A som file's hole is reserved first, which fails when the pool is empty.
 * An index paged out is read back from the swap store into the block.
 *
 * Context: Process context, may sleep (it may zero 2 MiB, or read it from
 * the swap store). Caller holds the region lock.
 * Return: 0, -EFAULT if nothing maps @idx, -ENOMEM; -EAGAIN if the
 * pool overcommits and has no block for @idx until another is paged out
 * (pressure.c); for an index paged out, -EIO if the store could not give
 * the data back, -EINTR if a fatal signal stopped the read (the index
 * stays paged out either way).
 */
int som_region_fill(struct som_region *region, pgoff_t idx,
		    unsigned long *bfn)
{
	unsigned long entry = som_table_get(&region->table, idx), block;
	bool swapped;
	int err;

	lockdep_assert_held(&region->lock);
	if (som_table_is_block(entry)) {
		*bfn = entry;
		return 0;
	}
	if (entry == SOM_TABLE_ABSENT) {
		if (!som_region_is_hole(region, idx))
			return -EFAULT;
		err = som_region_reserve(region, idx, idx);
		if (err)
			return err;
	}
	/*
	 * Room in the table first: a block taken must have its place. The
	 * memory was promised when @idx was reserved (at mmap() for
	 * /dev/som), so filling it (a fault, fallocate(), compaction, a
	 * debugger's access) must not fail for the 808 bytes describing it:
	 * the split, like the pool's per-block bits, cannot fail.
	 */
	err = som_table_split(&region->table, idx,
			      GFP_KERNEL_ACCOUNT | __GFP_NOFAIL);
	if (err)
		return err;
	/* A block read back from the store is written whole: not zeroed. */
	swapped = som_region_swapped(region, idx, idx);
	if (swapped)
		block = som_pool_alloc_block_back(region->pool, &region->claim,
						  idx);
	else
		block = som_pool_alloc_block(region->pool, &region->claim, idx);
	if (block == SOM_NO_BLOCK) {
		som_table_tidy(&region->table, idx);
		return som_pool_short(region->pool, &region->claim) ?
		       -EAGAIN : -ENOMEM;
	}
	if (swapped) {
		err = som_region_swap_in(region, idx, block);
		if (err) {
			som_pool_free_block_out(region->pool, &region->claim,
						block);
			som_table_tidy(&region->table, idx);
			return err;
		}
	}
	/* Split: it allocates only to widen (a GiB on an eighth chunk). */
	som_table_set(&region->table, idx, block,
		      GFP_KERNEL_ACCOUNT | __GFP_NOFAIL);
	som_region_count(region, 1);
	som_region_renew(region, idx, 1);
	*bfn = block;
	return 0;
}
ALLOW_ERROR_INJECTION(som_region_fill, ERRNO);

/*
 * Back the SOM_BLOCKS_PER_CHUNK indices from @first (1 GiB aligned) with
 * the blocks of one chunk, in order. Succeeds if they already are, or if
 * none holds a block yet and the pool has a whole free chunk. -EDQUOT if
 * the region's cgroup or user may not have the holes among them; -EBUSY
 * if some are paged out (no compaction is wanted for it).
 */
static int som_region_fill_chunk(struct som_region *region, pgoff_t first,
				 unsigned long *base)
{
	pgoff_t last = first + SOM_BLOCKS_PER_CHUNK - 1;
	struct som_table *table = &region->table;
	unsigned long cfn, bfn, nr;
	int err = -ENOSPC;

	lockdep_assert_held(&region->lock);
	cfn = som_table_chunk(table, first);
	if (cfn != SOM_NO_BLOCK)
		goto out;
	nr = som_table_count(table, first, last, SOM_TABLE_KIND_ABSENT);
	/* Absent indices must be holes: the last one is the highest. */
	if (nr && !som_region_is_hole(region, last))
		return -EFAULT;
	/*
	 * Blocks paged out come back one by one (som_region_fill()), and
	 * compaction leaves such a GiB alone: -EBUSY, not -ENOSPC.
	 */
	if (som_region_swapped(region, first, last))
		return -EBUSY;
	/* Nor does a sparse index: its pages are in pack blocks. */
	if (som_pack_sparse(region, first, last))
		return -EBUSY;
	if (som_table_count(table, first, last, SOM_TABLE_KIND_BLOCK))
		return -ENOSPC;

	if (som_table_hold(table, first, GFP_KERNEL_ACCOUNT))
		return -ENOSPC;
	/*
	 * Past a limit: -EDQUOT, no chunk can help; the 2 MiB
	 * path that follows counts the failure if it fails too.
	 */
	if (nr && som_region_charge(region, nr, false)) {
		err = -EDQUOT;
		goto err_unhold;
	}
	if (nr && som_pool_reserve(region->pool, &region->claim, nr))
		goto err_uncharge;
	bfn = som_pool_alloc_chunk(region->pool, &region->claim, first);
	if (bfn == SOM_NO_BLOCK)
		goto err_unreserve;
	if (nr)
		som_charge_commit(&region->charges, nr);
	cfn = som_bfn_to_cfn(bfn);
	som_table_set_chunk(table, first, cfn);
	som_region_count(region, SOM_BLOCKS_PER_CHUNK);
	som_region_renew(region, first, SOM_BLOCKS_PER_CHUNK);
out:
	*base = cfn << (SOM_CHUNK_SHIFT - SOM_BLOCK_SHIFT);
	return 0;

err_unreserve:
	if (nr)
		som_pool_unreserve(region->pool, &region->claim, nr);
err_uncharge:
	if (nr)
		som_charge_cancel(&region->charges, nr);
err_unhold:
	som_table_unhold(table, first);
	return err;
}

/**
 * som_region_block() - the page frames backing pages of the region
 * @region: the region
 * @pgoff: page offset in the region
 * @nr_pages: pages from @pgoff that will be mapped, all in @pgoff's block
 * @pfn: the frame of @pgoff; the whole 2 MiB block around it is backed
 *	contiguously, unless the index is sparse (pack.c)
 *
 * Allocates the block on first use, from the index's reservation. A page
 * of a sparse index is backed by its pack slot, taken on first use.
 *
 * Context: Process context, may sleep (the allocation may zero 2 MiB).
 * Caller holds the region lock until the frames are mapped.
 * Return: 0; -ENOSPC if @nr_pages > 1 and they reach past the end of a
 * som file, hold a poisoned hole or are of a sparse index; -EHWPOISON if
 * @pgoff is one (or its pack slot is); -EFAULT
 * if @pgoff is past the end of a som file or no VMA maps
 * it; -ENOMEM if a hole cannot be filled because the pool is empty.
 */
int som_region_block(struct som_region *region, pgoff_t pgoff,
		     unsigned long nr_pages, unsigned long *pfn)
{
	unsigned long bfn;
	int err;

	lockdep_assert_held(&region->lock);
	if (region->mapping && pgoff + nr_pages > som_size_pages(som_region_size(region)))
		return nr_pages > 1 ? -ENOSPC : -EFAULT;
	if (som_region_poisoned(region, pgoff, nr_pages))
		return nr_pages > 1 ? -ENOSPC : -EHWPOISON;
	/* A sparse index is mapped page by page, from its pack slots. */
	if (som_pack_sparse(region, pgoff >> SOM_PAGES_PER_BLOCK_SHIFT,
			    pgoff >> SOM_PAGES_PER_BLOCK_SHIFT))
		return nr_pages > 1 ? -ENOSPC :
		       som_pack_page(region, pgoff, true, pfn);
	err = som_region_fill(region, pgoff >> SOM_PAGES_PER_BLOCK_SHIFT, &bfn);
	if (!err)
		*pfn = som_bfn_to_pfn(bfn) + (pgoff & (SOM_PAGES_PER_BLOCK - 1));
	return err;
}

/**
 * som_region_chunk() - the frames backing a whole 1 GiB of the region
 * @region: the region
 * @pgoff: page offset in the region, 1 GiB aligned
 * @pfn: the first frame of a physically contiguous, 1 GiB aligned GiB
 *
 * Succeeds if the 512 indices of that GiB already hold the 512 blocks of one
 * chunk in order, or if none holds a block yet and the pool has a whole
 * free chunk, which is then allocated.
 *
 * Context: Process context, may sleep (it may zero up to 1 GiB). Caller
 * holds the region lock until the frames are mapped.
 * Return: 0, -ENOSPC if the GiB cannot be backed by one chunk or holds a
 * poisoned hole (the caller maps smaller pieces), or -EFAULT if no VMA maps the whole GiB.
 */
int som_region_chunk(struct som_region *region, pgoff_t pgoff,
		     unsigned long *pfn)
{
	unsigned long base;
	int err;

	lockdep_assert_held(&region->lock);
	if (region->mapping &&
	    pgoff + SOM_PAGES_PER_CHUNK > som_size_pages(som_region_size(region)))
		return -ENOSPC;
	/* No compaction can give a GiB with a poisoned hole its entry. */
	if (som_region_poisoned(region, pgoff, SOM_PAGES_PER_CHUNK))
		return -ENOSPC;
	err = som_region_fill_chunk(region, pgoff >> SOM_PAGES_PER_BLOCK_SHIFT,
				    &base);
	if (!err)
		*pfn = som_bfn_to_pfn(base);
	/* No chunk for this GiB: compaction may make one. */
	if (err == -ENOSPC)
		som_region_chunk_wanted();
	return err == -EDQUOT || err == -EBUSY ? -ENOSPC : err;
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
 * Return: bytes copied; -EFAULT if no VMA maps @pos, @pos is past the end
 * of a som file or a hole cannot be filled; -EIO if the page is a hole a
 * memory error left, or reading it hit one.
 */
int som_region_access(struct som_region *region, loff_t pos, void *buf,
		      int len, bool write)
{
	pgoff_t idx = pos >> SOM_BLOCK_SHIFT;
	unsigned long bfn, entry, pfn;
	void *vaddr;
	int err = 0;

	len = min_t(int, len, PAGE_SIZE - offset_in_page(pos));
	mutex_lock(&region->lock);
	if (region->mapping &&
	    (pos >> PAGE_SHIFT) >= som_size_pages(som_region_size(region))) {
		err = -EFAULT;
		goto out_unlock;
	}
	if (som_region_poisoned(region, pos >> PAGE_SHIFT, 1)) {
		err = -EIO;
		goto out_unlock;
	}
	entry = som_table_get(&region->table, idx);
	if (som_pack_sparse(region, idx, idx)) {
		err = som_pack_page(region, pos >> PAGE_SHIFT, write, &pfn);
		if (err == -ENODATA) {
			memset(buf, 0, len);
			err = 0;
			goto out_unlock;
		}
		if (err) {
			err = err == -EHWPOISON ? -EIO : -EFAULT;
			goto out_unlock;
		}
		vaddr = som_pool_block_vaddr(region->pool,
					     pfn >> SOM_PAGES_PER_BLOCK_SHIFT) +
			((pfn & (SOM_PAGES_PER_BLOCK - 1)) << PAGE_SHIFT) +
			offset_in_page(pos);
		goto copy;
	}
	if (!som_table_is_block(entry) && !write &&
	    (entry != SOM_TABLE_ABSENT || som_region_is_hole(region, idx)) &&
	    !som_region_swapped(region, idx, idx)) {
		memset(buf, 0, len);
		goto out_unlock;
	}
	err = som_region_fill(region, idx, &bfn);
	if (err) {
		err = -EFAULT;
		goto out_unlock;
	}
	vaddr = som_pool_block_vaddr(region->pool, bfn);
	if (WARN_ON_ONCE(!vaddr)) {
		err = -EFAULT;
		goto out_unlock;
	}
	vaddr += pos & (SOM_BLOCK_SIZE - 1);
copy:
	if (write)
		memcpy(vaddr, buf, len);
	else if (copy_mc_to_kernel(buf, vaddr, len))
		err = -EIO;
out_unlock:
	mutex_unlock(&region->lock);
	return err ? err : len;
}

/**
 * som_region_may_modify() - may the caller change a som file's memory?
 * @region: the region of a som file
 *
 * Once a process has mapped a som file, only that process may resize it,
 * allocate or punch holes; before, anyone holding the file may.
 *
 * Context: Caller holds the region lock.
 * Return: 0 or -EPERM.
 */
int som_region_may_modify(struct som_region *region)
{
	lockdep_assert_held(&region->lock);
	return region->mm && region->mm != current->mm ? -EPERM : 0;
}

/*
 * Zap every user mapping of [from, to) of a som file, page aligned. Only
 * the owner maps it; see som_file_lock() for why its mmap_lock is held
 * for write.
 */
static void som_region_zap(struct som_region *region, loff_t from, loff_t to)
{
	if (from >= to)
		return;
	if (region->mm && region->nr_vmas) {
		mmap_assert_write_locked(region->mm);
		som_age_note_range(region->mm, region, from >> PAGE_SHIFT,
				   DIV_ROUND_UP_ULL(to, PAGE_SIZE));
	}
	unmap_mapping_range(region->mapping, from, to - from, 1);
}

/*
 * som_region_zero() in one sparse index: a part of a page is zeroed in its
 * pack slot, whole pages are zapped and lose their slots.
 */
static void som_region_zero_sparse(struct som_region *region, loff_t from,
				   loff_t to)
{
	loff_t pos, next, first = PAGE_ALIGN(from), end = to & PAGE_MASK;

	for (pos = from; pos < to; pos = next) {
		next = min_t(loff_t, to, PAGE_ALIGN(pos + 1));
		if (next - pos < PAGE_SIZE)
			som_pack_zero(region, pos, next);
	}
	if (first < end) {
		som_region_zap(region, first, end);
		som_pack_free(region, first >> PAGE_SHIFT,
			      (end >> PAGE_SHIFT) - 1);
	}
}

/*
 * Zero [from, to) where blocks back it; reserved memory is zero anyway.
 * Holes that memory errors left on pages wholly inside are cleared where
 * the block behind them is healthy; a page still poisoned is not written.
 * A block zeroed in part may be worth packing (pack.c). The pages of a
 * sparse index wholly inside are zapped and lose their pack slots; a part
 * of one is zeroed in its slot.
 */
static void som_region_zero(struct som_region *region, loff_t from, loff_t to)
{
	unsigned long entry;
	pgoff_t idx;
	loff_t end, pos, next;
	void *vaddr;

	if (PAGE_ALIGN(from) < (to & PAGE_MASK))
		som_region_unpoison(region, PAGE_ALIGN(from) >> PAGE_SHIFT,
				    (to >> PAGE_SHIFT) - 1, true);
	for (; from < to; from = end) {
		idx = from >> SOM_BLOCK_SHIFT;
		end = min_t(loff_t, to, (loff_t)(idx + 1) << SOM_BLOCK_SHIFT);
		entry = som_table_get(&region->table, idx);
		if (som_pack_sparse(region, idx, idx)) {
			som_region_zero_sparse(region, from, end);
			continue;
		}
		if (!som_table_is_block(entry))
			continue;
		som_pack_note(region, idx);
		vaddr = som_pool_block_vaddr(region->pool, entry);
		if (!region->nr_poisoned) {
			memset(vaddr + (from & (SOM_BLOCK_SIZE - 1)), 0,
			       end - from);
			continue;
		}
		for (pos = from; pos < end; pos = next) {
			next = min_t(loff_t, end, PAGE_ALIGN(pos + 1));
			if (som_region_poisoned(region, pos >> PAGE_SHIFT, 1))
				continue;
			memset(vaddr + (pos & (SOM_BLOCK_SIZE - 1)), 0,
			       next - pos);
		}
	}
}

/*
 * Read back the indices paged out that [from, to) touches, so that
 * som_region_zero() finds blocks to zero there: their data in the store
 * would otherwise come back whole. Called before a change that zeroes
 * part of a block, so that a read that fails changes nothing.
 */
static int som_region_swap_in_range(struct som_region *region, loff_t from,
				    loff_t to)
{
	pgoff_t idx;
	unsigned long bfn;
	int err;

	if (from >= to)
		return 0;
	for (idx = from >> SOM_BLOCK_SHIFT; idx <= (to - 1) >> SOM_BLOCK_SHIFT;
	     idx++) {
		if (!som_region_swapped(region, idx, idx))
			continue;
		err = som_region_fill(region, idx, &bfn);
		if (err)
			return err;
	}
	return 0;
}

/* som_region_resize() once what it zeroes holds blocks. */
static int som_region_set_size(struct som_region *region, loff_t size)
{
	loff_t old = som_region_size(region);
	pgoff_t old_nr = som_size_indices(old);
	pgoff_t new_nr = som_size_indices(size);
	int err;

	if (new_nr > old_nr) {
		err = som_region_reserve(region, old_nr, new_nr - 1);
		if (err)
			return err;
	}
	if (size > old) {
		/* What was written past EOF in its mapped last page. */
		som_region_zero(region, old,
				min_t(loff_t, size, PAGE_ALIGN(old)));
	} else if (size < old) {
		som_region_zap(region, PAGE_ALIGN(size), old);
		if (new_nr < old_nr)
			som_region_release(region, new_nr, SOM_PACK_FIRST - 1);
		som_region_zero(region, size,
				min_t(loff_t, old,
				      (loff_t)new_nr << SOM_BLOCK_SHIFT));
	}
	i_size_write(region->mapping->host, size);
	return 0;
}

/**
 * som_region_resize() - change the size of a som file
 * @region: the region of a som file
 * @size: the new size in bytes, at most SOM_FILE_MAX_BYTES (file.c)
 *
 * Growing reserves the new 2 MiB indices and zeroes what a mapping wrote
 * past the old end in its last page. Shrinking zaps the mappings past the
 * new end, releases the indices wholly past it and zeroes the rest of the
 * last block, so that growing again reads zeros there.
 *
 * A block paged out that must be zeroed in part is read back first.
 *
 * Context: Process context, may sleep. Caller holds the file's i_rwsem
 * and the region lock, and when shrinking a mapped file, the owner's
 * mmap_lock for write.
 * Return: 0, or -ENOMEM if the pool cannot reserve the memory; -EIO or
 * -EINTR if a block to zero in part could not be read back, -EAGAIN if
 * it needs a page-out first (som_region_fill(); nothing changed).
 */
int som_region_resize(struct som_region *region, loff_t size)
{
	loff_t old = som_region_size(region);
	pgoff_t new_nr = som_size_indices(size);
	int err;

	lockdep_assert_held(&region->lock);
	if (size > old)
		err = som_region_swap_in_range(region, old,
					       min_t(loff_t, size,
						     PAGE_ALIGN(old)));
	else
		err = som_region_swap_in_range(region, size,
					       min_t(loff_t, old,
						     (loff_t)new_nr << SOM_BLOCK_SHIFT));
	if (err)
		return err;
	return som_region_set_size(region, size);
}

/**
 * som_region_resize_back() - undo a som_region_resize() that grew a file
 * @region: the region of a som file
 * @size: the size before it
 *
 * Shrinks as som_region_resize() does, without reading back a block
 * paged out at @size: growing zeroed what lay past @size in its last
 * page, nothing past @size was mapped meanwhile, and a read could fail
 * for the very reason the caller is undoing.
 *
 * Context: as som_region_resize().
 */
void som_region_resize_back(struct som_region *region, loff_t size)
{
	WARN_ON_ONCE(som_region_set_size(region, size));
}

/**
 * som_region_allocate() - back [from, to) of a som file with blocks
 * @region: the region of a som file
 * @from: first byte
 * @to: end, at most the file size
 *
 * Fills holes and reservations with zeroed blocks, whole chunks where a
 * 1 GiB aligned GiB of the file is covered and none of it is allocated
 * yet, so that the first touch of a GiB is one fault that maps 1 GiB.
 *
 * Context: Process context, may sleep (it zeroes memory the worker has not
 * zeroed yet). Caller holds the region lock.
 * Indices paged out are left in the store: their memory is there; sparse
 * indices are left in their pack blocks.
 *
 * Return: 0; -ENOMEM if the pool cannot reserve the holes; -EAGAIN if
 * it overcommits and a block must be paged out first; -EINTR if a fatal
 * signal stopped it (what was done stays done).
 */
int som_region_allocate(struct som_region *region, loff_t from, loff_t to)
{
	pgoff_t idx = from >> SOM_BLOCK_SHIFT, last, pos, sparse;
	unsigned long bfn;
	int err;

	lockdep_assert_held(&region->lock);
	if (from >= to)
		return 0;
	last = (to - 1) >> SOM_BLOCK_SHIFT;
	/* A sparse index has its memory too, in pack blocks (pack.c). */
	for (pos = idx; pos <= last; pos = sparse + 1) {
		sparse = som_pack_next_sparse(region, pos, last);
		err = sparse > pos ?
		      som_region_reserve(region, pos, sparse - 1) : 0;
		if (err)
			return err;
	}
	while (idx <= last) {
		/*
		 * An index paged out has its memory, in the store: reading
		 * it back could take the block a page-out of the range's
		 * own memory just freed, again and again (pressure.c).
		 */
		if (som_region_swapped(region, idx, idx) ||
		    som_pack_sparse(region, idx, idx)) {
			idx++;
			continue;
		}
		if (IS_ALIGNED(idx, SOM_BLOCKS_PER_CHUNK) &&
		    last - idx >= SOM_BLOCKS_PER_CHUNK - 1) {
			err = som_region_fill_chunk(region, idx, &bfn);
			if (!err) {
				idx += SOM_BLOCKS_PER_CHUNK;
				continue;
			}
			if (err != -EBUSY)
				som_region_chunk_wanted();
		}
		err = som_region_fill(region, idx, &bfn);
		if (err)
			return err;
		idx++;
		if (fatal_signal_pending(current))
			return -EINTR;
		cond_resched();
	}
	return 0;
}
ALLOW_ERROR_INJECTION(som_region_allocate, ERRNO);

/**
 * som_region_punch() - make [from, to) of a som file a hole
 * @region: the region of a som file
 * @from: first byte
 * @to: end, at most the file size
 *
 * The 2 MiB blocks wholly inside go back to the pool (their mappings are
 * zapped first, reservations are dropped too); the parts of blocks at
 * either end are zeroed in place, read back first if they were paged out.
 * Either way the range reads as zeros.
 *
 * Context: Process context, may sleep. Caller holds the region lock and,
 * if the file is mapped, the owner's mmap_lock for write.
 * Return: 0; -EIO, -EINTR, -ENOMEM or -EAGAIN (som_region_fill()) if a
 * block at either end could not be read back (nothing changed).
 */
int som_region_punch(struct som_region *region, loff_t from, loff_t to)
{
	pgoff_t first = som_size_indices(from), end = to >> SOM_BLOCK_SHIFT;
	int err;

	lockdep_assert_held(&region->lock);
	if (first >= end) {
		err = som_region_swap_in_range(region, from, to);
		if (!err)
			som_region_zero(region, from, to);
		return err;
	}
	err = som_region_swap_in_range(region, from,
				       (loff_t)first << SOM_BLOCK_SHIFT);
	if (!err)
		err = som_region_swap_in_range(region,
					       (loff_t)end << SOM_BLOCK_SHIFT,
					       to);
	if (err)
		return err;
	som_region_zero(region, from, (loff_t)first << SOM_BLOCK_SHIFT);
	som_region_zap(region, (loff_t)first << SOM_BLOCK_SHIFT,
		       (loff_t)end << SOM_BLOCK_SHIFT);
	som_region_release(region, first, end - 1);
	som_region_zero(region, (loff_t)end << SOM_BLOCK_SHIFT, to);
	return 0;
}

/**
 * som_region_node() - where the block behind a page of the region lies
 * @region: the region
 * @pgoff: page offset in the region
 * @flags: set to SOM_MAPPING_UNMOVABLE if the block is in an unmovable
 *	chunk, | SOM_MAPPING_SLOW if it is of the slow tier
 *
 * Context: Process context. Takes the region lock.
 * Return: the NUMA node of the block (of a sparse page, the pack block
 * that holds it), or NUMA_NO_NODE if no block backs @pgoff yet.
 */
int som_region_node(struct som_region *region, pgoff_t pgoff,
		    unsigned int *flags)
{
	bool unmovable = false;
	unsigned long entry, pfn;
	int nid = NUMA_NO_NODE;

	*flags = 0;
	mutex_lock(&region->lock);
	entry = som_table_get(&region->table,
			      pgoff >> SOM_PAGES_PER_BLOCK_SHIFT);
	/* A page of a sparse index lies in its pack slot's block. */
	if (region->mapping && !som_pack_page(region, pgoff, false, &pfn))
		entry = pfn >> SOM_PAGES_PER_BLOCK_SHIFT;
	if (som_table_is_block(entry)) {
		nid = som_pool_block_node(region->pool, entry, &unmovable);
		if (som_pool_block_tier(region->pool, entry) == SOM_TIER_SLOW)
			*flags |= SOM_MAPPING_SLOW;
	}
	mutex_unlock(&region->lock);
	if (unmovable)
		*flags |= SOM_MAPPING_UNMOVABLE;
	return nid;
}
