// SPDX-License-Identifier: GPL-2.0
/*
 * Moving the blocks of a region: the one mechanism behind compaction
 * (compact.c), the evacuation of a source's chunks and NUMA migration.
 *
 * Nothing can pin som memory: GUP refuses a VM_PFNMAP VMA, the owner's
 * page tables are the only mappings of a block, and the region's table is
 * the truth they cache (one exception: VFIO maps PFN-mapped VMAs into an
 * IOMMU without a pin or an MMU notifier; memory a device reaches that
 * way must be unmovable). So a block moves like this, with the owner's
 * mmap_lock held for read and the region lock held throughout:
 *
 *	zap the owner's entries for it (the TLB is flushed on return),
 *	copy it to a new block, point the table at the new block,
 *	free the old one (the zeroing worker clears it).
 *
 * A thread touching the block meanwhile faults, and its fault waits for
 * the region lock; it then maps the new block at the largest size that
 * fits. Every other change to the region's table or mappings excludes a
 * move: faults and ptrace access take the region lock; munmap(),
 * mprotect(), mremap(), fork() and som file truncation take the mmap_lock
 * for write; exit holds mm_users, which a move takes first. The one gap
 * is munmap() after it has downgraded its mmap_lock: the VMAs it removes
 * are out of the tree, so their entries cannot be zapped from here, but
 * still counted in the region until closed; a move finds fewer VMAs in the
 * tree than the region counts and leaves the region alone for now.
 *
 * One migration runs at a time (som_migrate_mutex): lock order is that
 * mutex, then the mmap_lock, then the region lock, then the pool lock.
 * Blocks move only between movable chunks; a region with an unmovable
 * claim never moves.
 *
 * A GiB whose 512 blocks must end up in one chunk, in order, so that a
 * 1 GiB entry can map it again, is assembled there: the chunk is set
 * aside (only a fault that finds no other free block takes one from it,
 * and then the assembly gives up), any other region's blocks in it are
 * moved out, and then the GiB's blocks are moved in, chain by chain, with
 * a 2 MiB bounce buffer for blocks that only swap places inside it. The
 * chunk's free blocks count as free all along: setting it aside costs
 * reservations nothing.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/delay.h>
#include <linux/error-injection.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>

#include "migrate.h"
#include "pack.h"
#include "region.h"
#include "som.h"
#include "som_trace.h"

/* One migration at a time; outside every mmap_lock and region lock. */
DEFINE_MUTEX(som_migrate_mutex);
struct som_migrate_stats som_migrate_stats;

#define SOM_BOUNCE	ULONG_MAX	/* "in the bounce buffer" */

/*
 * Blocks moved in one hold of a region's locks, before they are dropped
 * and taken again: faults on the region and the owner's mmap() and
 * munmap() wait no longer than that many copies. A GiB that moves or is
 * assembled as a whole is a batch of its own: its 512 copies are one
 * hold (about half a second under QEMU TCG).
 */
#define SOM_MOVE_BATCH	32

/**
 * som_mover_lock() - lock a region so that its blocks can move
 * @mv: filled in; som_mover_unlock() undoes it
 * @region: a region referenced by the caller
 *
 * Context: Process context, may sleep. Caller holds som_migrate_mutex.
 * Return: 0 with the owner's mmap_lock (read) and the region lock held;
 * -ENOENT if the region's file is gone; -EAGAIN if it is between states
 * (an munmap() half done, an exit under way, an owner just arrived);
 * -EINTR if a fatal signal came while waiting for the mmap_lock.
 */
int som_mover_lock(struct som_mover *mv, struct som_region *region)
{
	struct mm_struct *mm;
	int err = 0;

	lockdep_assert_held(&som_migrate_mutex);
	mv->region = region;
	mv->live = false;
	mutex_lock(&region->lock);
	if (region->dead) {
		mutex_unlock(&region->lock);
		return -ENOENT;
	}
	mm = region->mm;
	if (mm)
		mmgrab(mm);
	mutex_unlock(&region->lock);
	mv->mm = mm;
	if (mm && mmget_not_zero(mm)) {
		if (mmap_read_lock_killable(mm)) {
			mmput(mm);
			mmdrop(mm);
			return -EINTR;
		}
		mv->live = true;
	}
	mutex_lock(&region->lock);
	if (region->dead)
		err = -ENOENT;
	else if (region->mm != mm)
		err = -EAGAIN;
	else if (region->nr_vmas != (mv->live ? som_vm_count(mm, region) : 0))
		err = -EAGAIN;
	if (err)
		som_mover_unlock(mv);
	return err;
}
ALLOW_ERROR_INJECTION(som_mover_lock, ERRNO);

/**
 * som_mover_unlock() - undo som_mover_lock()
 * @mv: as som_mover_lock() filled it
 */
