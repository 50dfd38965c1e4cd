// SPDX-License-Identifier: GPL-2.0
/*
 * A region's ages: for each 2 MiB index, how many aging scans in a row
 * found it unused (age.h says how they are kept).
 */
#include <kunit/visibility.h>
#include <linux/bitmap.h>
#include <linux/sched.h>
#include <linux/slab.h>

#include "age.h"
#include "pack.h"
#include "pool.h"
#include "table.h"

#define SOM_AGE_GIB_SHIFT	(SOM_CHUNK_SHIFT - SOM_BLOCK_SHIFT)
#define SOM_AGE_MAX		(SOM_AGE_NR - 1)
/*
 * The state above SOM_AGE_MAX: used since the last scan, though no entry
 * may show it at the next (som_ages_mark()). It reads as age 0.
 */
#define SOM_AGE_USED		(SOM_AGE_MAX + 1)

/**
 * struct som_gib_ages - the ages of a GiB whose indices differ
 * @nibbles:	index i's age in the low (even i) or high (odd i) 4 bits
 *		of byte i / 2
 */
struct som_gib_ages {
	u8 nibbles[SOM_BLOCKS_PER_CHUNK / 2];
};

static struct kmem_cache *som_gib_ages_cache;

/**
 * som_age_cache_init() - create the slab cache of struct som_gib_ages
 *
 * A cache of its own, never merged, so that /proc/slabinfo shows exactly
 * what som spends on them.
 *
 * Context: Module init.
 * Return: 0 or -ENOMEM.
 */
int som_age_cache_init(void)
{
	som_gib_ages_cache = kmem_cache_create("som_gib_ages",
					       sizeof(struct som_gib_ages), 0,
					       SLAB_ACCOUNT | SLAB_NO_MERGE,
					       NULL);
	return som_gib_ages_cache ? 0 : -ENOMEM;
}

/**
 * som_age_cache_exit() - destroy what som_age_cache_init() created
 *
 * Context: Module exit, every region's ages destroyed.
 */
void som_age_cache_exit(void)
{
	kmem_cache_destroy(som_gib_ages_cache);
}

static unsigned int som_gib_age(const struct som_gib_ages *ga, unsigned int i)
{
	return (ga->nibbles[i / 2] >> (4 * (i & 1))) & 0xf;
}

static void som_gib_set_age(struct som_gib_ages *ga, unsigned int i,
			    unsigned int age)
{
	u8 *b = &ga->nibbles[i / 2];

	*b = (*b & ~(0xf << (4 * (i & 1)))) | (age << (4 * (i & 1)));
}

/* The state of index @i of a GiB entry, whatever its form. */
static unsigned int som_entry_state(void *entry, unsigned int i)
{
	if (!entry)
		return 0;
	if (xa_is_value(entry))
		return xa_to_value(entry);
	return som_gib_age(entry, i);
}

/* The age a state reads as. */
static unsigned int som_state_age(unsigned int state)
{
	return state == SOM_AGE_USED ? 0 : state;
}

/* The state after a scan that found the index @used or not. */
static unsigned int som_state_next(unsigned int state, bool used)
{
	if (used || state == SOM_AGE_USED)
		return 0;
	return min(state + 1, SOM_AGE_MAX);
}

/**
 * som_ages_init() - empty ages: every index young
 * @ages: the ages
 */
void som_ages_init(struct som_ages *ages)
{
	xa_init(&ages->gibs);
	ages->nr_split = 0;
}
EXPORT_SYMBOL_IF_KUNIT(som_ages_init);

/* Make GiB @g's entry @entry, freeing what it replaces. */
static void som_ages_store(struct som_ages *ages, unsigned long g, void *entry)
{
	void *old;

	/*
	 * Replacing a present entry allocates nothing; a new value entry may
	 * need a node, and without one the GiB becomes young (no entry). Out
	 * of memory, that makes a scan's verdict look used, never unused; a
	 * mark (som_ages_mark()) is lost, and its indices age one scan.
	 */
	old = xa_store(&ages->gibs, g, entry, GFP_KERNEL_ACCOUNT);
	if (xa_is_err(old)) {
		if (entry && !xa_is_value(entry))
			kmem_cache_free(som_gib_ages_cache, entry);
		old = xa_erase(&ages->gibs, g);
		entry = NULL;
	}
	if (old && !xa_is_value(old)) {
		kmem_cache_free(som_gib_ages_cache, old);
		ages->nr_split--;
	}
	if (entry && !xa_is_value(entry))
		ages->nr_split++;
}

/**
 * som_ages_destroy() - free every struct som_gib_ages
 * @ages: the ages
 */
void som_ages_destroy(struct som_ages *ages)
{
	unsigned long g;
	void *entry;

	xa_for_each(&ages->gibs, g, entry)
		if (!xa_is_value(entry))
			kmem_cache_free(som_gib_ages_cache, entry);
	xa_destroy(&ages->gibs);
	ages->nr_split = 0;
}
EXPORT_SYMBOL_IF_KUNIT(som_ages_destroy);

