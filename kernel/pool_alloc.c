// SPDX-License-Identifier: GPL-2.0
/*
 * som pool: handing out blocks and whole chunks, taking blocks back, and
 * where a block is (its node, its kernel address).
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
#include "som_trace.h"

/*
 * A fault wants a zeroed block before a dirty one, and one from a chunk
 * already in use before one from an untouched chunk, so that untouched
 * chunks stay whole for 1 GiB mappings.
 */
const struct som_pick_pref som_pick_fault[SOM_PICK_PREFS] = {
	{ true, false }, { true, true }, { false, false }, { false, true },
};

/* Pick a free block of @set, of chunks of @tier, in the order of @prefs. */
unsigned int som_set_pick_block(struct som_pool *pool,
				struct som_pool_set *set,
				const struct som_pick_pref *prefs, int tier,
				struct som_chunk **chunkp)
{
	struct som_chunk *chunk;
	unsigned int p, i;

	for (p = 0; p < SOM_PICK_PREFS; p++) {
		list_for_each_entry(chunk, &set->chunks, set_list) {
			bool whole = chunk->nr_free == SOM_BLOCKS_PER_CHUNK;

			if (!chunk->nr_free || whole != prefs[p].whole ||
			    !som_chunk_in_tier(chunk, tier))
				continue;
			i = som_chunk_find(pool, chunk, prefs[p].zeroed);
			if (i < SOM_BLOCKS_PER_CHUNK) {
				*chunkp = chunk;
				return i;
			}
		}
	}
	return SOM_BLOCKS_PER_CHUNK;
}

/*
 * A fault's last resort: a free block of a chunk of @set that a GiB is
 * being assembled in. The assembly finds the chunk changed and gives up.
 */
unsigned int som_set_pick_assembling(struct som_pool *pool,
				     struct som_pool_set *set,
				     struct som_chunk **chunkp)
{
	struct som_chunk *chunk;
	unsigned int i;

	list_for_each_entry(chunk, &pool->chunks, list) {
		if (!chunk->assembling || !chunk->nr_free ||
		    som_chunk_set(pool, chunk) != set)
			continue;
		i = som_chunk_find(pool, chunk, true);
		if (i == SOM_BLOCKS_PER_CHUNK)
			i = som_chunk_find(pool, chunk, false);
		if (i < SOM_BLOCKS_PER_CHUNK) {
			*chunkp = chunk;
			return i;
		}
	}
	return SOM_BLOCKS_PER_CHUNK;
}

/*
 * A whole free chunk of @set of @tier, a fully zeroed one first, or NULL.
 * SOM_TIER_ANY prefers the fast tier.
 */
struct som_chunk *som_set_pick_chunk(struct som_pool *pool,
				     struct som_pool_set *set, int tier)
{
	struct som_chunk *chunk, *pick = NULL;

	if (tier == SOM_TIER_ANY) {
		pick = som_set_pick_chunk(pool, set, SOM_TIER_FAST);
		return pick ?: som_set_pick_chunk(pool, set, SOM_TIER_SLOW);
	}
	list_for_each_entry(chunk, &set->chunks, set_list) {
		if (chunk->nr_free != SOM_BLOCKS_PER_CHUNK ||
		    !som_chunk_in_tier(chunk, tier))
			continue;
		if (!pick || (pick->nr_dirty && !chunk->nr_dirty) ||
		    som_chunk_is_zeroing(pool, pick))
			pick = chunk;
	}
	return pick;
}

/*
 * Allocate a block from @claim's reservation; zero it if @zero, else
 * prefer a dirty one (a caller that overwrites all of it). With @back,
 * for an index paged out: one of @claim's promises kept by the store
 * becomes a reservation first (som_claim_back()).
 */