void som_mover_unlock(struct som_mover *mv)
{
	mutex_unlock(&mv->region->lock);
	if (mv->live) {
		mmap_read_unlock(mv->mm);
		mmput(mv->mm);
	}
	if (mv->mm)
		mmdrop(mv->mm);
}

/*
 * Zap the owner's entries for @nr 2 MiB indices from @idx: for pack
 * blocks, those of the pages that use them (pack.c).
 */
static void som_mover_zap(struct som_mover *mv, pgoff_t idx, pgoff_t nr)
{
	if (!mv->live)
		return;
	if (som_pack_is_pack(idx))
		som_pack_zap(mv->mm, mv->region, idx, nr);
	else
		som_vm_zap_range(mv->mm, mv->region,
				 idx << SOM_PAGES_PER_BLOCK_SHIFT,
				 (idx + nr) << SOM_PAGES_PER_BLOCK_SHIFT);
}

/*
 * Copy the data of index @idx of a locked region from @from to @to, page
 * by page with the machine-check-safe copy: a page the region lost to a
 * memory error is skipped, and so is one of block @src_bfn that the pool
 * has an error recorded for (reported while the mover held the region,
 * som_migrate_poison() waiting for it): that page becomes a hole now. One
 * whose copy runs into a new error becomes such a hole too (its page is
 * recorded as poisoned, and the block retired once freed) instead of
 * bringing the kernel down. @src_bfn is SOM_BOUNCE for the bounce buffer,
 * ordinary kernel memory, whose holes were made on the way in.
 */
static void som_mover_copy(struct som_mover *mv, pgoff_t idx, void *to,
			   const void *from, unsigned long src_bfn)
{
	struct som_region *region = mv->region;
	pgoff_t pgoff = idx << SOM_PAGES_PER_BLOCK_SHIFT;
	bool recorded = src_bfn != SOM_BOUNCE &&
			som_pool_block_poisoned(region->pool, src_bfn);
	struct som_poison_where where;
	size_t off;
	pgoff_t p;

	for (p = 0; p < SOM_PAGES_PER_BLOCK; p++) {
		off = p << PAGE_SHIFT;
		if (som_region_poisoned(region, pgoff + p, 1))
			continue;
		if (recorded &&
		    som_pool_page_poisoned(region->pool,
					   som_bfn_to_pfn(src_bfn) + p)) {
			som_region_poison_page(region, pgoff + p);
			continue;
		}
		if (!copy_mc_to_kernel(to + off, from + off, PAGE_SIZE))
			continue;
		pr_warn_ratelimited("memory error copying page %#lx of a region: it is a hole now\n",
				    pgoff + p);
		if (src_bfn != SOM_BOUNCE)
			som_pool_poison(region->pool,
					som_bfn_to_pfn(src_bfn) + p, &where);
		som_region_poison_page(region, pgoff + p);
	}
}

static void som_mover_copy_block(struct som_mover *mv, pgoff_t idx,
				 unsigned long dst, unsigned long src)
{
	struct som_pool *pool = mv->region->pool;

	som_mover_copy(mv, idx, som_pool_block_vaddr(pool, dst),
		       som_pool_block_vaddr(pool, src), src);
	atomic_long_add(SOM_BLOCK_SIZE, &som_migrate_stats.bytes_copied);
}

/* Point index @idx of the locked region at block @bfn. */
static void som_mover_set(struct som_mover *mv, pgoff_t idx,
			  unsigned long bfn)
{
	/*
	 * A GiB that a chunk backed whole is split by its first move (808
	 * bytes), one that draws on an eighth chunk widened (2 KiB): a move
	 * has nowhere to back out once the data is copied.
	 */
	if (trace_som_move_enabled())
		trace_som_move(idx, som_table_get(&mv->region->table, idx),
			       bfn);
	som_table_set(&mv->region->table, idx, bfn,
		      GFP_KERNEL_ACCOUNT | __GFP_NOFAIL);
	atomic_long_inc(&som_migrate_stats.blocks_moved);
}

/**
 * som_mover_move() - move the block at one index of a locked region
 * @mv: the locked region
 * @idx: a 2 MiB index that holds a block
 * @dst: a block allocated for it (som_pool_alloc_spare())
 *
 * Context: Caller holds the locks of som_mover_lock().
 */
void som_mover_move(struct som_mover *mv, pgoff_t idx, unsigned long dst)
{
	struct som_pool *pool = mv->region->pool;
	unsigned long src;

	src = som_table_get(&mv->region->table, idx);
	som_mover_zap(mv, idx, 1);
	som_mover_copy_block(mv, idx, dst, src);
	som_mover_set(mv, idx, dst);
	som_pool_free_block(pool, src);
}

