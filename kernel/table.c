// SPDX-License-Identifier: GPL-2.0
/*
 * som region tables: index -> block, a GiB at a time (see table.h).
 *
 * A split GiB (struct som_gib) codes each of its 512 indices in 12 bits:
 *
 *	0               absent
 *	1               reserved
 *	2 + d * 512 + b block b of the chunk in dictionary slot d (d < 7)
 *
 * so that 512 indices take 768 bytes and the whole structure 808: a GiB
 * mapped by 2 MiB blocks from up to 7 chunks. A block from an eighth
 * chunk, when no dictionary slot is free of references, makes the GiB
 * wide: 32 bits per index (0, 1, or the block frame number + 2) in a
 * second allocation, until som_table_tidy() finds it fits the dictionary
 * again.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <kunit/visibility.h>
#include <linux/bitmap.h>
#include <linux/bitops.h>
#include <linux/sched.h>
#include <linux/slab.h>

#include "pool.h"
#include "table.h"

#define SOM_GIB_SHIFT		(SOM_CHUNK_SHIFT - SOM_BLOCK_SHIFT)
#define SOM_GIB_MASK		(SOM_BLOCKS_PER_CHUNK - 1)
#define SOM_GIB_CHUNKS		7
#define SOM_GIB_NO_CFN		U32_MAX

#define SOM_CODE_ABSENT		0
#define SOM_CODE_RESERVED	1
#define SOM_CODE_BLOCK		2

/* Value entries of the GiB xarray: all reserved, or chunk cfn in order. */
#define SOM_GIB_RESERVED	xa_mk_value(0)

static void *som_gib_whole_chunk(unsigned long cfn)
{
	return xa_mk_value(cfn + 1);
}

/**
 * struct som_gib - a GiB of a region that is neither empty nor whole
 * @cfn:	dictionary: chunk frame numbers, SOM_GIB_NO_CFN if unused
 * @nr_blocks:	indices holding a block
 * @nr_reserved: indices reserved
 * @wide:	NULL, or 32-bit codes for all 512 indices (@codes unused)
 * @codes:	512 12-bit codes, two in three bytes
 */
struct som_gib {
	u32 cfn[SOM_GIB_CHUNKS];
	u16 nr_blocks;
	u16 nr_reserved;
	u32 *wide;
	u8 codes[SOM_BLOCKS_PER_CHUNK * 3 / 2];
};

static struct kmem_cache *som_gib_cache;

/**
 * som_table_cache_init() - create the slab cache of split GiBs
 *
 * It is a cache of its own, never merged, so that /proc/slabinfo shows
 * exactly what som spends on them.
 *
 * Context: Module init.
 * Return: 0 or -ENOMEM.
 */
int som_table_cache_init(void)
{
	som_gib_cache = kmem_cache_create("som_gib", sizeof(struct som_gib), 0,
					  SLAB_ACCOUNT | SLAB_NO_MERGE, NULL);
	return som_gib_cache ? 0 : -ENOMEM;
}

/**
 * som_table_cache_exit() - destroy what som_table_cache_init() created
 *
 * Context: Module exit, every table destroyed.
 */
void som_table_cache_exit(void)
{
	kmem_cache_destroy(som_gib_cache);
}

static unsigned int som_gib_code(const struct som_gib *gib, unsigned int i)
{
	const u8 *p = gib->codes + i / 2 * 3;

	if (gib->wide)
		return gib->wide[i];
	return i & 1 ? p[1] >> 4 | p[2] << 4 : p[0] | (p[1] & 0xf) << 8;
}

static void som_gib_set_code(struct som_gib *gib, unsigned int i,
			     unsigned int code)
{
	u8 *p = gib->codes + i / 2 * 3;

	if (gib->wide) {
		gib->wide[i] = code;
	} else if (i & 1) {
		p[1] = (p[1] & 0xf) | (code & 0xf) << 4;
		p[2] = code >> 4;
	} else {
		p[0] = code;
		p[1] = (p[1] & 0xf0) | code >> 8;
	}
}

