// SPDX-License-Identifier: GPL-2.0
/*
 * som pool: one chunk and the state of its blocks.
 *
 * A chunk whose 512 blocks are all alike (all allocated, all free and
 * zeroed, all free and dirty) is described by its counts alone; one whose
 * blocks differ has a struct som_chunk_bits, taken from the pool's spare
 * under the pool lock (som_pool_lock_stocked() makes sure one is there
 * before any block changes state) and given back when the blocks are all
 * alike again.
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

struct kmem_cache *som_chunk_cache;
struct kmem_cache *som_chunk_bits_cache;

/**
 * som_pool_cache_init() - create the slab caches of chunks and their bits
 *
 * Caches of their own, never merged, so that /proc/slabinfo shows exactly
 * what the pool spends.
 *
 * Context: Module init.
 * Return: 0 or -ENOMEM.
 */
int som_pool_cache_init(void)
{
	som_chunk_cache = KMEM_CACHE(som_chunk, SLAB_NO_MERGE);
	som_chunk_bits_cache = KMEM_CACHE(som_chunk_bits, SLAB_NO_MERGE);
	if (som_chunk_cache && som_chunk_bits_cache)
		return 0;
	som_pool_cache_exit();
	return -ENOMEM;
}

/**
 * som_pool_cache_exit() - destroy what som_pool_cache_init() created
 *
 * Context: Module exit, every pool destroyed.
 */
void som_pool_cache_exit(void)
{
	kmem_cache_destroy(som_chunk_bits_cache);
	kmem_cache_destroy(som_chunk_cache);
	som_chunk_bits_cache = NULL;
	som_chunk_cache = NULL;
}

/*
 * Are the blocks of @chunk not all alike: neither all allocated, nor all
 * free and zeroed, nor all free and dirty? Only then does it need bits.
 */
static bool som_chunk_mixed(const struct som_chunk *chunk)
{
	return chunk->nr_free &&
	       (chunk->nr_free != SOM_BLOCKS_PER_CHUNK ||
		(chunk->nr_dirty && chunk->nr_dirty != SOM_BLOCKS_PER_CHUNK));
}

bool som_chunk_is_free(const struct som_chunk *chunk, unsigned int i)
{
	if (chunk->bits)
		return test_bit(i, chunk->bits->free);
	return chunk->nr_free == SOM_BLOCKS_PER_CHUNK;
}

bool som_chunk_is_dirty(const struct som_chunk *chunk, unsigned int i)
{
	if (chunk->bits)
		return test_bit(i, chunk->bits->dirty);
	return chunk->nr_dirty == SOM_BLOCKS_PER_CHUNK;
}

/* The dirty blocks of @chunk, into @dirty. */
void som_chunk_dirty_bits(const struct som_chunk *chunk,
			  unsigned long *dirty)
{
	if (chunk->bits)
		bitmap_copy(dirty, chunk->bits->dirty, SOM_BLOCKS_PER_CHUNK);
	else if (chunk->nr_dirty)
		bitmap_fill(dirty, SOM_BLOCKS_PER_CHUNK);
	else
		bitmap_zero(dirty, SOM_BLOCKS_PER_CHUNK);
}

/*
 * Take the pool lock with a spare struct som_chunk_bits at hand: every
 * change of one block's state needs at most one, and a change starts here.
 * Returns 0 with the lock held, or -ENOMEM without it.
 */
int som_pool_lock_stocked(struct som_pool *pool, gfp_t gfp)
{
	struct som_chunk_bits *bits;

	might_sleep_if(gfpflags_allow_blocking(gfp));
	spin_lock(&pool->lock);
	while (!pool->spare) {
		spin_unlock(&pool->lock);
		bits = kmem_cache_alloc(som_chunk_bits_cache, gfp);
		if (!bits)
			return -ENOMEM;
		spin_lock(&pool->lock);
		if (!pool->spare)
			pool->spare = bits;
		else
			kmem_cache_free(som_chunk_bits_cache, bits);
	}
	return 0;
}