/**
 * som_mover_take() - unmap the block at one index of a locked region and
 *	copy its data out
 * @mv: the locked region
 * @idx: a 2 MiB index that holds a block
 * @to: 2 MiB of kernel memory
 *
 * Pages that are holes a memory error left read as zeros in @to; a copy
 * that runs into a new error makes its page such a hole, as a move does.
 * Until the caller changes the index (som_region_page_out()) or drops the
 * locks, nothing maps the block again.
 *
 * Context: Caller holds the locks of som_mover_lock().
 */
void som_mover_take(struct som_mover *mv, pgoff_t idx, void *to)
{
	struct som_region *region = mv->region;
	unsigned long src = som_table_get(&region->table, idx);

	som_mover_zap(mv, idx, 1);
	if (region->nr_poisoned)
		memset(to, 0, SOM_BLOCK_SIZE);
	som_mover_copy(mv, idx, to, som_pool_block_vaddr(region->pool, src),
		       src);
}

/**
 * som_mover_spare() - a spare block for the block at @src to move into
 * @mv: the locked region
 * @src: the block that moves
 * @nid: the node wanted
 * @exact: only @nid will do; otherwise the nearest node with room
 *
 * Of @src's own tier if there is room there, so that a move for
 * evacuation, a policy or a memory error undoes no tiering (tier.c);
 * else of the other tier.
 *
 * Context: Caller holds the locks of som_mover_lock().
 * Return: the block frame number, or SOM_NO_BLOCK if there is no room.
 */
unsigned long som_mover_spare(struct som_mover *mv, unsigned long src,
			      int nid, bool exact)
{
	struct som_pool *pool = mv->region->pool;
	int tier = som_pool_block_tier(pool, src);
	unsigned long dst = SOM_NO_BLOCK;

	if (tier >= 0)
		dst = som_pool_alloc_spare_tier(pool, &mv->region->claim, nid,
						exact, tier);
	if (dst == SOM_NO_BLOCK)
		dst = som_pool_alloc_spare(pool, &mv->region->claim, nid,
					   exact);
	return dst;
}

/**
 * som_assembly_alloc() - scratch space for som_mover_assemble()
 *
 * Context: Process context, may sleep.
 * Return: it, or NULL if memory is short.
 */
struct som_assembly *som_assembly_alloc(void)
{
	struct som_assembly *as = kvmalloc(sizeof(*as), GFP_KERNEL);

	if (!as)
		return NULL;
	as->bounce = vmalloc(SOM_BLOCK_SIZE);
	if (!as->bounce) {
		kvfree(as);
		return NULL;
	}
	return as;
}

/**
 * som_assembly_free() - free what som_assembly_alloc() returned
 * @as: it, or NULL
 */
void som_assembly_free(struct som_assembly *as)
{
	if (!as)
		return;
	vfree(as->bounce);
	kvfree(as);
}

/*
 * A copy that ran into a memory error while a GiB was assembled recorded
 * the page, in a block of the chunk that may now hold another index's
 * data: make each poisoned page of the chunk a hole of the index its
 * block backs now (the chunk was free of them when the assembly began).
 */
static void som_mover_poison_chunk(struct som_mover *mv, pgoff_t first,
				   unsigned long cfn)
{
	unsigned long base = cfn << (SOM_CHUNK_SHIFT - PAGE_SHIFT);
	unsigned long pfn = base;

	while (som_pool_find_poison(mv->region->pool, &pfn,
				    base + SOM_PAGES_PER_CHUNK - 1)) {
		som_region_poison_page(mv->region,
				       (first << SOM_PAGES_PER_BLOCK_SHIFT) +
				       (pfn - base));
		pfn++;
	}
}

/*
 * Fill position @q of the chunk at @base with the data of index first + q,
 * then the position that data came from, and so on: a chain ends with
 * data that came from outside the chunk (its block is freed) or from the
 * bounce buffer.
 */
static void som_assemble_chain(struct som_mover *mv, struct som_assembly *as,
			       pgoff_t first, unsigned long base,
			       unsigned int q)
{
	struct som_pool *pool = mv->region->pool;
	unsigned long src;

	for (;;) {
		src = as->cur[q];
		if (src == SOM_BOUNCE) {
			som_mover_copy(mv, first + q,
				       som_pool_block_vaddr(pool, base + q),
				       as->bounce, SOM_BOUNCE);
			atomic_long_add(SOM_BLOCK_SIZE,
					&som_migrate_stats.bytes_copied);
		} else {
			som_mover_copy_block(mv, first + q, base + q, src);
		}
		as->cur[q] = base + q;
		as->occupant[q] = q;
		som_mover_set(mv, first + q, base + q);
		if (src == SOM_BOUNCE)
			return;
		if (som_bfn_to_cfn(src) != som_bfn_to_cfn(base)) {
			som_pool_free_block(pool, src);
			return;
		}
		/* Its old position is now free, and still ours. */
		q = src - base;
		as->occupant[q] = -1;
	}
}

