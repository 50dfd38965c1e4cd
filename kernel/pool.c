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
 *
 * The pool is in six files, one concern each: this one (chunks coming
 * and going, sets, statistics), pool_chunk.c (one chunk and the state of
 * its blocks), pool_claim.c (claims: policies and reservations),
 * pool_alloc.c (handing out and taking back blocks and chunks),
 * pool_zero.c (the zeroing worker) and pool_move.c (what migration asks
 * of the pool); pool_internal.h is what they share.
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

/* The chunk of frame number @cfn, or NULL. */
struct som_chunk *som_pool_find(struct som_pool *pool, unsigned long cfn)
{
	struct som_chunk *chunk;

	lockdep_assert_held(&pool->lock);
	hash_for_each_possible(pool->hash, chunk, hash, cfn)
		if (chunk->phys >> SOM_CHUNK_SHIFT == cfn)
			return chunk;
	return NULL;
}

/* The set of node @nid and the given kind. */
struct som_pool_set *som_pool_set(struct som_pool *pool, int nid,
				  bool unmovable)
{
	return &pool->sets[nid * 2 + unmovable];
}

/* The set a chunk belongs to, from its node and kind. */
struct som_pool_set *som_chunk_set(struct som_pool *pool,
				   const struct som_chunk *chunk)
{
	return som_pool_set(pool, chunk->nid, chunk->unmovable);
}

/* Blocks of @set that no claim holds yet. */
unsigned long som_set_spare(const struct som_pool_set *set)
{
	return set->nr_free - set->nr_reserved;
}

/*
 * Count @nr_free free blocks, @nr_dirty of them dirty, in or out of the
 * counters of @chunk's set; nothing while the chunk is isolated, whose
 * free blocks its set leaves out.
 */
