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
 * Accounting: mmap() reserves blocks (nr_reserved), the fault that first
 * touches a block consumes one reservation and one free block. Because
 * nr_reserved <= nr_free always holds, a reserved allocation always finds a
 * block: at worst the one the worker is zeroing, which it then waits for.
 * The pool never sleeps with its spinlock held and never zeroes under it.
 *
 * Nothing here knows about VMAs or where chunks come from, so that
 * pool_kunit.c can test it alone; its functions are exported for that
 * test only, and only in kernels built with KUnit.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <kunit/visibility.h>
#include <linux/io.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "pool.h"

static unsigned long som_chunk_bfn(const struct som_chunk *chunk, unsigned int i)
{
	return (chunk->phys >> SOM_BLOCK_SHIFT) + i;
}

static void *som_chunk_block_vaddr(const struct som_chunk *chunk, unsigned int i)
{
	return chunk->vaddr + ((size_t)i << SOM_BLOCK_SHIFT);
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

/* Take free block @i out of the free set; return whether it is dirty. */
static bool som_chunk_take(struct som_pool *pool, struct som_chunk *chunk,
			   unsigned int i)
{
	bool dirty = __test_and_clear_bit(i, chunk->dirty);

	lockdep_assert_held(&pool->lock);
	__clear_bit(i, chunk->free);
	chunk->nr_free--;
	pool->nr_free--;
	if (dirty) {
		chunk->nr_dirty--;
		pool->nr_dirty--;
	}
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

/*
 * Pick a free block: a zeroed one before a dirty one, and one from a chunk
 * already in use before one from an untouched chunk, so that untouched
 * chunks stay whole for 1 GiB mappings.
 */
static unsigned int som_pool_pick_block(struct som_pool *pool,
					struct som_chunk **chunkp)
{
	static const struct { bool zeroed, whole; } prefs[] = {
		{ true, false }, { true, true }, { false, false }, { false, true },
	};
	struct som_chunk *chunk;
	unsigned int p, i;

	for (p = 0; p < ARRAY_SIZE(prefs); p++) {
		list_for_each_entry(chunk, &pool->chunks, list) {
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

/* Wait until the zeroing worker is done with the block it clears now. */
static void som_pool_wait_zeroing(struct som_pool *pool)
	__releases(&pool->lock)
{
	unsigned long bfn = pool->zeroing;

	spin_unlock(&pool->lock);
	wait_event(pool->zero_wait, READ_ONCE(pool->zeroing) != bfn);
}

/**
 * som_pool_alloc_block() - allocate one zeroed 2 MiB block
 * @pool: the pool
 *
 * Consumes one block of a reservation made with som_pool_reserve().
 *
 * Context: Process context, may sleep (it zeroes 2 MiB when no pre-zeroed
 * block is left). Takes the pool lock.
 * Return: the block frame number, or SOM_NO_BLOCK if the caller holds no
 * reservation.
 */
unsigned long som_pool_alloc_block(struct som_pool *pool)
{
	struct som_chunk *chunk;
	unsigned int i;
	bool dirty;

	might_sleep();
	for (;;) {
		spin_lock(&pool->lock);
		if (WARN_ON_ONCE(!pool->nr_reserved)) {
			spin_unlock(&pool->lock);
			return SOM_NO_BLOCK;
		}
		i = som_pool_pick_block(pool, &chunk);
		if (i < SOM_BLOCKS_PER_CHUNK)
			break;
		/* The only free block left is the one being zeroed. */
		som_pool_wait_zeroing(pool);
	}
	pool->nr_reserved--;
	dirty = som_chunk_take(pool, chunk, i);
	spin_unlock(&pool->lock);

	if (dirty)
		memset(som_chunk_block_vaddr(chunk, i), 0, SOM_BLOCK_SIZE);
	return som_chunk_bfn(chunk, i);
}
EXPORT_SYMBOL_IF_KUNIT(som_pool_alloc_block);

/**
 * som_pool_alloc_chunk() - allocate a whole zeroed 1 GiB chunk
 * @pool: the pool
 *
 * Consumes SOM_BLOCKS_PER_CHUNK blocks of a reservation. Prefers a chunk
 * that is already fully zeroed; otherwise zeroes the dirty blocks of the
 * chunk it takes.
 *
 * Context: Process context, may sleep. Takes the pool lock.
 * Return: the frame number of the chunk's first block, or SOM_NO_BLOCK if
 * no chunk is entirely free (the caller then maps 2 MiB blocks instead).
 */
unsigned long som_pool_alloc_chunk(struct som_pool *pool)
{
	DECLARE_BITMAP(dirty, SOM_BLOCKS_PER_CHUNK);
	struct som_chunk *chunk, *pick;
	unsigned int i;

	might_sleep();
	for (;;) {
		pick = NULL;
		spin_lock(&pool->lock);
		if (pool->nr_reserved < SOM_BLOCKS_PER_CHUNK) {
			spin_unlock(&pool->lock);
			return SOM_NO_BLOCK;
		}
		list_for_each_entry(chunk, &pool->chunks, list) {
			if (chunk->nr_free != SOM_BLOCKS_PER_CHUNK)
				continue;
			if (!pick || (pick->nr_dirty && !chunk->nr_dirty) ||
			    som_chunk_is_zeroing(pool, pick))
				pick = chunk;
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
	pool->nr_reserved -= SOM_BLOCKS_PER_CHUNK;
	for (i = 0; i < SOM_BLOCKS_PER_CHUNK; i++)
		som_chunk_take(pool, pick, i);
	spin_unlock(&pool->lock);

	for_each_set_bit(i, dirty, SOM_BLOCKS_PER_CHUNK) {
		memset(som_chunk_block_vaddr(pick, i), 0, SOM_BLOCK_SIZE);
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
	pool->nr_free++;
	pool->nr_dirty++;
	spin_unlock(&pool->lock);
	queue_work(system_unbound_wq, &pool->zero_work);
}
EXPORT_SYMBOL_IF_KUNIT(som_pool_free_block);

/**
 * som_pool_block_vaddr() - kernel address of an allocated block
 * @pool: the pool
 * @bfn: frame number of a block of @pool
 *
 * Context: Takes the pool lock. Chunks are never removed while the pool
 * exists, so the address stays valid while the caller owns the block.
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
 * som_pool_reserve() - promise blocks to a mapping
 * @pool: the pool
 * @nr: number of 2 MiB blocks
 *
 * Context: Takes the pool lock.
 * Return: 0, or -ENOMEM if fewer than @nr blocks are neither allocated nor
 * reserved.
 */
int som_pool_reserve(struct som_pool *pool, unsigned long nr)
{
	int ret = 0;

	spin_lock(&pool->lock);
	if (nr > pool->nr_free - pool->nr_reserved)
		ret = -ENOMEM;
	else
		pool->nr_reserved += nr;
	spin_unlock(&pool->lock);
	return ret;
}
EXPORT_SYMBOL_IF_KUNIT(som_pool_reserve);

/**
 * som_pool_unreserve() - drop blocks reserved with som_pool_reserve()
 * @pool: the pool
 * @nr: number of reserved blocks that will not be allocated
 *
 * Context: Takes the pool lock.
 */
void som_pool_unreserve(struct som_pool *pool, unsigned long nr)
{
	spin_lock(&pool->lock);
	if (!WARN_ON_ONCE(nr > pool->nr_reserved))
		pool->nr_reserved -= nr;
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

		memset(som_chunk_block_vaddr(chunk, i), 0, SOM_BLOCK_SIZE);

		spin_lock(&pool->lock);
		__clear_bit(i, chunk->dirty);
		chunk->nr_dirty--;
		pool->nr_dirty--;
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
 * som_pool_add_chunk() - add 1 GiB of physical memory to the pool
 * @pool: the pool
 * @phys: 1 GiB aligned physical address, already validated by its source
 *
 * The chunk is mapped write-back and enters the pool dirty; the zeroing
 * worker is started on it.
 *
 * Context: Process context, may sleep.
 * Return: 0, -EINVAL if @phys is not aligned, -EEXIST if the chunk is
 * already in the pool, or -ENOMEM.
 */
int som_pool_add_chunk(struct som_pool *pool, phys_addr_t phys)
{
	struct som_chunk *chunk;

	if (!IS_ALIGNED(phys, SOM_CHUNK_SIZE))
		return -EINVAL;
	chunk = kzalloc(sizeof(*chunk), GFP_KERNEL);
	if (!chunk)
		return -ENOMEM;
	chunk->phys = phys;
	chunk->vaddr = memremap(phys, SOM_CHUNK_SIZE, MEMREMAP_WB);
	if (!chunk->vaddr) {
		kfree(chunk);
		return -ENOMEM;
	}
	bitmap_fill(chunk->free, SOM_BLOCKS_PER_CHUNK);
	bitmap_fill(chunk->dirty, SOM_BLOCKS_PER_CHUNK);
	chunk->nr_free = SOM_BLOCKS_PER_CHUNK;
	chunk->nr_dirty = SOM_BLOCKS_PER_CHUNK;

	spin_lock(&pool->lock);
	if (som_pool_find(pool, phys >> SOM_CHUNK_SHIFT)) {
		spin_unlock(&pool->lock);
		memunmap(chunk->vaddr);
		kfree(chunk);
		return -EEXIST;
	}
	list_add_tail(&chunk->list, &pool->chunks);
	hash_add(pool->hash, &chunk->hash, phys >> SOM_CHUNK_SHIFT);
	pool->nr_chunks++;
	pool->nr_free += SOM_BLOCKS_PER_CHUNK;
	pool->nr_dirty += SOM_BLOCKS_PER_CHUNK;
	spin_unlock(&pool->lock);

	queue_work(system_unbound_wq, &pool->zero_work);
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(som_pool_add_chunk);

/**
 * som_pool_get_stats() - snapshot of the pool's counters
 * @pool: the pool
 * @stats: filled in
 *
 * Metadata is what the pool allocates to describe its memory: one
 * struct som_chunk per GiB (as the slab rounds it up) plus the pool itself.
 *
 * Context: Takes the pool lock.
 */
void som_pool_get_stats(struct som_pool *pool, struct som_pool_stats *stats)
{
	spin_lock(&pool->lock);
	stats->total_bytes = (u64)pool->nr_chunks * SOM_CHUNK_SIZE;
	stats->free_bytes = (u64)(pool->nr_free - pool->nr_reserved) *
			    SOM_BLOCK_SIZE;
	stats->reserved_bytes = (u64)pool->nr_reserved * SOM_BLOCK_SIZE;
	stats->zeroed_bytes = (u64)(pool->nr_free - pool->nr_dirty) *
			      SOM_BLOCK_SIZE;
	stats->metadata_bytes = (u64)pool->nr_chunks *
				kmalloc_size_roundup(sizeof(struct som_chunk)) +
				sizeof(*pool);
	spin_unlock(&pool->lock);
}
EXPORT_SYMBOL_IF_KUNIT(som_pool_get_stats);

/**
 * som_pool_init() - set up an empty pool
 * @pool: the pool
 */
void som_pool_init(struct som_pool *pool)
{
	spin_lock_init(&pool->lock);
	INIT_LIST_HEAD(&pool->chunks);
	hash_init(pool->hash);
	pool->zeroing = SOM_NO_BLOCK;
	init_waitqueue_head(&pool->zero_wait);
	INIT_WORK(&pool->zero_work, som_pool_zero_work);
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
	WARN_ON_ONCE(pool->nr_reserved ||
		     pool->nr_free != pool->nr_chunks * SOM_BLOCKS_PER_CHUNK);
	list_for_each_entry_safe(chunk, tmp, &pool->chunks, list) {
		hash_del(&chunk->hash);
		list_del(&chunk->list);
		memunmap(chunk->vaddr);
		kfree(chunk);
	}
	pool->nr_chunks = 0;
	pool->nr_free = 0;
	pool->nr_dirty = 0;
}
EXPORT_SYMBOL_IF_KUNIT(som_pool_destroy);