/**
 * som_mover_assemble() - move a GiB of a locked region into one chunk
 * @mv: the locked region
 * @first: the GiB's first 2 MiB index, 1 GiB aligned; each of its 512
 *	indices holds a block
 * @cfn: a chunk set aside by som_pool_assemble_begin() that holds no
 *	block but the GiB's own
 * @as: scratch space
 *
 * Afterwards index first + i holds block i of the chunk, so the next
 * fault on the GiB maps it with one 1 GiB entry.
 *
 * Context: Caller holds the locks of som_mover_lock(). May sleep.
 * Return: 0, or -EBUSY if the GiB or the chunk are not as described.
 */
int som_mover_assemble(struct som_mover *mv, pgoff_t first,
		       unsigned long cfn, struct som_assembly *as)
{
	unsigned long base = cfn << (SOM_CHUNK_SHIFT - SOM_BLOCK_SHIFT);
	struct som_pool *pool = mv->region->pool;
	struct som_chunk_info info;
	unsigned int i, inside = 0, placed = 0;
	unsigned long entry;

	for (i = 0; i < SOM_BLOCKS_PER_CHUNK; i++)
		as->occupant[i] = -1;
	for (i = 0; i < SOM_BLOCKS_PER_CHUNK; i++) {
		entry = som_table_get(&mv->region->table, first + i);
		if (!som_table_is_block(entry))
			return -EBUSY;
		as->cur[i] = entry;
		if (som_bfn_to_cfn(as->cur[i]) != cfn)
			continue;
		as->occupant[as->cur[i] - base] = i;
		inside++;
		placed += as->cur[i] == base + i;
	}
	if (som_pool_chunk_info(pool, cfn, &info) || !info.assembling ||
	    info.nr_free + inside != SOM_BLOCKS_PER_CHUNK)
		return -EBUSY;
	if (placed == SOM_BLOCKS_PER_CHUNK)
		return 0;
	/* Take the free blocks first: nothing has changed if one fails. */
	for (i = 0; i < SOM_BLOCKS_PER_CHUNK; i++) {
		if (as->occupant[i] == -1 &&
		    som_pool_assemble_take(pool, base + i)) {
			while (i--)
				if (as->occupant[i] == -1)
					som_pool_free_block(pool, base + i);
			return -EBUSY;
		}
	}

	som_mover_zap(mv, first, SOM_BLOCKS_PER_CHUNK);
	/* Chains: each starts at a free position, ends outside the chunk. */
	for (i = 0; i < SOM_BLOCKS_PER_CHUNK; i++) {
		if (as->occupant[i] == -1)
			som_assemble_chain(mv, as, first, base, i);
		cond_resched();
	}
	/* What is left are cycles inside the chunk: break each once. */
	for (i = 0; i < SOM_BLOCKS_PER_CHUNK; i++) {
		if (as->occupant[i] == i)
			continue;
		if (WARN_ON_ONCE(as->occupant[i] < 0))
			return -EBUSY;
		som_mover_copy(mv, first + as->occupant[i], as->bounce,
			       som_pool_block_vaddr(pool, base + i), base + i);
		atomic_long_add(SOM_BLOCK_SIZE, &som_migrate_stats.bytes_copied);
		as->cur[as->occupant[i]] = SOM_BOUNCE;
		as->occupant[i] = -1;
		som_assemble_chain(mv, as, first, base, i);
		cond_resched();
	}
	som_mover_poison_chunk(mv, first, cfn);
	return 0;
}
ALLOW_ERROR_INJECTION(som_mover_assemble, ERRNO);

/*
 * Is the GiB at @first of a locked region backed by one chunk, in order?
 * Return its chunk frame number if so, else SOM_NO_BLOCK.
 */
unsigned long som_mover_gib_chunk(struct som_mover *mv, pgoff_t first)
{
	return som_table_chunk(&mv->region->table, first);
}

/**
 * som_mover_move_gib() - move a chunk-backed GiB of a locked region whole
 * @mv: the locked region
 * @first: the GiB's first 2 MiB index, backed by one chunk in order
 * @nid: the node of the chunk to move it to; unless @exact, the nearest
 *	node with a wholly free chunk
 * @exact: see @nid
 * @tier: the tier of that chunk (enum som_tier), or SOM_TIER_ANY: the
 *	GiB's own tier if a chunk there will do, else the other
 * @as: scratch space, or NULL (then -ENOMEM)
 *
 * The GiB stays mappable by a 1 GiB entry.
 *
 * Context: Caller holds the locks of som_mover_lock(). May sleep.
 * Return: 0; -ENOSPC if no chunk will do; -EBUSY; -ENOMEM.
 */