static unsigned long som_pool_take_block(struct som_pool *pool,
					 struct som_claim *claim, pgoff_t idx,
					 bool zero, bool back)
{
	const struct som_pick_pref *prefs = zero ? som_pick_fault :
						   som_pick_copy;
	int target = som_claim_target(claim, idx), nid;
	struct som_pool_set *set;
	struct som_chunk *chunk;
	unsigned int i;
	bool dirty;

	might_sleep();
	for (;;) {
		/* The block is reserved: its 128 bytes of bits cannot fail. */
		som_pool_lock_stocked(pool, GFP_KERNEL | __GFP_NOFAIL);
		if (back) {
			if (!som_claim_back(pool, claim, target)) {
				spin_unlock(&pool->lock);
				return SOM_NO_BLOCK;
			}
			back = false;
		}
		if (!claim->nr_reserved && claim->nr_lost &&
		    !som_claim_regain(pool, claim, target)) {
			spin_unlock(&pool->lock);
			return SOM_NO_BLOCK;
		}
		if (WARN_ON_ONCE(!claim->nr_reserved)) {
			spin_unlock(&pool->lock);
			return SOM_NO_BLOCK;
		}
		for (nid = som_next_node(target, NUMA_NO_NODE);
		     nid < nr_node_ids; nid = som_next_node(target, nid))
			if (som_claim_gather(pool, claim, nid, 1))
				break;
		if (WARN_ON_ONCE(nid >= nr_node_ids)) {
			spin_unlock(&pool->lock);
			return SOM_NO_BLOCK;
		}
		set = som_pool_set(pool, nid, claim->unmovable);
		i = som_set_pick_block(pool, set, prefs,
				       SOM_TIER_FAST, &chunk);
		if (i == SOM_BLOCKS_PER_CHUNK)
			i = som_set_pick_block(pool, set, prefs,
					       SOM_TIER_SLOW, &chunk);
		if (i == SOM_BLOCKS_PER_CHUNK)
			i = som_set_pick_assembling(pool, set, &chunk);
		if (i < SOM_BLOCKS_PER_CHUNK)
			break;
		/* The only free block of the set is the one being zeroed. */
		som_pool_wait_zeroing(pool);
	}
	set->nr_reserved--;
	claim->node_reserved[nid]--;
	claim->nr_reserved--;
	dirty = som_chunk_take(pool, chunk, i);
	spin_unlock(&pool->lock);

	if (dirty && zero)
		som_pool_zero_block(pool, chunk, i, false);
	trace_som_alloc(som_chunk_bfn(chunk, i), 1, nid, dirty && zero);
	return som_chunk_bfn(chunk, i);
}

/**
 * som_pool_alloc_block() - allocate one zeroed 2 MiB block
 * @pool: the pool
 * @claim: the claim whose reservation the block consumes
 * @idx: the 2 MiB index of the block in its region, for interleaving
 *
 * Takes the block from the node @claim's policy wants for @idx if it can,
 * else from the nearest node it holds a reservation on.
 *
 * Context: Process context, may sleep (it zeroes 2 MiB when no pre-zeroed
 * block is left). Takes the pool lock.
 * A claim that memory errors cost reservations (struct som_claim
 * @nr_lost) gets one back here if some set it may use has an unpromised
 * block.
 *
 * Return: the block frame number, or SOM_NO_BLOCK if @claim holds no
 * reservation.
 */
unsigned long som_pool_alloc_block(struct som_pool *pool,
				   struct som_claim *claim, pgoff_t idx)
{
	return som_pool_take_block(pool, claim, idx, true, false);
}
EXPORT_SYMBOL_IF_KUNIT(som_pool_alloc_block);

/**
 * som_pool_alloc_block_back() - allocate a block to read an index paged
 *	out back into
 * @pool: the pool
 * @claim: the claim of the index, one of whose paged-out promises
 *	(struct som_claim @nr_out) the block keeps
 * @idx: the 2 MiB index of the block in its region, for interleaving
 *
 * The block is taken from those no claim holds, or failing that from
 * one of @claim's own reservations, which then becomes a lost one: the
 * index that reservation was for is filled later, as other lost ones
 * are. It is not zeroed (a dirty block is taken first): the caller
 * writes all of it before anything maps it.
 *
 * Context: Process context, may sleep. Takes the pool lock.
 * Return: the block frame number, or SOM_NO_BLOCK if no block is
 * unpromised on the nodes @claim may use and it holds no reservation:
 * a block must be paged out first (pressure.c).
 */
