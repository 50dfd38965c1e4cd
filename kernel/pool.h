/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The som pool: physical memory in 1 GiB chunks, handed out in 2 MiB
 * blocks. The pool knows nothing of VMAs or of where a chunk came from.
 */
#ifndef _SOM_POOL_H
#define _SOM_POOL_H

#include <linux/bitmap.h>
#include <linux/bits.h>
#include <linux/hashtable.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/nodemask.h>
#include <linux/pgtable.h>
#include <linux/spinlock.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>

struct kernfs_node;

#define SOM_CHUNK_SHIFT		PUD_SHIFT
#define SOM_BLOCK_SHIFT		PMD_SHIFT
#define SOM_CHUNK_SIZE		BIT(SOM_CHUNK_SHIFT)
#define SOM_BLOCK_SIZE		BIT(SOM_BLOCK_SHIFT)
#define SOM_BLOCKS_PER_CHUNK	(1U << (SOM_CHUNK_SHIFT - SOM_BLOCK_SHIFT))

/* "No block": block frame numbers are physical address >> SOM_BLOCK_SHIFT. */
#define SOM_NO_BLOCK		ULONG_MAX

/**
 * struct som_chunk_bits - which blocks of a chunk are free, and dirty
 * @free:	blocks not handed to any region
 * @dirty:	free blocks whose old contents have not been zeroed yet;
 *		always a subset of @free
 *
 * Only a chunk whose blocks are not all alike has them: see
 * som_chunk_mixed().
 */
struct som_chunk_bits {
	DECLARE_BITMAP(free, SOM_BLOCKS_PER_CHUNK);
	DECLARE_BITMAP(dirty, SOM_BLOCKS_PER_CHUNK);
};

/**
 * struct som_chunk - one naturally aligned 1 GiB piece of physical memory
 * @hash:	entry in som_pool.hash, keyed by chunk frame number
 * @list:	entry in som_pool.chunks (or, before som_pool_insert(), in
 *		the caller's list of chunks to insert)
 * @set_list:	entry in the chunks list of the struct som_pool_set of its
 *		node and kind
 * @owner:	the source that added it (opaque to the pool)
 * @phys:	physical address, 1 GiB aligned
 * @vaddr:	write-back memremap() of the whole chunk, kept for as long as
 *		the chunk is in the pool: it is what makes user mappings of the
 *		chunk write-back (PAT) and what the zeroing worker writes through
 * @nid:	NUMA node of the memory
 * @unmovable:	blocks here are promised never to move (see struct som_claim)
 * @slow:	of the slow tier: where tiering (tier.c) demotes cold blocks
 *		to, and faults take blocks from only when the fast chunks of
 *		their set have none
 * @isolated:	taken out of its set to be evacuated: no allocation picks
 *		its free blocks and its set's counters leave them out, so the
 *		set's promise to reservations does not depend on them
 * @assembling:	a GiB is being assembled in it (compaction, or a GiB that
 *		moves whole): off its set's list, so that allocations pick
 *		its free blocks only when no other chunk of the set has one,
 *		but still counted, so that setting it aside takes no room
 *		from reservations
 * @nr_free:	blocks not handed to any region
 * @nr_dirty:	of those, blocks whose old contents have not been zeroed
 * @bits:	which blocks those are; NULL while the blocks are all alike
 *		(all allocated, all free and zeroed, or all free and dirty),
 *		which the counts then say
 *
 * All fields but @phys, @vaddr, @nid, @unmovable and @owner (fixed
 * while the chunk is in the pool) are protected by som_pool.lock. This and
 * @bits are the pool's only per-chunk metadata: see som_pool_get_stats().
 */
struct som_chunk {
	struct hlist_node hash;
	struct list_head list;
	struct list_head set_list;
	const void *owner;
	phys_addr_t phys;
	void *vaddr;
	int nid;
	bool unmovable;
	bool slow;
	bool isolated;
	bool assembling;
	unsigned int nr_free;
	unsigned int nr_dirty;
	struct som_chunk_bits *bits;
};

/**
 * struct som_pool_set - the chunks of one NUMA node and one kind
 * @chunks:	its chunks that are neither isolated nor being assembled in,
 *		in the order they were added
 * @nr_chunks:	chunks in the set, isolated ones included
 * @nr_free:	blocks not handed to any region (zeroed or dirty), in chunks
 *		that are not isolated
 * @nr_dirty:	of @nr_free, blocks waiting to be zeroed
 * @nr_reserved: of @nr_free, blocks promised to claims; @nr_free -
 *		@nr_reserved is what a claim can still reserve here
 *
 * Reservations are kept per set, so that nr_reserved <= nr_free holds for
 * every set and a claim holding a reservation on a set always finds a
 * block there. Protected by som_pool.lock.
 */
