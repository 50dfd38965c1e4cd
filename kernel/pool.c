// SPDX-License-Identifier: GPL-2.0
/*
 * som pool: 1 GiB chunks of physical memory handed out in 2 MiB blocks.
 *
 * A block goes round this cycle:
 *
 *	chunk added ---> free, dirty --(zeroing worker)--> free, zeroed
 *	                     ^                                   |
 *	                     |                          (alloc_block/chunk)
 *	                     +-------(region frees it)-------- in a region
 *
 * Nobody ever receives a block with another owner's bytes in it: the
 * allocator hands out zeroed blocks first and, when there are none left,
 * zeroes a dirty block itself before returning it.
 *
 * Chunks are kept in sets, one per NUMA node and kind (movable or
 * unmovable). A region holds a claim (struct som_claim): its placement
 * policy and how many blocks it has reserved on each node.
 *
 * Accounting: mmap() reserves blocks, the fault that first touches a block
 * consumes one reservation and one free block of the same set. Because
 * nr_reserved <= nr_free always holds for every set, a reserved allocation
 * always finds a block: at worst the one the worker is zeroing, which it
 * then waits for. A fault that wants its block on another node than where
 * the claim's reservation lies moves the reservation there first if that
 * set has room; otherwise it takes the nearest node it holds one on.
 * The pool never sleeps with its spinlock held and never zeroes under it.
 *
 * Nothing here knows about VMAs or what a chunk's owner (its source) is,
 * so that pool_kunit.c can test it alone; its functions are exported for
 * that test only, and only in kernels built with KUnit.
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

#include "pool.h"

static unsigned long som_chunk_bfn(const struct som_chunk *chunk, unsigned int i)
{
	return (chunk->phys >> SOM_BLOCK_SHIFT) + i;
}

static void *som_chunk_block_vaddr(const struct som_chunk *chunk, unsigned int i)
{
	return chunk->vaddr + ((size_t)i << SOM_BLOCK_SHIFT);
}

/* Zero a block, counting what it cost and who paid (see som_zero_stats). */
static void som_pool_zero_block(struct som_pool *pool, struct som_chunk *chunk,
				unsigned int i, bool ahead)
{
	u64 start = ktime_get_ns();

	memset(som_chunk_block_vaddr(chunk, i), 0, SOM_BLOCK_SIZE);
	if (ahead) {
		atomic64_add(SOM_BLOCK_SIZE, &pool->zero_stats.worker_bytes);
		atomic64_add(ktime_get_ns() - start,
			     &pool->zero_stats.worker_ns);
	} else {
		atomic64_add(SOM_BLOCK_SIZE, &pool->zero_stats.fault_bytes);
		atomic64_add(ktime_get_ns() - start, &pool->zero_stats.fault_ns);
	}
}

static struct som_chunk *som_pool_find(struct som_pool *pool, unsigned long cfn)
{
	struct som_chunk *chunk;

	lockdep_assert_held(&pool->lock);
	hash_for_each_possible(pool->hash, chunk, hash, cfn)
		if (chunk->phys >> SOM_CHUNK_SHIFT == cfn)
			return chunk;
	return NULL;
}

static bool som_chunk_is_zeroing(struct som_pool *pool, struct som_chunk *chunk)
{
	return pool->zeroing != SOM_NO_BLOCK &&
	       pool->zeroing >> (SOM_CHUNK_SHIFT - SOM_BLOCK_SHIFT) ==
	       chunk->phys >> SOM_CHUNK_SHIFT;
}

/* The set of node @nid and the given kind. */
static struct som_pool_set *som_pool_set(struct som_pool *pool, int nid,
					 bool unmovable)
{
	return &pool->sets[nid * 2 + unmovable];
}

/* The set a chunk belongs to, from its node and kind. */
static struct som_pool_set *som_chunk_set(struct som_pool *pool,
					  const struct som_chunk *chunk)
{
	return som_pool_set(pool, chunk->nid, chunk->unmovable);
}

