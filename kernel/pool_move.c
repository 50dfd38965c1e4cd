// SPDX-License-Identifier: GPL-2.0
/*
 * som pool: what migration (migrate.c, compact.c) asks of it: chunks
 * isolated for evacuation, chunks set aside to assemble a GiB in, spare
 * blocks to copy into, and who owns a block.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <kunit/visibility.h>
#include <linux/error-injection.h>
#include <linux/io.h>
#include <linux/numa.h>
#include <linux/sched.h>
#include <linux/timekeeping.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/topology.h>

#include "pool_internal.h"

/*
 * A copy overwrites all of its block: it takes dirty blocks first and
 * leaves the zeroed ones to faults, and keeps whole chunks whole too.
 */
const struct som_pick_pref som_pick_copy[SOM_PICK_PREFS] = {
	{ false, false }, { true, false }, { false, true }, { true, true },
};

/*
 * Take @chunk out of its set's list and counters: no allocation can pick
 * its free blocks any more, and its set must keep its promise to the
 * reservations held on it without them.
 */
void som_chunk_isolate(struct som_pool *pool, struct som_chunk *chunk)
{
	som_chunk_count(pool, chunk, -(long)chunk->nr_free,
			-(long)chunk->nr_dirty);
	list_del_init(&chunk->set_list);
	chunk->isolated = true;
}

void som_chunk_unisolate(struct som_pool *pool, struct som_chunk *chunk)
{
	chunk->isolated = false;
	list_add_tail(&chunk->set_list, &som_chunk_set(pool, chunk)->chunks);
	som_chunk_count(pool, chunk, chunk->nr_free, chunk->nr_dirty);
}

/* Does every set still cover the reservations held on it? */
static bool som_pool_covers_reservations(struct som_pool *pool)
{
	int i;

	for (i = 0; i < nr_node_ids * 2; i++)
		if (pool->sets[i].nr_free < pool->sets[i].nr_reserved)
			return false;
	return true;
}

/*
 * Isolate every chunk of @owner that is not isolated yet, all or nothing:
 * -EBUSY if the rest of their sets could not cover the reservations.
 */
int som_pool_isolate_owner_locked(struct som_pool *pool,
				  const void *owner)
{
	unsigned long gone = 0;
	struct som_chunk *chunk;
	bool ok;

	lockdep_assert_held(&pool->lock);
	list_for_each_entry(chunk, &pool->chunks, list)
		if (chunk->owner == owner && chunk->assembling)
			return -EBUSY;
	/*
	 * Nor may the pool promise more than what is left and its swap
	 * store hold (pool_overcommit.c): the owner's movable blocks go,
	 * the free ones now and the allocated ones into unpromised blocks
	 * elsewhere; also while the store is being removed, with blocks
	 * still in it. (Without a store, only memory errors make promises
	 * the pool cannot keep, and they do not hold a source back.)
	 */
	list_for_each_entry(chunk, &pool->chunks, list)
		if (chunk->owner == owner && !chunk->unmovable)
			gone += chunk->isolated ?
				SOM_BLOCKS_PER_CHUNK - chunk->nr_free :
				SOM_BLOCKS_PER_CHUNK;
	if ((pool->store_slots || pool->nr_out) &&
	    !som_pool_keeps_promises(pool, gone))
		return -EBUSY;
	/*
	 * A trial, on the sets' counts alone: it must not look like free
	 * memory coming and going (som_pool_check_low()).
	 */
	list_for_each_entry(chunk, &pool->chunks, list)
		if (chunk->owner == owner && !chunk->isolated)
			som_chunk_set(pool, chunk)->nr_free -= chunk->nr_free;
	ok = som_pool_covers_reservations(pool);
	list_for_each_entry(chunk, &pool->chunks, list)
		if (chunk->owner == owner && !chunk->isolated)
			som_chunk_set(pool, chunk)->nr_free += chunk->nr_free;
	if (!ok)
		return -EBUSY;
	list_for_each_entry(chunk, &pool->chunks, list)
		if (chunk->owner == owner && !chunk->isolated)
			som_chunk_isolate(pool, chunk);
	return 0;
}

