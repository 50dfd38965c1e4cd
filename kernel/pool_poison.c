// SPDX-License-Identifier: GPL-2.0
/*
 * som pool: memory errors. A 4 KiB page found bad, by a machine check or
 * because an administrator says so, is recorded in som_pool.poison for as
 * long as its chunk is in the pool, and the 2 MiB block that holds it
 * never goes back to the free blocks:
 *
 *	free (zeroed or dirty) --(error)--> retired
 *	in a region --(error)--> in a region --(region frees it)--> retired
 *
 * A retired block is allocated to nobody: never zeroed, never handed out,
 * never copied. It leaves the pool with its chunk, which may leave with
 * retired blocks in it. Keeping the owner's data away from a poisoned
 * block that a region holds is the layer above's business (poison.c).
 *
 * A free block's set may have every free block promised to claims: then
 * one claim gives a promise up as the block is retired (som_claim_shed():
 * it moves to another node, or the claim is one block short).
 *
 * Records are changed under the pool lock only (a new record's slot is
 * reserved first, under poison_lock), so that a count and the retired
 * mark never overwrite each other.
 *
 * A chunk that leaves the pool takes its poisoned pages along, but the
 * pool remembers them (som_pool.poison_gone): memory without struct page
 * has nowhere else to keep the mark, and a reserved range or dax device
 * removed and added again is the same memory, errors and all. When the
 * chunk comes back its records come back with it and their blocks are
 * retired before the chunk is seen by anyone (som_chunks_recall_poison()).
 * An administrator who replaced the memory says so with
 * som_pool_forget_poison().
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <kunit/visibility.h>
#include <linux/bitmap.h>
#include <linux/mutex.h>
#include <linux/pfn.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/xarray.h>

#include "pool_internal.h"

#define SOM_PAGES_PER_BLOCK_POOL	BIT(SOM_BLOCK_SHIFT - PAGE_SHIFT)

/*
 * An entry of som_pool.poison, keyed by pfn, is a value: the errors
 * reported for the page, shifted left by one, and SOM_RECORD_RETIRED on
 * the first recorded page of a retired block. (Not SOM_POISON_*: those
 * are what som_pool_poison() returns, enum som_poison_state.)
 */
#define SOM_RECORD_RETIRED	1UL
#define SOM_RECORD_EVENT	2UL

static unsigned long som_block_first_pfn(unsigned long bfn)
{
	return som_bfn_to_pfn(bfn);
}

static unsigned long som_block_last_pfn(unsigned long bfn)
{
	return som_bfn_to_pfn(bfn) + SOM_PAGES_PER_BLOCK_POOL - 1;
}

static unsigned long som_chunk_last_pfn(const struct som_chunk *chunk)
{
	return (chunk->phys >> PAGE_SHIFT) + (SOM_CHUNK_SIZE >> PAGE_SHIFT) - 1;
}

/*
 * Count one more error in the record of @pfn in @xa (made if none): the
 * xa_store() result. Under the pool lock (a reserved slot, GFP_NOWAIT) or
 * poison_lock alone (@xa the remembered pages, GFP_KERNEL).
 */
static void *som_record_event(struct xarray *xa, unsigned long pfn, gfp_t gfp)
{
	void *old = xa_load(xa, pfn);

	return xa_store(xa, pfn, xa_mk_value((old ? xa_to_value(old) : 0) +
					     SOM_RECORD_EVENT), gfp);
}

/* The first recorded page of block @bfn, or NULL; its pfn in *@pfn. */
static void *som_block_poison(struct som_pool *pool, unsigned long bfn,
			      unsigned long *pfn)
{
	*pfn = som_block_first_pfn(bfn);
	return xa_find(&pool->poison, pfn, som_block_last_pfn(bfn),
		       XA_PRESENT);
}

/**
 * som_pool_block_poisoned() - does a block hold a poisoned page?
 * @pool: the pool
 * @bfn: the block
 *
 * Context: Any; takes the RCU read lock.
 * Return: whether some page of @bfn is recorded as poisoned.
 */