struct som_pool_set {
	struct list_head chunks;
	unsigned long nr_chunks;
	unsigned long nr_free;
	unsigned long nr_dirty;
	unsigned long nr_reserved;
};

/**
 * struct som_zero_stats - what zeroing freed memory has cost
 * @worker_bytes:	zeroed ahead of time, by the worker or when a source
 *			leaves the pool: a kernel thread's CPU time, charged
 *			to no process
 * @worker_ns:		the time those memsets took
 * @fault_bytes:	zeroed by a process allocating memory that the
 *			worker had not reached yet (in its fault, or in
 *			fallocate()), on its own CPU time
 * @fault_ns:		the time those memsets took
 */
struct som_zero_stats {
	atomic64_t worker_bytes;
	atomic64_t worker_ns;
	atomic64_t fault_bytes;
	atomic64_t fault_ns;
};

/**
 * struct som_pool - all chunks and their accounting
 * @lock:	protects every field below except @zero_work, @zero_wait
 *		and @zero_ahead,
 *		the sets, the mutable fields of every chunk and the
 *		reservation counts of every claim. Innermost lock of som:
 *		taken inside som_region.lock; never held while zeroing.
 * @chunks:	all chunks, in the order they were added
 * @hash:	chunk lookup by chunk frame number
 * @sets:	nr_node_ids * 2 sets, indexed by som_pool_set_index()
 * @nr_chunks:	chunks in the pool
 * @zeroing:	block the zeroing worker is clearing right now (it stays
 *		free and dirty meanwhile, allocators skip it), or SOM_NO_BLOCK
 * @zero_wait:	woken whenever the worker finishes a block
 * @zero_work:	the zeroing worker
 * @zero_ahead:	whether the worker runs (som_pool_set_zero_ahead()); when
 *		it does not, allocators zero the dirty blocks they take
 * @zero_stats:	what zeroing has cost so far, in the worker and in faults
 * @spare:	a struct som_chunk_bits at hand, so that a chunk whose blocks
 *		stop being alike gets one under the lock: every change of a
 *		block's state starts with one here (som_pool_lock_stocked()).
 *		Only one is kept, so that once any block has changed state
 *		(and after a source leaves) a pool at rest with no chunk's
 *		blocks differing holds exactly one: its metadata does not
 *		depend on the order things happened in. While some chunk's
 *		blocks differ, it holds none from the moment such a chunk
 *		took it until the next change
 * @nr_bits:	struct som_chunk_bits in use by chunks
 * @poison:	pfn -> record of a poisoned page of the pool (pool_poison.c);
 *		written under @poison_lock, or under @lock when only an
 *		existing record changes
 * @poison_gone: pfn -> the same record, without the retired mark, of a
 *		poisoned page whose chunk left the pool: if the chunk comes
 *		back (the same range added again), its block is retired
 *		before anyone can take it. Written under @poison_lock
 * @poison_lock: serialises new records with chunks leaving and entering
 *		the pool, so that no record outlives its chunk unremembered
 *		and none is missed by a chunk coming back. Outside @lock.
 * @claims:	every claim registered with som_pool_add_claim(): a memory
 *		error that takes a promised free block finds the claim to
 *		give up that promise here
 * @free_low_bytes: the low watermark of free memory, 0 for none
 *		(pool_low.c)
 * @low:	whether free memory is under it
 * @low_events:	how many times it went under it
 * @low_kn:	the kernfs file notified when @low changes, or NULL
 * @short_at_hand: whether the free movable blocks, held for promises or
 *		not, are under the watermark (pool_low.c)
 * @overcommit:	movable claims may be promised the swap store's room as
 *		well as the pool's blocks (som_pool_reserve())
 * @store_slots: 2 MiB slots of the swap store, 0 without one (or while
 *		it is being removed)
 * @nr_lost:	the lost reservations of movable claims, their @nr_lost
 *		summed: promises no block backs, which a fill keeps only
 *		once some block is unpromised (by paging one out)
 * @nr_out:	the blocks of movable claims paged out, their @nr_out
 *		summed: as many slots of the store are used
 * @pressure:	called (under @lock) while the pool is low and
 *		overcommits, so that cold blocks are paged out before
 *		faults have to wait (pressure.c); or NULL
 */
