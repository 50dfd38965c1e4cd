// SPDX-License-Identifier: GPL-2.0
/*
 * Paging blocks of a region out to the swap store (swap.c), for the
 * region's owner (SOM_IOC_PAGEOUT) and for the administrator, coldest
 * first (swap/reclaim, som_reclaim()). Each block is unmapped and copied
 * out under the locks a migration takes (migrate.c), then written and
 * freed (region_swap.c); a touch reads it back. The locks are dropped
 * every few blocks so that the owner's other threads, whose faults on
 * the region wait for them, wait no longer than that many writes.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/delay.h>
#include <linux/mm.h>
#include <linux/sched/signal.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>
#include <uapi/linux/som.h>

#include "migrate.h"
#include "pack.h"
#include "region.h"
#include "swap.h"

/* Blocks paged out in one hold of a region's locks. */
#define SOM_PAGEOUT_BATCH	8

/**
 * struct som_pageout_walk - what to page out of a region
 * @idx:	the next index to look at
 * @last:	the last one
 * @min_age:	page out only blocks idle for this many aging scans or
 *		more; 0 for all
 * @left:	blocks that may still be paged out
 * @done:	blocks paged out
 * @noted:	the GiB whose entries mapped since the last scan were last
 *		counted as used (ULONG_MAX: none yet in this hold)
 * @nodes:	page out only blocks on these nodes, if not NULL
 * @bounce:	2 MiB for a block's data on its way out
 * @owner:	only for the region's owner (SOM_IOC_PAGEOUT): checked at
 *		each hold, since a som file gets its owner at its first mmap()
 */
struct som_pageout_walk {
	pgoff_t idx;
	pgoff_t last;
	unsigned int min_age;
	unsigned long left;
	unsigned long done;
	pgoff_t noted;
	const nodemask_t *nodes;
	void *bounce;
	bool owner;
};

/* Is block @bfn of @region on one of w->nodes? */
static bool som_pageout_on(struct som_region *region,
			   struct som_pageout_walk *w, unsigned long bfn)
{
	bool unmovable;
	int nid;

	if (!w->nodes)
		return true;
	nid = som_pool_block_node(region->pool, bfn, &unmovable);
	return nid != NUMA_NO_NODE && node_isset(nid, *w->nodes);
}

/*
 * Is the block at @idx of a locked region cold enough? Entries its owner
 * mapped since the last scan count as a use first, a GiB at a time.
 */
static bool som_pageout_wants(struct som_mover *mv,
			      struct som_pageout_walk *w, pgoff_t idx)
{
	struct som_region *region = mv->region;
	pgoff_t first = round_down(idx, SOM_BLOCKS_PER_CHUNK);
	unsigned int age;

	if (!w->min_age)
		return true;
	if (mv->live && first != w->noted) {
		som_age_note_range(mv->mm, region,
				   first << SOM_PAGES_PER_BLOCK_SHIFT,
				   (first + SOM_BLOCKS_PER_CHUNK) <<
				   SOM_PAGES_PER_BLOCK_SHIFT);
		w->noted = first;
	}
	age = som_ages_get(&region->ages, &region->table, idx);
	return age != SOM_AGE_ABSENT && age >= w->min_age;
}

/*
 * Page out blocks of [w->idx, w->last] of @region, at most a batch of
 * them, advancing w->idx past what was looked at. Caller holds
 * som_migrate_mutex. Returns 0 or the first error.
 */
static int som_pageout_batch(struct som_region *region,
			     struct som_pageout_walk *w)
{
	unsigned int n = 0, looked = 0;
	struct som_mover mv;
	unsigned long entry;
	long slot;
	int err, tries;

