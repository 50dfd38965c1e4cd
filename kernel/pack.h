/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Packing sparse indices of som files (pack.c; Documentation/packing.md).
 */
#ifndef _SOM_PACK_H
#define _SOM_PACK_H

#include <linux/atomic.h>
#include <linux/mm_types.h>
#include <linux/types.h>

#include "pool.h"

struct som_mover;
struct som_region;

/*
 * The first pack index: byte offset 2^62, past every som file's size
 * (SOM_FILE_MAX_BYTES), so that a pack page's byte offset still fits in
 * loff_t.
 */
#define SOM_PACK_FIRST		(1UL << (62 - SOM_BLOCK_SHIFT))

static inline bool som_pack_is_pack(pgoff_t idx)
{
	return idx >= SOM_PACK_FIRST;
}

/**
 * struct som_pack_stats - what packing has done since load
 * @packed:	indices made sparse
 * @densified:	sparse indices given a block of their own again
 * @sparse:	sparse indices now
 * @blocks:	pack blocks now
 * @pages:	pages of pack blocks in use now
 * @compacted:	pack blocks emptied into others and given back
 */
struct som_pack_stats {
	atomic_long_t packed;
	atomic_long_t densified;
	atomic_long_t compacted;
	atomic_long_t sparse;
	atomic_long_t blocks;
	atomic_long_t pages;
};

extern struct som_pack_stats som_pack_stats;
extern unsigned int som_pack_threshold;

void som_pack_region_init(struct som_region *region);
int som_pack_copy(void *to, const void *from);
void som_pack_region_destroy(struct som_region *region);
u64 som_pack_metadata_bytes(struct som_region *region);

bool som_pack_sparse(struct som_region *region, pgoff_t first, pgoff_t last);
pgoff_t som_pack_next_sparse(struct som_region *region, pgoff_t first,
			     pgoff_t last);
int som_pack_page(struct som_region *region, pgoff_t pgoff, bool take,
		  unsigned long *pfn);
void som_pack_zero(struct som_region *region, loff_t from, loff_t to);
void som_pack_free(struct som_region *region, pgoff_t first, pgoff_t last);
void som_pack_drop(struct som_region *region, pgoff_t first, pgoff_t last);
void som_pack_note(struct som_region *region, pgoff_t idx);
void som_pack_zap(struct mm_struct *mm, struct som_region *region,
		  pgoff_t idx, pgoff_t nr);
int som_pack_run(void);
void som_pack_exit(void);

extern const struct attribute_group som_packing_group;

#endif /* _SOM_PACK_H */
