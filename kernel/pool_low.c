// SPDX-License-Identifier: GPL-2.0
/*
 * som pool: the low watermark of free memory. An administrator sets a
 * number of bytes (free_low_bytes); the pool is low while its free bytes,
 * free blocks that no claim holds yet (free_bytes), are fewer. Each time
 * that changes, one way or the other, the pool notifies the kernfs file
 * it was given (sysfs.c gives it /sys/kernel/mm/som/free_low), so that an
 * agent blocked in poll() on it wakes up and can add memory to the pool
 * before reservations start failing. With the watermark at 0, the default,
 * the pool is never low and nothing is computed.
 */
#include <kunit/visibility.h>
#include <linux/kernfs.h>
#include <linux/math.h>
#include <linux/numa.h>
#include <linux/spinlock.h>

#include "pool_internal.h"

/*
 * Recompute whether @pool is low, and notify its file if that changed.
 * Called wherever the pool's free or reserved counts change; within one
 * hold of the lock it may see a state the hold undoes before it ends,
 * which costs a reader one wakeup that finds nothing new.
 *
 * Free is what free_bytes says: free blocks less those held for lost
 * reservations and blocks paged out (pool_overcommit.c). An
 * overcommitting pool's worker (pressure.c) looks at the free blocks
 * themselves, held or not, which paging out adds to: it is started when
 * those go under the watermark.
 */
void som_pool_check_low(struct som_pool *pool)
{
	u64 watermark = pool->free_low_bytes, free = 0, movable = 0, spare;
	bool low, short_at_hand;
	int n;

	lockdep_assert_held(&pool->lock);
	if (!watermark && !pool->low)
		return;
	/* A set whose chunk is set aside may briefly hold fewer. */
	for (n = 0; watermark && n < nr_node_ids * 2; n++) {
		if (pool->sets[n].nr_free <= pool->sets[n].nr_reserved)
			continue;
		spare = (u64)som_set_spare(&pool->sets[n]) * SOM_BLOCK_SIZE;
		free += spare;
		if (n % 2 == 0)
			movable += spare;
	}
	short_at_hand = movable < watermark;
	if (short_at_hand && !pool->short_at_hand && pool->overcommit &&
	    pool->store_slots && pool->pressure)
		pool->pressure(pool);
	pool->short_at_hand = short_at_hand;
	free -= min(movable, (u64)som_pool_owed(pool) * SOM_BLOCK_SIZE);
	low = free < watermark;
	if (low == pool->low)
		return;
	pool->low = low;
	if (low)
		pool->low_events++;
	if (pool->low_kn)
		kernfs_notify(pool->low_kn);
}

/**
 * som_pool_low_deficit() - how far under its watermark an overcommitting
 *	pool is
 * @pool: the pool
 *
 * What paging out should free (pressure.c): the unpromised movable blocks
 * missing to the watermark, rounded up; 0 while the pool is not low, does
 * not overcommit or has no swap store.
 *
 * Context: Takes the pool lock.
 * Return: a number of blocks.
 */
unsigned long som_pool_low_deficit(struct som_pool *pool)
{
	u64 free = 0, watermark;

	spin_lock(&pool->lock);
	watermark = pool->overcommit && pool->store_slots ?
		    pool->free_low_bytes : 0;
	if (watermark)
		free = (u64)som_pool_movable_spare(pool) * SOM_BLOCK_SIZE;
	spin_unlock(&pool->lock);
	if (free >= watermark)
		return 0;
	return DIV_ROUND_UP_ULL(watermark - free, SOM_BLOCK_SIZE);
}

/**
 * som_pool_set_free_low() - set the low watermark of free memory
 * @pool: the pool
 * @bytes: the watermark; 0 turns it off
 *
 * The pool's state follows at once: setting a watermark above what is
 * free makes the pool low (and notifies) right away.
 *
 * Context: Takes the pool lock.
 */
void som_pool_set_free_low(struct som_pool *pool, u64 bytes)
{
	spin_lock(&pool->lock);
	pool->free_low_bytes = bytes;
	som_pool_check_low(pool);
	spin_unlock(&pool->lock);
}
EXPORT_SYMBOL_IF_KUNIT(som_pool_set_free_low);

/**
 * som_pool_get_low() - the pool's watermark and whether it is low
 * @pool: the pool
 * @bytes: set to the watermark (0: off)
 * @events: set to how many times the pool became low so far
 *
 * Context: Takes the pool lock.
 * Return: whether the pool's free bytes are under the watermark.
 */
bool som_pool_get_low(struct som_pool *pool, u64 *bytes, u64 *events)
{
	bool low;

	spin_lock(&pool->lock);
	*bytes = pool->free_low_bytes;
	*events = pool->low_events;
	low = pool->low;
	spin_unlock(&pool->lock);
	return low;
}
EXPORT_SYMBOL_IF_KUNIT(som_pool_get_low);

/**
 * som_pool_set_low_file() - the kernfs file to notify when low changes
 * @pool: the pool
 * @kn: the file, referenced by the caller until it calls this again with
 *	NULL; or NULL
 *
 * Context: Takes the pool lock; once this returns with NULL, no
 * notification of the old file is under way.
 */
void som_pool_set_low_file(struct som_pool *pool, struct kernfs_node *kn)
{
	spin_lock(&pool->lock);
	pool->low_kn = kn;
	spin_unlock(&pool->lock);
}
