// SPDX-License-Identifier: GPL-2.0
/*
 * som pool: promising more than the pool holds. A claim's indices that
 * hold no block are promised one in three ways (struct som_claim): by a
 * reservation, a block of a set held for it; by a lost reservation, held
 * nowhere; or by the swap store, for an index paged out. Over the
 * movable sets the pool keeps
 *
 *	allocated + reserved + lost + out <= blocks + room
 *
 * where room is the store's slots less one if the pool overcommits
 * (swap/overcommit), else 0. Without overcommit a block paged out thus
 * leaves its place promised to its index, and reading it back always
 * finds one. With it, mappings may reserve past the pool's blocks: what
 * the sets cannot back becomes lost reservations. A fill that finds no
 * unpromised block for one (or for an index paged out) must have some
 * other block paged out first (pressure.c), and the store has a free slot
 * for that whenever it is needed: with no unpromised block left, the
 * rule says lost + out <= slots - 1, and the slots used are exactly
 * out. The one left over is for a fill that reads a block back, whose
 * slot is free only once the read is done.
 *
 * Unmovable claims are never overcommitted (their memory cannot be paged
 * out to make room), and nor are claims bound to some nodes, since a
 * block paged out elsewhere would not do for them.
 */
#include <kunit/visibility.h>
#include <linux/spinlock.h>

#include "pool_internal.h"

/* Add @nr (or take -@nr) to the lost reservations of @claim. */
void som_claim_lose(struct som_pool *pool, struct som_claim *claim, long nr)
{
	lockdep_assert_held(&pool->lock);
	claim->nr_lost += nr;
	if (!claim->unmovable)
		pool->nr_lost += nr;
}

/* Add @nr (or take -@nr) to the indices of @claim paged out. */
void som_claim_out(struct som_pool *pool, struct som_claim *claim, long nr)
{
	lockdep_assert_held(&pool->lock);
	claim->nr_out += nr;
	if (!claim->unmovable)
		pool->nr_out += nr;
}

/* Unpromised blocks of the movable sets. Caller holds the pool lock. */
unsigned long som_pool_movable_spare(struct som_pool *pool)
{
	unsigned long spare = 0;
	int n;

	lockdep_assert_held(&pool->lock);
	for (n = 0; n < nr_node_ids; n++)
		spare += som_set_spare(som_pool_set(pool, n, false));
	return spare;
}

/* The store's slots the pool may promise, less the one it keeps free. */
static unsigned long som_pool_room(struct som_pool *pool)
{
	lockdep_assert_held(&pool->lock);
	return pool->overcommit && pool->store_slots ?
	       pool->store_slots - 1 : 0;
}

/*
 * How many blocks @claim may still reserve, with @spare unpromised on
 * the nodes it may use: for a movable claim, the lost reservations and
 * the indices paged out of all movable claims come first, and an
 * overcommitting pool adds the store's room, unless @claim is bound to
 * some nodes (whose @spare is then a limit of its own).
 */
unsigned long som_pool_avail(struct som_pool *pool,
			     const struct som_claim *claim,
			     unsigned long spare)
{
	unsigned long all, owed = som_pool_owed(pool);

	lockdep_assert_held(&pool->lock);
	if (claim->unmovable)
		return spare;
	if (claim->mode != SOM_CLAIM_BIND) {
		all = spare + som_pool_room(pool);
		return all > owed ? all - owed : 0;
	}
	/* Bound: what its nodes hold, as far as the whole pool keeps it. */
	all = som_pool_movable_spare(pool);
	return min(spare, all > owed ? all - owed : 0);
}

/*
 * Would the rule still hold with @gone fewer unpromised movable blocks
 * (a source leaving: its free blocks, and the spare blocks its allocated
 * ones move into)?
 */
bool som_pool_keeps_promises(struct som_pool *pool, unsigned long gone)
{
	unsigned long spare = som_pool_movable_spare(pool);

	spare = spare > gone ? spare - gone : 0;
	return spare + som_pool_room(pool) >= som_pool_owed(pool);
}

/*
 * Turn one of @claim's indices paged out into a reservation, on the set
 * nearest @target with an unpromised block, for reading it back; with
 * none, take one of @claim's own reservations, which becomes a lost one.
 * Returns whether either could be done.
 */