unsigned long som_pool_alloc_block_back(struct som_pool *pool,
					struct som_claim *claim, pgoff_t idx)
{
	return som_pool_take_block(pool, claim, idx, false, true);
}
EXPORT_SYMBOL_IF_KUNIT(som_pool_alloc_block_back);

/**
 * som_pool_alloc_chunk() - allocate a whole zeroed 1 GiB chunk
 * @pool: the pool
 * @claim: the claim whose reservation the chunk consumes
 * @idx: the 2 MiB index of the chunk's first block in its region
 *
 * Consumes SOM_BLOCKS_PER_CHUNK blocks of @claim's reservations. Looks for
 * a whole free chunk on the node the policy wants, then on the nearest
 * others; prefers a chunk that is already fully zeroed, otherwise zeroes
 * the dirty blocks of the chunk it takes.
 *
 * Context: Process context, may sleep. Takes the pool lock.
 * Return: the frame number of the chunk's first block, or SOM_NO_BLOCK if
 * no chunk is entirely free where @claim may take it (the caller then maps
 * 2 MiB blocks instead).
 */
unsigned long som_pool_alloc_chunk(struct som_pool *pool,
				   struct som_claim *claim, pgoff_t idx)
{
	DECLARE_BITMAP(dirty, SOM_BLOCKS_PER_CHUNK);
	int target = som_claim_target(claim, idx), nid;
	struct som_chunk *pick = NULL;
	unsigned int i;

	might_sleep();
	for (;;) {
		spin_lock(&pool->lock);
		if (claim->nr_reserved < SOM_BLOCKS_PER_CHUNK) {
			spin_unlock(&pool->lock);
			return SOM_NO_BLOCK;
		}
		for (nid = som_next_node(target, NUMA_NO_NODE);
		     nid < nr_node_ids; nid = som_next_node(target, nid)) {
			struct som_pool_set *set;

			if (!som_claim_allows(claim, nid))
				continue;
			set = som_pool_set(pool, nid, claim->unmovable);
			pick = som_set_pick_chunk(pool, set, SOM_TIER_ANY);
			if (pick && som_claim_gather(pool, claim, nid,
						     SOM_BLOCKS_PER_CHUNK))
				break;
			pick = NULL;
		}
		if (!pick) {
			spin_unlock(&pool->lock);
			return SOM_NO_BLOCK;
		}
		if (!som_chunk_is_zeroing(pool, pick))
			break;
		/* Each wait ends with one more block of @pick zeroed. */
		som_pool_wait_zeroing(pool);
	}
	som_chunk_dirty_bits(pick, dirty);
	som_chunk_set(pool, pick)->nr_reserved -= SOM_BLOCKS_PER_CHUNK;
	claim->node_reserved[nid] -= SOM_BLOCKS_PER_CHUNK;
	claim->nr_reserved -= SOM_BLOCKS_PER_CHUNK;
	som_chunk_count(pool, pick, -(long)pick->nr_free,
			-(long)pick->nr_dirty);
	pick->nr_free = 0;
	pick->nr_dirty = 0;
	som_chunk_drop_bits(pool, pick);
	spin_unlock(&pool->lock);

	for_each_set_bit(i, dirty, SOM_BLOCKS_PER_CHUNK) {
		som_pool_zero_block(pool, pick, i, false);
		cond_resched();
	}
	if (trace_som_alloc_enabled())
		trace_som_alloc(som_chunk_bfn(pick, 0), SOM_BLOCKS_PER_CHUNK,
				nid, bitmap_weight(dirty, SOM_BLOCKS_PER_CHUNK));
	return som_chunk_bfn(pick, 0);
}
EXPORT_SYMBOL_IF_KUNIT(som_pool_alloc_chunk);

/**
 * som_pool_free_block() - give a block back to the pool
 * @pool: the pool
 * @bfn: frame number of a block allocated from @pool
 *
 * The block becomes free and dirty; the zeroing worker clears it. This does
 * not restore the reservation the block was allocated under. Cannot fail:
 * a chunk that had all its blocks allocated gets its bits (128 bytes)
 * with __GFP_NOFAIL.
 *
 * Context: Process context, may sleep. Takes the pool lock.
 */
