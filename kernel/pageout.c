// SPDX-License-Identifier: GPL-2.0
/*
 * SOM_IOC_PAGEOUT: the owner of a region writes a range of it to the swap
 * store (swap.c) and gives its blocks back to the pool. Each block is
 * unmapped and copied out under the locks a migration takes
 * (migrate.c), then written and freed (region_swap.c); a touch reads it
 * back. The locks are dropped every few blocks so that the owner's other
 * threads, whose faults on the region wait for them, wait no longer than
 * that many writes.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/delay.h>
#include <linux/mm.h>
#include <linux/sched/signal.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>
#include <uapi/linux/som.h>

#include "migrate.h"
#include "region.h"
#include "swap.h"

/* Blocks paged out in one hold of a region's locks. */
#define SOM_PAGEOUT_BATCH	8

/*
 * Page out blocks of [*idx, last] of @region, at most a batch of them,
 * advancing *idx past what was looked at. Caller holds som_migrate_mutex.
 */
static int som_pageout_batch(struct som_region *region, pgoff_t *idx,
			     pgoff_t last, void *bounce, u64 *done)
{
	struct som_mover mv;
	unsigned long entry;
	unsigned int n = 0;
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
	while (n < SOM_PAGEOUT_BATCH) {
		entry = som_table_next(&region->table, idx, last);
		if (entry == SOM_TABLE_ABSENT) {
			*idx = last + 1;
			break;
		}
		if (som_table_is_block(entry)) {
			slot = som_swap_get_slot();
			if (slot < 0) {
				err = slot;
				break;
			}
			som_mover_take(&mv, *idx, bounce);
			err = som_region_page_out(region, *idx, slot, bounce);
			if (err)
				break;
			(*done)++;
			n++;
		}
		if ((*idx)++ == last)
			break;
	}
	som_mover_unlock(&mv);
	return err;
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
	struct som_pageout args;
	pgoff_t idx, last;
	bool unmovable;
	u64 done = 0;
	void *bounce;
	int err;

	if (copy_from_user(&args, uarg, sizeof(args)))
		return -EFAULT;
	if (args.flags || args.__reserved[0] || args.__reserved[1] ||
	    !IS_ALIGNED(args.offset | args.length, SOM_BLOCK_SIZE) ||
	    args.offset + args.length < args.offset)
		return -EINVAL;
	if (!som_swap_ready())
		return -ENODEV;
	if (!args.length)
		goto out;
	mutex_lock(&region->lock);
	err = som_region_may_modify(region);
	unmovable = region->claim.unmovable;
	mutex_unlock(&region->lock);
	if (err)
		return err;
	if (unmovable)
		return -EBUSY;
	bounce = vmalloc(SOM_BLOCK_SIZE);
	if (!bounce)
		return -ENOMEM;
	idx = args.offset >> SOM_BLOCK_SHIFT;
	last = ((args.offset + args.length) >> SOM_BLOCK_SHIFT) - 1;
	for (;;) {
		err = mutex_lock_killable(&som_migrate_mutex);
		if (err)
			break;
		err = som_pageout_batch(region, &idx, last, bounce, &done);
		mutex_unlock(&som_migrate_mutex);
		if (!err && fatal_signal_pending(current))
			err = -EINTR;
		if (err || idx > last)
			break;
		cond_resched();
	}
	vfree(bounce);
	args.paged_out = done << SOM_BLOCK_SHIFT;
	if (copy_to_user(&uarg->paged_out, &args.paged_out,
			 sizeof(args.paged_out)))
		return -EFAULT;
	return err;
out:
	args.paged_out = 0;
	return copy_to_user(&uarg->paged_out, &args.paged_out,
			    sizeof(args.paged_out)) ? -EFAULT : 0;
}