bool som_claim_back(struct som_pool *pool, struct som_claim *claim,
		    int target)
{
	lockdep_assert_held(&pool->lock);
	if (WARN_ON_ONCE(!claim->nr_out))
		return false;
	if (som_claim_take_spare(pool, claim, target)) {
		som_claim_out(pool, claim, -1);
		return true;
	}
	if (!claim->nr_reserved)
		return false;
	som_claim_out(pool, claim, -1);
	som_claim_lose(pool, claim, 1);
	return true;
}

/* Low already when paging out becomes possible: start the worker. */
static void som_pool_kick_low(struct som_pool *pool)
{
	lockdep_assert_held(&pool->lock);
	if (pool->short_at_hand && pool->overcommit && pool->store_slots &&
	    pool->pressure)
		pool->pressure(pool);
}

/**
 * som_pool_short() - must a block be paged out before @claim gets one?
 * @pool: the pool
 * @claim: a claim whose fill found no block (som_pool_alloc_block(),
 *	som_pool_alloc_block_back())
 *
 * Return: whether @claim holds a promise that paging out can give a
 * block to: a lost reservation or an index paged out, of a movable claim,
 * with a store in place. If not, the fill fails for good (-ENOMEM), as
 * it does when memory errors took the blocks of a pool without a store.
 */
bool som_pool_short(struct som_pool *pool, struct som_claim *claim)
{
	bool short_of;

	spin_lock(&pool->lock);
	short_of = (claim->nr_lost || claim->nr_out) && !claim->unmovable &&
		   pool->store_slots;
	spin_unlock(&pool->lock);
	return short_of;
}
EXPORT_SYMBOL_IF_KUNIT(som_pool_short);

/**
 * som_pool_claim_backed() - does a block back each reservation of a claim?
 * @pool: the pool
 * @claim: the claim
 *
 * Context: Takes the pool lock.
 * Return: whether @claim holds no lost reservation.
 */
bool som_pool_claim_backed(struct som_pool *pool, struct som_claim *claim)
{
	bool backed;

	spin_lock(&pool->lock);
	backed = !claim->nr_lost;
	spin_unlock(&pool->lock);
	return backed;
}

/**
 * som_pool_set_overcommit() - let movable claims be promised the store
 * @pool: the pool
 * @on: whether they may
 *
 * Promises already made stay when it is turned off.
 *
 * Context: Takes the pool lock.
 */
void som_pool_set_overcommit(struct som_pool *pool, bool on)
{
	spin_lock(&pool->lock);
	pool->overcommit = on;
	som_pool_kick_low(pool);
	spin_unlock(&pool->lock);
}
EXPORT_SYMBOL_IF_KUNIT(som_pool_set_overcommit);

/**
 * som_pool_set_store() - tell the pool how large the swap store is
 * @pool: the pool
 * @slots: its 2 MiB slots; 0 for none
 *
 * Context: Takes the pool lock.
 */
void som_pool_set_store(struct som_pool *pool, unsigned long slots)
{
	spin_lock(&pool->lock);
	pool->store_slots = slots;
	som_pool_kick_low(pool);
	spin_unlock(&pool->lock);
}
EXPORT_SYMBOL_IF_KUNIT(som_pool_set_store);

/**
 * som_pool_drop_store() - stop counting on the swap store, if the pool can
 * @pool: the pool
 *
 * The store may go only if the pool's unpromised movable blocks can back
 * every lost reservation and every index paged out: then no promise
 * depends on the store any more, and reading its blocks back finds room.
 * From here on no reservation counts on it.
 *
 * Context: Takes the pool lock.
 * Return: 0, or -EBUSY if the pool promises more than it holds.
 */
int som_pool_drop_store(struct som_pool *pool)
{
	spin_lock(&pool->lock);
	if (som_pool_owed(pool) > som_pool_movable_spare(pool)) {
		spin_unlock(&pool->lock);
		return -EBUSY;
	}
	pool->store_slots = 0;
	spin_unlock(&pool->lock);
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(som_pool_drop_store);

/**
 * som_pool_overcommitted() - how much more the pool promises than it holds
 * @pool: the pool
 *
 * Context: Takes the pool lock.
 * Return: the lost reservations and indices paged out of movable claims
 * that its unpromised movable blocks could not back, in blocks: 0 unless
 * the pool overcommits.
 */
unsigned long som_pool_overcommitted(struct som_pool *pool)
{
	unsigned long owed, spare;

	spin_lock(&pool->lock);
	owed = som_pool_owed(pool);
	spare = som_pool_movable_spare(pool);
	spin_unlock(&pool->lock);
	return owed > spare ? owed - spare : 0;
}
EXPORT_SYMBOL_IF_KUNIT(som_pool_overcommitted);