/**
 * som_ages_advance() - one scan's verdict on a GiB
 * @ages: the ages
 * @table: the region's table
 * @first: the GiB's first index, 1 GiB aligned
 * @used: SOM_BLOCKS_PER_CHUNK bits: set for each index the owner mapped
 *	since the last scan
 *
 * Each index holding a block gets age 0 if used (or marked used since the
 * last scan), else one more (up to SOM_AGE_NR - 1). The GiB keeps the
 * cheapest form that says so; the ages of indices without a block are not
 * kept. If memory for the split form is short, the whole GiB is made
 * young.
 *
 * Context: Process context, may sleep; caller holds the region lock.
 */
void som_ages_advance(struct som_ages *ages, struct som_table *table,
		      pgoff_t first, const unsigned long *used)
{
	DECLARE_BITMAP(blocks, SOM_BLOCKS_PER_CHUNK);
	unsigned long g = first >> SOM_AGE_GIB_SHIFT;
	void *entry = xa_load(&ages->gibs, g);
	struct som_gib_ages *ga, *old;
	unsigned int i, age, common = UINT_MAX;
	bool uniform = true;

	if (!som_table_blocks(table, first, blocks)) {
		if (entry)
			som_ages_store(ages, g, NULL);
		return;
	}
	if (!bitmap_intersects(used, blocks, SOM_BLOCKS_PER_CHUNK) &&
	    (!entry || xa_is_value(entry))) {
		/* Nothing found used, all one state: one step for all. */
		age = som_state_next(som_entry_state(entry, 0), false);
		som_ages_store(ages, g, age ? xa_mk_value(age) : NULL);
		return;
	}
	/* The new age of each index, and whether they are all one. */
	for_each_set_bit(i, blocks, SOM_BLOCKS_PER_CHUNK) {
		age = som_state_next(som_entry_state(entry, i),
				     test_bit(i, used));
		if (common == UINT_MAX)
			common = age;
		else if (age != common)
			uniform = false;
	}
	if (uniform) {
		som_ages_store(ages, g, common ? xa_mk_value(common) : NULL);
		return;
	}
	old = entry && !xa_is_value(entry) ? entry : NULL;
	ga = old ? old : kmem_cache_zalloc(som_gib_ages_cache,
					   GFP_KERNEL_ACCOUNT);
	if (!ga) {
		som_ages_store(ages, g, NULL);
		return;
	}
	/* Indices without a block: 0, for a block that comes later. */
	for (i = 0; i < SOM_BLOCKS_PER_CHUNK; i++)
		som_gib_set_age(ga, i, !test_bit(i, blocks) ? 0 :
				som_state_next(som_entry_state(entry, i),
					       test_bit(i, used)));
	if (!old)
		som_ages_store(ages, g, ga);
}
EXPORT_SYMBOL_IF_KUNIT(som_ages_advance);

/* Give the indices of GiB @first set in @bits the state @state. */
static void som_ages_set(struct som_ages *ages, pgoff_t first,
			 const unsigned long *bits, unsigned int state)
{
	unsigned long g = first >> SOM_AGE_GIB_SHIFT;
	void *entry = xa_load(&ages->gibs, g);
	struct som_gib_ages *ga;
	unsigned int i, old;

	if (bitmap_empty(bits, SOM_BLOCKS_PER_CHUNK))
		return;
	if (bitmap_full(bits, SOM_BLOCKS_PER_CHUNK)) {
		som_ages_store(ages, g, state ? xa_mk_value(state) : NULL);
		return;
	}
	if (!entry || xa_is_value(entry)) {
		old = som_entry_state(entry, 0);
		if (old == state)
			return;
		ga = kmem_cache_alloc(som_gib_ages_cache, GFP_KERNEL_ACCOUNT);
		if (!ga) {
			/* Short of memory: the whole GiB reads as used. */
			som_ages_store(ages, g, xa_mk_value(SOM_AGE_USED));
			return;
		}
		memset(ga->nibbles, old * 0x11, sizeof(ga->nibbles));
		som_ages_store(ages, g, ga);
		if (xa_load(&ages->gibs, g) != ga)
			return;		/* no room: the GiB is young */
		entry = ga;
	}
	for_each_set_bit(i, bits, SOM_BLOCKS_PER_CHUNK)
		som_gib_set_age(entry, i, state);
}

/**
 * som_ages_mark() - the owner used some indices of a GiB since the last scan
 * @ages: the ages
 * @first: the GiB's first index, 1 GiB aligned
 * @used: SOM_BLOCKS_PER_CHUNK bits, set for each index used
 *
 * For what the next scan cannot see: an entry zapped by someone else (a
 * move, a split, a memory error). The indices read as age 0 until then,
 * and the scan counts them used. If memory for the split form is short,
 * the whole GiB is marked.
 *
 * Context: Process context, may sleep; caller holds the region lock.
 */