	/* -EAGAIN: the owner is half way through munmap() or exit. */
	for (tries = 0;; tries++) {
		err = som_mover_lock(&mv, region);
		if (err != -EAGAIN || tries == 50)
			break;
		msleep(20);
	}
	if (err)
		return err == -EAGAIN || err == -ENOENT ? -EBUSY : err;
	/*
	 * An empty region may have become unmovable meanwhile. Reclaim
	 * leaves a process that called mlockall(MCL_FUTURE) alone, as aging
	 * does (mlock() of som memory sets no VM_LOCKED: the core leaves
	 * special mappings unlocked); its owner may still page it out.
	 */
	if (region->claim.unmovable ||
	    (!w->owner && mv.live && (mv.mm->def_flags & VM_LOCKED))) {
		som_mover_unlock(&mv);
		return -EBUSY;
	}
	if (w->owner) {
		err = som_region_may_modify(region);
		if (err) {
			som_mover_unlock(&mv);
			return err;
		}
	}
	w->noted = ULONG_MAX;
	while (n < SOM_PAGEOUT_BATCH && w->left && looked++ < 4096) {
		entry = som_table_next(&region->table, &w->idx, w->last);
		/* Pack blocks (pack.c), last in the table, stay for now. */
		if (entry == SOM_TABLE_ABSENT || som_pack_is_pack(w->idx)) {
			w->idx = w->last + 1;
			break;
		}
		if (som_table_is_block(entry) &&
		    som_pageout_on(region, w, entry) &&
		    som_pageout_wants(&mv, w, w->idx)) {
			slot = som_swap_get_slot();
			if (slot < 0) {
				err = slot;
				break;
			}
			som_mover_take(&mv, w->idx, w->bounce);
			err = som_region_page_out(region, w->idx, slot,
						  w->bounce);
			if (err)
				break;
			w->done++;
			w->left--;
			n++;
		}
		if (w->idx++ == w->last)
			break;
	}
	som_mover_unlock(&mv);
	return err;
}

/*
 * Page out what @w asks of @region, a batch per hold of its locks.
 * Returns 0 or the first error (-EINTR for a fatal signal).
 */
static int som_pageout_region(struct som_region *region,
			      struct som_pageout_walk *w)
{
	int err;

	for (;;) {
		err = mutex_lock_killable(&som_migrate_mutex);
		if (err)
			return err;
		err = som_pageout_batch(region, w);
		mutex_unlock(&som_migrate_mutex);
		if (!err && fatal_signal_pending(current))
			err = -EINTR;
		if (err || w->idx > w->last || !w->left)
			return err;
		cond_resched();
	}
}

/**
 * som_ioctl_pageout() - SOM_IOC_PAGEOUT
 * @region: the region of the file the ioctl came on
 * @uarg: a struct som_pageout
 *
 * Context: Process context, may sleep.
 * Return: 0 or a negative errno (see the uapi header).
 */
long som_ioctl_pageout(struct som_region *region,
		       struct som_pageout __user *uarg)
{
	struct som_pageout_walk w = { .left = ULONG_MAX, .owner = true };
	struct som_pageout args;
	bool unmovable;
	int err;

	if (copy_from_user(&args, uarg, sizeof(args)))
		return -EFAULT;
	if (args.flags || args.__reserved[0] || args.__reserved[1] ||
	    !IS_ALIGNED(args.offset | args.length, SOM_BLOCK_SIZE) ||
	    args.offset + args.length < args.offset)
		return -EINVAL;
	if (!som_swap_ready())
		return -ENODEV;
	mutex_lock(&region->lock);
	err = som_region_may_modify(region);
	unmovable = region->claim.unmovable;
	mutex_unlock(&region->lock);
	if (err)
		return err;
	if (unmovable)
		return -EBUSY;
	if (args.length) {
		w.bounce = vmalloc(SOM_BLOCK_SIZE);
		if (!w.bounce)
			return -ENOMEM;
		w.idx = args.offset >> SOM_BLOCK_SHIFT;
		w.last = ((args.offset + args.length) >> SOM_BLOCK_SHIFT) - 1;
		err = som_pageout_region(region, &w);
		vfree(w.bounce);
	}
	args.paged_out = (u64)w.done << SOM_BLOCK_SHIFT;
	if (copy_to_user(&uarg->paged_out, &args.paged_out,
			 sizeof(args.paged_out)))
		return -EFAULT;
	return err;
}

