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
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <kunit/visibility.h>
#include <linux/mutex.h>
#include <linux/sched.h>
#include <linux/string.h>
#include <linux/xarray.h>

#include "pool_internal.h"

#define SOM_PAGES_PER_BLOCK_POOL	BIT(SOM_BLOCK_SHIFT - PAGE_SHIFT)

/*
 * An entry of som_pool.poison, keyed by pfn, is a value: the errors
 * reported for the page, shifted left by one, and SOM_POISON_RETIRED on
 * the first recorded page of a retired block.
 */
#define SOM_POISON_RETIRED	1UL
#define SOM_POISON_EVENT	2UL

static unsigned long som_block_first_pfn(unsigned long bfn)
{
	return som_bfn_to_pfn(bfn);
}

static unsigned long som_block_last_pfn(unsigned long bfn)
{
	return som_bfn_to_pfn(bfn) + SOM_PAGES_PER_BLOCK_POOL - 1;
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
		if (xa_to_value(entry) & SOM_POISON_RETIRED)
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
			 xa_mk_value(xa_to_value(entry) | SOM_POISON_RETIRED),
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
			  pfn + (SOM_CHUNK_SIZE >> PAGE_SHIFT) - 1)
		nr += xa_to_value(entry) & SOM_POISON_RETIRED;
	return nr;
}

/* Does @chunk hold a poisoned page? */
bool som_chunk_poisoned(struct som_pool *pool, const struct som_chunk *chunk)
{
	unsigned long pfn = chunk->phys >> PAGE_SHIFT;

	return xa_find(&pool->poison, &pfn,
		       pfn + (SOM_CHUNK_SIZE >> PAGE_SHIFT) - 1, XA_PRESENT);
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
			  first + (SOM_CHUNK_SIZE >> PAGE_SHIFT) - 1) {
		if (!(xa_to_value(entry) & SOM_POISON_RETIRED))
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
 * Forget the records of @chunk, which leaves the pool; the first pages go
 * to @pfns (room for @max, *@nr counts them all), if @pfns.
 */
void som_chunk_forget_poison(struct som_pool *pool, struct som_chunk *chunk,
			     unsigned long *pfns, unsigned int max,
			     unsigned int *nr)
{
	unsigned long pfn = chunk->phys >> PAGE_SHIFT;
	void *entry;

	xa_for_each_range(&pool->poison, pfn, entry, pfn,
			  pfn + (SOM_CHUNK_SIZE >> PAGE_SHIFT) - 1) {
		pr_warn("pfn %#lx leaves the pool poisoned\n", pfn);
		if (pfns && *nr < max)
			pfns[*nr] = pfn;
		if (pfns)
			(*nr)++;
		xa_erase(&pool->poison, pfn);
	}
}

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
 * region holds it), -ENOENT (not pool memory) or -ENOMEM.
 */
int som_pool_poison(struct som_pool *pool, unsigned long pfn,
		    struct som_poison_where *where)
{
	unsigned long bfn = pfn >> (SOM_BLOCK_SHIFT - PAGE_SHIFT);
	unsigned int i = bfn & (SOM_BLOCKS_PER_CHUNK - 1);
	struct som_chunk *chunk;
	bool recorded = false;
	void *old;
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
			old = xa_load(&pool->poison, pfn);
			xa_store(&pool->poison, pfn,
				 xa_mk_value((old ? xa_to_value(old) : 0) +
					     SOM_POISON_EVENT), GFP_NOWAIT);
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
		stats->events += xa_to_value(entry) / SOM_POISON_EVENT;
		stats->pages++;
		if (xa_to_value(entry) & SOM_POISON_RETIRED)
			stats->retired_bytes += SOM_BLOCK_SIZE;
	}
	spin_unlock(&pool->lock);
}
EXPORT_SYMBOL_IF_KUNIT(som_pool_poison_stats);