static unsigned long som_gib_get(const struct som_gib *gib, unsigned int i)
{
	unsigned int code = som_gib_code(gib, i);

	if (code == SOM_CODE_ABSENT)
		return SOM_TABLE_ABSENT;
	if (code == SOM_CODE_RESERVED)
		return SOM_TABLE_RESERVED;
	code -= SOM_CODE_BLOCK;
	if (gib->wide)
		return code;
	return ((unsigned long)gib->cfn[code >> SOM_GIB_SHIFT] << SOM_GIB_SHIFT) +
	       (code & SOM_GIB_MASK);
}

/* Entry @i of a GiB xarray entry, whatever its form. */
static unsigned long som_gib_entry(void *entry, unsigned int i)
{
	unsigned long v;

	if (!entry)
		return SOM_TABLE_ABSENT;
	if (!xa_is_value(entry))
		return som_gib_get(entry, i);
	v = xa_to_value(entry);
	return v ? ((v - 1) << SOM_GIB_SHIFT) + i : SOM_TABLE_RESERVED;
}

/* A split GiB describing what @entry (NULL or a value entry) describes. */
static struct som_gib *som_gib_alloc(struct som_table *table, void *entry,
				     gfp_t gfp)
{
	struct som_gib *gib = kmem_cache_alloc(som_gib_cache, gfp);
	unsigned int i;

	if (!gib)
		return NULL;
	memset(gib->cfn, 0xff, sizeof(gib->cfn));
	gib->nr_blocks = 0;
	gib->nr_reserved = 0;
	gib->wide = NULL;
	memset(gib->codes, 0, sizeof(gib->codes));
	if (entry == SOM_GIB_RESERVED) {
		for (i = 0; i < SOM_BLOCKS_PER_CHUNK; i++)
			som_gib_set_code(gib, i, SOM_CODE_RESERVED);
		gib->nr_reserved = SOM_BLOCKS_PER_CHUNK;
	} else if (entry) {
		gib->cfn[0] = xa_to_value(entry) - 1;
		for (i = 0; i < SOM_BLOCKS_PER_CHUNK; i++)
			som_gib_set_code(gib, i, SOM_CODE_BLOCK + i);
		gib->nr_blocks = SOM_BLOCKS_PER_CHUNK;
	}
	table->nr_split++;
	return gib;
}

static void som_gib_free(struct som_table *table, struct som_gib *gib)
{
	if (gib->wide)
		table->nr_wide--;
	kfree(gib->wide);
	kmem_cache_free(som_gib_cache, gib);
	table->nr_split--;
}

/* Dictionary slots that no index refers to any more become free. */
static void som_gib_reclaim(struct som_gib *gib)
{
	unsigned long used = 0;
	unsigned int i, code;

	for (i = 0; i < SOM_BLOCKS_PER_CHUNK; i++) {
		code = som_gib_code(gib, i);
		if (code >= SOM_CODE_BLOCK)
			used |= BIT((code - SOM_CODE_BLOCK) >> SOM_GIB_SHIFT);
	}
	for (i = 0; i < SOM_GIB_CHUNKS; i++)
		if (!(used & BIT(i)))
			gib->cfn[i] = SOM_GIB_NO_CFN;
}

/* The dictionary slot of chunk @cfn, given a free one if need be. */
static int som_gib_find_slot(struct som_gib *gib, u32 cfn)
{
	int i, free = -1;

	for (i = 0; i < SOM_GIB_CHUNKS; i++) {
		if (gib->cfn[i] == cfn)
			return i;
		if (gib->cfn[i] == SOM_GIB_NO_CFN && free < 0)
			free = i;
	}
	if (free >= 0)
		gib->cfn[free] = cfn;
	return free;
}

/* The same, reclaiming unreferenced slots if all are taken; -1 if full. */
static int som_gib_slot(struct som_gib *gib, u32 cfn)
{
	int slot = som_gib_find_slot(gib, cfn);

	if (slot >= 0)
		return slot;
	som_gib_reclaim(gib);
	return som_gib_find_slot(gib, cfn);
}

