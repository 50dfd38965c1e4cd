// SPDX-License-Identifier: GPL-2.0
/*
 * som pool: zeroing freed memory ahead of time. One worker clears dirty
 * blocks one at a time; allocators skip the block it is on, or wait for
 * it when it is the only one left. An administrator may stop it
 * (zero_ahead): allocators then zero what they take, in the fault.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <kunit/visibility.h>
#include <linux/error-injection.h>
#include <linux/io.h>
#include <linux/mutex.h>
#include <linux/numa.h>
#include <linux/sched.h>
#include <linux/timekeeping.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/topology.h>

#include "pool_internal.h"
#include "som_trace.h"

/* Zero a block, counting what it cost and who paid (see som_zero_stats). */
void som_pool_zero_block(struct som_pool *pool, struct som_chunk *chunk,
			 unsigned int i, bool ahead)
{
	u64 start = ktime_get_ns(), ns;

	memset(som_chunk_block_vaddr(chunk, i), 0, SOM_BLOCK_SIZE);
	ns = ktime_get_ns() - start;
	if (ahead) {
		atomic64_add(SOM_BLOCK_SIZE, &pool->zero_stats.worker_bytes);
		atomic64_add(ns, &pool->zero_stats.worker_ns);
	} else {
		atomic64_add(SOM_BLOCK_SIZE, &pool->zero_stats.fault_bytes);
		atomic64_add(ns, &pool->zero_stats.fault_ns);
	}
	trace_som_zero(som_chunk_bfn(chunk, i), ns, ahead);
}

bool som_chunk_is_zeroing(struct som_pool *pool, struct som_chunk *chunk)
{
	return pool->zeroing != SOM_NO_BLOCK &&
	       pool->zeroing >> (SOM_CHUNK_SHIFT - SOM_BLOCK_SHIFT) ==
	       chunk->phys >> SOM_CHUNK_SHIFT;
}

/* Wait until the zeroing worker is done with the block it clears now. */
void som_pool_wait_zeroing(struct som_pool *pool)
	__releases(&pool->lock)
{
	unsigned long bfn = pool->zeroing;

	spin_unlock(&pool->lock);
	wait_event(pool->zero_wait, READ_ONCE(pool->zeroing) != bfn);
}

void som_pool_zero_work(struct work_struct *work)
{
	struct som_pool *pool = container_of(work, struct som_pool, zero_work);
	struct som_chunk *chunk;
	unsigned int i;

	for (;;) {
		if (!READ_ONCE(pool->zero_ahead))
			return;
		spin_lock(&pool->lock);
		list_for_each_entry(chunk, &pool->chunks, list)
			if (chunk->nr_dirty)
				break;
		if (list_entry_is_head(chunk, &pool->chunks, list)) {
			spin_unlock(&pool->lock);
			return;
		}
		i = chunk->bits ? find_first_bit(chunk->bits->dirty,
						 SOM_BLOCKS_PER_CHUNK) : 0;
		WRITE_ONCE(pool->zeroing, som_chunk_bfn(chunk, i));
		spin_unlock(&pool->lock);

		som_pool_zero_block(pool, chunk, i, true);

		/*
		 * Nobody takes or removes a block the worker is on; a memory
		 * error recorded meanwhile waited for it, and it is retired
		 * now instead of offered.
		 */
		som_pool_lock_stocked(pool, GFP_KERNEL | __GFP_NOFAIL);
		if (som_pool_block_poisoned(pool, som_chunk_bfn(chunk, i)))
			som_chunk_retire_free(pool, chunk, i);
		else
			som_chunk_set_block(pool, chunk, i, true, false);
		WRITE_ONCE(pool->zeroing, SOM_NO_BLOCK);
		spin_unlock(&pool->lock);
		wake_up_all(&pool->zero_wait);
		cond_resched();
	}
}

/**
 * som_pool_set_zero_ahead() - start or stop zeroing free memory ahead
 * @pool: the pool
 * @on: whether the worker zeroes dirty blocks ahead of the faults
 *
 * Stopped, freed blocks stay dirty until an allocator takes one and
 * zeroes it in the fault (zero_fault_bytes), or until their chunk leaves
 * the pool. Returns once the worker has stopped (it finishes the block it
 * is on) or has been started. Concurrent calls are serialised: the last
 * one wins, and none returns while the worker disagrees with it.
 *
 * Context: Process context, may sleep.
 */
void som_pool_set_zero_ahead(struct som_pool *pool, bool on)
{
	static DEFINE_MUTEX(som_zero_ahead_mutex);

	mutex_lock(&som_zero_ahead_mutex);
	WRITE_ONCE(pool->zero_ahead, on);
	if (on)
		queue_work(system_dfl_wq, &pool->zero_work);
	else
		flush_work(&pool->zero_work);
	mutex_unlock(&som_zero_ahead_mutex);
}

/* Whether the pool zeroes freed memory ahead (som_pool_set_zero_ahead()). */
bool som_pool_zero_ahead(struct som_pool *pool)
{
	return READ_ONCE(pool->zero_ahead);
}
