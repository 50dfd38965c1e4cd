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
#include <linux/pgtable.h>
#include <linux/spinlock.h>
#include <linux/wait.h>
#include <linux/workqueue.h>

#define SOM_CHUNK_SHIFT		PUD_SHIFT
#define SOM_BLOCK_SHIFT		PMD_SHIFT
#define SOM_CHUNK_SIZE		BIT(SOM_CHUNK_SHIFT)
#define SOM_BLOCK_SIZE		BIT(SOM_BLOCK_SHIFT)
#define SOM_BLOCKS_PER_CHUNK	(1U << (SOM_CHUNK_SHIFT - SOM_BLOCK_SHIFT))

/* "No block": block frame numbers are physical address >> SOM_BLOCK_SHIFT. */
#define SOM_NO_BLOCK		ULONG_MAX

/**
 * struct som_chunk - one naturally aligned 1 GiB piece of physical memory
 * @hash:	entry in som_pool.hash, keyed by chunk frame number
 * @list:	entry in som_pool.chunks
 * @phys:	physical address, 1 GiB aligned
 * @vaddr:	write-back memremap() of the whole chunk, kept for as long as
 *		the chunk is in the pool: it is what makes user mappings of the
 *		chunk write-back (PAT) and what the zeroing worker writes through
 * @nr_free:	number of bits set in @free
 * @nr_dirty:	number of bits set in @dirty
 * @free:	blocks not handed to any region
 * @dirty:	free blocks whose old contents have not been zeroed yet;
 *		always a subset of @free
 *
 * All fields but @phys and @vaddr are protected by som_pool.lock. This is
 * the pool's only per-chunk metadata: see som_pool_metadata_bytes().
 */
struct som_chunk {
	struct hlist_node hash;
	struct list_head list;
	phys_addr_t phys;
	void *vaddr;
	unsigned int nr_free;
	unsigned int nr_dirty;
	DECLARE_BITMAP(free, SOM_BLOCKS_PER_CHUNK);
	DECLARE_BITMAP(dirty, SOM_BLOCKS_PER_CHUNK);
};

/**
 * struct som_pool - all chunks and their accounting
 * @lock:	protects every field below except @zero_work and @zero_wait,
 *		and the mutable fields of every chunk. Innermost lock of som:
 *		taken inside som_region.lock; never held while zeroing.
 * @chunks:	all chunks, in the order they were added
 * @hash:	chunk lookup by chunk frame number
 * @nr_chunks:	chunks in the pool
 * @nr_free:	blocks not handed to any region (zeroed or dirty)
 * @nr_dirty:	of @nr_free, blocks waiting to be zeroed
 * @nr_reserved: of @nr_free, blocks promised to mappings (mmap reserves,
 *		the fault that allocates consumes); @nr_free - @nr_reserved is
 *		what a new mapping can still reserve
 * @zeroing:	block the zeroing worker is clearing right now (it stays
 *		free and dirty meanwhile, allocators skip it), or SOM_NO_BLOCK
 * @zero_wait:	woken whenever the worker finishes a block
 * @zero_work:	the zeroing worker
 */
struct som_pool {
	spinlock_t lock;		/* see above */
	struct list_head chunks;
	DECLARE_HASHTABLE(hash, 6);
	unsigned long nr_chunks;
	unsigned long nr_free;
	unsigned long nr_dirty;
	unsigned long nr_reserved;
	unsigned long zeroing;
	wait_queue_head_t zero_wait;
	struct work_struct zero_work;
};

/**
 * struct som_pool_stats - a consistent snapshot of the pool's counters
 * @total_bytes:	memory managed by the pool
 * @free_bytes:		neither allocated to nor reserved by a mapping
 * @reserved_bytes:	reserved by mappings, not allocated yet
 * @zeroed_bytes:	free or reserved and already zeroed
 * @metadata_bytes:	memory the pool spends describing the above
 */
struct som_pool_stats {
	u64 total_bytes;
	u64 free_bytes;
	u64 reserved_bytes;
	u64 zeroed_bytes;
	u64 metadata_bytes;
};

static inline unsigned long som_bfn_to_pfn(unsigned long bfn)
{
	return bfn << (SOM_BLOCK_SHIFT - PAGE_SHIFT);
}

void som_pool_init(struct som_pool *pool);
void som_pool_destroy(struct som_pool *pool);
int som_pool_add_chunk(struct som_pool *pool, phys_addr_t phys);
bool som_pool_contains(struct som_pool *pool, phys_addr_t phys, u64 size);
int som_pool_reserve(struct som_pool *pool, unsigned long nr);
void som_pool_unreserve(struct som_pool *pool, unsigned long nr);
unsigned long som_pool_alloc_block(struct som_pool *pool);
unsigned long som_pool_alloc_chunk(struct som_pool *pool);
void som_pool_free_block(struct som_pool *pool, unsigned long bfn);
void *som_pool_block_vaddr(struct som_pool *pool, unsigned long bfn);
void som_pool_get_stats(struct som_pool *pool, struct som_pool_stats *stats);

#endif /* _SOM_POOL_H */