/* Go from 12-bit codes to 32-bit ones. */
static int som_gib_widen(struct som_table *table, struct som_gib *gib,
			 gfp_t gfp)
{
	unsigned long entry;
	unsigned int i;
	u32 *wide;

	wide = kmalloc_array(SOM_BLOCKS_PER_CHUNK, sizeof(*wide), gfp);
	if (!wide)
		return -ENOMEM;
	for (i = 0; i < SOM_BLOCKS_PER_CHUNK; i++) {
		entry = som_gib_get(gib, i);
		wide[i] = entry == SOM_TABLE_ABSENT ? SOM_CODE_ABSENT :
			  entry == SOM_TABLE_RESERVED ? SOM_CODE_RESERVED :
			  SOM_CODE_BLOCK + entry;
	}
	gib->wide = wide;
	table->nr_wide++;
	return 0;
}

/* Back to 12-bit codes, if the GiB's blocks fit the dictionary again. */
static void som_gib_narrow(struct som_table *table, struct som_gib *gib)
{
	u32 *wide = gib->wide;
	unsigned int i, code;
	unsigned long entry;
	int slot;

	memset(gib->cfn, 0xff, sizeof(gib->cfn));
	for (i = 0; i < SOM_BLOCKS_PER_CHUNK; i++) {
		code = wide[i];
		if (code < SOM_CODE_BLOCK)
			continue;
		entry = code - SOM_CODE_BLOCK;
		slot = som_gib_find_slot(gib, som_bfn_to_cfn(entry));
		if (slot < 0)
			return;		/* still too many chunks */
	}
	gib->wide = NULL;
	for (i = 0; i < SOM_BLOCKS_PER_CHUNK; i++) {
		code = wide[i];
		if (code >= SOM_CODE_BLOCK) {
			entry = code - SOM_CODE_BLOCK;
			slot = som_gib_find_slot(gib, som_bfn_to_cfn(entry));
			code = SOM_CODE_BLOCK + (slot << SOM_GIB_SHIFT) +
			       (entry & SOM_GIB_MASK);
		}
		som_gib_set_code(gib, i, code);
	}
	kfree(wide);
	table->nr_wide--;
}

/* Set index @i of a split GiB; allocates only to widen it. */
static int som_gib_put(struct som_table *table, struct som_gib *gib,
		       unsigned int i, unsigned long entry, gfp_t gfp)
{
	unsigned long old = som_gib_get(gib, i);
	unsigned int code;
	int slot, err;

	if (old == entry)
		return 0;
	if (entry == SOM_TABLE_ABSENT) {
		code = SOM_CODE_ABSENT;
	} else if (entry == SOM_TABLE_RESERVED) {
		code = SOM_CODE_RESERVED;
	} else if (gib->wide) {
		code = SOM_CODE_BLOCK + entry;
	} else {
		slot = som_gib_slot(gib, som_bfn_to_cfn(entry));
		if (slot < 0) {
			err = som_gib_widen(table, gib, gfp);
			if (err)
				return err;
			return som_gib_put(table, gib, i, entry, gfp);
		}
		code = SOM_CODE_BLOCK + (slot << SOM_GIB_SHIFT) +
		       (entry & SOM_GIB_MASK);
	}
	som_gib_set_code(gib, i, code);
	if (som_table_is_block(old))
		gib->nr_blocks--;
	else if (old == SOM_TABLE_RESERVED)
		gib->nr_reserved--;
	if (som_table_is_block(entry))
		gib->nr_blocks++;
	else if (entry == SOM_TABLE_RESERVED)
		gib->nr_reserved++;
	return 0;
}

