/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the files of the som pool (pool*.c) share and nothing else sees.
 * Every function here expects the pool lock held unless it says it takes
 * it.
 */
#ifndef _SOM_POOL_INTERNAL_H
#define _SOM_POOL_INTERNAL_H

#include <linux/gfp.h>
#include <linux/workqueue.h>

#include "pool.h"

extern struct kmem_cache *som_chunk_cache;
extern struct kmem_cache *som_chunk_bits_cache;

static inline unsigned long som_chunk_bfn(const struct som_chunk *chunk, unsigned int i)
{
	return (chunk->phys >> SOM_BLOCK_SHIFT) + i;
}

static inline void *som_chunk_block_vaddr(const struct som_chunk *chunk, unsigned int i)
{
	return chunk->vaddr + ((size_t)i << SOM_BLOCK_SHIFT);
}

/* pool.c: the chunks and their sets */
struct som_chunk *som_pool_find(struct som_pool *pool, unsigned long cfn);
struct som_pool_set *som_pool_set(struct som_pool *pool, int nid,
				  bool unmovable);
struct som_pool_set *som_chunk_set(struct som_pool *pool,
				   const struct som_chunk *chunk);
unsigned long som_set_spare(const struct som_pool_set *set);
void som_chunk_count(struct som_pool *pool, struct som_chunk *chunk,
		     long nr_free, long nr_dirty);

/* pool_low.c: the low watermark of free memory */
void som_pool_check_low(struct som_pool *pool);

/* pool_chunk.c: the state of one chunk's blocks */
bool som_chunk_is_free(const struct som_chunk *chunk, unsigned int i);
bool som_chunk_is_dirty(const struct som_chunk *chunk, unsigned int i);
void som_chunk_dirty_bits(const struct som_chunk *chunk,
			  unsigned long *dirty);
int som_pool_lock_stocked(struct som_pool *pool, gfp_t gfp);
void som_chunk_set_block(struct som_pool *pool, struct som_chunk *chunk,
			 unsigned int i, bool free, bool dirty);
void som_chunk_drop_bits(struct som_pool *pool, struct som_chunk *chunk);
bool som_chunk_take(struct som_pool *pool, struct som_chunk *chunk,
		    unsigned int i);
unsigned int som_chunk_find(struct som_pool *pool,
			    struct som_chunk *chunk, bool zeroed);

/* pool_alloc.c: an order of preference over the free blocks of a set */
#define SOM_PICK_PREFS	4
struct som_pick_pref {
	bool zeroed;	/* a zeroed block (else a dirty one) */
	bool whole;	/* from a wholly free chunk (else a chunk in use) */
};

extern const struct som_pick_pref som_pick_fault[SOM_PICK_PREFS];
extern const struct som_pick_pref som_pick_copy[SOM_PICK_PREFS];

static inline bool som_chunk_in_tier(const struct som_chunk *chunk, int tier)
{
	return tier == SOM_TIER_ANY || chunk->slow == (tier == SOM_TIER_SLOW);
}

unsigned int som_set_pick_block(struct som_pool *pool,
				struct som_pool_set *set,
				const struct som_pick_pref *prefs, int tier,
				struct som_chunk **chunkp);
unsigned int som_set_pick_assembling(struct som_pool *pool,
				     struct som_pool_set *set,
				     struct som_chunk **chunkp);
struct som_chunk *som_set_pick_chunk(struct som_pool *pool,
				     struct som_pool_set *set, int tier);

/* pool_claim.c: placement */
int som_next_node(int from, int prev);
bool som_claim_gather(struct som_pool *pool, struct som_claim *claim,
		      int nid, unsigned long need);
bool som_claim_take_spare(struct som_pool *pool, struct som_claim *claim,
			  int target);
bool som_claim_regain(struct som_pool *pool, struct som_claim *claim,
		      int target);
bool som_claim_shed(struct som_pool *pool, struct som_claim *claim, int nid,
		    bool unmovable);

/* pool_overcommit.c: promises beyond the pool's blocks */
void som_claim_lose(struct som_pool *pool, struct som_claim *claim, long nr);
void som_claim_out(struct som_pool *pool, struct som_claim *claim, long nr);
bool som_claim_back(struct som_pool *pool, struct som_claim *claim,
		    int target);
unsigned long som_pool_avail(struct som_pool *pool,
			     const struct som_claim *claim,
			     unsigned long spare);
bool som_pool_keeps_promises(struct som_pool *pool, unsigned long gone);
unsigned long som_pool_movable_spare(struct som_pool *pool);

/*
 * The movable claims' promises that no reservation holds: lost
 * reservations and indices paged out. Caller holds the pool lock.
 */
static inline unsigned long som_pool_owed(const struct som_pool *pool)
{
	return pool->nr_lost + pool->nr_out;
}

/* pool_zero.c: zeroing */
void som_pool_zero_block(struct som_pool *pool, struct som_chunk *chunk,
			 unsigned int i, bool ahead);
bool som_chunk_is_zeroing(struct som_pool *pool, struct som_chunk *chunk);
void som_pool_wait_zeroing(struct som_pool *pool);
void som_pool_zero_work(struct work_struct *work);

/* pool_poison.c: memory errors */
bool som_pool_retire_locked(struct som_pool *pool, unsigned long bfn);
unsigned int som_chunk_nr_retired(struct som_pool *pool,
				  const struct som_chunk *chunk);
bool som_chunk_poisoned(struct som_pool *pool, const struct som_chunk *chunk);
void som_chunk_retire_free(struct som_pool *pool, struct som_chunk *chunk,
			   unsigned int i);
void som_chunk_zero_retired(struct som_pool *pool, struct som_chunk *chunk);
void som_chunk_forget_poison(struct som_pool *pool, struct som_chunk *chunk,
			     unsigned long *pfns, unsigned int max,
			     unsigned int *nr);
int som_chunks_prepare_poison(struct som_pool *pool, struct list_head *chunks);
void som_chunks_unprepare_poison(struct som_pool *pool,
				 struct list_head *chunks);
void som_chunks_recall_poison(struct som_pool *pool, struct list_head *chunks);

/* pool_move.c: isolation */
void som_chunk_isolate(struct som_pool *pool, struct som_chunk *chunk);
void som_chunk_unisolate(struct som_pool *pool, struct som_chunk *chunk);
int som_pool_isolate_owner_locked(struct som_pool *pool,
				  const void *owner);

#endif /* _SOM_POOL_INTERNAL_H */
