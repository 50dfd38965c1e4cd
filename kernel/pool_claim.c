// SPDX-License-Identifier: GPL-2.0
/*
 * som pool: claims, what a region holds of the pool and where it wants
 * its memory: placement policies, and reservations kept per set so that
 * a reserved allocation always finds a block.
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

/**
 * som_claim_allows() - may a claim hold memory on a node at all?
 * @claim: the claim
 * @nid: the node
 */
bool som_claim_allows(const struct som_claim *claim, int nid)
{
	return claim->mode != SOM_CLAIM_BIND || node_isset(nid, claim->nodes);
}
EXPORT_SYMBOL_IF_KUNIT(som_claim_allows);

/**
 * som_claim_target() - the node a claim wants a block on
 * @claim: the claim
 * @idx: the 2 MiB index of the block in its region
 *
 * Return: the node; this CPU's for SOM_CLAIM_LOCAL and SOM_CLAIM_BIND,
 * whose allocations go to the nearest node allowed from there.
 */
int som_claim_target(const struct som_claim *claim, pgoff_t idx)
{
	unsigned int nth;

	switch (claim->mode) {
	case SOM_CLAIM_PREFERRED:
		return first_node(claim->nodes);
	case SOM_CLAIM_INTERLEAVE:
		nth = (idx >> claim->interleave_shift) %
		      nodes_weight(claim->nodes);
		return find_nth_bit(nodes_addr(claim->nodes), MAX_NUMNODES,
				    nth);
	case SOM_CLAIM_BIND:
	case SOM_CLAIM_LOCAL:
	default:
		return numa_node_id();
	}
}
EXPORT_SYMBOL_IF_KUNIT(som_claim_target);

/*
 * The node after @prev in the order of distance from @from (ties broken
 * by node number), @from itself first; nr_node_ids after the last. With
 * @prev == NUMA_NO_NODE, the first, which is @from.
 */
int som_next_node(int from, int prev)
{
	int n, best = nr_node_ids, d, best_d = INT_MAX, prev_d;

	if (prev == NUMA_NO_NODE)
		return from;
	prev_d = prev == from ? -1 : node_distance(from, prev);
	for (n = 0; n < nr_node_ids; n++) {
		if (n == from)
			continue;
		d = node_distance(from, n);
		if (d < prev_d || (d == prev_d && n <= prev))
			continue;
		if (d < best_d || (d == best_d && n < best)) {
			best = n;
			best_d = d;
		}
	}
	return best;
}

/* Move @nr of @claim's reservations from node @from to node @to. */
static void som_claim_move(struct som_pool *pool, struct som_claim *claim,
			   int from, int to, unsigned long nr)
{
	lockdep_assert_held(&pool->lock);
	som_pool_set(pool, from, claim->unmovable)->nr_reserved -= nr;
	claim->node_reserved[from] -= nr;
	som_pool_set(pool, to, claim->unmovable)->nr_reserved += nr;
	claim->node_reserved[to] += nr;
}

/*
 * Make @claim hold at least @need reservations on node @nid by moving
 * some from other nodes, if @nid's set has room for them.
 */
bool som_claim_gather(struct som_pool *pool, struct som_claim *claim,
		      int nid, unsigned long need)
{
	unsigned long have = claim->node_reserved[nid], k;
	int n;

	lockdep_assert_held(&pool->lock);
	if (have >= need)
		return true;
	if (!som_claim_allows(claim, nid) || claim->nr_reserved < need ||
	    som_set_spare(som_pool_set(pool, nid, claim->unmovable)) <
	    need - have)
		return false;
	/* Take from the highest-numbered nodes first. */
	for (n = nr_node_ids - 1; n >= 0 && have < need; n--) {
		if (n == nid || !claim->node_reserved[n])
			continue;
		k = min(claim->node_reserved[n], need - have);
		som_claim_move(pool, claim, n, nid, k);
		have += k;
	}
	return true;
}

/**
 * som_claim_init() - an empty claim with the default policy
 * @claim: the claim
 *
 * The default is SOM_CLAIM_LOCAL on movable chunks. The caller may change
 * the policy fields while the claim reserves nothing.
 *
 * Context: Process context, may sleep.
 * Return: 0 or -ENOMEM.
 */
int som_claim_init(struct som_claim *claim)
{
	memset(claim, 0, sizeof(*claim));
	claim->mode = SOM_CLAIM_LOCAL;
	claim->node_reserved = kcalloc(nr_node_ids,
				       sizeof(*claim->node_reserved),
				       GFP_KERNEL_ACCOUNT);
	return claim->node_reserved ? 0 : -ENOMEM;
}
EXPORT_SYMBOL_IF_KUNIT(som_claim_init);