struct som_pool {
	spinlock_t lock;		/* see above */
	struct list_head chunks;
	DECLARE_HASHTABLE(hash, 6);
	struct som_pool_set *sets;
	unsigned long nr_chunks;
	unsigned long zeroing;
	wait_queue_head_t zero_wait;
	struct work_struct zero_work;
	bool zero_ahead;
	struct som_zero_stats zero_stats;
	struct som_chunk_bits *spare;
	unsigned long nr_bits;
	struct xarray poison;
	struct xarray poison_gone;
	struct mutex poison_lock;	/* see above */
	struct list_head claims;
	u64 free_low_bytes;
	bool low;
	u64 low_events;
	struct kernfs_node *low_kn;
	bool short_at_hand;
	bool overcommit;
	unsigned long store_slots;
	unsigned long nr_lost;
	unsigned long nr_out;
	void (*pressure)(struct som_pool *pool);
};

/* How a claim places its blocks on nodes: the values of SOM_POLICY_*. */
enum som_claim_mode {
	SOM_CLAIM_LOCAL,	/* the faulting CPU's node, then the nearest */
	SOM_CLAIM_PREFERRED,	/* the one node in @nodes, then the nearest */
	SOM_CLAIM_BIND,		/* only the nodes in @nodes, nearest first */
	SOM_CLAIM_INTERLEAVE,	/* round robin over @nodes, then the nearest */
};

/**
 * struct som_claim - what one region holds of the pool, and where it wants
 *	its memory
 * @mode:	an enum som_claim_mode
 * @nodes:	the nodes of @mode (unused for SOM_CLAIM_LOCAL)
 * @interleave_shift: SOM_CLAIM_INTERLEAVE moves to the next node every
 *		2^@interleave_shift blocks (0: 2 MiB, 9: 1 GiB)
 * @unmovable:	take blocks only from unmovable chunks, and never move them
 * @nr_reserved: blocks reserved and not allocated yet, in all
 * @pool_link:	entry in som_pool.claims, if registered
 * @nr_lost:	reservations no block backs: the pool could not keep
 *		them after memory errors took the free blocks they were
 *		promised, or it promised the swap store's room (an
 *		overcommitting pool: som_pool_reserve()). The claim's indices
 *		reserved but not filled number @nr_reserved + @nr_lost, and
 *		a fill that finds @nr_reserved at 0 takes a block only if a
 *		set has one unpromised (som_pool_alloc_block())
 * @nr_out:	indices paged out to the swap store: promises the store
 *		keeps, with no block and no reservation; reading one back
 *		takes an unpromised block (som_pool_alloc_block_back())
 * @node_reserved: the same per node ([nr_node_ids]); a reservation is held
 *		on a node's set, and moves to another set at allocation time
 *		when that is where the block is wanted and the set has room
 *
 * @nr_reserved and @node_reserved are protected by som_pool.lock; the
 * policy fields change under both the region's lock and som_pool.lock
 * (som_claim_set_policy()), or freely while the claim reserves nothing.
 */
struct som_claim {
	enum som_claim_mode mode;
	nodemask_t nodes;
	unsigned int interleave_shift;
	bool unmovable;
	unsigned long nr_reserved;
	unsigned long nr_lost;
	unsigned long nr_out;
	unsigned long *node_reserved;
	struct list_head pool_link;
};

/**
 * struct som_pool_stats - a consistent snapshot of the pool's counters
 * @total_bytes:	memory managed by the pool
 * @free_bytes:		neither allocated to nor reserved by a mapping;
 *			for the whole pool, nor held for a lost reservation
 *			or an index paged out (pool_overcommit.c)
 * @reserved_bytes:	reserved by mappings, not allocated yet (and, for
 *			the whole pool, those held blocks)
 * @zeroed_bytes:	free or reserved and already zeroed
 * @unmovable_total_bytes: of @total_bytes, in unmovable chunks
 * @unmovable_free_bytes: of @free_bytes, in unmovable chunks
 * @metadata_bytes:	memory the pool spends describing the above: the
 *			next two and its fixed part (the pool and its sets)
 * @chunks_bytes:	of that, the chunk descriptors
 * @chunk_bits_bytes:	of that, the bits of chunks whose blocks differ,
 *			and the spare ones at hand
 * @poison_bytes:	of that, the records of poisoned pages, in the pool
 *			and gone with their chunks: at most one xarray
 *			node each
 */