/* The chunk whose blocks a full split GiB holds in order, or SOM_NO_BLOCK. */
static unsigned long som_gib_in_order(const struct som_gib *gib)
{
	unsigned long base = som_gib_get(gib, 0);
	unsigned int i;

	if (gib->nr_blocks != SOM_BLOCKS_PER_CHUNK ||
	    !IS_ALIGNED(base, SOM_BLOCKS_PER_CHUNK))
		return SOM_NO_BLOCK;
	for (i = 1; i < SOM_BLOCKS_PER_CHUNK; i++)
		if (som_gib_get(gib, i) != base + i)
			return SOM_NO_BLOCK;
	return som_bfn_to_cfn(base);
}

/*
 * Put GiB @g in its least costly form: a split GiB that is empty, all
 * reserved or one chunk in order becomes what table.h says. Replacing a
 * present entry allocates nothing and cannot fail.
 */
static void som_table_tidy_gib(struct som_table *table, unsigned long g)
{
	struct som_gib *gib = xa_load(&table->gibs, g);
	unsigned long cfn;
	void *whole;

	if (!gib || xa_is_value(gib))
		return;
	if (!gib->nr_blocks && !gib->nr_reserved) {
		xa_erase(&table->gibs, g);
		som_gib_free(table, gib);
		return;
	}
	if (gib->nr_reserved == SOM_BLOCKS_PER_CHUNK) {
		whole = SOM_GIB_RESERVED;
	} else {
		cfn = som_gib_in_order(gib);
		if (cfn == SOM_NO_BLOCK) {
			if (gib->wide)
				som_gib_narrow(table, gib);
			return;
		}
		whole = som_gib_whole_chunk(cfn);
	}
	xa_store(&table->gibs, g, whole, GFP_NOWAIT);
	som_gib_free(table, gib);
}

/**
 * som_table_tidy() - put an index's GiB in its least costly form
 * @table: the table
 * @idx: an index of the GiB
 *
 * For a GiB som_table_split() split and nothing set after.
 */
void som_table_tidy(struct som_table *table, pgoff_t idx)
{
	som_table_tidy_gib(table, idx >> SOM_GIB_SHIFT);
}

/**
 * som_table_init() - an empty table
 * @table: the table
 */
void som_table_init(struct som_table *table)
{
	xa_init_flags(&table->gibs, XA_FLAGS_ACCOUNT);
	table->nr_split = 0;
	table->nr_wide = 0;
}
EXPORT_SYMBOL_IF_KUNIT(som_table_init);

/**
 * som_table_destroy() - free a table's memory
 * @table: the table; what its blocks and reservations were is forgotten
 *
 * Context: Process context, may sleep.
 */
void som_table_destroy(struct som_table *table)
{
	unsigned long g;
	void *entry;

	xa_for_each(&table->gibs, g, entry) {
		if (!xa_is_value(entry))
			som_gib_free(table, entry);
		cond_resched();
	}
	xa_destroy(&table->gibs);
}
EXPORT_SYMBOL_IF_KUNIT(som_table_destroy);

/**
 * som_table_empty() - is every index absent?
 * @table: the table
 *
 * Return: true if so.
 */
bool som_table_empty(struct som_table *table)
{
	return xa_empty(&table->gibs);
}
EXPORT_SYMBOL_IF_KUNIT(som_table_empty);

/**
 * som_xa_nodes() - the nodes of an xarray
 * @xa: the xarray
 *
 * Entries are visited in index order, so the nodes on the path to each
 * one that the previous entry's path did not share are new; an xarray of
 * one entry at index 0 keeps it in the root and has none.
 *
 * Context: Process context, may sleep; caller keeps @xa from changing
 * (the region lock, for a region's xarrays).
 * Return: their number.
 */
unsigned long som_xa_nodes(struct xarray *xa)
{
	XA_STATE(xas, xa, 0);
	struct xa_node *prev = NULL, *node, *p, *q;
	unsigned long nr = 0, seen = 0;
	void *entry;

	rcu_read_lock();
	xas_for_each(&xas, entry, ULONG_MAX) {
		if (xas_retry(&xas, entry))
			continue;
		node = xas.xa_node;
		for (p = node, q = prev; p != q;
		     p = xa_parent(xa, p),
		     q = q ? xa_parent(xa, q) : NULL)
			nr++;
		prev = node;
		/* Nothing changes @xa meanwhile. */
		if (!(++seen % 4096)) {
			xas_pause(&xas);
			rcu_read_unlock();
			cond_resched();
			rcu_read_lock();
		}
	}
	rcu_read_unlock();
	return nr;
}