/**
 * som_pool_chunk_info() - the state of one chunk
 * @pool: the pool
 * @cfn: a chunk frame number
 * @info: filled in
 *
 * Context: Takes the pool lock.
 * Return: 0, or -ENOENT if no chunk of @pool has that number.
 */
int som_pool_chunk_info(struct som_pool *pool, unsigned long cfn,
			struct som_chunk_info *info)
{
	struct som_chunk *chunk;

	spin_lock(&pool->lock);
	chunk = som_pool_find(pool, cfn);
	if (chunk) {
		info->nid = chunk->nid;
		info->unmovable = chunk->unmovable;
		info->isolated = chunk->isolated;
		info->assembling = chunk->assembling;
		info->poisoned = som_chunk_poisoned(pool, chunk);
		info->slow = chunk->slow;
		info->nr_free = chunk->nr_free;
	}
	spin_unlock(&pool->lock);
	return chunk ? 0 : -ENOENT;
}
EXPORT_SYMBOL_IF_KUNIT(som_pool_chunk_info);

/**
 * som_pool_whole_chunk_tier() - find a wholly free chunk of a tier that a
 *	claim may use
 * @pool: the pool
 * @claim: the claim whose kind and nodes count
 * @nid: the node to look on first; the others follow nearest first
 * @tier: an enum som_tier, or SOM_TIER_ANY (the fast tier first on each
 *	node)
 *
 * Nothing is taken: the caller isolates the chunk, and copes with it
 * having been used meanwhile.
 *
 * Context: Takes the pool lock.
 * Return: its chunk frame number, or SOM_NO_BLOCK.
 */
unsigned long som_pool_whole_chunk_tier(struct som_pool *pool,
					const struct som_claim *claim,
					int nid, int tier)
{
	unsigned long cfn = SOM_NO_BLOCK;
	struct som_chunk *pick;
	int n;

	spin_lock(&pool->lock);
	for (n = som_next_node(nid, NUMA_NO_NODE); n < nr_node_ids;
	     n = som_next_node(nid, n)) {
		if (!som_claim_allows(claim, n))
			continue;
		pick = som_set_pick_chunk(pool, som_pool_set(pool, n,
							     claim->unmovable),
					  tier);
		if (pick) {
			cfn = pick->phys >> SOM_CHUNK_SHIFT;
			break;
		}
	}
	spin_unlock(&pool->lock);
	return cfn;
}
EXPORT_SYMBOL_IF_KUNIT(som_pool_whole_chunk_tier);

/**
 * som_pool_assemble_begin() - set one chunk aside, to assemble a GiB in it
 * @pool: the pool
 * @cfn: the chunk's frame number
 *
 * Until som_pool_assemble_end(), blocks are allocated from the chunk only
 * for faults that find no other free block of its set; its blocks in use
 * stay in use, and the ones freed stay free. Its free blocks still count
 * as free: reservations lose nothing. The assembler takes them with
 * som_pool_assemble_take().
 *
 * Context: Takes the pool lock.
 * Return: 0; -ENOENT if there is no such chunk; -EBUSY if it is set aside
 * already, its set has too little room to take its free blocks, or it
 * holds a poisoned page;
 * -EPERM if it is unmovable.
 */
int som_pool_assemble_begin(struct som_pool *pool, unsigned long cfn)
{
	struct som_pool_set *set;
	struct som_chunk *chunk;
	int err = 0;

	spin_lock(&pool->lock);
	chunk = som_pool_find(pool, cfn);
	if (!chunk) {
		err = -ENOENT;
		goto out_unlock;
	}
	set = som_chunk_set(pool, chunk);
	if (chunk->unmovable) {
		err = -EPERM;
	} else if (chunk->isolated || chunk->assembling ||
		   som_set_spare(set) < chunk->nr_free ||
		   som_chunk_poisoned(pool, chunk)) {
		/* A GiB assembled over a bad page would map it. */
		err = -EBUSY;
	} else {
		list_del_init(&chunk->set_list);
		chunk->assembling = true;
	}
out_unlock:
	spin_unlock(&pool->lock);
	return err;
}
EXPORT_SYMBOL_IF_KUNIT(som_pool_assemble_begin);
ALLOW_ERROR_INJECTION(som_pool_assemble_begin, ERRNO);