void som_pool_free_block(struct som_pool *pool, unsigned long bfn)
{
	unsigned int i = bfn & (SOM_BLOCKS_PER_CHUNK - 1);
	struct som_chunk *chunk;

	som_pool_lock_stocked(pool, GFP_KERNEL | __GFP_NOFAIL);
	chunk = som_pool_find(pool, bfn >> (SOM_CHUNK_SHIFT - SOM_BLOCK_SHIFT));
	if (WARN_ON_ONCE(!chunk || som_chunk_is_free(chunk, i))) {
		spin_unlock(&pool->lock);
		return;
	}
	/* A block with a poisoned page stays allocated, to nobody. */
	if (som_pool_retire_locked(pool, bfn)) {
		spin_unlock(&pool->lock);
		trace_som_free(bfn, true);
		return;
	}
	som_chunk_set_block(pool, chunk, i, true, true);
	spin_unlock(&pool->lock);
	trace_som_free(bfn, false);
	queue_work(system_dfl_wq, &pool->zero_work);
}
EXPORT_SYMBOL_IF_KUNIT(som_pool_free_block);

/**
 * som_pool_free_block_out() - give back the block of an index paged out
 * @pool: the pool
 * @claim: the claim the block was allocated for
 * @bfn: frame number of a block allocated from @pool
 *
 * The index's promise is kept by the store from now on (struct
 * som_claim @nr_out): the block is freed as som_pool_free_block() frees
 * it, unpromised, so that paging out makes room in the pool. Reading
 * the index back takes a block again (som_pool_alloc_block_back()).
 *
 * Context: Process context, may sleep. Takes the pool lock.
 */
void som_pool_free_block_out(struct som_pool *pool, struct som_claim *claim,
			     unsigned long bfn)
{
	unsigned int i = bfn & (SOM_BLOCKS_PER_CHUNK - 1);
	struct som_chunk *chunk;
	bool retired;

	som_pool_lock_stocked(pool, GFP_KERNEL | __GFP_NOFAIL);
	chunk = som_pool_find(pool, bfn >> (SOM_CHUNK_SHIFT - SOM_BLOCK_SHIFT));
	if (WARN_ON_ONCE(!chunk || som_chunk_is_free(chunk, i))) {
		spin_unlock(&pool->lock);
		return;
	}
	/* Held for the index first: the pool is not seen freer meanwhile. */
	som_claim_out(pool, claim, 1);
	retired = som_pool_retire_locked(pool, bfn);
	if (!retired)
		som_chunk_set_block(pool, chunk, i, true, true);
	som_pool_check_low(pool);
	spin_unlock(&pool->lock);
	trace_som_free(bfn, retired);
	if (!retired)
		queue_work(system_dfl_wq, &pool->zero_work);
}
EXPORT_SYMBOL_IF_KUNIT(som_pool_free_block_out);

/**
 * som_pool_drop_out() - forget indices paged out that are being released
 * @pool: the pool
 * @claim: their claim
 * @nr: how many; their slots are freed by the caller
 *
 * Context: Takes the pool lock.
 */
void som_pool_drop_out(struct som_pool *pool, struct som_claim *claim,
		       unsigned long nr)
{
	spin_lock(&pool->lock);
	if (WARN_ON_ONCE(nr > claim->nr_out))
		nr = claim->nr_out;
	som_claim_out(pool, claim, -(long)nr);
	som_pool_check_low(pool);
	spin_unlock(&pool->lock);
}
EXPORT_SYMBOL_IF_KUNIT(som_pool_drop_out);

/**
 * som_pool_block_vaddr() - kernel address of an allocated block
 * @pool: the pool
 * @bfn: frame number of a block of @pool
 *
 * Context: Takes the pool lock. A chunk with an allocated block cannot be
 * removed, so the address stays valid while the caller owns the block.
 * Return: the write-back kernel mapping of the block, or NULL.
 */