int som_mover_move_gib(struct som_mover *mv, pgoff_t first, int nid,
		       bool exact, int tier, struct som_assembly *as)
{
	struct som_pool *pool = mv->region->pool;
	struct som_chunk_info info;
	unsigned long cfn;
	int err;

	if (!as)
		return -ENOMEM;
	cfn = SOM_NO_BLOCK;
	if (tier == SOM_TIER_ANY &&
	    !som_pool_chunk_info(pool, som_mover_gib_chunk(mv, first), &info))
		cfn = som_pool_whole_chunk_tier(pool, &mv->region->claim, nid,
						info.slow ? SOM_TIER_SLOW :
						SOM_TIER_FAST);
	/* Its own tier on another node will not do where only @nid will. */
	if (cfn != SOM_NO_BLOCK && exact &&
	    (som_pool_chunk_info(pool, cfn, &info) || info.nid != nid))
		cfn = SOM_NO_BLOCK;
	if (cfn == SOM_NO_BLOCK)
		cfn = som_pool_whole_chunk_tier(pool, &mv->region->claim, nid,
						tier);
	if (cfn == SOM_NO_BLOCK || som_pool_chunk_info(pool, cfn, &info) ||
	    (exact && info.nid != nid))
		return -ENOSPC;
	err = som_pool_assemble_begin(pool, cfn);
	if (err)
		return err;
	err = som_mover_assemble(mv, first, cfn, as);
	som_pool_assemble_end(pool, cfn);
	return err;
}

/**
 * som_migrate_region_out() - move a region's blocks out of some chunks
 * @region: a region referenced by the caller
 * @match: which blocks must go: it returns true for their frame numbers
 * @arg: for @match
 * @skip_first: first index to leave alone
 * @skip_last: last index to leave alone (below @skip_first: none)
 * @as: scratch space for moving a chunk-backed GiB whole, or NULL
 *
 * A GiB that lies in one matching chunk, in order, moves to a whole free
 * chunk if there is one, so that it keeps its 1 GiB entry; other blocks
 * move one by one to spare blocks on their node, or the nearest node
 * with room.
 *
 * Context: Process context, may sleep. Caller holds som_migrate_mutex.
 * Return: 0 (also if the region's file is gone); -EAGAIN (try again);
 * -ENOSPC if the pool has no room for a block; -EINTR.
 */
int som_migrate_region_out(struct som_region *region,
			   bool (*match)(unsigned long bfn, void *arg),
			   void *arg, pgoff_t skip_first, pgoff_t skip_last,
			   struct som_assembly *as)
{
	struct som_pool *pool = region->pool;
	unsigned long idx = 0, bfn, dst, moved;
	struct som_mover mv;
	bool unmovable, gib;
	int err, nid;

	do {
		err = som_mover_lock(&mv, region);
		if (err)
			return err == -ENOENT ? 0 : err;
		moved = 0;
		for (;; idx++) {
			bfn = som_table_next(&region->table, &idx, ULONG_MAX);
			if (bfn == SOM_TABLE_ABSENT || moved >= SOM_MOVE_BATCH)
				break;
			if (!som_table_is_block(bfn) ||
			    (idx >= skip_first && idx <= skip_last))
				continue;
			if (!match(bfn, arg))
				continue;
			if (region->claim.unmovable) {
				err = -EBUSY;
				break;
			}
			nid = som_pool_block_node(pool, bfn, &unmovable);
			gib = IS_ALIGNED(idx, SOM_BLOCKS_PER_CHUNK) &&
			      som_mover_gib_chunk(&mv, idx) != SOM_NO_BLOCK;
			/* A GiB move is a batch of its own. */
			if (gib && moved)
				break;
			if (gib && !som_mover_move_gib(&mv, idx, nid, false,
						       SOM_TIER_ANY, as)) {
				atomic_long_add(SOM_BLOCKS_PER_CHUNK,
						&som_migrate_stats.blocks_evacuated);
				moved += SOM_BLOCKS_PER_CHUNK;
				continue;
			}
			dst = som_mover_spare(&mv, bfn, nid, false);
			if (dst == SOM_NO_BLOCK) {
				err = -ENOSPC;
				break;
			}
			som_mover_move(&mv, idx, dst);
			atomic_long_inc(&som_migrate_stats.blocks_evacuated);
			moved++;
		}
		som_mover_unlock(&mv);
		if (!err && fatal_signal_pending(current))
			err = -EINTR;
		cond_resched();
	} while (!err && bfn != SOM_TABLE_ABSENT);
	return err;
}
ALLOW_ERROR_INJECTION(som_migrate_region_out, ERRNO);

/**
 * som_migrate_out() - move every region's blocks out of some chunks
 * @match: which blocks must go (see som_migrate_region_out())
 * @arg: for @match
 * @keep: a region whose indices [@skip_first, @skip_last] stay, or NULL
 * @skip_first: see @keep
 * @skip_last: see @keep
 *
 * Regions between states are tried again a few times.
 *
 * Context: Process context, may sleep. Caller holds som_migrate_mutex.
 * Return: 0; -ENOSPC if the rest of the pool cannot take the blocks;
 * -EBUSY if some region could not be moved; -ENOMEM; -EINTR.
 */