void som_ages_mark(struct som_ages *ages, pgoff_t first,
		   const unsigned long *used)
{
	som_ages_set(ages, first, used, SOM_AGE_USED);
}
EXPORT_SYMBOL_IF_KUNIT(som_ages_mark);

/**
 * som_ages_renew() - indices of a GiB got new blocks
 * @ages: the ages
 * @first: the GiB's first index, 1 GiB aligned
 * @fresh: SOM_BLOCKS_PER_CHUNK bits, set for each index with a new block
 *
 * They read as age 0, not as whatever the GiB's other indices are, until
 * the next scan ages them as any other.
 *
 * Context: Process context, may sleep; caller holds the region lock.
 */
void som_ages_renew(struct som_ages *ages, pgoff_t first,
		    const unsigned long *fresh)
{
	som_ages_set(ages, first, fresh, 0);
}
EXPORT_SYMBOL_IF_KUNIT(som_ages_renew);

/**
 * som_ages_prune() - forget the GiBs that hold no block any more
 * @ages: the ages
 * @table: the region's table
 *
 * Context: Process context, may sleep; caller holds the region lock.
 */
void som_ages_prune(struct som_ages *ages, struct som_table *table)
{
	DECLARE_BITMAP(blocks, SOM_BLOCKS_PER_CHUNK);
	unsigned long g;
	void *entry;

	xa_for_each(&ages->gibs, g, entry) {
		if (!som_table_blocks(table, g << SOM_AGE_GIB_SHIFT, blocks))
			som_ages_store(ages, g, NULL);
		cond_resched();
	}
}
EXPORT_SYMBOL_IF_KUNIT(som_ages_prune);

/**
 * som_ages_get() - the age of one index
 * @ages: the ages
 * @table: the region's table
 * @idx: the 2 MiB index
 *
 * Context: Caller holds the region lock.
 * Return: its age, or SOM_AGE_ABSENT if it holds no block.
 */
unsigned int som_ages_get(struct som_ages *ages, struct som_table *table,
			  pgoff_t idx)
{
	if (!som_table_is_block(som_table_get(table, idx)))
		return SOM_AGE_ABSENT;
	return som_state_age(som_entry_state(xa_load(&ages->gibs,
						     idx >> SOM_AGE_GIB_SHIFT),
					     idx & (SOM_BLOCKS_PER_CHUNK - 1)));
}
EXPORT_SYMBOL_IF_KUNIT(som_ages_get);

/**
 * som_ages_count() - add up a region's memory by age
 * @ages: the ages
 * @table: the region's table
 * @bytes: the bytes of each age are added to its element
 *
 * Context: Process context, may sleep; caller holds the region lock.
 */
void som_ages_count(struct som_ages *ages, struct som_table *table,
		    u64 bytes[SOM_AGE_NR])
{
	DECLARE_BITMAP(blocks, SOM_BLOCKS_PER_CHUNK);
	pgoff_t idx = 0;
	unsigned int i, nr;
	void *entry;

	/* Pack blocks (pack.c) are aged by no scan: not counted. */
	while (som_table_next(table, &idx, SOM_PACK_FIRST - 1) !=
	       SOM_TABLE_ABSENT) {
		idx = round_down(idx, SOM_BLOCKS_PER_CHUNK);
		nr = som_table_blocks(table, idx, blocks);
		entry = xa_load(&ages->gibs, idx >> SOM_AGE_GIB_SHIFT);
		if (!entry || xa_is_value(entry))
			bytes[som_state_age(som_entry_state(entry, 0))] +=
				(u64)nr << SOM_BLOCK_SHIFT;
		else
			for_each_set_bit(i, blocks, SOM_BLOCKS_PER_CHUNK)
				bytes[som_state_age(som_gib_age(entry, i))] +=
					1ULL << SOM_BLOCK_SHIFT;
		if (idx + SOM_BLOCKS_PER_CHUNK < idx)
			break;
		idx += SOM_BLOCKS_PER_CHUNK;
		cond_resched();
	}
}
EXPORT_SYMBOL_IF_KUNIT(som_ages_count);

/**
 * som_ages_bytes() - the memory of a region's ages
 * @ages: the ages
 *
 * Context: Process context, may sleep; caller holds the region lock.
 * Return: their struct som_gib_ages and xarray nodes, in bytes.
 */
u64 som_ages_bytes(struct som_ages *ages)
{
	return (u64)ages->nr_split * kmem_cache_size(som_gib_ages_cache) +
	       (u64)som_xa_nodes(&ages->gibs) * sizeof(struct xa_node);
}
EXPORT_SYMBOL_IF_KUNIT(som_ages_bytes);
