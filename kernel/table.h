/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A region's table: what backs each 2 MiB index of the region. Every index
 * is absent, reserved (capacity promised, no block yet) or holds a block.
 *
 * The table is kept per GiB of the region (512 indices), in the form that
 * costs least for what the GiB holds:
 *
 *	nothing                         no entry at all
 *	512 reservations                one xarray value entry
 *	one chunk's 512 blocks, in      one xarray value entry (the chunk
 *	order                           frame number)
 *	anything else ("split")         a struct som_gib: 12 bits per index
 *	                                and a dictionary of up to 7 chunks;
 *	                                a GiB that draws on more chunks at
 *	                                once gets 32 bits per index
 *
 * The GiB entries live in an xarray keyed by GiB index, so a region mapped
 * by whole chunks costs one 8-byte xarray slot per GiB. The forms are an
 * invariant, not a hint: after every change a GiB is in the least costly
 * form that describes it (som_table_tidy()), so that a GiB that can be
 * mapped by a 1 GiB entry is always a value entry (som_table_chunk()).
 *
 * Context: the table has no lock of its own; its region's lock serialises
 * every call. Calls that take a gfp_t allocate with it, fail with -ENOMEM
 * and then leave the table as it was.
 */
#ifndef _SOM_TABLE_H
#define _SOM_TABLE_H

#include <linux/gfp.h>
#include <linux/types.h>
#include <linux/xarray.h>

/* What som_table_get() and som_table_next() return besides block numbers. */
#define SOM_TABLE_ABSENT	ULONG_MAX
#define SOM_TABLE_RESERVED	(ULONG_MAX - 1)

static inline bool som_table_is_block(unsigned long entry)
{
	return entry < SOM_TABLE_RESERVED;
}

/* What som_table_count() counts. */
enum som_table_kind {
	SOM_TABLE_KIND_ABSENT,
	SOM_TABLE_KIND_RESERVED,
	SOM_TABLE_KIND_BLOCK,
};

/**
 * struct som_table - one region's index -> block table
 * @gibs:	GiB index -> NULL, a value entry or a struct som_gib
 * @nr_split:	struct som_gib in @gibs
 * @nr_wide:	of those, with 32-bit entries
 */
struct som_table {
	struct xarray gibs;
	unsigned long nr_split;
	unsigned long nr_wide;
};

int som_table_cache_init(void);
void som_table_cache_exit(void);

void som_table_init(struct som_table *table);
void som_table_destroy(struct som_table *table);
bool som_table_empty(struct som_table *table);
u64 som_table_node_bytes(struct som_table *table);
u64 som_table_split_bytes(struct som_table *table);
u64 som_table_bytes(struct som_table *table);

unsigned long som_table_get(struct som_table *table, pgoff_t idx);
unsigned long som_table_next(struct som_table *table, pgoff_t *idx,
			     pgoff_t last);
unsigned long som_table_count(struct som_table *table, pgoff_t first,
			      pgoff_t last, enum som_table_kind kind);
unsigned long som_table_chunk(struct som_table *table, pgoff_t first);
unsigned int som_table_blocks(struct som_table *table, pgoff_t first,
			      unsigned long *bits);
unsigned long som_xa_nodes(struct xarray *xa);

int som_table_split(struct som_table *table, pgoff_t idx, gfp_t gfp);
void som_table_tidy(struct som_table *table, pgoff_t idx);
int som_table_set(struct som_table *table, pgoff_t idx, unsigned long entry,
		  gfp_t gfp);
int som_table_hold(struct som_table *table, pgoff_t first, gfp_t gfp);
void som_table_unhold(struct som_table *table, pgoff_t first);
void som_table_set_chunk(struct som_table *table, pgoff_t first,
			 unsigned long cfn);
int som_table_reserve(struct som_table *table, pgoff_t first, pgoff_t last,
		      gfp_t gfp);
void som_table_clear(struct som_table *table, pgoff_t first, pgoff_t last);

#endif /* _SOM_TABLE_H */