/**
 * som_claim_destroy() - free a claim that reserves nothing any more
 * @claim: the claim
 */
void som_claim_destroy(struct som_claim *claim)
{
	WARN_ON_ONCE(claim->nr_reserved || claim->nr_lost || claim->nr_out);
	kfree(claim->node_reserved);
	claim->node_reserved = NULL;
}
EXPORT_SYMBOL_IF_KUNIT(som_claim_destroy);

/**
 * som_pool_reserve() - promise blocks to a claim
 * @pool: the pool
 * @claim: the claim
 * @nr: number of 2 MiB blocks
 *
 * The blocks are reserved on the nodes @claim may use, nearest to the node
 * its policy names (or this CPU's) first.
 *
 * Context: Takes the pool lock.
 * Return: 0, or -ENOMEM if fewer than @nr blocks of the claim's kind on
 * the nodes it may use are neither allocated nor reserved (less the lost
 * reservations of movable claims, plus the swap store's room if the pool
 * overcommits: pool_overcommit.c).
 */
int som_pool_reserve(struct som_pool *pool, struct som_claim *claim,
		     unsigned long nr)
{
	unsigned long spare = 0, k;
	int nid, home = som_claim_target(claim, 0);

	spin_lock(&pool->lock);
	for (nid = 0; nid < nr_node_ids; nid++)
		if (som_claim_allows(claim, nid))
			spare += som_set_spare(som_pool_set(pool, nid,
							    claim->unmovable));
	if (nr > som_pool_avail(pool, claim, spare)) {
		spin_unlock(&pool->lock);
		trace_som_reserve(nr, -ENOMEM);
		return -ENOMEM;
	}
	trace_som_reserve(nr, 0);
	/* What the sets cannot back, the store's room does. */
	if (nr > spare) {
		som_claim_lose(pool, claim, nr - spare);
		nr = spare;
	}
	claim->nr_reserved += nr;
	for (nid = som_next_node(home, NUMA_NO_NODE); nid < nr_node_ids;
	     nid = som_next_node(home, nid)) {
		struct som_pool_set *set = som_pool_set(pool, nid,
							claim->unmovable);

		if (!nr)
			break;
		if (!som_claim_allows(claim, nid))
			continue;
		k = min(nr, som_set_spare(set));
		set->nr_reserved += k;
		claim->node_reserved[nid] += k;
		nr -= k;
	}
	som_pool_check_low(pool);
	spin_unlock(&pool->lock);
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(som_pool_reserve);
ALLOW_ERROR_INJECTION(som_pool_reserve, ERRNO);

/**
 * som_claim_set_policy() - change the placement policy of a claim
 * @pool: the pool
 * @claim: the claim, of a region whose lock the caller holds
 * @mode: the new mode
 * @nodes: its nodes
 * @interleave_shift: for SOM_CLAIM_INTERLEAVE, log2 of the blocks per step
 *
 * Reservations held on nodes the new policy does not allow move to the
 * nodes it does, nearest to its first node first; all or nothing. Blocks
 * already allocated are the caller's to move.
 *
 * Context: Takes the pool lock.
 * Return: 0, or -ENOMEM if the allowed nodes have no room for the
 * reservations that must move there.
 */
int som_claim_set_policy(struct som_pool *pool, struct som_claim *claim,
			 enum som_claim_mode mode, const nodemask_t *nodes,
			 unsigned int interleave_shift)
{
	struct som_claim new = *claim;
	unsigned long need = 0, room = 0, k;
	int n, to, home;

	new.mode = mode;
	new.nodes = *nodes;
	new.interleave_shift = interleave_shift;
	home = som_claim_target(&new, 0);
	spin_lock(&pool->lock);
	for (n = 0; n < nr_node_ids; n++) {
		if (som_claim_allows(&new, n))
			room += som_set_spare(som_pool_set(pool, n,
							   claim->unmovable));
		else
			need += claim->node_reserved[n];
	}
	if (need > room) {
		spin_unlock(&pool->lock);
		return -ENOMEM;
	}
	for (n = 0; n < nr_node_ids; n++) {
		if (som_claim_allows(&new, n))
			continue;
		for (to = som_next_node(home, NUMA_NO_NODE);
		     to < nr_node_ids && claim->node_reserved[n];
		     to = som_next_node(home, to)) {
			if (!som_claim_allows(&new, to))
				continue;
			k = min(claim->node_reserved[n],
				som_set_spare(som_pool_set(pool, to,
							   claim->unmovable)));
			som_claim_move(pool, claim, n, to, k);
		}
	}
	claim->mode = mode;
	claim->nodes = *nodes;
	claim->interleave_shift = interleave_shift;
	spin_unlock(&pool->lock);
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(som_claim_set_policy);

/**
 * som_pool_unreserve() - drop blocks reserved with som_pool_reserve()
 * @pool: the pool
 * @claim: the claim
 * @nr: number of reserved blocks that will not be allocated
 *
 * Context: Takes the pool lock.
 */
void som_pool_unreserve(struct som_pool *pool, struct som_claim *claim,
			unsigned long nr)
{
	unsigned long k;
	int nid;

	trace_som_unreserve(nr);
	spin_lock(&pool->lock);
	/* Reservations the pool lost go first: they back nothing. */
	k = min(nr, claim->nr_lost);
	som_claim_lose(pool, claim, -(long)k);
	nr -= k;
	if (WARN_ON_ONCE(nr > claim->nr_reserved))
		nr = claim->nr_reserved;
	claim->nr_reserved -= nr;
	for (nid = nr_node_ids - 1; nid >= 0 && nr; nid--) {
		k = min(nr, claim->node_reserved[nid]);
		claim->node_reserved[nid] -= k;
		som_pool_set(pool, nid, claim->unmovable)->nr_reserved -= k;
		nr -= k;
	}
	som_pool_check_low(pool);
	spin_unlock(&pool->lock);
}
EXPORT_SYMBOL_IF_KUNIT(som_pool_unreserve);

/*
 * A memory error takes a free block of the set of @nid and @unmovable,
 * whose free blocks are all promised: if @claim holds a reservation on
 * that set, move it to another set @claim may use that has an unpromised
 * block, nearest first; with none, the pool cannot keep it, and it becomes
 * one of @claim's lost reservations (struct som_claim). Returns whether
 * @claim gave one up.
 */
bool som_claim_shed(struct som_pool *pool, struct som_claim *claim, int nid,
		    bool unmovable)
{
	int n;

	lockdep_assert_held(&pool->lock);
	if (claim->unmovable != unmovable || !claim->node_reserved[nid])
		return false;
	for (n = som_next_node(nid, NUMA_NO_NODE); n < nr_node_ids;
	     n = som_next_node(nid, n)) {
		if (n == nid || !som_claim_allows(claim, n) ||
		    !som_set_spare(som_pool_set(pool, n, unmovable)))
			continue;
		som_claim_move(pool, claim, nid, n, 1);
		return true;
	}
	som_pool_set(pool, nid, unmovable)->nr_reserved--;
	claim->node_reserved[nid]--;
	claim->nr_reserved--;
	som_claim_lose(pool, claim, 1);
	return true;
}

/**
 * som_pool_add_claim() - make a claim known to the pool
 * @pool: the pool
 * @claim: a claim from som_claim_init()
 *
 * A memory error in a free block that reservations count on finds the
 * claims holding them this way (pool_poison.c).
 *
 * Context: Takes the pool lock.
 */
void som_pool_add_claim(struct som_pool *pool, struct som_claim *claim)
{
	spin_lock(&pool->lock);
	list_add_tail(&claim->pool_link, &pool->claims);
	spin_unlock(&pool->lock);
}
EXPORT_SYMBOL_IF_KUNIT(som_pool_add_claim);

/**
 * som_pool_del_claim() - forget a claim added with som_pool_add_claim()
 * @pool: the pool
 * @claim: the claim
 *
 * Context: Takes the pool lock.
 */
void som_pool_del_claim(struct som_pool *pool, struct som_claim *claim)
{
	spin_lock(&pool->lock);
	list_del(&claim->pool_link);
	spin_unlock(&pool->lock);
}
EXPORT_SYMBOL_IF_KUNIT(som_pool_del_claim);

/*
 * Give @claim one more reservation, on the set nearest @target that has
 * an unpromised block and that it may use. Returns whether it could.
 */
bool som_claim_take_spare(struct som_pool *pool, struct som_claim *claim,
			  int target)
{
	struct som_pool_set *set;
	int nid;

	lockdep_assert_held(&pool->lock);
	for (nid = som_next_node(target, NUMA_NO_NODE); nid < nr_node_ids;
	     nid = som_next_node(target, nid)) {
		set = som_pool_set(pool, nid, claim->unmovable);
		if (!som_claim_allows(claim, nid) || !som_set_spare(set))
			continue;
		set->nr_reserved++;
		claim->node_reserved[nid]++;
		claim->nr_reserved++;
		return true;
	}
	return false;
}

/*
 * Turn one of @claim's lost reservations back into a reservation, on the
 * set nearest @target that has an unpromised block. Returns whether it
 * could.
 */
bool som_claim_regain(struct som_pool *pool, struct som_claim *claim,
		      int target)
{
	if (!som_claim_take_spare(pool, claim, target))
		return false;
	som_claim_lose(pool, claim, -1);
	return true;
}