bool som_pool_block_poisoned(struct som_pool *pool, unsigned long bfn)
{
	unsigned long pfn;

	return som_block_poison(pool, bfn, &pfn);
}
EXPORT_SYMBOL_IF_KUNIT(som_pool_block_poisoned);

/**
 * som_pool_page_poisoned() - is a page recorded as poisoned?
 * @pool: the pool
 * @pfn: the page
 *
 * Context: Any; takes the RCU read lock.
 */
bool som_pool_page_poisoned(struct som_pool *pool, unsigned long pfn)
{
	return xa_load(&pool->poison, pfn);
}
EXPORT_SYMBOL_IF_KUNIT(som_pool_page_poisoned);

/**
 * som_pool_find_poison() - the next poisoned page in a range
 * @pool: the pool
 * @pfn: in: where to start; out: the page found
 * @last: the last page to look at
 *
 * Context: Any; takes the RCU read lock.
 * Return: whether there is one.
 */
bool som_pool_find_poison(struct som_pool *pool, unsigned long *pfn,
			  unsigned long last)
{
	return xa_find(&pool->poison, pfn, last, XA_PRESENT);
}
EXPORT_SYMBOL_IF_KUNIT(som_pool_find_poison);

static bool som_block_retired(struct som_pool *pool, unsigned long bfn)
{
	unsigned long pfn = som_block_first_pfn(bfn);
	void *entry;

	xa_for_each_range(&pool->poison, pfn, entry, pfn,
			  som_block_last_pfn(bfn))
		if (xa_to_value(entry) & SOM_RECORD_RETIRED)
			return true;
	return false;
}

/*
 * If block @bfn, allocated, holds a poisoned page, retire it: mark its
 * first record. The record exists, so the store allocates nothing.
 */
bool som_pool_retire_locked(struct som_pool *pool, unsigned long bfn)
{
	unsigned long pfn;
	void *entry;

	lockdep_assert_held(&pool->lock);
	entry = som_block_poison(pool, bfn, &pfn);
	if (!entry)
		return false;
	if (!som_block_retired(pool, bfn))
		xa_store(&pool->poison, pfn,
			 xa_mk_value(xa_to_value(entry) | SOM_RECORD_RETIRED),
			 GFP_NOWAIT);
	return true;
}

/* Retired blocks of @chunk. */
unsigned int som_chunk_nr_retired(struct som_pool *pool,
				  const struct som_chunk *chunk)
{
	unsigned long pfn = chunk->phys >> PAGE_SHIFT;
	unsigned int nr = 0;
	void *entry;

	xa_for_each_range(&pool->poison, pfn, entry, pfn,
			  som_chunk_last_pfn(chunk))
		nr += xa_to_value(entry) & SOM_RECORD_RETIRED;
	return nr;
}

/* Does @chunk hold a poisoned page? */
bool som_chunk_poisoned(struct som_pool *pool, const struct som_chunk *chunk)
{
	unsigned long pfn = chunk->phys >> PAGE_SHIFT;

	return xa_find(&pool->poison, &pfn, som_chunk_last_pfn(chunk),
		       XA_PRESENT);
}

/*
 * Zero the retired blocks of @chunk, which leaves the pool: they hold a
 * former owner's data (or a dirty block's). The poisoned pages are left
 * alone. Caller holds poison_lock, not the pool lock.
 */
void som_chunk_zero_retired(struct som_pool *pool, struct som_chunk *chunk)
{
	unsigned long first = chunk->phys >> PAGE_SHIFT, pfn, bfn, p;
	void *entry, *vaddr;

	lockdep_assert_held(&pool->poison_lock);
	xa_for_each_range(&pool->poison, pfn, entry, first,
			  som_chunk_last_pfn(chunk)) {
		if (!(xa_to_value(entry) & SOM_RECORD_RETIRED))
			continue;
		bfn = pfn >> (SOM_BLOCK_SHIFT - PAGE_SHIFT);
		vaddr = som_chunk_block_vaddr(chunk, bfn &
					      (SOM_BLOCKS_PER_CHUNK - 1));
		for (p = 0; p < SOM_PAGES_PER_BLOCK_POOL; p++)
			if (!xa_load(&pool->poison, som_bfn_to_pfn(bfn) + p))
				memset(vaddr + (p << PAGE_SHIFT), 0, PAGE_SIZE);
		cond_resched();
	}
}