/**
 * som_pool_assemble_end() - give a chunk set aside back to its set
 * @pool: the pool
 * @cfn: the chunk's frame number
 *
 * Context: Takes the pool lock.
 */
void som_pool_assemble_end(struct som_pool *pool, unsigned long cfn)
{
	struct som_chunk *chunk;

	spin_lock(&pool->lock);
	chunk = som_pool_find(pool, cfn);
	if (!WARN_ON_ONCE(!chunk || !chunk->assembling)) {
		chunk->assembling = false;
		list_add_tail(&chunk->set_list,
			      &som_chunk_set(pool, chunk)->chunks);
	}
	spin_unlock(&pool->lock);
}
EXPORT_SYMBOL_IF_KUNIT(som_pool_assemble_end);

/**
 * som_pool_isolate_owner() - isolate every chunk of an owner, to empty them
 * @pool: the pool
 * @owner: the owner given to som_pool_add_chunk()
 *
 * All or nothing.
 *
 * Context: Takes the pool lock.
 * Return: 0; -EBUSY if an unmovable chunk of @owner has a block in use
 * (it can never be moved), or the rest of the chunks' sets could not
 * cover their reservations.
 */
int som_pool_isolate_owner(struct som_pool *pool, const void *owner)
{
	struct som_chunk *chunk;
	int err;

	spin_lock(&pool->lock);
	list_for_each_entry(chunk, &pool->chunks, list) {
		if (chunk->owner == owner && chunk->unmovable &&
		    chunk->nr_free + som_chunk_nr_retired(pool, chunk) !=
		    SOM_BLOCKS_PER_CHUNK) {
			spin_unlock(&pool->lock);
			return -EBUSY;
		}
	}
	err = som_pool_isolate_owner_locked(pool, owner);
	spin_unlock(&pool->lock);
	return err;
}
EXPORT_SYMBOL_IF_KUNIT(som_pool_isolate_owner);

/**
 * som_pool_unisolate_owner() - give every chunk of an owner back to its set
 * @pool: the pool
 * @owner: the owner given to som_pool_add_chunk()
 *
 * Context: Takes the pool lock.
 */
void som_pool_unisolate_owner(struct som_pool *pool, const void *owner)
{
	struct som_chunk *chunk;

	spin_lock(&pool->lock);
	list_for_each_entry(chunk, &pool->chunks, list)
		if (chunk->owner == owner && chunk->isolated)
			som_chunk_unisolate(pool, chunk);
	spin_unlock(&pool->lock);
}
EXPORT_SYMBOL_IF_KUNIT(som_pool_unisolate_owner);

/**
 * som_pool_block_owner() - the owner of a block's chunk
 * @pool: the pool
 * @bfn: a block frame number
 *
 * Context: Takes the pool lock.
 * Return: the owner given to som_pool_add_chunk(), or NULL.
 */
const void *som_pool_block_owner(struct som_pool *pool, unsigned long bfn)
{
	struct som_chunk *chunk;
	const void *owner;

	spin_lock(&pool->lock);
	chunk = som_pool_find(pool, som_bfn_to_cfn(bfn));
	owner = chunk ? chunk->owner : NULL;
	spin_unlock(&pool->lock);
	return owner;
}
EXPORT_SYMBOL_IF_KUNIT(som_pool_block_owner);

/*
 * A free block no claim has reserved, in a chunk of @tier, on @nid or
 * (unless @exact) the nearest node with one that @claim may use.
 */