int som_migrate_out(bool (*match)(unsigned long bfn, void *arg), void *arg,
		    struct som_region *keep, pgoff_t skip_first,
		    pgoff_t skip_last)
{
	struct som_assembly *as = som_assembly_alloc();
	struct som_region **regions;
	unsigned long nr, i;
	int err = 0, tries;

	regions = som_regions_get(&nr);
	if (!regions) {
		som_assembly_free(as);
		return -ENOMEM;
	}
	for (i = 0; i < nr && !err; i++) {
		for (tries = 0; tries < 50; tries++) {
			if (regions[i] == keep)
				err = som_migrate_region_out(regions[i], match,
							     arg, skip_first,
							     skip_last, as);
			else
				err = som_migrate_region_out(regions[i], match,
							     arg, 1, 0, as);
			if (err != -EAGAIN)
				break;
			msleep(20);
		}
		if (err == -EAGAIN)
			err = -EBUSY;
	}
	som_regions_put(regions, nr);
	som_assembly_free(as);
	return err;
}

struct som_owner_match {
	struct som_pool *pool;
	const void *owner;
};

static bool som_match_owner(unsigned long bfn, void *arg)
{
	struct som_owner_match *m = arg;

	return som_pool_block_owner(m->pool, bfn) == m->owner;
}

/**
 * som_migrate_evacuate() - empty every chunk of a source
 * @pool: the pool
 * @owner: the source, as given to som_pool_add_chunk()
 *
 * The chunks are isolated, so nothing new lands in them, and every block
 * in them moves elsewhere. On success they stay isolated and empty, for
 * som_pool_remove(); on failure they are given back (blocks already moved
 * stay where they went).
 *
 * Context: Process context, may sleep.
 * Return: 0; -EBUSY if an unmovable chunk of @owner is in use, the rest
 * of the pool could not cover the reservations held on the chunks, or a
 * region could not be moved; -ENOSPC if the rest of the pool has no room
 * for the blocks; -ENOMEM; -EINTR.
 */
int som_migrate_evacuate(struct som_pool *pool, const void *owner)
{
	struct som_owner_match m = { .pool = pool, .owner = owner };
	int err;

	if (mutex_lock_killable(&som_migrate_mutex))
		return -EINTR;
	err = som_pool_isolate_owner(pool, owner);
	if (err)
		goto out_unlock;
	if (som_pool_owner_used(pool, owner))
		err = som_migrate_out(som_match_owner, &m, NULL, 1, 0);
	if (!err && som_pool_owner_used(pool, owner))
		err = -EBUSY;
	if (err)
		som_pool_unisolate_owner(pool, owner);
out_unlock:
	mutex_unlock(&som_migrate_mutex);
	return err;
}

/* Does the block at @idx, on node @nid, sit where @claim wants it? */
static bool som_claim_content(const struct som_claim *claim, pgoff_t idx,
			      int nid)
{
	switch (claim->mode) {
	case SOM_CLAIM_PREFERRED:
	case SOM_CLAIM_INTERLEAVE:
		return nid == som_claim_target(claim, idx);
	case SOM_CLAIM_BIND:
		return som_claim_allows(claim, nid);
	case SOM_CLAIM_LOCAL:
	default:
		return true;
	}
}

/*
 * Move up to SOM_MOVE_BATCH blocks of a locked region, from index *@idx
 * on, that are not where its policy wants them; *@idx is where to go on.
 * Returns 1 if there may be more, 0 when done, -ENOMEM if some blocks
 * could not move for lack of room (the others still move).
 */
static int som_mover_place(struct som_mover *mv, struct som_assembly *as,
			   unsigned long *idx, bool *short_of_room)
{
	struct som_region *region = mv->region;
	struct som_claim *claim = &region->claim;
	struct som_pool *pool = region->pool;
	unsigned long bfn, dst, moved = 0;
	bool unmovable, exact, gib;
	int nid, want;

	if (claim->unmovable)
		return 0;
	exact = claim->mode != SOM_CLAIM_BIND;
	for (;; (*idx)++) {
		bfn = som_table_next(&region->table, idx, ULONG_MAX);
		if (bfn == SOM_TABLE_ABSENT)
			break;
		if (moved >= SOM_MOVE_BATCH)
			return 1;
		if (!som_table_is_block(bfn))
			continue;
		nid = som_pool_block_node(pool, bfn, &unmovable);
		if (som_claim_content(claim, *idx, nid))
			continue;
		want = exact ? som_claim_target(claim, *idx) : nid;
		/*
		 * A whole GiB that wants one node moves as a chunk, in a
		 * batch of its own.
		 */
		gib = IS_ALIGNED(*idx, SOM_BLOCKS_PER_CHUNK) &&
		      som_mover_gib_chunk(mv, *idx) != SOM_NO_BLOCK;
		if (gib && moved)
			return 1;
		if (gib &&
		    (!exact ||
		     want == som_claim_target(claim,
					      *idx + SOM_BLOCKS_PER_CHUNK - 1)) &&
		    !som_mover_move_gib(mv, *idx, want, exact, SOM_TIER_ANY,
					as)) {
			atomic_long_add(SOM_BLOCKS_PER_CHUNK,
					&som_migrate_stats.blocks_placed);
			moved += SOM_BLOCKS_PER_CHUNK;
			continue;
		}
		dst = som_mover_spare(mv, bfn, want, exact);
		if (dst == SOM_NO_BLOCK) {
			*short_of_room = true;
			continue;
		}
		som_mover_move(mv, *idx, dst);
		atomic_long_inc(&som_migrate_stats.blocks_placed);
		moved++;
	}
	return 0;
}