/**
 * som_table_node_bytes() - the memory of a table's GiB xarray
 * @table: the table
 *
 * Context: Process context, may sleep; caller holds the region lock.
 * Return: the bytes of its nodes.
 */
u64 som_table_node_bytes(struct som_table *table)
{
	return (u64)som_xa_nodes(&table->gibs) * sizeof(struct xa_node);
}

/**
 * som_table_split_bytes() - the memory of a table's split GiBs
 * @table: the table
 *
 * Counts the split GiBs (the object size of their slab cache) and their
 * 32-bit code arrays.
 *
 * Return: the bytes.
 */
u64 som_table_split_bytes(struct som_table *table)
{
	return (u64)table->nr_split * kmem_cache_size(som_gib_cache) +
	       (u64)table->nr_wide *
	       kmalloc_size_roundup(SOM_BLOCKS_PER_CHUNK * sizeof(u32));
}

/**
 * som_table_bytes() - the memory a table takes
 * @table: the table
 *
 * Context: Process context, may sleep; caller holds the region lock.
 * Return: som_table_node_bytes() + som_table_split_bytes().
 */
u64 som_table_bytes(struct som_table *table)
{
	return som_table_node_bytes(table) + som_table_split_bytes(table);
}
EXPORT_SYMBOL_IF_KUNIT(som_table_bytes);

/**
 * som_table_get() - what backs an index
 * @table: the table
 * @idx: the 2 MiB index
 *
 * Return: the block frame number, SOM_TABLE_RESERVED or SOM_TABLE_ABSENT.
 */
unsigned long som_table_get(struct som_table *table, pgoff_t idx)
{
	return som_gib_entry(xa_load(&table->gibs, idx >> SOM_GIB_SHIFT),
			     idx & SOM_GIB_MASK);
}
EXPORT_SYMBOL_IF_KUNIT(som_table_get);

/**
 * som_table_next() - the first index at or after one that is not absent
 * @table: the table
 * @idx: where to start; set to the index found
 * @last: the last index to look at
 *
 * Return: what som_table_get() returns for the index found, or
 * SOM_TABLE_ABSENT if every index of [*@idx, @last] is absent.
 */
unsigned long som_table_next(struct som_table *table, pgoff_t *idx,
			     pgoff_t last)
{
	pgoff_t start = *idx;
	unsigned long g, entry;
	unsigned int i, hi;
	void *gib;

	xa_for_each_range(&table->gibs, g, gib, start >> SOM_GIB_SHIFT,
			  last >> SOM_GIB_SHIFT) {
		i = g == start >> SOM_GIB_SHIFT ? start & SOM_GIB_MASK : 0;
		hi = g == last >> SOM_GIB_SHIFT ? last & SOM_GIB_MASK :
		     SOM_GIB_MASK;
		for (; i <= hi; i++) {
			entry = som_gib_entry(gib, i);
			if (entry != SOM_TABLE_ABSENT) {
				*idx = (g << SOM_GIB_SHIFT) + i;
				return entry;
			}
		}
	}
	return SOM_TABLE_ABSENT;
}
EXPORT_SYMBOL_IF_KUNIT(som_table_next);

/* The first and last index of GiB @g inside [first, last]. */
static void som_table_span(unsigned long g, pgoff_t first, pgoff_t last,
			   unsigned int *lo, unsigned int *hi)
{
	*lo = g == first >> SOM_GIB_SHIFT ? first & SOM_GIB_MASK : 0;
	*hi = g == last >> SOM_GIB_SHIFT ? last & SOM_GIB_MASK : SOM_GIB_MASK;
}