/*
 * The age from which paging out every block of the movable regions
 * reaches @want blocks (the oldest ages first): 0 if even all of them
 * are fewer. SOM_AGE_NR if none holds a block.
 */
static unsigned int som_reclaim_age(struct som_region **regions,
				    unsigned long nr, unsigned long want)
{
	u64 bytes[SOM_AGE_NR] = { 0 }, b[SOM_AGE_NR], sum = 0;
	struct som_region *region;
	unsigned long i;
	int age;

	for (i = 0; i < nr; i++) {
		region = regions[i];
		mutex_lock(&region->lock);
		if (!region->dead && !region->claim.unmovable) {
			som_ages_count(&region->ages, &region->table, b);
			for (age = 0; age < SOM_AGE_NR; age++)
				bytes[age] += b[age];
		}
		mutex_unlock(&region->lock);
	}
	for (age = SOM_AGE_NR - 1; age > 0; age--) {
		sum += bytes[age];
		if (sum >= (u64)want << SOM_BLOCK_SHIFT)
			return age;
	}
	return sum + bytes[0] ? 0 : SOM_AGE_NR;
}

/**
 * som_reclaim() - page out the coldest memory of every region
 * @bytes: how much, rounded down to 2 MiB
 * @nodes: only blocks on these nodes (for a fault bound to them), or NULL
 * @done: set to the bytes paged out
 *
 * By the ages of the aging scans (age.h): the blocks idle longest first,
 * down to those found used by the last scan if it takes them too; a
 * block mapped again since the last scan counts as used. Regions with
 * unmovable memory, and those of a process that called
 * mlockall(MCL_FUTURE), are left alone.
 *
 * Context: Process context, may sleep.
 * Return: 0 (also when less than @bytes could be paged out: the blocks
 * were not there), -ENODEV without a store, -ENOSPC when the store is
 * full, -EIO, -EINTR, -ENOMEM.
 */
int som_reclaim(u64 bytes, const nodemask_t *nodes, u64 *done)
{
	struct som_pageout_walk w = { .left = bytes >> SOM_BLOCK_SHIFT,
				      .nodes = nodes };
	struct som_region **regions, *region;
	unsigned long nr, i;
	int err = 0;

	*done = 0;
	if (!som_swap_ready())
		return -ENODEV;
	if (!w.left)
		return 0;
	regions = som_regions_get(&nr);
	if (!regions)
		return -ENOMEM;
	/* For some nodes only: any block there, the ages count them all. */
	w.min_age = nodes ? 0 : som_reclaim_age(regions, nr, w.left);
	w.bounce = vmalloc(SOM_BLOCK_SIZE);
	if (!w.bounce)
		err = -ENOMEM;
	for (;;) {
		for (i = 0; !err && w.min_age < SOM_AGE_NR && i < nr && w.left;
		     i++) {
			region = regions[i];
			mutex_lock(&region->lock);
			if (region->dead || region->claim.unmovable) {
				mutex_unlock(&region->lock);
				continue;
			}
			mutex_unlock(&region->lock);
			w.idx = 0;
			w.last = ULONG_MAX >> SOM_BLOCK_SHIFT;
			err = som_pageout_region(region, &w);
			/* A region between states is left alone. */
			if (err == -EBUSY)
				err = 0;
		}
		/*
		 * Short of the amount: the blocks counted may have been in
		 * regions left alone (locked, busy). Take younger ones.
		 */
		if (err || !w.left || !w.min_age || w.min_age >= SOM_AGE_NR)
			break;
		w.min_age = 0;
	}
	vfree(w.bounce);
	som_regions_put(regions, nr);
	*done = (u64)w.done << SOM_BLOCK_SHIFT;
	return err;
}
