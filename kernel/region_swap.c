// SPDX-License-Identifier: GPL-2.0
/*
 * A region's blocks in the swap store (swap.c). An index paged out is
 * reserved in the region's table, like one never touched, and its slot in
 * the store is recorded in the region's swap xarray:
 *
 *	block  --page out-->  reserved + slot  --touch-->  block
 *	                            |
 *	                            +-- release --> absent, slot free
 *
 * The promise of a block stays with the index, kept by the store rather
 * than by a reservation (struct som_claim @nr_out, pool_overcommit.c):
 * without overcommit, the pool leaves a place for it, so reading the
 * block back never finds the pool without room; with overcommit, that
 * place may have gone to another mapping, and reading back may wait for
 * a page-out. Everything here runs under the region lock, which a
 * fault holds from looking an index up until its entry is in: a fault on
 * an index being paged out waits, and then reads it back.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/sched.h>
#include <linux/xarray.h>

#include "region.h"
#include "swap.h"

/**
 * som_region_page_out() - put an index's data in the store, free its block
 * @region: the region
 * @idx: a 2 MiB index that holds a block, with no page-table entry left
 *	that maps it
 * @slot: a slot of som_swap_get_slot(), which this call takes over
 * @data: the block's 2 MiB of data, copied out by the caller after the
 *	entries were zapped
 *
 * Context: Process context, may sleep until the data is written. Caller
 * holds the region lock.
 * Return: 0; -ENOMEM or the write's error, and then the index keeps its
 * block and the slot is free again.
 */
int som_region_page_out(struct som_region *region, pgoff_t idx,
			unsigned long slot, const void *data)
{
	unsigned long bfn = som_table_get(&region->table, idx);
	int err;

	lockdep_assert_held(&region->lock);
	if (WARN_ON_ONCE(!som_table_is_block(bfn))) {
		err = -EINVAL;
		goto err_put;
	}
	err = xa_err(xa_store(&region->swap, idx, xa_mk_value(slot),
			      GFP_KERNEL_ACCOUNT));
	if (err)
		goto err_put;
	err = som_swap_write(slot, data);
	if (err) {
		xa_erase(&region->swap, idx);
		goto err_put;
	}
	/* A split GiB cannot fail to take a reservation: no allocation. */
	som_table_set(&region->table, idx, SOM_TABLE_RESERVED,
		      GFP_KERNEL_ACCOUNT | __GFP_NOFAIL);
	som_region_count(region, -1);
	som_pool_free_block_out(region->pool, &region->claim, bfn);
	return 0;

err_put:
	som_swap_put_slot(slot);
	return err;
}

/**
 * som_region_swapped() - is any index of a range paged out?
 * @region: the region
 * @first: first index
 * @last: last index
 *
 * Context: Caller holds the region lock.
 */
bool som_region_swapped(struct som_region *region, pgoff_t first,
			pgoff_t last)
{
	unsigned long idx = first;

	lockdep_assert_held(&region->lock);
	return xa_find(&region->swap, &idx, last, XA_PRESENT);
}

/**
 * som_region_swap_in() - read an index's data back, if it is paged out
 * @region: the region
 * @idx: the index, reserved
 * @bfn: the block just allocated for it, not mapped yet
 *
 * On success the slot is free again; on failure it stays the index's.
 *
 * Context: Process context, may sleep. Caller holds the region lock.
 * Return: 0, -EIO or -EINTR (som_swap_read()).
 */
int som_region_swap_in(struct som_region *region, pgoff_t idx,
		       unsigned long bfn)
{
	void *entry = xa_load(&region->swap, idx);
	unsigned long slot;
	int err;

	lockdep_assert_held(&region->lock);
	if (!entry)
		return 0;
	slot = xa_to_value(entry);
	err = som_swap_read(slot, som_pool_block_vaddr(region->pool, bfn));
	if (err)
		return err;
	xa_erase(&region->swap, idx);
	som_swap_put_slot(slot);
	return 0;
}

/**
 * som_region_drop_swap() - free the slots of a range being released
 * @region: the region
 * @first: first index
 * @last: last index
 *
 * Context: Caller holds the region lock.
 * Return: the number of slots freed: the caller gives up as many
 * promises kept by the store (som_pool_drop_out()).
 */
unsigned long som_region_drop_swap(struct som_region *region, pgoff_t first,
				   pgoff_t last)
{
	unsigned long idx, nr = 0;
	void *entry;

	lockdep_assert_held(&region->lock);
	xa_for_each_range(&region->swap, idx, entry, first, last) {
		xa_erase(&region->swap, idx);
		som_swap_put_slot(xa_to_value(entry));
		nr++;
	}
	return nr;
}

/**
 * som_region_read_back() - read every index of a region back from the store
 * @region: a region referenced by the caller
 *
 * Each index gets a block, as a touch would give it.
 *
 * Context: Process context, may sleep. Takes the region lock.
 * Return: 0; the first error of som_region_fill() (-EIO, -ENOMEM), after
 * trying every index; -EINTR at once.
 */
int som_region_read_back(struct som_region *region)
{
	unsigned long idx, bfn;
	int err = 0, e;
	void *entry;

	mutex_lock(&region->lock);
	if (region->dead)
		goto out_unlock;
	xa_for_each(&region->swap, idx, entry) {
		e = som_region_fill(region, idx, &bfn);
		if (e == -EINTR) {
			err = e;
			break;
		}
		if (e && !err)
			err = e;
		cond_resched();
	}
out_unlock:
	mutex_unlock(&region->lock);
	return err;
}