static bool som_table_kind_is(unsigned long entry, enum som_table_kind kind)
{
	switch (kind) {
	case SOM_TABLE_KIND_ABSENT:
		return entry == SOM_TABLE_ABSENT;
	case SOM_TABLE_KIND_RESERVED:
		return entry == SOM_TABLE_RESERVED;
	default:
		return som_table_is_block(entry);
	}
}

/**
 * som_table_count() - how many indices of a range are of a kind
 * @table: the table
 * @first: first index
 * @last: last index, at or after @first; [@first, @last] is not every
 *	index there is
 * @kind: what to count
 *
 * Walks only the GiBs that hold something, so a range far larger than
 * the table (a som file grown to exabytes) costs no more than the table.
 *
 * Context: May sleep.
 * Return: the count.
 */
unsigned long som_table_count(struct som_table *table, pgoff_t first,
			      pgoff_t last, enum som_table_kind kind)
{
	unsigned long g, present = 0, nr = 0;
	unsigned int i, lo, hi;
	struct som_gib *gib;
	void *entry;

	xa_for_each_range(&table->gibs, g, entry, first >> SOM_GIB_SHIFT,
			  last >> SOM_GIB_SHIFT) {
		som_table_span(g, first, last, &lo, &hi);
		if (xa_is_value(entry)) {
			present += hi - lo + 1;
			if (som_table_kind_is(som_gib_entry(entry, 0), kind))
				nr += hi - lo + 1;
			continue;
		}
		gib = entry;
		if (lo == 0 && hi == SOM_GIB_MASK) {
			present += gib->nr_blocks + gib->nr_reserved;
			nr += kind == SOM_TABLE_KIND_BLOCK ? gib->nr_blocks :
			      kind == SOM_TABLE_KIND_RESERVED ? gib->nr_reserved :
			      0;
		} else {
			for (i = lo; i <= hi; i++) {
				present += som_gib_get(gib, i) !=
					   SOM_TABLE_ABSENT;
				nr += som_table_kind_is(som_gib_get(gib, i),
							kind);
			}
		}
		cond_resched();
	}
	if (kind == SOM_TABLE_KIND_ABSENT)
		return last - first + 1 - present;
	return nr;
}
EXPORT_SYMBOL_IF_KUNIT(som_table_count);

/**
 * som_table_chunk() - the chunk that backs a GiB whole
 * @table: the table
 * @first: the GiB's first index, 1 GiB aligned
 *
 * Return: the chunk frame number if the GiB's 512 indices hold the 512
 * blocks of one chunk in order, else SOM_NO_BLOCK.
 */
unsigned long som_table_chunk(struct som_table *table, pgoff_t first)
{
	void *entry = xa_load(&table->gibs, first >> SOM_GIB_SHIFT);

	if (xa_is_value(entry) && entry != SOM_GIB_RESERVED)
		return xa_to_value(entry) - 1;
	return SOM_NO_BLOCK;
}
EXPORT_SYMBOL_IF_KUNIT(som_table_chunk);

/**
 * som_table_blocks() - which indices of a GiB hold a block
 * @table: the table
 * @first: the GiB's first index, 1 GiB aligned
 * @bits: SOM_BLOCKS_PER_CHUNK bits, set for each index that holds one
 *
 * Return: how many do.
 */
unsigned int som_table_blocks(struct som_table *table, pgoff_t first,
			      unsigned long *bits)
{
	void *gib = xa_load(&table->gibs, first >> SOM_GIB_SHIFT);
	unsigned int i;

	bitmap_zero(bits, SOM_BLOCKS_PER_CHUNK);
	if (!gib || gib == SOM_GIB_RESERVED)
		return 0;
	if (xa_is_value(gib)) {
		bitmap_fill(bits, SOM_BLOCKS_PER_CHUNK);
		return SOM_BLOCKS_PER_CHUNK;
	}
	for (i = 0; i < SOM_BLOCKS_PER_CHUNK; i++)
		if (som_table_is_block(som_gib_entry(gib, i)))
			__set_bit(i, bits);
	return bitmap_weight(bits, SOM_BLOCKS_PER_CHUNK);
}
EXPORT_SYMBOL_IF_KUNIT(som_table_blocks);