/*
 * The records of @chunk, which leaves the pool, move to the poisoned pages
 * the pool remembers; the first pages go to @pfns (room for @max, *@nr
 * counts them all), if @pfns. Caller holds poison_lock.
 */
void som_chunk_forget_poison(struct som_pool *pool, struct som_chunk *chunk,
			     unsigned long *pfns, unsigned int max,
			     unsigned int *nr)
{
	unsigned long pfn = chunk->phys >> PAGE_SHIFT;
	void *entry;

	lockdep_assert_held(&pool->poison_lock);
	xa_for_each_range(&pool->poison, pfn, entry, pfn,
			  som_chunk_last_pfn(chunk)) {
		pr_warn("pfn %#lx leaves the pool poisoned\n", pfn);
		if (pfns && *nr < max)
			pfns[*nr] = pfn;
		if (pfns)
			(*nr)++;
		/* A small allocation: the page allocator retries it. */
		xa_store(&pool->poison_gone, pfn,
			 xa_mk_value(xa_to_value(entry) & ~SOM_RECORD_RETIRED),
			 GFP_KERNEL | __GFP_NOFAIL);
		xa_erase(&pool->poison, pfn);
	}
}

/*
 * Before @chunks enter the pool: each page the pool remembers as poisoned
 * in them gets its record's slot, and each chunk holding one gets bits of
 * its own (all blocks free and dirty, as it is), so that
 * som_chunks_recall_poison() allocates nothing under the pool lock.
 * Caller holds poison_lock. Returns 0 or -ENOMEM (then
 * som_chunks_unprepare_poison() undoes what was done).
 */
int som_chunks_prepare_poison(struct som_pool *pool, struct list_head *chunks)
{
	struct som_chunk_bits *bits;
	struct som_chunk *chunk;
	unsigned long pfn;
	void *entry;

	lockdep_assert_held(&pool->poison_lock);
	list_for_each_entry(chunk, chunks, list) {
		xa_for_each_range(&pool->poison_gone, pfn, entry,
				  chunk->phys >> PAGE_SHIFT,
				  som_chunk_last_pfn(chunk)) {
			pr_warn("pfn %#lx comes back poisoned: its block is retired\n",
				pfn);
			if (xa_reserve(&pool->poison, pfn, GFP_KERNEL))
				return -ENOMEM;
			if (chunk->bits)
				continue;
			bits = kmem_cache_alloc(som_chunk_bits_cache,
						GFP_KERNEL);
			if (!bits)
				return -ENOMEM;
			bitmap_fill(bits->free, SOM_BLOCKS_PER_CHUNK);
			bitmap_fill(bits->dirty, SOM_BLOCKS_PER_CHUNK);
			chunk->bits = bits;
		}
	}
	return 0;
}

/* Undo som_chunks_prepare_poison(), all or part: the chunks stay out. */
void som_chunks_unprepare_poison(struct som_pool *pool,
				 struct list_head *chunks)
{
	struct som_chunk *chunk;
	unsigned long pfn;
	void *entry;

	lockdep_assert_held(&pool->poison_lock);
	list_for_each_entry(chunk, chunks, list) {
		xa_for_each_range(&pool->poison_gone, pfn, entry,
				  chunk->phys >> PAGE_SHIFT,
				  som_chunk_last_pfn(chunk))
			xa_release(&pool->poison, pfn);
		if (chunk->bits) {
			kmem_cache_free(som_chunk_bits_cache, chunk->bits);
			chunk->bits = NULL;
		}
	}
}

/*
 * @chunks are about to be counted into the pool, under the lock that
 * keeps anyone from taking their blocks: the pages the pool remembers
 * as poisoned in them get their records back (into the slots
 * som_chunks_prepare_poison() reserved), and their blocks are retired.
 * The chunks count as isolated meanwhile, so that their sets (and the
 * low watermark) see only what is left of them once: the caller counts
 * each chunk's free and dirty blocks in afterwards.
 */