void som_chunk_count(struct som_pool *pool, struct som_chunk *chunk,
		     long nr_free, long nr_dirty)
{
	struct som_pool_set *set = som_chunk_set(pool, chunk);

	lockdep_assert_held(&pool->lock);
	if (chunk->isolated)
		return;
	set->nr_free += nr_free;
	set->nr_dirty += nr_dirty;
	if (nr_free)
		som_pool_check_low(pool);
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
 * Return: the number of blocks of @owner's chunks that regions hold
 * (retired blocks are allocated to nobody).
 */
unsigned long som_pool_owner_used(struct som_pool *pool, const void *owner)
{
	struct som_chunk *chunk;
	unsigned long used = 0;

	spin_lock(&pool->lock);
	list_for_each_entry(chunk, &pool->chunks, list)
		if (chunk->owner == owner)
			used += SOM_BLOCKS_PER_CHUNK - chunk->nr_free -
				som_chunk_nr_retired(pool, chunk);
	spin_unlock(&pool->lock);
	return used;
}
EXPORT_SYMBOL_IF_KUNIT(som_pool_owner_used);

/**
 * som_pool_insert() - put chunks into the pool, all at once
 * @pool: the pool
 * @chunks: chunks from som_chunk_create(), linked through their @list;
 *	on success the list is left empty
 *
 * All or nothing, in one hold of the pool lock: no claim can see some of
 * the chunks before all are in. Pages that left the pool poisoned come
 * back poisoned, their blocks retired in that same hold (pool_poison.c).
 * The zeroing worker is started on them.
 *
 * Context: Process context, may sleep. Takes poison_lock, then the pool
 * lock.
 * Return: 0, -EEXIST if one of them is in the pool already, or -ENOMEM
 * (then none is added and the list is untouched).
 */
int som_pool_insert(struct som_pool *pool, struct list_head *chunks)
{
	struct som_chunk *chunk;
	int err;

	mutex_lock(&pool->poison_lock);
	err = som_chunks_prepare_poison(pool, chunks);
	if (err)
		goto undo;
	spin_lock(&pool->lock);
	list_for_each_entry(chunk, chunks, list) {
		if (som_pool_find(pool, chunk->phys >> SOM_CHUNK_SHIFT)) {
			spin_unlock(&pool->lock);
			err = -EEXIST;
			goto undo;
		}
	}
	som_chunks_recall_poison(pool, chunks);
	list_for_each_entry(chunk, chunks, list) {
		list_add_tail(&chunk->set_list, &som_chunk_set(pool, chunk)->chunks);
		hash_add(pool->hash, &chunk->hash,
			 chunk->phys >> SOM_CHUNK_SHIFT);
		pool->nr_chunks++;
		if (chunk->bits)
			pool->nr_bits++;
		som_chunk_set(pool, chunk)->nr_chunks++;
		som_chunk_set(pool, chunk)->nr_free += chunk->nr_free;
		som_chunk_set(pool, chunk)->nr_dirty += chunk->nr_dirty;
	}
	list_splice_tail_init(chunks, &pool->chunks);
	som_pool_check_low(pool);
	spin_unlock(&pool->lock);
	mutex_unlock(&pool->poison_lock);

	queue_work(system_dfl_wq, &pool->zero_work);
	return 0;

undo:
	som_chunks_unprepare_poison(pool, chunks);
	mutex_unlock(&pool->poison_lock);
	return err;
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

/**
 * som_pool_remove_poisoned() - take every chunk of an owner out of the pool
 * @pool: the pool
 * @owner: the owner given to som_pool_add_chunk()
 * @pfns: filled in with the poisoned pages that leave, up to @max, or NULL
 * @max: room in @pfns
 * @nr: set to the number of poisoned pages that leave (may exceed @max)
 *
 * All or nothing: refused while any block of those chunks is allocated to
 * a region (retired blocks are allocated to nobody and leave with their
 * chunk), or while the rest of their sets could not cover the
 * reservations held on them. The chunks may have been isolated already
 * (to move their blocks away first). A chunk the zeroing worker is
 * clearing is waited for. The blocks the worker has not zeroed yet, and
 * the retired blocks but for their poisoned pages, are zeroed here, so
 * that no owner's data goes back to where the memory came from. The
 * records of poisoned pages leave with the chunks, under the lock that
 * new records take: none arrives unreported.
 *
 * Context: Process context, may sleep (it zeroes up to the chunks' size).
 * Takes the pool lock.
 * Return: 0, or -EBUSY.
 */
int som_pool_remove_poisoned(struct som_pool *pool, const void *owner,
			     unsigned long *pfns, unsigned int max,
			     unsigned int *nr)
{
	DECLARE_BITMAP(dirty, SOM_BLOCKS_PER_CHUNK);
	struct som_chunk *chunk, *tmp;
	LIST_HEAD(gone);
	unsigned int b;

	might_sleep();
	*nr = 0;
	mutex_lock(&pool->poison_lock);
retry:
	spin_lock(&pool->lock);
	list_for_each_entry(chunk, &pool->chunks, list) {
		if (chunk->owner != owner)
			continue;
		if (chunk->nr_free + som_chunk_nr_retired(pool, chunk) !=
		    SOM_BLOCKS_PER_CHUNK) {
			spin_unlock(&pool->lock);
			mutex_unlock(&pool->poison_lock);
			return -EBUSY;
		}
		if (som_chunk_is_zeroing(pool, chunk)) {
			som_pool_wait_zeroing(pool);
			goto retry;
		}
	}
	if (som_pool_isolate_owner_locked(pool, owner)) {
		spin_unlock(&pool->lock);
		mutex_unlock(&pool->poison_lock);
		return -EBUSY;
	}
	list_for_each_entry_safe(chunk, tmp, &pool->chunks, list) {
		if (chunk->owner != owner)
			continue;
		hash_del(&chunk->hash);
		list_move_tail(&chunk->list, &gone);
		pool->nr_chunks--;
		som_chunk_set(pool, chunk)->nr_chunks--;
		/* Kept for what follows; som_chunk_destroy() frees them. */
		if (chunk->bits)
			pool->nr_bits--;
	}
	spin_unlock(&pool->lock);
	list_for_each_entry(chunk, &gone, list) {
		som_chunk_zero_retired(pool, chunk);
		som_chunk_forget_poison(pool, chunk, pfns, max, nr);
	}
	mutex_unlock(&pool->poison_lock);

	/* Memory leaves the pool zeroed, whoever gets it next. */
	list_for_each_entry_safe(chunk, tmp, &gone, list) {
		som_chunk_dirty_bits(chunk, dirty);
		for_each_set_bit(b, dirty, SOM_BLOCKS_PER_CHUNK) {
			som_pool_zero_block(pool, chunk, b, true);
			cond_resched();
		}
		som_chunk_destroy(chunk);
	}
	/*
	 * A chunk that left with bits took them along: the pool keeps its
	 * one spare whatever left (without one it gets one at the next
	 * change, as ever).
	 */
	if (!som_pool_lock_stocked(pool, GFP_KERNEL))
		spin_unlock(&pool->lock);
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(som_pool_remove_poisoned);

/**
 * som_pool_remove() - take an owner's chunks out of the pool
 * @pool: the pool
 * @owner: the owner given to som_pool_add_chunk()
 *
 * som_pool_remove_poisoned() for a caller that does not need the
 * poisoned pages.
 *
 * Context: Process context, may sleep.
 * Return: 0, or -EBUSY.
 */
int som_pool_remove(struct som_pool *pool, const void *owner)
{
	unsigned int nr = 0;

	return som_pool_remove_poisoned(pool, owner, NULL, 0, &nr);
}
EXPORT_SYMBOL_IF_KUNIT(som_pool_remove);

/**
 * som_pool_get_stats() - snapshot of the pool's counters
 * @pool: the pool
 * @nid: a node, or NUMA_NO_NODE for the whole pool
 * @stats: filled in
 *
 * Metadata is what the pool allocates to describe its memory: one
 * struct som_chunk per GiB (the object size of its slab cache), a struct
 * som_chunk_bits per chunk whose blocks differ and the one spare, the
 * sets, and the pool itself; it is reported for the whole pool only (0
 * for a node).
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
	if (nid == NUMA_NO_NODE) {
		u64 held = (u64)som_pool_owed(pool) * SOM_BLOCK_SIZE;
		unsigned long pfn;
		void *entry;

		/*
		 * Free movable blocks held for promises no reservation holds
		 * (lost ones, and indices paged out: pool_overcommit.c) are
		 * not free for new mappings; a node's counts leave them be.
		 */
		held = min(held, stats->free_bytes - stats->unmovable_free_bytes);
		stats->free_bytes -= held;
		stats->reserved_bytes += held;

		xa_for_each(&pool->poison, pfn, entry)
			stats->poison_bytes += sizeof(struct xa_node);
		xa_for_each(&pool->poison_gone, pfn, entry)
			stats->poison_bytes += sizeof(struct xa_node);
		stats->chunks_bytes = (u64)pool->nr_chunks *
				      kmem_cache_size(som_chunk_cache);
		stats->chunk_bits_bytes = (u64)(pool->nr_bits + !!pool->spare) *
					  kmem_cache_size(som_chunk_bits_cache);
		stats->metadata_bytes = stats->chunks_bytes +
					stats->chunk_bits_bytes +
					stats->poison_bytes +
					kmalloc_size_roundup(nr_node_ids * 2 *
							     sizeof(*pool->sets)) +
					sizeof(*pool);
	}
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
	xa_init(&pool->poison);
	xa_init(&pool->poison_gone);
	mutex_init(&pool->poison_lock);
	INIT_LIST_HEAD(&pool->claims);
	INIT_LIST_HEAD(&pool->chunks);
	hash_init(pool->hash);
	pool->nr_chunks = 0;
	pool->spare = NULL;
	pool->nr_bits = 0;
	pool->free_low_bytes = 0;
	pool->low = false;
	pool->low_events = 0;
	pool->low_kn = NULL;
	pool->short_at_hand = false;
	pool->overcommit = false;
	pool->store_slots = 0;
	pool->nr_lost = 0;
	pool->nr_out = 0;
	pool->pressure = NULL;
	memset(&pool->zero_stats, 0, sizeof(pool->zero_stats));
	pool->zeroing = SOM_NO_BLOCK;
	init_waitqueue_head(&pool->zero_wait);
	INIT_WORK(&pool->zero_work, som_pool_zero_work);
	pool->zero_ahead = true;
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
	mutex_lock(&pool->poison_lock);
	list_for_each_entry_safe(chunk, tmp, &pool->chunks, list) {
		WARN_ON_ONCE(chunk->nr_free + som_chunk_nr_retired(pool, chunk) !=
			     SOM_BLOCKS_PER_CHUNK);
		som_chunk_forget_poison(pool, chunk, NULL, 0, NULL);
		hash_del(&chunk->hash);
		list_del(&chunk->list);
		som_chunk_destroy(chunk);
	}
	mutex_unlock(&pool->poison_lock);
	pool->nr_chunks = 0;
	if (pool->spare)
		kmem_cache_free(som_chunk_bits_cache, pool->spare);
	pool->spare = NULL;
	xa_destroy(&pool->poison);
	xa_destroy(&pool->poison_gone);
	kfree(pool->sets);
	pool->sets = NULL;
}
EXPORT_SYMBOL_IF_KUNIT(som_pool_destroy);