/**
 * som_migrate_policy() - set a region's placement policy, and move its
 *	blocks to match
 * @region: the region, referenced by the caller's file
 * @mode: the placement mode
 * @nodes: its nodes (ignored for SOM_CLAIM_LOCAL), already validated
 * @interleave_shift: for SOM_CLAIM_INTERLEAVE, log2 of the blocks per step
 * @unmovable: take memory only from unmovable chunks
 *
 * Only the owner may set the policy once the region has one. While the
 * region holds no memory (before the first mmap() of /dev/som; a som file
 * of size 0) any policy may be set. Afterwards its kind (@unmovable) is
 * fixed, and a new placement applies at once: reservations move to the
 * nodes it allows, and the blocks that are not where it wants them move
 * there (SOM_CLAIM_LOCAL moves nothing: the faulting CPU is not known), a
 * chunk-backed GiB as a whole when a free chunk is there to take it. The
 * policy stays even where blocks cannot move for lack of room.
 *
 * Context: Process context, may sleep. Caller holds no som lock.
 * Return: 0; -EPERM if another process owns the region; -EBUSY if the
 * region holds memory and @unmovable differs from its kind; -ENOMEM if
 * reservations or blocks could not move for lack of room on the nodes
 * wanted (reservations: nothing changed); -EAGAIN if the region is
 * between states (an munmap() half done); -EINTR.
 */
int som_migrate_policy(struct som_region *region, enum som_claim_mode mode,
		       const nodemask_t *nodes, unsigned int interleave_shift,
		       bool unmovable)
{
	struct som_claim *claim = &region->claim;
	struct som_assembly *as = NULL;
	bool short_of_room = false;
	unsigned long idx = 0;
	struct som_mover mv;
	int err, more;

	if (mutex_lock_killable(&som_migrate_mutex))
		return -EINTR;
	err = som_mover_lock(&mv, region);
	if (err)
		goto out_unlock;
	if (region->mm && region->mm != current->mm) {
		err = -EPERM;
	} else if (som_table_empty(&region->table)) {
		claim->mode = mode;
		claim->nodes = *nodes;
		claim->interleave_shift = interleave_shift;
		claim->unmovable = unmovable;
	} else if (unmovable != claim->unmovable) {
		err = -EBUSY;
	} else {
		err = som_claim_set_policy(region->pool, claim, mode, nodes,
					   interleave_shift);
	}
	if (err || som_table_empty(&region->table)) {
		som_mover_unlock(&mv);
		goto out_unlock;
	}
	/* The policy is set; now the blocks, a batch per hold of the locks. */
	as = som_assembly_alloc();
	for (;;) {
		more = som_mover_place(&mv, as, &idx, &short_of_room);
		som_mover_unlock(&mv);
		if (!more)
			break;
		if (fatal_signal_pending(current)) {
			err = -EINTR;
			goto out_unlock;
		}
		cond_resched();
		err = som_mover_lock(&mv, region);
		if (err)
			goto out_unlock;
	}
	if (short_of_room)
		err = -ENOMEM;
out_unlock:
	mutex_unlock(&som_migrate_mutex);
	som_assembly_free(as);
	return err == -ENOENT ? -EAGAIN : err;
}

/*
 * The block at @idx of a locked region holds poisoned page @pfn: make that
 * page a hole, and move the rest of the block's data to a healthy block if
 * the region's memory may move and the pool has a spare block; otherwise
 * the data stays, mapped by 4 KiB entries around the hole. The old block
 * is retired when freed. Returns whether the data moved.
 */