/* Blocks of @set that no claim holds yet. */
static unsigned long som_set_spare(const struct som_pool_set *set)
{
	return set->nr_free - set->nr_reserved;
}

/*
 * Count @nr_free free blocks, @nr_dirty of them dirty, in or out of the
 * counters of @chunk's set; nothing while the chunk is isolated, whose
 * free blocks its set leaves out.
 */
static void som_chunk_count(struct som_pool *pool, struct som_chunk *chunk,
			    long nr_free, long nr_dirty)
{
	struct som_pool_set *set = som_chunk_set(pool, chunk);

	lockdep_assert_held(&pool->lock);
	if (chunk->isolated)
		return;
	set->nr_free += nr_free;
	set->nr_dirty += nr_dirty;
}

/* Take free block @i out of the free set; return whether it is dirty. */
static bool som_chunk_take(struct som_pool *pool, struct som_chunk *chunk,
			   unsigned int i)
{
	bool dirty = __test_and_clear_bit(i, chunk->dirty);

	lockdep_assert_held(&pool->lock);
	__clear_bit(i, chunk->free);
	chunk->nr_free--;
	if (dirty)
		chunk->nr_dirty--;
	som_chunk_count(pool, chunk, -1, dirty ? -1 : 0);
	return dirty;
}

/* A free block of @chunk that is zeroed (or dirty), or SOM_BLOCKS_PER_CHUNK. */
static unsigned int som_chunk_find(struct som_pool *pool,
				   struct som_chunk *chunk, bool zeroed)
{
	unsigned int i;

	if (zeroed)
		return find_next_andnot_bit(chunk->free, chunk->dirty,
					    SOM_BLOCKS_PER_CHUNK, 0);
	for_each_set_bit(i, chunk->dirty, SOM_BLOCKS_PER_CHUNK)
		if (som_chunk_bfn(chunk, i) != pool->zeroing)
			return i;
	return SOM_BLOCKS_PER_CHUNK;
}

/* An order of preference over the free blocks of a set. */
#define SOM_PICK_PREFS	4
struct som_pick_pref {
	bool zeroed;	/* a zeroed block (else a dirty one) */
	bool whole;	/* from a wholly free chunk (else a chunk in use) */
};

/*
 * A fault wants a zeroed block before a dirty one, and one from a chunk
 * already in use before one from an untouched chunk, so that untouched
 * chunks stay whole for 1 GiB mappings.
 */
static const struct som_pick_pref som_pick_fault[SOM_PICK_PREFS] = {
	{ true, false }, { true, true }, { false, false }, { false, true },
};

/*
 * A copy overwrites all of its block: it takes dirty blocks first and
 * leaves the zeroed ones to faults, and keeps whole chunks whole too.
 */
static const struct som_pick_pref som_pick_copy[SOM_PICK_PREFS] = {
	{ false, false }, { true, false }, { false, true }, { true, true },
};

/* Pick a free block of @set in the order of @prefs. */
static unsigned int som_set_pick_block(struct som_pool *pool,
				       struct som_pool_set *set,
				       const struct som_pick_pref *prefs,
				       struct som_chunk **chunkp)
{
	struct som_chunk *chunk;
	unsigned int p, i;