struct som_pool_stats {
	u64 total_bytes;
	u64 free_bytes;
	u64 reserved_bytes;
	u64 zeroed_bytes;
	u64 unmovable_total_bytes;
	u64 unmovable_free_bytes;
	u64 metadata_bytes;
	u64 chunks_bytes;
	u64 chunk_bits_bytes;
	u64 poison_bytes;
};

/* What som_pool_poison() found, besides errors. */
enum som_poison_state {
	SOM_POISON_RETIRED,	/* the block is retired */
	SOM_POISON_IN_USE,	/* a region holds the block */
};

/**
 * struct som_poison_where - the chunk of a poisoned page
 * @nid:	its node
 * @unmovable:	its kind
 * @owner:	its source
 */
struct som_poison_where {
	int nid;
	bool unmovable;
	const void *owner;
};

/**
 * struct som_poison_stats - what memory errors have cost
 * @events:	errors reported (one page may have several)
 * @pages:	4 KiB pages poisoned
 * @retired_bytes: bytes in retired blocks, which nobody will get again
 * @pages_outside: poisoned pages of chunks that left the pool, remembered
 *		for when they come back (for the whole pool only)
 */
struct som_poison_stats {
	u64 events;
	u64 pages;
	u64 retired_bytes;
	u64 pages_outside;
};

/**
 * struct som_chunk_info - what a migration needs to know of a chunk
 * @nid:	its NUMA node
 * @unmovable:	whether it is unmovable
 * @isolated:	whether it is isolated
 * @assembling:	whether a GiB is being assembled in it
 * @poisoned:	whether it holds a poisoned page (no GiB is assembled in it)
 * @slow:	whether it is of the slow tier
 * @nr_free:	its free blocks
 */
struct som_chunk_info {
	int nid;
	bool unmovable;
	bool slow;
	bool isolated;
	bool assembling;
	bool poisoned;
	unsigned int nr_free;
};

/* Memory tiers: a chunk's, or what a search accepts. */
enum som_tier {
	SOM_TIER_FAST,
	SOM_TIER_SLOW,
	SOM_TIER_NR,
};

#define SOM_TIER_ANY	(-1)

/**
 * struct som_tier_stats - the pool's memory of one tier
 * @total_bytes:	in its chunks
 * @free_bytes:		of that, not allocated to any region (reserved
 *			memory included)
 */
struct som_tier_stats {
	u64 total_bytes;
	u64 free_bytes;
};

static inline unsigned long som_bfn_to_pfn(unsigned long bfn)
{
	return bfn << (SOM_BLOCK_SHIFT - PAGE_SHIFT);
}

/* Chunk frame numbers are physical address >> SOM_CHUNK_SHIFT. */
static inline unsigned long som_bfn_to_cfn(unsigned long bfn)
{
	return bfn >> (SOM_CHUNK_SHIFT - SOM_BLOCK_SHIFT);
}

int som_pool_cache_init(void);
void som_pool_cache_exit(void);
int som_pool_init(struct som_pool *pool);
void som_pool_destroy(struct som_pool *pool);
struct som_chunk *som_chunk_create(struct som_pool *pool, phys_addr_t phys,
				   int nid, bool unmovable, const void *owner);
void som_chunk_destroy(struct som_chunk *chunk);
int som_pool_insert(struct som_pool *pool, struct list_head *chunks);
int som_pool_add_chunk(struct som_pool *pool, phys_addr_t phys, int nid,
		       bool unmovable, const void *owner);
int som_pool_remove(struct som_pool *pool, const void *owner);
int som_pool_remove_poisoned(struct som_pool *pool, const void *owner,
			     unsigned long *pfns, unsigned int max,
			     unsigned int *nr);
bool som_pool_contains(struct som_pool *pool, phys_addr_t phys, u64 size);
unsigned long som_pool_owner_used(struct som_pool *pool, const void *owner);

int som_claim_init(struct som_claim *claim);
void som_claim_destroy(struct som_claim *claim);
bool som_claim_allows(const struct som_claim *claim, int nid);
int som_claim_target(const struct som_claim *claim, pgoff_t idx);
int som_claim_set_policy(struct som_pool *pool, struct som_claim *claim,
			 enum som_claim_mode mode, const nodemask_t *nodes,
			 unsigned int interleave_shift);