void som_chunks_recall_poison(struct som_pool *pool, struct list_head *chunks)
{
	struct som_chunk *chunk;
	unsigned long pfn;
	unsigned int i;
	void *entry;

	lockdep_assert_held(&pool->poison_lock);
	lockdep_assert_held(&pool->lock);
	list_for_each_entry(chunk, chunks, list) {
		chunk->isolated = true;
		xa_for_each_range(&pool->poison_gone, pfn, entry,
				  chunk->phys >> PAGE_SHIFT,
				  som_chunk_last_pfn(chunk)) {
			/* The slot is reserved: nothing to allocate. */
			WARN_ON_ONCE(xa_is_err(xa_store(&pool->poison, pfn,
							entry, GFP_NOWAIT)));
			xa_erase(&pool->poison_gone, pfn);
			i = (pfn >> (SOM_BLOCK_SHIFT - PAGE_SHIFT)) &
			    (SOM_BLOCKS_PER_CHUNK - 1);
			if (som_chunk_is_free(chunk, i))
				som_chunk_retire_free(pool, chunk, i);
		}
		chunk->isolated = false;
	}
}

/**
 * som_pool_forget_poison() - forget remembered errors of memory outside
 * @pool: the pool
 * @phys: start of a physical range
 * @size: its length
 *
 * For memory that was replaced: the pages of [@phys, @phys + @size) that
 * left the pool poisoned are no longer remembered, and a chunk of them
 * added again is used whole.
 *
 * Context: Process context, may sleep. Takes poison_lock, then the pool
 * lock.
 * Return: how many pages were forgotten, or -EBUSY if part of the range
 * is in the pool (its records are the pool's own).
 */
int som_pool_forget_poison(struct som_pool *pool, phys_addr_t phys, u64 size)
{
	unsigned long pfn;
	void *entry;
	int nr = 0;

	mutex_lock(&pool->poison_lock);
	if (som_pool_contains(pool, phys, size)) {
		mutex_unlock(&pool->poison_lock);
		return -EBUSY;
	}
	xa_for_each_range(&pool->poison_gone, pfn, entry, PHYS_PFN(phys),
			  PHYS_PFN(phys + size - 1)) {
		pr_info("pfn %#lx forgotten as poisoned\n", pfn);
		xa_erase(&pool->poison_gone, pfn);
		nr++;
	}
	mutex_unlock(&pool->poison_lock);
	return nr;
}
EXPORT_SYMBOL_IF_KUNIT(som_pool_forget_poison);

/*
 * Block @i of @chunk is free and a memory error takes it. If every free
 * block of its set is promised, some claim gives one promise up first
 * (som_claim_shed()), so that nr_reserved <= nr_free still holds.
 */
void som_chunk_retire_free(struct som_pool *pool, struct som_chunk *chunk,
			   unsigned int i)
{
	struct som_claim *claim;

	lockdep_assert_held(&pool->lock);
	if (!chunk->isolated && !som_set_spare(som_chunk_set(pool, chunk))) {
		list_for_each_entry(claim, &pool->claims, pool_link)
			if (som_claim_shed(pool, claim, chunk->nid,
					   chunk->unmovable))
				break;
		/* Some claim holds what nr_reserved counts. */
		WARN_ON_ONCE(!som_set_spare(som_chunk_set(pool, chunk)));
	}
	som_chunk_set_block(pool, chunk, i, false, false);
	som_pool_retire_locked(pool, som_chunk_bfn(chunk, i));
}

/*
 * An error reported in @pfn while it was pool memory reaches the pool
 * after its chunk left (a machine check queued behind another, a source
 * removed meanwhile): the page is remembered with its chunk's errors, for
 * when the memory comes back. Caller holds poison_lock.
 */
static void som_pool_poison_gone(struct som_pool *pool, unsigned long pfn)
{
	lockdep_assert_held(&pool->poison_lock);
	if (xa_is_err(som_record_event(&pool->poison_gone, pfn, GFP_KERNEL)))
		pr_err("pfn %#lx is poisoned and out of memory to remember it\n",
		       pfn);
	else
		pr_warn("pfn %#lx poisoned after it left the pool: remembered\n",
			pfn);
}