/* @chunk's blocks are all alike again: it gives its bits back. */
void som_chunk_drop_bits(struct som_pool *pool, struct som_chunk *chunk)
{
	struct som_chunk_bits *bits = chunk->bits;

	lockdep_assert_held(&pool->lock);
	if (!bits)
		return;
	chunk->bits = NULL;
	pool->nr_bits--;
	if (!pool->spare)
		pool->spare = bits;
	else
		kmem_cache_free(som_chunk_bits_cache, bits);
}

/*
 * Block @i of @chunk becomes free or allocated, dirty or zeroed; the
 * counts follow. The pool lock was taken by som_pool_lock_stocked().
 */
void som_chunk_set_block(struct som_pool *pool, struct som_chunk *chunk,
			 unsigned int i, bool free, bool dirty)
{
	long d_free = (long)free - som_chunk_is_free(chunk, i);
	long d_dirty = (long)dirty - som_chunk_is_dirty(chunk, i);
	struct som_chunk_bits *bits = chunk->bits;

	lockdep_assert_held(&pool->lock);
	if (!bits) {
		if (WARN_ON_ONCE(!pool->spare))
			return;
		bits = pool->spare;
		pool->spare = NULL;
		if (chunk->nr_free)
			bitmap_fill(bits->free, SOM_BLOCKS_PER_CHUNK);
		else
			bitmap_zero(bits->free, SOM_BLOCKS_PER_CHUNK);
		som_chunk_dirty_bits(chunk, bits->dirty);
		chunk->bits = bits;
		pool->nr_bits++;
	}
	__assign_bit(i, bits->free, free);
	__assign_bit(i, bits->dirty, dirty);
	chunk->nr_free += d_free;
	chunk->nr_dirty += d_dirty;
	som_chunk_count(pool, chunk, d_free, d_dirty);
	if (!som_chunk_mixed(chunk))
		som_chunk_drop_bits(pool, chunk);
}

/* Take free block @i out of the free set; return whether it is dirty. */
bool som_chunk_take(struct som_pool *pool, struct som_chunk *chunk,
		    unsigned int i)
{
	bool dirty = som_chunk_is_dirty(chunk, i);

	som_chunk_set_block(pool, chunk, i, false, false);
	return dirty;
}

/* A free block of @chunk that is zeroed (or dirty), or SOM_BLOCKS_PER_CHUNK. */
unsigned int som_chunk_find(struct som_pool *pool,
			    struct som_chunk *chunk, bool zeroed)
{
	unsigned int i;

	if (!chunk->bits) {
		if (chunk->nr_free != SOM_BLOCKS_PER_CHUNK ||
		    (zeroed ? chunk->nr_dirty : !chunk->nr_dirty))
			return SOM_BLOCKS_PER_CHUNK;
		/* All alike: the first, or the next if the worker has it. */
		return !zeroed && som_chunk_bfn(chunk, 0) == pool->zeroing;
	}
	if (zeroed)
		return find_next_andnot_bit(chunk->bits->free,
					    chunk->bits->dirty,
					    SOM_BLOCKS_PER_CHUNK, 0);
	for_each_set_bit(i, chunk->bits->dirty, SOM_BLOCKS_PER_CHUNK)
		if (som_chunk_bfn(chunk, i) != pool->zeroing)
			return i;
	return SOM_BLOCKS_PER_CHUNK;
}

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
	chunk = kmem_cache_zalloc(som_chunk_cache, GFP_KERNEL);
	if (!chunk)
		return ERR_PTR(-ENOMEM);
	chunk->phys = phys;
	chunk->nid = nid;
	chunk->unmovable = unmovable;
	chunk->owner = owner;
	chunk->vaddr = memremap(phys, SOM_CHUNK_SIZE, MEMREMAP_WB);
	if (!chunk->vaddr) {
		kmem_cache_free(som_chunk_cache, chunk);
		return ERR_PTR(-ENOMEM);
	}
	INIT_LIST_HEAD(&chunk->list);
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
	if (chunk->bits)
		kmem_cache_free(som_chunk_bits_cache, chunk->bits);
	kmem_cache_free(som_chunk_cache, chunk);
}
EXPORT_SYMBOL_IF_KUNIT(som_chunk_destroy);
