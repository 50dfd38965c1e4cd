/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Moving a region's blocks (migrate.c), for compaction (compact.c),
 * evacuation of a source and NUMA migration.
 */
#ifndef _SOM_MIGRATE_H
#define _SOM_MIGRATE_H

#include <linux/atomic.h>
#include <linux/mutex.h>
#include <linux/nodemask.h>

#include "pool.h"

struct som_region;

/**
 * struct som_migrate_stats - what migrations have done since load
 * @blocks_moved:	2 MiB blocks that changed place, for any reason
 * @bytes_copied:	bytes copied to move them (a swap inside a chunk
 *			goes through a bounce buffer: two copies)
 * @blocks_evacuated:	of @blocks_moved, moved out of a source being
 *			removed (or out of a compaction's target chunk)
 * @blocks_placed:	of @blocks_moved, moved to follow a policy change
 * @gib_assembled:	GiBs compaction put back into one chunk: each can
 *			be mapped by a 1 GiB entry again
 * @compact_runs:	compaction passes, by the administrator or the worker
 * @compact_failed:	GiBs a pass tried and had to leave as they were
 * @blocks_demoted:	of @blocks_moved, moved to the slow tier (tier.c)
 * @blocks_promoted:	of @blocks_moved, moved to the fast tier
 * @blocks_short:	blocks tiering wanted to move and found no room for
 * @tier_passes:	tiering passes
 */
struct som_migrate_stats {
	atomic_long_t blocks_moved;
	atomic_long_t bytes_copied;
	atomic_long_t blocks_evacuated;
	atomic_long_t blocks_placed;
	atomic_long_t gib_assembled;
	atomic_long_t compact_runs;
	atomic_long_t compact_failed;
	atomic_long_t blocks_demoted;
	atomic_long_t blocks_promoted;
	atomic_long_t blocks_short;
	atomic_long_t tier_passes;
};

extern struct som_migrate_stats som_migrate_stats;

/* Held by every migration, outside every mmap_lock and region lock. */
extern struct mutex som_migrate_mutex;

/**
 * struct som_mover - a region locked for moving its blocks
 * @region:	the region
 * @mm:		its owner, grabbed, or NULL if it never had one
 * @live:	@mm's users and its mmap_lock (read) are held: the owner's
 *		entries must be zapped before a block moves
 */
struct som_mover {
	struct som_region *region;
	struct mm_struct *mm;
	bool live;
};

/**
 * struct som_assembly - scratch space to assemble a GiB in a chunk
 * @cur:	where the data of each index of the GiB is now: a block
 *		frame number, or ULONG_MAX for the bounce buffer
 * @occupant:	which index's data each block of the chunk holds, or -1
 * @bounce:	2 MiB for the data of one block in transit
 */
struct som_assembly {
	unsigned long cur[SOM_BLOCKS_PER_CHUNK];
	int occupant[SOM_BLOCKS_PER_CHUNK];
	void *bounce;
};

int som_mover_lock(struct som_mover *mv, struct som_region *region);
void som_mover_unlock(struct som_mover *mv);
void som_mover_move(struct som_mover *mv, pgoff_t idx, unsigned long dst);
void som_mover_take(struct som_mover *mv, pgoff_t idx, void *to);
unsigned long som_mover_gib_chunk(struct som_mover *mv, pgoff_t first);
int som_mover_assemble(struct som_mover *mv, pgoff_t first,
		       unsigned long cfn, struct som_assembly *as);
int som_mover_move_gib(struct som_mover *mv, pgoff_t first, int nid,
		       bool exact, int tier, struct som_assembly *as);
unsigned long som_mover_spare(struct som_mover *mv, unsigned long src,
			      int nid, bool exact);
struct som_assembly *som_assembly_alloc(void);
void som_assembly_free(struct som_assembly *as);

int som_migrate_region_out(struct som_region *region,
			   bool (*match)(unsigned long bfn, void *arg),
			   void *arg, pgoff_t skip_first, pgoff_t skip_last,
			   struct som_assembly *as);
int som_migrate_out(bool (*match)(unsigned long bfn, void *arg), void *arg,
		    struct som_region *keep, pgoff_t skip_first,
		    pgoff_t skip_last);
int som_migrate_evacuate(struct som_pool *pool, const void *owner);
int som_migrate_poison(struct som_pool *pool, unsigned long pfn);
int som_migrate_policy(struct som_region *region, enum som_claim_mode mode,
		       const nodemask_t *nodes, unsigned int interleave_shift,
		       bool unmovable);

/* compact.c */
int som_compact(bool background);
void som_compact_kick(void);
void som_compact_set_rate(unsigned int rate);
void som_compact_init(void);
void som_compact_exit(void);
extern unsigned int som_compact_rate;
extern atomic_t som_compact_running;

/* tier.c */
int som_tier_pass(void);
void som_tier_after_scan(void);
extern const struct attribute_group som_tiering_group;

#endif /* _SOM_MIGRATE_H */