/**
 * som_pool_poison() - record a poisoned page and retire its block if free
 * @pool: the pool
 * @pfn: the page
 * @where: filled in with the chunk's node, kind and owner
 *
 * The record and what it does to the block happen under one hold of the
 * pool lock: a free block is retired at once (a block the zeroing worker
 * is on is waited for first); an allocated block is retired when its
 * region frees it (som_pool_free_block()). Nothing can take the block in
 * between.
 *
 * Context: Process context, may sleep. Takes the pool's poison_lock, then
 * the pool lock.
 * Return: SOM_POISON_RETIRED (the block is retired), SOM_POISON_IN_USE (a
 * region holds it), -ENOENT (not pool memory; callers ask about pages
 * that were a moment ago, so the page is remembered as if it had left
 * with its chunk) or -ENOMEM.
 */
int som_pool_poison(struct som_pool *pool, unsigned long pfn,
		    struct som_poison_where *where)
{
	unsigned long bfn = pfn >> (SOM_BLOCK_SHIFT - PAGE_SHIFT);
	unsigned int i = bfn & (SOM_BLOCKS_PER_CHUNK - 1);
	struct som_chunk *chunk;
	bool recorded = false;
	int ret;

	mutex_lock(&pool->poison_lock);
	/* The slot, so that the record under the pool lock cannot fail. */
	ret = xa_reserve(&pool->poison, pfn, GFP_KERNEL | __GFP_NOFAIL);
	if (ret) {
		mutex_unlock(&pool->poison_lock);
		return ret;
	}
	for (;;) {
		som_pool_lock_stocked(pool, GFP_KERNEL | __GFP_NOFAIL);
		chunk = som_pool_find(pool, som_bfn_to_cfn(bfn));
		if (!chunk) {
			ret = -ENOENT;
			break;
		}
		if (!recorded) {
			som_record_event(&pool->poison, pfn, GFP_NOWAIT);
			recorded = true;
		}
		where->nid = chunk->nid;
		where->unmovable = chunk->unmovable;
		where->owner = chunk->owner;
		if (!som_chunk_is_free(chunk, i)) {
			ret = som_block_retired(pool, bfn) ? SOM_POISON_RETIRED :
							     SOM_POISON_IN_USE;
			break;
		}
		if (bfn == pool->zeroing) {
			som_pool_wait_zeroing(pool);
			continue;
		}
		som_chunk_retire_free(pool, chunk, i);
		ret = SOM_POISON_RETIRED;
		break;
	}
	spin_unlock(&pool->lock);
	if (!recorded)
		xa_release(&pool->poison, pfn);
	if (ret == -ENOENT)
		som_pool_poison_gone(pool, pfn);
	mutex_unlock(&pool->poison_lock);
	return ret;
}
EXPORT_SYMBOL_IF_KUNIT(som_pool_poison);

/**
 * som_pool_poison_stats() - what memory errors have cost
 * @pool: the pool
 * @nid: a node, or NUMA_NO_NODE for any
 * @owner: a source, or NULL for any
 * @stats: filled in
 *
 * Context: Takes the pool lock.
 */
void som_pool_poison_stats(struct som_pool *pool, int nid, const void *owner,
			   struct som_poison_stats *stats)
{
	struct som_chunk *chunk;
	unsigned long pfn;
	void *entry;

	memset(stats, 0, sizeof(*stats));
	spin_lock(&pool->lock);
	xa_for_each(&pool->poison, pfn, entry) {
		chunk = som_pool_find(pool, pfn >> (SOM_CHUNK_SHIFT - PAGE_SHIFT));
		if (!chunk || (nid != NUMA_NO_NODE && chunk->nid != nid) ||
		    (owner && chunk->owner != owner))
			continue;
		stats->events += xa_to_value(entry) / SOM_RECORD_EVENT;
		stats->pages++;
		if (xa_to_value(entry) & SOM_RECORD_RETIRED)
			stats->retired_bytes += SOM_BLOCK_SIZE;
	}
	if (nid == NUMA_NO_NODE && !owner)
		xa_for_each(&pool->poison_gone, pfn, entry)
			stats->pages_outside++;
	spin_unlock(&pool->lock);
}
EXPORT_SYMBOL_IF_KUNIT(som_pool_poison_stats);