void *som_pool_block_vaddr(struct som_pool *pool, unsigned long bfn)
{
	struct som_chunk *chunk;

	spin_lock(&pool->lock);
	chunk = som_pool_find(pool, bfn >> (SOM_CHUNK_SHIFT - SOM_BLOCK_SHIFT));
	spin_unlock(&pool->lock);
	if (!chunk)
		return NULL;
	return som_chunk_block_vaddr(chunk, bfn & (SOM_BLOCKS_PER_CHUNK - 1));
}
EXPORT_SYMBOL_IF_KUNIT(som_pool_block_vaddr);

/**
 * som_pool_block_node() - where an allocated block lies
 * @pool: the pool
 * @bfn: frame number of a block of @pool
 * @unmovable: set to whether the block's chunk is unmovable
 *
 * Context: Takes the pool lock.
 * Return: the block's NUMA node, or NUMA_NO_NODE if @bfn is not in @pool.
 */
int som_pool_block_node(struct som_pool *pool, unsigned long bfn,
			bool *unmovable)
{
	struct som_chunk *chunk;
	int nid = NUMA_NO_NODE;

	spin_lock(&pool->lock);
	chunk = som_pool_find(pool, bfn >> (SOM_CHUNK_SHIFT - SOM_BLOCK_SHIFT));
	if (chunk) {
		nid = chunk->nid;
		*unmovable = chunk->unmovable;
	}
	spin_unlock(&pool->lock);
	return nid;
}
EXPORT_SYMBOL_IF_KUNIT(som_pool_block_node);

/**
 * som_pool_block_tier() - the tier of an allocated block
 * @pool: the pool
 * @bfn: frame number of a block of @pool
 *
 * Context: Takes the pool lock.
 * Return: SOM_TIER_FAST or SOM_TIER_SLOW, or -ENOENT if @bfn is not in
 * @pool.
 */
int som_pool_block_tier(struct som_pool *pool, unsigned long bfn)
{
	struct som_chunk *chunk;
	int tier = -ENOENT;

	spin_lock(&pool->lock);
	chunk = som_pool_find(pool, som_bfn_to_cfn(bfn));
	if (chunk)
		tier = chunk->slow ? SOM_TIER_SLOW : SOM_TIER_FAST;
	spin_unlock(&pool->lock);
	return tier;
}
EXPORT_SYMBOL_IF_KUNIT(som_pool_block_tier);

/**
 * som_pool_set_owner_tier() - put every chunk of an owner in its tier
 * @pool: the pool
 * @owner: the owner given to som_pool_add_chunk()
 * @slow: where the owner keeps its tier: read under the pool lock, so
 *	that of calls racing with a change, the last applies the new value
 *
 * Blocks stay where they are: tiering moves them at its next pass.
 *
 * Context: Takes the pool lock.
 */
void som_pool_set_owner_tier(struct som_pool *pool, const void *owner,
			     const bool *slow)
{
	struct som_chunk *chunk;

	spin_lock(&pool->lock);
	list_for_each_entry(chunk, &pool->chunks, list)
		if (chunk->owner == owner)
			chunk->slow = READ_ONCE(*slow);
	spin_unlock(&pool->lock);
}

/**
 * som_pool_tier_stats() - the pool's memory, tier by tier
 * @pool: the pool
 * @stats: filled in, indexed by enum som_tier
 *
 * Context: Takes the pool lock.
 */
void som_pool_tier_stats(struct som_pool *pool,
			 struct som_tier_stats stats[SOM_TIER_NR])
{
	struct som_chunk *chunk;
	struct som_tier_stats *st;

	memset(stats, 0, sizeof(*stats) * SOM_TIER_NR);
	spin_lock(&pool->lock);
	list_for_each_entry(chunk, &pool->chunks, list) {
		st = &stats[chunk->slow ? SOM_TIER_SLOW : SOM_TIER_FAST];
		st->total_bytes += SOM_CHUNK_SIZE;
		st->free_bytes += (u64)chunk->nr_free * SOM_BLOCK_SIZE;
	}
	spin_unlock(&pool->lock);
}