/**
 * som_table_split() - give an index's GiB the split form
 * @table: the table
 * @idx: an index of the GiB
 * @gfp: for the allocation
 *
 * Afterwards som_table_set() on an index of the GiB allocates nothing,
 * unless a block from an eighth chunk makes it wide.
 *
 * Return: 0 or -ENOMEM.
 */
int som_table_split(struct som_table *table, pgoff_t idx, gfp_t gfp)
{
	unsigned long g = idx >> SOM_GIB_SHIFT;
	void *entry = xa_load(&table->gibs, g), *old;
	struct som_gib *gib;

	if (entry && !xa_is_value(entry))
		return 0;
	gib = som_gib_alloc(table, entry, gfp);
	if (!gib)
		return -ENOMEM;
	old = xa_store(&table->gibs, g, gib, gfp);
	if (xa_is_err(old)) {
		som_gib_free(table, gib);
		return xa_err(old);
	}
	return 0;
}

/**
 * som_table_set() - set one index
 * @table: the table
 * @idx: the index
 * @entry: a block frame number, SOM_TABLE_RESERVED or SOM_TABLE_ABSENT
 * @gfp: for allocations, if the GiB must change form
 *
 * Return: 0 or -ENOMEM (nothing changed).
 */
int som_table_set(struct som_table *table, pgoff_t idx, unsigned long entry,
		  gfp_t gfp)
{
	unsigned long g = idx >> SOM_GIB_SHIFT;
	int err;

	if (som_table_get(table, idx) == entry)
		return 0;
	err = som_table_split(table, idx, gfp);
	if (err)
		return err;
	err = som_gib_put(table, xa_load(&table->gibs, g), idx & SOM_GIB_MASK,
			  entry, gfp);
	som_table_tidy_gib(table, g);
	return err;
}
EXPORT_SYMBOL_IF_KUNIT(som_table_set);

/*
 * Can GiB @g's entry go in the xarray's root, at no cost? Only GiB 0 of
 * an empty table: an entry alone at index 0 needs no node, while
 * xa_reserve() would make one for it (a reserved slot is an internal
 * entry, which the root cannot hold) and keep it.
 */
static bool som_table_root_free(struct som_table *table, unsigned long g)
{
	return !g && xa_empty(&table->gibs);
}

/**
 * som_table_hold() - make room for a GiB's entry
 * @table: the table
 * @first: the GiB's first index
 * @gfp: for the allocation
 *
 * After it, som_table_set_chunk() on the GiB cannot fail; undone by
 * som_table_unhold() if nothing was set.
 *
 * Return: 0 or -ENOMEM.
 */
int som_table_hold(struct som_table *table, pgoff_t first, gfp_t gfp)
{
	if (som_table_root_free(table, first >> SOM_GIB_SHIFT))
		return 0;
	return xa_reserve(&table->gibs, first >> SOM_GIB_SHIFT, gfp);
}
EXPORT_SYMBOL_IF_KUNIT(som_table_hold);

/**
 * som_table_unhold() - give back what som_table_hold() took
 * @table: the table
 * @first: the GiB's first index
 */
void som_table_unhold(struct som_table *table, pgoff_t first)
{
	xa_release(&table->gibs, first >> SOM_GIB_SHIFT);
}

/**
 * som_table_set_chunk() - back a whole GiB by one chunk, in order
 * @table: the table
 * @first: the GiB's first index, 1 GiB aligned; som_table_hold() done
 * @cfn: the chunk
 */
void som_table_set_chunk(struct som_table *table, pgoff_t first,
			 unsigned long cfn)
{
	void *old = xa_store(&table->gibs, first >> SOM_GIB_SHIFT,
			     som_gib_whole_chunk(cfn), GFP_NOWAIT);

	if (WARN_ON_ONCE(xa_is_err(old)))
		return;
	if (old && !xa_is_value(old))
		som_gib_free(table, old);
}
EXPORT_SYMBOL_IF_KUNIT(som_table_set_chunk);