static unsigned long som_pool_take_spare(struct som_pool *pool,
					 const struct som_claim *claim,
					 int nid, bool exact, int tier)
{
	unsigned long bfn = SOM_NO_BLOCK;
	struct som_pool_set *set;
	struct som_chunk *chunk;
	unsigned int i;
	int n;

	if (som_pool_lock_stocked(pool, GFP_KERNEL))
		return SOM_NO_BLOCK;
	for (n = som_next_node(nid, NUMA_NO_NODE); n < nr_node_ids;
	     n = exact ? nr_node_ids : som_next_node(nid, n)) {
		if (!som_claim_allows(claim, n))
			continue;
		set = som_pool_set(pool, n, claim->unmovable);
		if (!som_set_spare(set))
			continue;
		i = som_set_pick_block(pool, set, som_pick_copy, tier, &chunk);
		if (i < SOM_BLOCKS_PER_CHUNK) {
			som_chunk_take(pool, chunk, i);
			bfn = som_chunk_bfn(chunk, i);
			break;
		}
	}
	spin_unlock(&pool->lock);
	return bfn;
}

/**
 * som_pool_alloc_spare() - allocate a block to copy a moving block into
 * @pool: the pool
 * @claim: the claim of the region the block moves for: its kind and
 *	nodes count
 * @nid: the node wanted
 * @exact: only @nid will do; otherwise the nearest node with room
 *
 * The block comes from what no claim has reserved, and is not zeroed: the
 * copy overwrites all of it. The moving block's old home, freed after the
 * copy, gives the room back, so that a move never changes how much memory
 * is spare, only where. Any tier will do.
 *
 * Context: Takes the pool lock.
 * Return: the block frame number, or SOM_NO_BLOCK if there is no room.
 */
unsigned long som_pool_alloc_spare(struct som_pool *pool,
				   const struct som_claim *claim, int nid,
				   bool exact)
{
	return som_pool_take_spare(pool, claim, nid, exact, SOM_TIER_ANY);
}
EXPORT_SYMBOL_IF_KUNIT(som_pool_alloc_spare);

/**
 * som_pool_alloc_spare_tier() - som_pool_alloc_spare() in one tier
 * @pool: the pool
 * @claim: as for som_pool_alloc_spare()
 * @nid: the node wanted
 * @exact: only @nid will do; otherwise the nearest node with room
 * @tier: SOM_TIER_FAST or SOM_TIER_SLOW
 *
 * Context: Takes the pool lock.
 * Return: the block frame number, or SOM_NO_BLOCK if the tier has no room
 * that @claim may use.
 */
unsigned long som_pool_alloc_spare_tier(struct som_pool *pool,
					const struct som_claim *claim,
					int nid, bool exact, int tier)
{
	return som_pool_take_spare(pool, claim, nid, exact, tier);
}

/**
 * som_pool_assemble_take() - allocate a given free block of a chunk a GiB
 *	is being assembled in
 * @pool: the pool
 * @bfn: the block
 *
 * The caller copies into the block, so it is not zeroed. Like a spare
 * block, it comes from what no claim has reserved. Waits if the zeroing
 * worker is on it.
 *
 * Context: Process context, may sleep. Takes the pool lock.
 * Return: 0; -EINVAL if the block is not a free block of such a chunk
 * (a fault took it); -ENOSPC if its set has no unreserved block left.
 */
int som_pool_assemble_take(struct som_pool *pool, unsigned long bfn)
{
	unsigned int i = bfn & (SOM_BLOCKS_PER_CHUNK - 1);
	struct som_chunk *chunk;

	might_sleep();
	for (;;) {
		if (som_pool_lock_stocked(pool, GFP_KERNEL))
			return -ENOMEM;
		chunk = som_pool_find(pool, som_bfn_to_cfn(bfn));
		if (!chunk || !chunk->assembling ||
		    !som_chunk_is_free(chunk, i)) {
			spin_unlock(&pool->lock);
			return -EINVAL;
		}
		if (!som_set_spare(som_chunk_set(pool, chunk))) {
			spin_unlock(&pool->lock);
			return -ENOSPC;
		}
		if (pool->zeroing != bfn)
			break;
		som_pool_wait_zeroing(pool);
	}
	som_chunk_take(pool, chunk, i);
	spin_unlock(&pool->lock);
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(som_pool_assemble_take);