static bool som_mover_poison(struct som_mover *mv, pgoff_t idx,
			     unsigned long pfn)
{
	struct som_region *region = mv->region;
	struct som_pool *pool = region->pool;
	unsigned long src = som_table_get(&region->table, idx), dst;
	bool unmovable;
	int nid;

	som_region_poison_page(region, (idx << SOM_PAGES_PER_BLOCK_SHIFT) +
				       (pfn - som_bfn_to_pfn(src)));
	som_mover_zap(mv, idx, 1);
	if (region->claim.unmovable)
		return false;
	nid = som_pool_block_node(pool, src, &unmovable);
	dst = som_mover_spare(mv, src, nid, false);
	if (dst == SOM_NO_BLOCK)
		return false;
	som_mover_copy_block(mv, idx, dst, src);
	som_mover_set(mv, idx, dst);
	som_pool_free_block(pool, src);
	return true;
}

/* The index of @region that holds block @bfn, or ULONG_MAX. */
static pgoff_t som_region_find_block(struct som_region *region,
				     unsigned long bfn)
{
	unsigned long entry;
	pgoff_t idx;

	lockdep_assert_held(&region->lock);
	for (idx = 0;; idx++) {
		entry = som_table_next(&region->table, &idx, ULONG_MAX);
		if (entry == SOM_TABLE_ABSENT)
			return ULONG_MAX;
		if (entry == bfn)
			return idx;
		if (idx == ULONG_MAX)
			return ULONG_MAX;
		cond_resched();
	}
}

/*
 * A region between states (an munmap() half done) cannot move its blocks:
 * make the hole in place, and zap what the VMAs still in the owner's tree
 * map of the block (nothing is freed, so the VMAs on their way out do not
 * matter: their entries go with them).
 */
static int som_poison_region_in_place(struct som_region *region,
				      unsigned long pfn)
{
	unsigned long bfn = pfn >> SOM_PAGES_PER_BLOCK_SHIFT;
	struct mm_struct *mm;
	bool live, again;
	int err;
	pgoff_t idx;

	do {
		mutex_lock(&region->lock);
		mm = region->dead ? NULL : region->mm;
		if (mm)
			mmgrab(mm);
		mutex_unlock(&region->lock);
		live = mm && mmget_not_zero(mm);
		if (live)
			mmap_read_lock(mm);
		mutex_lock(&region->lock);
		/* An owner that arrived meanwhile may map the block: again. */
		again = !region->dead && region->mm != mm;
		err = -ENOENT;
		idx = region->dead || again ? ULONG_MAX :
		      som_region_find_block(region, bfn);
		if (idx != ULONG_MAX) {
			som_region_poison_page(region,
					       (idx << SOM_PAGES_PER_BLOCK_SHIFT) +
					       (pfn - som_bfn_to_pfn(bfn)));
			if (live && som_pack_is_pack(idx))
				som_pack_zap(mm, region, idx, 1);
			else if (live)
				som_vm_zap_range(mm, region,
						 idx << SOM_PAGES_PER_BLOCK_SHIFT,
						 (idx + 1) << SOM_PAGES_PER_BLOCK_SHIFT);
			err = 0;
		}
		mutex_unlock(&region->lock);
		if (live) {
			mmap_read_unlock(mm);
			mmput(mm);
		}
		if (mm)
			mmdrop(mm);
	} while (again);
	return err;
}

/**
 * som_migrate_poison() - keep a region's data off a block that went bad
 * @pool: the pool
 * @pfn: a poisoned page, recorded by som_pool_poison(), whose block a
 *	region holds
 *
 * Finds the region that holds the block, makes the page a hole in it and
 * moves the block's other pages to a healthy block when it can.
 *
 * Context: Process context, may sleep. Takes som_migrate_mutex.
 * Return: 1 if the data moved; 0 if the hole was made in place; -ENOENT
 * if no region holds the block any more (it was freed, and so retired);
 * -ENOMEM.
 */
int som_migrate_poison(struct som_pool *pool, unsigned long pfn)
{
	unsigned long bfn = pfn >> SOM_PAGES_PER_BLOCK_SHIFT, nr, i;
	struct som_region **regions;
	struct som_mover mv;
	int err = -ENOENT, tries;
	pgoff_t idx;

	regions = som_regions_get(&nr);
	if (!regions)
		return -ENOMEM;
	mutex_lock(&som_migrate_mutex);
	for (i = 0; i < nr && err == -ENOENT; i++) {
		if (regions[i]->pool != pool)
			continue;
		for (tries = 0; tries < 50; tries++) {
			err = som_mover_lock(&mv, regions[i]);
			if (err != -EAGAIN)
				break;
			msleep(20);
		}
		if (err == -EAGAIN || err == -EINTR) {
			err = som_poison_region_in_place(regions[i], pfn);
			continue;
		}
		if (err) {
			err = -ENOENT;
			continue;
		}
		idx = som_region_find_block(regions[i], bfn);
		if (idx == ULONG_MAX)
			err = -ENOENT;
		else
			err = som_mover_poison(&mv, idx, pfn);
		som_mover_unlock(&mv);
	}
	mutex_unlock(&som_migrate_mutex);
	som_regions_put(regions, nr);
	return err;
}