	for (p = 0; p < SOM_PICK_PREFS; p++) {
		list_for_each_entry(chunk, &set->chunks, set_list) {
			bool whole = chunk->nr_free == SOM_BLOCKS_PER_CHUNK;

			if (!chunk->nr_free || whole != prefs[p].whole)
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
static unsigned int som_set_pick_assembling(struct som_pool *pool,
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

/* A whole free chunk of @set, a fully zeroed one first, or NULL. */
static struct som_chunk *som_set_pick_chunk(struct som_pool *pool,
					    struct som_pool_set *set)
{
	struct som_chunk *chunk, *pick = NULL;

	list_for_each_entry(chunk, &set->chunks, set_list) {
		if (chunk->nr_free != SOM_BLOCKS_PER_CHUNK)
			continue;
		if (!pick || (pick->nr_dirty && !chunk->nr_dirty) ||
		    som_chunk_is_zeroing(pool, pick))
			pick = chunk;
	}
	return pick;
}

/* Wait until the zeroing worker is done with the block it clears now. */
static void som_pool_wait_zeroing(struct som_pool *pool)
	__releases(&pool->lock)
{
	unsigned long bfn = pool->zeroing;

	spin_unlock(&pool->lock);
	wait_event(pool->zero_wait, READ_ONCE(pool->zeroing) != bfn);
}

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
static int som_next_node(int from, int prev)
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
static bool som_claim_gather(struct som_pool *pool, struct som_claim *claim,
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
 * Return: the block frame number, or SOM_NO_BLOCK if @claim holds no
 * reservation.
 */
unsigned long som_pool_alloc_block(struct som_pool *pool,
				   struct som_claim *claim, pgoff_t idx)
{
	int target = som_claim_target(claim, idx), nid;
	struct som_pool_set *set;
	struct som_chunk *chunk;
	unsigned int i;
	bool dirty;

	might_sleep();
	for (;;) {
		spin_lock(&pool->lock);
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
		i = som_set_pick_block(pool, set, som_pick_fault, &chunk);
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

	if (dirty)
		som_pool_zero_block(pool, chunk, i, false);
	return som_chunk_bfn(chunk, i);
}
EXPORT_SYMBOL_IF_KUNIT(som_pool_alloc_block);

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
			pick = som_set_pick_chunk(pool, set);
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
	bitmap_copy(dirty, pick->dirty, SOM_BLOCKS_PER_CHUNK);
	som_chunk_set(pool, pick)->nr_reserved -= SOM_BLOCKS_PER_CHUNK;
	claim->node_reserved[nid] -= SOM_BLOCKS_PER_CHUNK;
	claim->nr_reserved -= SOM_BLOCKS_PER_CHUNK;
	for (i = 0; i < SOM_BLOCKS_PER_CHUNK; i++)
		som_chunk_take(pool, pick, i);
	spin_unlock(&pool->lock);

	for_each_set_bit(i, dirty, SOM_BLOCKS_PER_CHUNK) {
		som_pool_zero_block(pool, pick, i, false);
		cond_resched();
	}
	return som_chunk_bfn(pick, 0);
}
EXPORT_SYMBOL_IF_KUNIT(som_pool_alloc_chunk);

/**
 * som_pool_free_block() - give a block back to the pool
 * @pool: the pool
 * @bfn: frame number of a block allocated from @pool
 *
 * The block becomes free and dirty; the zeroing worker clears it. This does
 * not restore the reservation the block was allocated under.
 *
 * Context: Any context that may take a spinlock. Takes the pool lock.
 */
void som_pool_free_block(struct som_pool *pool, unsigned long bfn)
{
	unsigned int i = bfn & (SOM_BLOCKS_PER_CHUNK - 1);
	struct som_chunk *chunk;

	spin_lock(&pool->lock);
	chunk = som_pool_find(pool, bfn >> (SOM_CHUNK_SHIFT - SOM_BLOCK_SHIFT));
	if (WARN_ON_ONCE(!chunk || test_bit(i, chunk->free))) {
		spin_unlock(&pool->lock);
		return;
	}
	__set_bit(i, chunk->free);
	__set_bit(i, chunk->dirty);
	chunk->nr_free++;
	chunk->nr_dirty++;
	som_chunk_count(pool, chunk, 1, 1);
	spin_unlock(&pool->lock);
	queue_work(system_unbound_wq, &pool->zero_work);
}
EXPORT_SYMBOL_IF_KUNIT(som_pool_free_block);

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
	WARN_ON_ONCE(claim->nr_reserved);
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
 * the nodes it may use are neither allocated nor reserved.
 */
int som_pool_reserve(struct som_pool *pool, struct som_claim *claim,
		     unsigned long nr)
{
	unsigned long avail = 0, k;
	int nid, home = som_claim_target(claim, 0);

	spin_lock(&pool->lock);
	for (nid = 0; nid < nr_node_ids; nid++)
		if (som_claim_allows(claim, nid))
			avail += som_set_spare(som_pool_set(pool, nid,
							    claim->unmovable));
	if (nr > avail) {
		spin_unlock(&pool->lock);
		return -ENOMEM;
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

	spin_lock(&pool->lock);
	if (WARN_ON_ONCE(nr > claim->nr_reserved))
		nr = claim->nr_reserved;
	claim->nr_reserved -= nr;
	for (nid = nr_node_ids - 1; nid >= 0 && nr; nid--) {
		k = min(nr, claim->node_reserved[nid]);
		claim->node_reserved[nid] -= k;
		som_pool_set(pool, nid, claim->unmovable)->nr_reserved -= k;
		nr -= k;
	}
	spin_unlock(&pool->lock);
}
EXPORT_SYMBOL_IF_KUNIT(som_pool_unreserve);

static void som_pool_zero_work(struct work_struct *work)
{
	struct som_pool *pool = container_of(work, struct som_pool, zero_work);
	struct som_chunk *chunk;
	unsigned int i;

	for (;;) {
		spin_lock(&pool->lock);
		list_for_each_entry(chunk, &pool->chunks, list)
			if (chunk->nr_dirty)
				break;
		if (list_entry_is_head(chunk, &pool->chunks, list)) {
			spin_unlock(&pool->lock);
			return;
		}
		i = find_first_bit(chunk->dirty, SOM_BLOCKS_PER_CHUNK);
		WRITE_ONCE(pool->zeroing, som_chunk_bfn(chunk, i));
		spin_unlock(&pool->lock);

		som_pool_zero_block(pool, chunk, i, true);

		spin_lock(&pool->lock);
		__clear_bit(i, chunk->dirty);
		chunk->nr_dirty--;
		som_chunk_count(pool, chunk, 0, -1);
		WRITE_ONCE(pool->zeroing, SOM_NO_BLOCK);
		spin_unlock(&pool->lock);
		wake_up_all(&pool->zero_wait);
		cond_resched();
	}
}

/**
 * som_pool_contains() - does any chunk of the pool overlap a range?
 * @pool: the pool
 * @phys: start of the range
 * @size: length of the range
 *
 * Context: Takes the pool lock.
 * Return: true if some chunk overlaps [@phys, @phys + @size).
 */
bool som_pool_contains(struct som_pool *pool, phys_addr_t phys, u64 size)
{
	struct som_chunk *chunk;
	bool found = false;

	spin_lock(&pool->lock);
	list_for_each_entry(chunk, &pool->chunks, list) {
		if (chunk->phys < phys + size &&
		    phys < chunk->phys + SOM_CHUNK_SIZE) {
			found = true;
			break;
		}
	}
	spin_unlock(&pool->lock);
	return found;
}
EXPORT_SYMBOL_IF_KUNIT(som_pool_contains);

/**
 * som_pool_owner_used() - blocks of an owner's chunks handed to regions
 * @pool: the pool
 * @owner: the owner given to som_pool_add_chunk()
 *
 * Context: Takes the pool lock.
 * Return: the number of allocated blocks in the chunks of @owner.
 */
unsigned long som_pool_owner_used(struct som_pool *pool, const void *owner)
{
	struct som_chunk *chunk;
	unsigned long used = 0;

	spin_lock(&pool->lock);
	list_for_each_entry(chunk, &pool->chunks, list)
		if (chunk->owner == owner)
			used += SOM_BLOCKS_PER_CHUNK - chunk->nr_free;
	spin_unlock(&pool->lock);
	return used;
}
EXPORT_SYMBOL_IF_KUNIT(som_pool_owner_used);

/**
 * som_chunk_create() - describe 1 GiB of physical memory, outside any pool
 * @pool: the pool it is meant for
 * @phys: 1 GiB aligned physical address, already validated by its source
 * @nid: the NUMA node of the memory
 * @unmovable: whether the chunk serves claims that need stable memory
 * @owner: the source, for som_pool_remove(); the pool never looks into it
 *
 * The chunk is mapped write-back, all free and dirty. Nothing can use it
 * until som_pool_insert() puts it in @pool; som_chunk_destroy() frees it
 * if it never gets there.
 *
 * Context: Process context, may sleep.
 * Return: the chunk, or ERR_PTR(-EINVAL) if @phys is not aligned or @nid
 * is no node, or ERR_PTR(-ENOMEM).
 */
struct som_chunk *som_chunk_create(struct som_pool *pool, phys_addr_t phys,
				   int nid, bool unmovable, const void *owner)
{
	struct som_chunk *chunk;

	if (!IS_ALIGNED(phys, SOM_CHUNK_SIZE) || nid < 0 || nid >= nr_node_ids)
		return ERR_PTR(-EINVAL);
	chunk = kzalloc(sizeof(*chunk), GFP_KERNEL);
	if (!chunk)
		return ERR_PTR(-ENOMEM);
	chunk->phys = phys;
	chunk->nid = nid;
	chunk->unmovable = unmovable;
	chunk->owner = owner;
	chunk->vaddr = memremap(phys, SOM_CHUNK_SIZE, MEMREMAP_WB);
	if (!chunk->vaddr) {
		kfree(chunk);
		return ERR_PTR(-ENOMEM);
	}
	INIT_LIST_HEAD(&chunk->list);
	bitmap_fill(chunk->free, SOM_BLOCKS_PER_CHUNK);
	bitmap_fill(chunk->dirty, SOM_BLOCKS_PER_CHUNK);
	chunk->nr_free = SOM_BLOCKS_PER_CHUNK;
	chunk->nr_dirty = SOM_BLOCKS_PER_CHUNK;
	return chunk;
}
EXPORT_SYMBOL_IF_KUNIT(som_chunk_create);
ALLOW_ERROR_INJECTION(som_chunk_create, ERRNO);

/**
 * som_chunk_destroy() - free a chunk that is not in a pool
 * @chunk: from som_chunk_create(), or taken out by som_pool_remove()
 */
void som_chunk_destroy(struct som_chunk *chunk)
{
	memunmap(chunk->vaddr);
	kfree(chunk);
}
EXPORT_SYMBOL_IF_KUNIT(som_chunk_destroy);

/**
 * som_pool_insert() - put chunks into the pool, all at once
 * @pool: the pool
 * @chunks: chunks from som_chunk_create(), linked through their @list;
 *	on success the list is left empty
 *
 * All or nothing, in one hold of the pool lock: no claim can see some of
 * the chunks before all are in. The zeroing worker is started on them.
 *
 * Context: Takes the pool lock.
 * Return: 0, or -EEXIST if one of them is in the pool already (then none
 * is added and the list is untouched).
 */
int som_pool_insert(struct som_pool *pool, struct list_head *chunks)
{
	struct som_chunk *chunk;

	spin_lock(&pool->lock);
	list_for_each_entry(chunk, chunks, list) {
		if (som_pool_find(pool, chunk->phys >> SOM_CHUNK_SHIFT)) {
			spin_unlock(&pool->lock);
			return -EEXIST;
		}
	}
	list_for_each_entry(chunk, chunks, list) {
		list_add_tail(&chunk->set_list, &som_chunk_set(pool, chunk)->chunks);
		hash_add(pool->hash, &chunk->hash,
			 chunk->phys >> SOM_CHUNK_SHIFT);
		pool->nr_chunks++;
		som_chunk_set(pool, chunk)->nr_chunks++;
		som_chunk_set(pool, chunk)->nr_free += SOM_BLOCKS_PER_CHUNK;
		som_chunk_set(pool, chunk)->nr_dirty += SOM_BLOCKS_PER_CHUNK;
	}
	list_splice_tail_init(chunks, &pool->chunks);
	spin_unlock(&pool->lock);

	queue_work(system_unbound_wq, &pool->zero_work);
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(som_pool_insert);

/**
 * som_pool_add_chunk() - add 1 GiB of physical memory to the pool
 * @pool: the pool
 * @phys: 1 GiB aligned physical address, already validated by its source
 * @nid: the NUMA node of the memory
 * @unmovable: whether the chunk serves claims that need stable memory
 * @owner: the source, for som_pool_remove(); the pool never looks into it
 *
 * som_chunk_create() and som_pool_insert() of one chunk.
 *
 * Context: Process context, may sleep.
 * Return: 0, -EINVAL if @phys is not aligned or @nid is no node, -EEXIST
 * if the chunk is already in the pool, or -ENOMEM.
 */
int som_pool_add_chunk(struct som_pool *pool, phys_addr_t phys, int nid,
		       bool unmovable, const void *owner)
{
	struct som_chunk *chunk;
	LIST_HEAD(one);
	int err;

	chunk = som_chunk_create(pool, phys, nid, unmovable, owner);
	if (IS_ERR(chunk))
		return PTR_ERR(chunk);
	list_add(&chunk->list, &one);
	err = som_pool_insert(pool, &one);
	if (err)
		som_chunk_destroy(chunk);
	return err;
}
EXPORT_SYMBOL_IF_KUNIT(som_pool_add_chunk);

/*
 * Take @chunk out of its set's list and counters: no allocation can pick
 * its free blocks any more, and its set must keep its promise to the
 * reservations held on it without them.
 */
static void som_chunk_isolate(struct som_pool *pool, struct som_chunk *chunk)
{
	som_chunk_count(pool, chunk, -(long)chunk->nr_free,
			-(long)chunk->nr_dirty);
	list_del_init(&chunk->set_list);
	chunk->isolated = true;
}

static void som_chunk_unisolate(struct som_pool *pool, struct som_chunk *chunk)
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
static int som_pool_isolate_owner_locked(struct som_pool *pool,
					 const void *owner)
{
	struct som_chunk *chunk;

	lockdep_assert_held(&pool->lock);
	list_for_each_entry(chunk, &pool->chunks, list)
		if (chunk->owner == owner && chunk->assembling)
			return -EBUSY;
	list_for_each_entry(chunk, &pool->chunks, list)
		if (chunk->owner == owner && !chunk->isolated)
			som_chunk_count(pool, chunk, -(long)chunk->nr_free, 0);
	if (som_pool_covers_reservations(pool)) {
		list_for_each_entry(chunk, &pool->chunks, list) {
			if (chunk->owner != owner || chunk->isolated)
				continue;
			som_chunk_count(pool, chunk, chunk->nr_free, 0);
			som_chunk_isolate(pool, chunk);
		}
		return 0;
	}
	list_for_each_entry(chunk, &pool->chunks, list)
		if (chunk->owner == owner && !chunk->isolated)
			som_chunk_count(pool, chunk, chunk->nr_free, 0);
	return -EBUSY;
}

/**
 * som_pool_remove() - take every chunk of an owner out of the pool
 * @pool: the pool
 * @owner: the owner given to som_pool_add_chunk()
 *
 * All or nothing: refused while any block of those chunks is allocated,
 * or while the rest of their sets could not cover the reservations held
 * on them. The chunks may have been isolated already (to move their
 * blocks away first). A chunk the zeroing worker is clearing is waited
 * for. The blocks the worker has not zeroed yet are zeroed here, so that
 * no owner's data goes back to where the memory came from.
 *
 * Context: Process context, may sleep (it zeroes up to the chunks' size).
 * Takes the pool lock.
 * Return: 0, or -EBUSY.
 */
int som_pool_remove(struct som_pool *pool, const void *owner)
{
	struct som_chunk *chunk, *tmp;
	LIST_HEAD(gone);
	unsigned int b;

	might_sleep();
retry:
	spin_lock(&pool->lock);
	list_for_each_entry(chunk, &pool->chunks, list) {
		if (chunk->owner != owner)
			continue;
		if (chunk->nr_free != SOM_BLOCKS_PER_CHUNK) {
			spin_unlock(&pool->lock);
			return -EBUSY;
		}
		if (som_chunk_is_zeroing(pool, chunk)) {
			som_pool_wait_zeroing(pool);
			goto retry;
		}
	}
	if (som_pool_isolate_owner_locked(pool, owner)) {
		spin_unlock(&pool->lock);
		return -EBUSY;
	}
	list_for_each_entry_safe(chunk, tmp, &pool->chunks, list) {
		if (chunk->owner != owner)
			continue;
		hash_del(&chunk->hash);
		list_move_tail(&chunk->list, &gone);
		pool->nr_chunks--;
		som_chunk_set(pool, chunk)->nr_chunks--;
	}
	spin_unlock(&pool->lock);

	/* Memory leaves the pool zeroed, whoever gets it next. */
	list_for_each_entry_safe(chunk, tmp, &gone, list) {
		for_each_set_bit(b, chunk->dirty, SOM_BLOCKS_PER_CHUNK) {
			som_pool_zero_block(pool, chunk, b, true);
			cond_resched();
		}
		som_chunk_destroy(chunk);
	}
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(som_pool_remove);

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
		info->nr_free = chunk->nr_free;
	}
	spin_unlock(&pool->lock);
	return chunk ? 0 : -ENOENT;
}
EXPORT_SYMBOL_IF_KUNIT(som_pool_chunk_info);

/**
 * som_pool_whole_chunk() - find a wholly free chunk a claim may use
 * @pool: the pool
 * @claim: the claim whose kind and nodes count
 * @nid: the node to look on first; the others follow nearest first
 *
 * Nothing is taken: the caller isolates the chunk, and copes with it
 * having been used meanwhile.
 *
 * Context: Takes the pool lock.
 * Return: its chunk frame number, or SOM_NO_BLOCK.
 */
unsigned long som_pool_whole_chunk(struct som_pool *pool,
				   const struct som_claim *claim, int nid)
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
							     claim->unmovable));
		if (pick) {
			cfn = pick->phys >> SOM_CHUNK_SHIFT;
			break;
		}
	}
	spin_unlock(&pool->lock);
	return cfn;
}
EXPORT_SYMBOL_IF_KUNIT(som_pool_whole_chunk);

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
 * already, or its set has too little room to take its free blocks;
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
		   som_set_spare(set) < chunk->nr_free) {
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
		    chunk->nr_free != SOM_BLOCKS_PER_CHUNK) {
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
 * is spare, only where.
 *
 * Context: Takes the pool lock.
 * Return: the block frame number, or SOM_NO_BLOCK if there is no room.
 */
unsigned long som_pool_alloc_spare(struct som_pool *pool,
				   const struct som_claim *claim, int nid,
				   bool exact)
{
	unsigned long bfn = SOM_NO_BLOCK;
	struct som_pool_set *set;
	struct som_chunk *chunk;
	unsigned int i;
	int n;

	spin_lock(&pool->lock);
	for (n = som_next_node(nid, NUMA_NO_NODE); n < nr_node_ids;
	     n = exact ? nr_node_ids : som_next_node(nid, n)) {
		if (!som_claim_allows(claim, n))
			continue;
		set = som_pool_set(pool, n, claim->unmovable);
		if (!som_set_spare(set))
			continue;
		i = som_set_pick_block(pool, set, som_pick_copy, &chunk);
		if (i < SOM_BLOCKS_PER_CHUNK) {
			som_chunk_take(pool, chunk, i);
			bfn = som_chunk_bfn(chunk, i);
			break;
		}
	}
	spin_unlock(&pool->lock);
	return bfn;
}
EXPORT_SYMBOL_IF_KUNIT(som_pool_alloc_spare);

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
		spin_lock(&pool->lock);
		chunk = som_pool_find(pool, som_bfn_to_cfn(bfn));
		if (!chunk || !chunk->assembling ||
		    !test_bit(i, chunk->free)) {
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

/**
 * som_pool_get_stats() - snapshot of the pool's counters
 * @pool: the pool
 * @nid: a node, or NUMA_NO_NODE for the whole pool
 * @stats: filled in
 *
 * Metadata is what the pool allocates to describe its memory: one
 * struct som_chunk per GiB (as the slab rounds it up), the sets, and the
 * pool itself; it is reported for the whole pool only (0 for a node).
 *
 * Context: Takes the pool lock.
 */
void som_pool_get_stats(struct som_pool *pool, int nid,
			struct som_pool_stats *stats)
{
	int n, kind;

	memset(stats, 0, sizeof(*stats));
	spin_lock(&pool->lock);
	for (n = 0; n < nr_node_ids; n++) {
		if (nid != NUMA_NO_NODE && n != nid)
			continue;
		for (kind = 0; kind < 2; kind++) {
			struct som_pool_set *set = som_pool_set(pool, n, kind);
			u64 total = (u64)set->nr_chunks * SOM_CHUNK_SIZE;
			u64 free = (u64)som_set_spare(set) * SOM_BLOCK_SIZE;

			stats->total_bytes += total;
			stats->free_bytes += free;
			stats->reserved_bytes += (u64)set->nr_reserved *
						 SOM_BLOCK_SIZE;
			stats->zeroed_bytes += (u64)(set->nr_free -
						     set->nr_dirty) *
					       SOM_BLOCK_SIZE;
			if (kind) {
				stats->unmovable_total_bytes += total;
				stats->unmovable_free_bytes += free;
			}
		}
	}
	if (nid == NUMA_NO_NODE)
		stats->metadata_bytes =
			(u64)pool->nr_chunks *
			kmalloc_size_roundup(sizeof(struct som_chunk)) +
			kmalloc_size_roundup(nr_node_ids * 2 *
					     sizeof(*pool->sets)) +
			sizeof(*pool);
	spin_unlock(&pool->lock);
}
EXPORT_SYMBOL_IF_KUNIT(som_pool_get_stats);

/**
 * som_pool_init() - set up an empty pool
 * @pool: the pool
 *
 * Context: Process context, may sleep.
 * Return: 0 or -ENOMEM.
 */
int som_pool_init(struct som_pool *pool)
{
	int i;

	pool->sets = kcalloc(nr_node_ids * 2, sizeof(*pool->sets), GFP_KERNEL);
	if (!pool->sets)
		return -ENOMEM;
	for (i = 0; i < nr_node_ids * 2; i++)
		INIT_LIST_HEAD(&pool->sets[i].chunks);
	spin_lock_init(&pool->lock);
	INIT_LIST_HEAD(&pool->chunks);
	hash_init(pool->hash);
	pool->nr_chunks = 0;
	memset(&pool->zero_stats, 0, sizeof(pool->zero_stats));
	pool->zeroing = SOM_NO_BLOCK;
	init_waitqueue_head(&pool->zero_wait);
	INIT_WORK(&pool->zero_work, som_pool_zero_work);
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(som_pool_init);

/**
 * som_pool_destroy() - stop the worker and release every chunk
 * @pool: the pool; no block may be allocated or reserved any more
 *
 * Context: Process context, may sleep.
 */
void som_pool_destroy(struct som_pool *pool)
{
	struct som_chunk *chunk, *tmp;

	cancel_work_sync(&pool->zero_work);
	list_for_each_entry_safe(chunk, tmp, &pool->chunks, list) {
		WARN_ON_ONCE(chunk->nr_free != SOM_BLOCKS_PER_CHUNK);
		hash_del(&chunk->hash);
		list_del(&chunk->list);
		som_chunk_destroy(chunk);
	}
	pool->nr_chunks = 0;
	kfree(pool->sets);
	pool->sets = NULL;
}
EXPORT_SYMBOL_IF_KUNIT(som_pool_destroy);