/* Undo the allocations of a failed som_table_reserve(). */
static void som_table_reserve_undo(struct som_table *table, pgoff_t first,
				   pgoff_t last)
{
	unsigned long g;

	for (g = first >> SOM_GIB_SHIFT; g <= last >> SOM_GIB_SHIFT; g++) {
		som_table_tidy_gib(table, g);
		xa_release(&table->gibs, g);
		cond_resched();
	}
}

/**
 * som_table_reserve() - make the absent indices of a range reserved
 * @table: the table
 * @first: first index
 * @last: last index, at or after @first
 * @gfp: for allocations
 *
 * All or nothing: everything that can fail is allocated first.
 *
 * Context: May sleep.
 * Return: 0 or -ENOMEM (nothing changed).
 */
int som_table_reserve(struct som_table *table, pgoff_t first, pgoff_t last,
		      gfp_t gfp)
{
	unsigned long g, g0 = first >> SOM_GIB_SHIFT, g1 = last >> SOM_GIB_SHIFT;
	unsigned int i, lo, hi;
	struct som_gib *gib;
	int err = 0;

	for (g = g0; g <= g1 && !err; g++) {
		cond_resched();
		som_table_span(g, first, last, &lo, &hi);
		if (xa_load(&table->gibs, g))
			continue;
		if (lo != 0 || hi != SOM_GIB_MASK)
			err = som_table_split(table, g << SOM_GIB_SHIFT, gfp);
		else if (!som_table_root_free(table, g))
			err = xa_reserve(&table->gibs, g, gfp);
	}
	if (err) {
		som_table_reserve_undo(table, first, last);
		return err;
	}

	for (g = g0; g <= g1; g++) {
		cond_resched();
		som_table_span(g, first, last, &lo, &hi);
		gib = xa_load(&table->gibs, g);
		if (!gib) {
			/* Held above, or GiB 0 in the root: nothing to allocate. */
			xa_store(&table->gibs, g, SOM_GIB_RESERVED, GFP_NOWAIT);
			continue;
		}
		if (xa_is_value(gib))
			continue;
		for (i = lo; i <= hi; i++)
			if (som_gib_get(gib, i) == SOM_TABLE_ABSENT)
				som_gib_put(table, gib, i, SOM_TABLE_RESERVED,
					    GFP_NOWAIT);
		som_table_tidy_gib(table, g);
	}
	return 0;
}
EXPORT_SYMBOL_IF_KUNIT(som_table_reserve);

/**
 * som_table_clear() - make every index of a range absent
 * @table: the table
 * @first: first index
 * @last: last index, at or after @first
 *
 * The caller has dealt with what the indices held. Cannot fail: a whole
 * GiB cut in part is split with __GFP_NOFAIL (808 bytes).
 *
 * Context: May sleep.
 */
void som_table_clear(struct som_table *table, pgoff_t first, pgoff_t last)
{
	unsigned int i, lo, hi;
	struct som_gib *gib;
	unsigned long g;
	void *entry;

	xa_for_each_range(&table->gibs, g, entry, first >> SOM_GIB_SHIFT,
			  last >> SOM_GIB_SHIFT) {
		cond_resched();
		som_table_span(g, first, last, &lo, &hi);
		if (lo == 0 && hi == SOM_GIB_MASK) {
			xa_erase(&table->gibs, g);
			if (!xa_is_value(entry))
				som_gib_free(table, entry);
			continue;
		}
		som_table_split(table, g << SOM_GIB_SHIFT,
				GFP_KERNEL_ACCOUNT | __GFP_NOFAIL);
		gib = xa_load(&table->gibs, g);
		for (i = lo; i <= hi; i++)
			som_gib_put(table, gib, i, SOM_TABLE_ABSENT, GFP_NOWAIT);
		som_table_tidy_gib(table, g);
	}
}
EXPORT_SYMBOL_IF_KUNIT(som_table_clear);