int som_pool_reserve(struct som_pool *pool, struct som_claim *claim,
		     unsigned long nr);
void som_pool_unreserve(struct som_pool *pool, struct som_claim *claim,
			unsigned long nr);
unsigned long som_pool_alloc_block(struct som_pool *pool,
				   struct som_claim *claim, pgoff_t idx);
unsigned long som_pool_alloc_chunk(struct som_pool *pool,
				   struct som_claim *claim, pgoff_t idx);
unsigned long som_pool_alloc_block_back(struct som_pool *pool,
					struct som_claim *claim, pgoff_t idx);
void som_pool_free_block(struct som_pool *pool, unsigned long bfn);
bool som_pool_short(struct som_pool *pool, struct som_claim *claim);
bool som_pool_claim_backed(struct som_pool *pool, struct som_claim *claim);
void som_pool_set_overcommit(struct som_pool *pool, bool on);
void som_pool_set_store(struct som_pool *pool, unsigned long slots);
int som_pool_drop_store(struct som_pool *pool);
unsigned long som_pool_overcommitted(struct som_pool *pool);
unsigned long som_pool_low_deficit(struct som_pool *pool);
void som_pool_drop_out(struct som_pool *pool, struct som_claim *claim,
		       unsigned long nr);
void som_pool_free_block_out(struct som_pool *pool, struct som_claim *claim,
			     unsigned long bfn);
void som_pool_set_zero_ahead(struct som_pool *pool, bool on);
void som_pool_set_free_low(struct som_pool *pool, u64 bytes);
bool som_pool_get_low(struct som_pool *pool, u64 *bytes, u64 *events);
void som_pool_set_low_file(struct som_pool *pool, struct kernfs_node *kn);
bool som_pool_zero_ahead(struct som_pool *pool);
void *som_pool_block_vaddr(struct som_pool *pool, unsigned long bfn);
int som_pool_block_node(struct som_pool *pool, unsigned long bfn,
			bool *unmovable);
void som_pool_get_stats(struct som_pool *pool, int nid,
			struct som_pool_stats *stats);
int som_pool_block_tier(struct som_pool *pool, unsigned long bfn);
void som_pool_set_owner_tier(struct som_pool *pool, const void *owner,
			     const bool *slow);
void som_pool_tier_stats(struct som_pool *pool,
			 struct som_tier_stats stats[SOM_TIER_NR]);

/* Migration (migrate.c, compact.c) */
int som_pool_chunk_info(struct som_pool *pool, unsigned long cfn,
			struct som_chunk_info *info);
unsigned long som_pool_whole_chunk_tier(struct som_pool *pool,
					const struct som_claim *claim,
					int nid, int tier);
int som_pool_assemble_begin(struct som_pool *pool, unsigned long cfn);
int som_pool_isolate_owner(struct som_pool *pool, const void *owner);
void som_pool_assemble_end(struct som_pool *pool, unsigned long cfn);
void som_pool_unisolate_owner(struct som_pool *pool, const void *owner);
const void *som_pool_block_owner(struct som_pool *pool, unsigned long bfn);
unsigned long som_pool_alloc_spare(struct som_pool *pool,
				   const struct som_claim *claim, int nid,
				   bool exact);
unsigned long som_pool_alloc_spare_tier(struct som_pool *pool,
					const struct som_claim *claim,
					int nid, bool exact, int tier);
int som_pool_assemble_take(struct som_pool *pool, unsigned long bfn);

/* Memory errors (pool_poison.c, pool_claim.c) */
int som_pool_poison(struct som_pool *pool, unsigned long pfn,
		    struct som_poison_where *where);
bool som_pool_block_poisoned(struct som_pool *pool, unsigned long bfn);
bool som_pool_page_poisoned(struct som_pool *pool, unsigned long pfn);
bool som_pool_find_poison(struct som_pool *pool, unsigned long *pfn,
			  unsigned long last);
void som_pool_poison_stats(struct som_pool *pool, int nid, const void *owner,
			   struct som_poison_stats *stats);
int som_pool_forget_poison(struct som_pool *pool, phys_addr_t phys, u64 size);
void som_pool_add_claim(struct som_pool *pool, struct som_claim *claim);
void som_pool_del_claim(struct som_pool *pool, struct som_claim *claim);

#endif /* _SOM_POOL_H */
