// SPDX-License-Identifier: GPL-2.0
/*
 * Packing: giving back the blocks that holes have left at most part full.
 *
 * An allocator that frees memory in 4 KiB pieces (jemalloc's purges
 * through somrun, fallocate(FALLOC_FL_PUNCH_HOLE)) leaves 2 MiB blocks of
 * a som file mostly zeros: the block stays allocated as long as one page
 * of it holds data. Packing copies the pages of such an index that are
 * not all zeros onto 4 KiB pages of "pack blocks", maps them from there
 * with 4 KiB entries, and gives the index's block back to the pool. The
 * index is then "sparse": absent in the table (a hole), with a map from
 * its pages to pack slots that overrides the hole. A sparse index that
 * fills up again gets a block of its own back ("densify").
 *
 * Pack blocks are indices of the region's own table, from SOM_PACK_FIRST
 * on, past every file offset: they are reserved, charged, counted,
 * migrated and compacted like any block of the region. Nothing maps them
 * at their own offset; their pages are mapped at the offsets of the
 * sparse pages that use them. So zapping "the entries of a pack index"
 * means zapping those pages, found from the pack block's reverse map
 * (som_pack_zap(), which migration calls for pack indices).
 *
 *	struct som_sparse	per sparse index: page -> slot + 1, 2 KiB
 *	struct som_pack		per pack block: page -> owner page + 1, 4 KiB
 *
 * A slot number is (pack index - SOM_PACK_FIRST) << 9 | page, so the pack
 * page's offset in the region is its slot plus that of SOM_PACK_FIRST.
 *
 * Packing and densifying change what maps an index, so they run as a
 * migration does (migrate.c): under som_migrate_mutex and
 * som_mover_lock(). Faults take free slots (zeroed), punches free them,
 * both under the region lock alone, as they fill and free blocks. Only
 * som files pack: a /dev/som index lives only as long as its mapping,
 * and the pack range is mapped by no VMA. Only an index that a punch has
 * zeroed part of is looked at ("candidate"): one of zeros never written
 * (a cache set up ahead, a fresh heap) keeps its large entries. An index
 * with a hole a memory error left, paged out, or in a GiB one chunk
 * backs whole is left as it is.
 *
 * A pass runs in the background a second after the first candidate is
 * marked or a slot freed (while packing is on), or when an administrator
 * asks (sysfs packing/run). After the candidates it compacts: a pack
 * block at most half used is emptied into the others' free slots when
 * they have room for all its pages and an eighth of a block, and given
 * back. Turning packing off waits for a pass that runs.
 *
 * Not done yet (Documentation/packing.md): pack blocks are not paged out
 * or moved between tiers (aging sees no entry for them).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/capability.h>
#include <linux/delay.h>
#include <linux/error-injection.h>
#include <linux/kobject.h>
#include <linux/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/sysfs.h>
#include <linux/uaccess.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>

#include "migrate.h"
#include "pack.h"
#include "region.h"
#include "som.h"
#include "swap.h"

struct som_pack_stats som_pack_stats;

/*
 * Pack an index holding at most this many pages that are not all zeros;
 * 0 packs nothing (sysfs pack_threshold).
 */
unsigned int som_pack_threshold;

/* A sparse index with more pages than this in use gets a block again. */
#define SOM_PACK_DENSE		(SOM_PAGES_PER_BLOCK * 7 / 8)

/*
 * The highest threshold: an index packed at it takes 64 more slots (an
 * eighth of a block; a read of a page that reads zeros takes one too)
 * before it is densified again.
 */
#define SOM_PACK_THRESHOLD_MAX	(SOM_PAGES_PER_BLOCK * 3 / 4)
static_assert(SOM_PACK_THRESHOLD_MAX < SOM_PACK_DENSE);

/* Slot numbers and pack offsets need a 64-bit pgoff_t. */
static_assert(BITS_PER_LONG == 64);

/* Pack blocks a region may have: slot numbers + 1 fit in 32 bits. */
#define SOM_PACK_MAX		((1U << (32 - SOM_PAGES_PER_BLOCK_SHIFT)) - 1)

/* The background pass runs this long after the first candidate. */
#define SOM_PACK_DELAY		HZ

static void som_pack_work_fn(struct work_struct *work);
static DECLARE_DELAYED_WORK(som_pack_work, som_pack_work_fn);

/* Candidates looked at in one hold of a region's locks, as a move does. */
#define SOM_PACK_BATCH		32

/* Candidates of one region looked at in one pass. */
#define SOM_PACK_PASS		1024

/* Pack blocks of one region emptied in one pass. */
#define SOM_PACK_COMPACT	16

/* A pack slot whose page a memory error took: never used again. */
#define SOM_PACK_DEAD		U64_MAX

/* packs: has a free slot */
#define SOM_PACK_ROOM		XA_MARK_1

/* One sparse index: its pages' slots + 1, 0 where a page reads zeros. */
struct som_sparse {
	u32 slot[SOM_PAGES_PER_BLOCK];
};

/* One pack block: the region page + 1 that uses each slot, 0 if free. */
struct som_pack {
	u64 owner[SOM_PAGES_PER_BLOCK];
};

/**
 * som_pack_region_init() - set up a new region's packing state
 * @region: the region
 */
void som_pack_region_init(struct som_region *region)
{
	xa_init(&region->sparse);
	xa_init_flags(&region->packs, XA_FLAGS_ALLOC);
	xa_init(&region->pack_candidates);
}

/**
 * som_pack_region_destroy() - free what a dead region's packing kept
 * @region: the region, released whole (som_region_destroy())
 *
 * Pack blocks are released with the rest of the table; what may remain
 * here is the reverse map of one kept for a slot a memory error took.
 */
void som_pack_region_destroy(struct som_region *region)
{
	struct som_pack *pack;
	unsigned long k;
	unsigned int p;

	WARN_ON_ONCE(!xa_empty(&region->sparse));
	xa_for_each(&region->packs, k, pack) {
		for (p = 0; p < SOM_PAGES_PER_BLOCK; p++)
			if (pack->owner[p])
				atomic_long_dec(&som_pack_stats.pages);
		atomic_long_dec(&som_pack_stats.blocks);
		kfree(pack);
	}
	xa_destroy(&region->packs);
	xa_destroy(&region->sparse);
	xa_destroy(&region->pack_candidates);
}

/**
 * som_pack_metadata_bytes() - what a region's packing takes
 * @region: the region, locked
 *
 * Return: the sparse maps, the reverse maps and the three xarrays' nodes.
 */
u64 som_pack_metadata_bytes(struct som_region *region)
{
	lockdep_assert_held(&region->lock);
	return (u64)region->nr_sparse * sizeof(struct som_sparse) +
	       (u64)region->nr_packs * sizeof(struct som_pack) +
	       (som_xa_nodes(&region->sparse) + som_xa_nodes(&region->packs) +
		som_xa_nodes(&region->pack_candidates)) *
	       sizeof(struct xa_node);
}

/**
 * som_pack_next_sparse() - the first sparse index in a range
 * @region: the region, locked
 * @first: first index
 * @last: last index, below ULONG_MAX
 *
 * Return: the index, or @last + 1 if none is.
 */
pgoff_t som_pack_next_sparse(struct som_region *region, pgoff_t first,
			     pgoff_t last)
{
	unsigned long idx = first;

	lockdep_assert_held(&region->lock);
	if (!region->nr_sparse || first > last ||
	    !xa_find(&region->sparse, &idx, last, XA_PRESENT))
		return last + 1;
	return idx;
}

/**
 * som_pack_sparse() - does a range hold a sparse index?
 * @region: the region, locked
 * @first: first index
 * @last: last index, below ULONG_MAX
 */
bool som_pack_sparse(struct som_region *region, pgoff_t first, pgoff_t last)
{
	return som_pack_next_sparse(region, first, last) <= last;
}

/* The region page offset of pack slot @slot. */
static pgoff_t som_pack_slot_pgoff(u32 slot)
{
	return (SOM_PACK_FIRST << SOM_PAGES_PER_BLOCK_SHIFT) + slot;
}

/* The block behind pack slot @slot, or SOM_TABLE_ABSENT. */
static unsigned long som_pack_slot_block(struct som_region *region, u32 slot)
{
	unsigned long bfn = som_table_get(&region->table, SOM_PACK_FIRST +
					  (slot >> SOM_PAGES_PER_BLOCK_SHIFT));

	return som_table_is_block(bfn) ? bfn : SOM_TABLE_ABSENT;
}

static void *som_pack_slot_vaddr(struct som_region *region,
				 unsigned long bfn, u32 slot)
{
	return som_pool_block_vaddr(region->pool, bfn) +
	       ((slot & (SOM_PAGES_PER_BLOCK - 1)) << PAGE_SHIFT);
}

/*
 * A copy out of slot @slot (in block @bfn) met a memory error: the pool
 * records it, as a move does (migrate.c), and the slot becomes a hole, so
 * that it is not used again and its page signals.
 */
static void som_pack_slot_lost(struct som_region *region, unsigned long bfn,
			       u32 slot)
{
	struct som_poison_where where;

	som_pool_poison(region->pool, som_bfn_to_pfn(bfn) +
			(slot & (SOM_PAGES_PER_BLOCK - 1)), &where);
	som_region_poison_page(region, som_pack_slot_pgoff(slot));
}

/*
 * Does compaction leave pack block @k alone: not there, an error the pool
 * recorded in it, or a hole a memory error left in one of its slots?
 */
static bool som_pack_block_bad(struct som_region *region, unsigned long k)
{
	u32 slot = (u32)k << SOM_PAGES_PER_BLOCK_SHIFT;
	unsigned long bfn = som_pack_slot_block(region, slot);

	return bfn == SOM_TABLE_ABSENT ||
	       som_pool_block_poisoned(region->pool, bfn) ||
	       som_region_poisoned(region, som_pack_slot_pgoff(slot),
				   SOM_PAGES_PER_BLOCK);
}

/*
 * May slot @p of pack block @k, free or dead, be taken? A memory error
 * may have left a hole there since it was freed (or killed it): the hole
 * goes if the block behind it is healthy now (it moved away from the
 * error), and a dead slot is then zeroed and free again; else the slot
 * is dead.
 */
static bool som_pack_usable(struct som_region *region, struct som_pack *pack,
			    unsigned long k, unsigned int p)
{
	u32 slot = (k << SOM_PAGES_PER_BLOCK_SHIFT) | p;
	pgoff_t pgoff = som_pack_slot_pgoff(slot);
	bool hole = som_region_poisoned(region, pgoff, 1);
	unsigned long bfn;

	if (hole)
		som_region_unpoison(region, pgoff, pgoff, true);
	if (hole && som_region_poisoned(region, pgoff, 1)) {
		if (!pack->owner[p])
			atomic_long_inc(&som_pack_stats.pages);
		pack->owner[p] = SOM_PACK_DEAD;
		return false;
	}
	/* What a move left behind a hole it skipped is not zeros. */
	if (hole || pack->owner[p] == SOM_PACK_DEAD) {
		bfn = som_pack_slot_block(region, slot);
		if (bfn == SOM_TABLE_ABSENT)
			return false;
		memset(som_pack_slot_vaddr(region, bfn, slot), 0, PAGE_SIZE);
	}
	if (pack->owner[p] == SOM_PACK_DEAD) {
		pack->owner[p] = 0;
		atomic_long_dec(&som_pack_stats.pages);
	}
	return true;
}

/*
 * Take a free slot for region page @owner: from a pack block with room,
 * or, if @grow, from a new one filled from the pool (zeroed). A slot is
 * zero when free. Returns 0 and sets *@slot, -ENOSPC if none is free and
 * !@grow, or the error of som_region_fill().
 */
static int som_pack_take(struct som_region *region, pgoff_t owner, u32 *slot,
			 bool grow)
{
	struct som_pack *pack;
	unsigned long k, bfn;
	unsigned int p = 0;
	u32 id;
	int err;

	xa_for_each_marked(&region->packs, k, pack, SOM_PACK_ROOM) {
		/* Compaction's copies stay off a block an error was seen in. */
		if (!grow && som_pack_block_bad(region, k))
			continue;
		for (p = 0; p < SOM_PAGES_PER_BLOCK; p++)
			if ((!pack->owner[p] ||
			     pack->owner[p] == SOM_PACK_DEAD) &&
			    som_pack_usable(region, pack, k, p))
				goto found;
		xa_clear_mark(&region->packs, k, SOM_PACK_ROOM);
	}
	if (!grow)
		return -ENOSPC;
	pack = kzalloc(sizeof(*pack), GFP_KERNEL_ACCOUNT);
	if (!pack)
		return -ENOMEM;
	/* Not -EBUSY for 16 TiB of pack blocks: a fault would take it. */
	err = xa_alloc(&region->packs, &id, pack, XA_LIMIT(0, SOM_PACK_MAX - 1),
		       GFP_KERNEL_ACCOUNT);
	if (err) {
		kfree(pack);
		return -ENOMEM;
	}
	k = id;
	err = som_region_fill(region, SOM_PACK_FIRST + k, &bfn);
	if (err) {
		/* Not even the reservation stays: nothing uses the index. */
		som_region_release_table(region, SOM_PACK_FIRST + k,
					 SOM_PACK_FIRST + k);
		xa_erase(&region->packs, k);
		kfree(pack);
		return err;
	}
	xa_set_mark(&region->packs, k, SOM_PACK_ROOM);
	region->nr_packs++;
	atomic_long_inc(&som_pack_stats.blocks);
	p = 0;
found:
	pack->owner[p] = owner + 1;
	atomic_long_inc(&som_pack_stats.pages);
	*slot = (k << SOM_PAGES_PER_BLOCK_SHIFT) | p;
	return 0;
}

/*
 * Free pack slot @slot: nothing maps it any more. Its page is zeroed for
 * the next user; a pack block left empty goes back to the pool. A page a
 * memory error took stays in use, marked dead, unless it is healthy again
 * (the block moved away from the error).
 */
static void som_pack_put(struct som_region *region, u32 slot)
{
	unsigned long k = slot >> SOM_PAGES_PER_BLOCK_SHIFT, bfn;
	unsigned int p = slot & (SOM_PAGES_PER_BLOCK - 1);
	pgoff_t pgoff = som_pack_slot_pgoff(slot);
	struct som_pack *pack = xa_load(&region->packs, k);

	if (WARN_ON_ONCE(!pack || !pack->owner[p] ||
			 pack->owner[p] == SOM_PACK_DEAD))
		return;
	bfn = som_pack_slot_block(region, slot);
	if (region->nr_poisoned)
		som_region_unpoison(region, pgoff, pgoff, true);
	if (som_region_poisoned(region, pgoff, 1) ||
	    WARN_ON_ONCE(bfn == SOM_TABLE_ABSENT)) {
		pack->owner[p] = SOM_PACK_DEAD;
		return;
	}
	memset(som_pack_slot_vaddr(region, bfn, slot), 0, PAGE_SIZE);
	pack->owner[p] = 0;
	atomic_long_dec(&som_pack_stats.pages);
	xa_set_mark(&region->packs, k, SOM_PACK_ROOM);
	if (memchr_inv(pack->owner, 0, sizeof(pack->owner))) {
		/* The next pass may empty a pack block into the others. */
		if (region->nr_packs > 1 && READ_ONCE(som_pack_threshold))
			queue_delayed_work(system_dfl_wq, &som_pack_work,
					   SOM_PACK_DELAY);
		return;
	}
	xa_erase(&region->packs, k);
	kfree(pack);
	region->nr_packs--;
	atomic_long_dec(&som_pack_stats.blocks);
	som_region_release(region, SOM_PACK_FIRST + k, SOM_PACK_FIRST + k);
}

/* Mark index @idx for the next pass to look at. */
static void som_pack_mark(struct som_region *region, pgoff_t idx)
{
	/* Without room for the mark, the index is just not looked at. */
	if (xa_err(xa_store(&region->pack_candidates, idx, xa_mk_value(0),
			    GFP_KERNEL_ACCOUNT | __GFP_NOWARN)))
		return;
	if (READ_ONCE(som_pack_threshold))
		queue_delayed_work(system_dfl_wq, &som_pack_work,
				   SOM_PACK_DELAY);
}

/**
 * som_pack_note() - part of an index was zeroed: it may be worth packing
 * @region: the region, locked
 * @idx: the index, which holds a block
 */
void som_pack_note(struct som_region *region, pgoff_t idx)
{
	lockdep_assert_held(&region->lock);
	if (region->mapping && READ_ONCE(som_pack_threshold) &&
	    !som_pack_is_pack(idx))
		som_pack_mark(region, idx);
}

/**
 * som_pack_page() - the frame behind a page of a sparse index
 * @region: the region, locked until the frame is mapped or used
 * @pgoff: the page's offset in the region
 * @take: a page that reads zeros gets a slot (a write, a fault)
 * @pfn: set to the frame
 *
 * Context: Process context, may sleep (a new pack block may be zeroed).
 * Return: 0; -ENOENT if @pgoff's index is not sparse; -ENODATA if the page
 * reads zeros and !@take; -EHWPOISON if its slot is a hole a memory
 * error left; or an error of som_region_fill() taking a new pack block.
 */
int som_pack_page(struct som_region *region, pgoff_t pgoff, bool take,
		  unsigned long *pfn)
{
	pgoff_t idx = pgoff >> SOM_PAGES_PER_BLOCK_SHIFT;
	unsigned int p = pgoff & (SOM_PAGES_PER_BLOCK - 1);
	struct som_sparse *sp;
	unsigned long bfn;
	u32 slot;
	int err;

	lockdep_assert_held(&region->lock);
	sp = region->nr_sparse ? xa_load(&region->sparse, idx) : NULL;
	if (!sp)
		return -ENOENT;
	if (!sp->slot[p]) {
		if (!take)
			return -ENODATA;
		err = som_pack_take(region, pgoff, &slot, true);
		if (err)
			return err;
		sp->slot[p] = slot + 1;
		/* Filling up: the next pass may give it a block again. */
		som_pack_mark(region, idx);
	}
	slot = sp->slot[p] - 1;
	if (som_region_poisoned(region, som_pack_slot_pgoff(slot), 1))
		return -EHWPOISON;
	bfn = som_pack_slot_block(region, slot);
	if (WARN_ON_ONCE(bfn == SOM_TABLE_ABSENT))
		return -EFAULT;
	*pfn = som_bfn_to_pfn(bfn) + (slot & (SOM_PAGES_PER_BLOCK - 1));
	return 0;
}

/**
 * som_pack_zero() - zero part of one page of a sparse index
 * @region: the region, locked
 * @from: first byte
 * @to: end, in the same page
 *
 * What the page's slot holds there is zeroed; a page without a slot reads
 * zeros already.
 */
void som_pack_zero(struct som_region *region, loff_t from, loff_t to)
{
	pgoff_t pgoff = from >> PAGE_SHIFT;
	struct som_sparse *sp;
	unsigned long bfn;
	u32 slot;

	lockdep_assert_held(&region->lock);
	sp = xa_load(&region->sparse, pgoff >> SOM_PAGES_PER_BLOCK_SHIFT);
	if (!sp || !sp->slot[pgoff & (SOM_PAGES_PER_BLOCK - 1)])
		return;
	slot = sp->slot[pgoff & (SOM_PAGES_PER_BLOCK - 1)] - 1;
	if (som_region_poisoned(region, som_pack_slot_pgoff(slot), 1))
		return;
	bfn = som_pack_slot_block(region, slot);
	if (!WARN_ON_ONCE(bfn == SOM_TABLE_ABSENT))
		memset(som_pack_slot_vaddr(region, bfn, slot) +
		       offset_in_page(from), 0, to - from);
}

/* Free the slots of pages [@first, @last] of sparse map @sp at @idx. */
static unsigned int som_pack_free_map(struct som_region *region,
				      struct som_sparse *sp, pgoff_t idx,
				      unsigned int first, unsigned int last)
{
	unsigned int p, left = 0;

	for (p = 0; p < SOM_PAGES_PER_BLOCK; p++) {
		if (!sp->slot[p])
			continue;
		if (p < first || p > last) {
			left++;
			continue;
		}
		som_pack_put(region, sp->slot[p] - 1);
		sp->slot[p] = 0;
	}
	if (!left) {
		xa_erase(&region->sparse, idx);
		kfree(sp);
		region->nr_sparse--;
		atomic_long_dec(&som_pack_stats.sparse);
	}
	return left;
}

/**
 * som_pack_free() - make whole pages of one sparse index read zeros
 * @region: the region, locked
 * @first: first page offset
 * @last: last page offset, in the same index
 *
 * Their slots are freed, and the index is no longer sparse once it has
 * none left: it is then a plain hole. No entry may map the pages.
 */
void som_pack_free(struct som_region *region, pgoff_t first, pgoff_t last)
{
	pgoff_t idx = first >> SOM_PAGES_PER_BLOCK_SHIFT;
	struct som_sparse *sp;

	lockdep_assert_held(&region->lock);
	sp = region->nr_sparse ? xa_load(&region->sparse, idx) : NULL;
	if (sp)
		som_pack_free_map(region, sp, idx,
				  first & (SOM_PAGES_PER_BLOCK - 1),
				  last & (SOM_PAGES_PER_BLOCK - 1));
}

/**
 * som_pack_drop() - forget the sparse indices of a range
 * @region: the region, locked
 * @first: first index
 * @last: last index, below SOM_PACK_FIRST
 *
 * Every slot they use is freed. No entry may map their pages.
 */
void som_pack_drop(struct som_region *region, pgoff_t first, pgoff_t last)
{
	struct som_sparse *sp;
	unsigned long idx;

	lockdep_assert_held(&region->lock);
	if (region->nr_sparse)
		xa_for_each_range(&region->sparse, idx, sp, first, last)
			som_pack_free_map(region, sp, idx, 0,
					  SOM_PAGES_PER_BLOCK - 1);
	if (!xa_empty(&region->pack_candidates))
		xa_for_each_range(&region->pack_candidates, idx, sp, first,
				  last)
			xa_erase(&region->pack_candidates, idx);
}

/**
 * som_pack_zap() - zap what maps the pages of pack blocks
 * @mm: the region's owner, its mmap_lock held
 * @region: the region, locked
 * @idx: first pack index
 * @nr: pack indices from @idx
 *
 * The pages of the sparse indices that use the blocks' slots are zapped,
 * a run of consecutive pages at a time.
 */
void som_pack_zap(struct mm_struct *mm, struct som_region *region,
		  pgoff_t idx, pgoff_t nr)
{
	pgoff_t from = 0, to = 0, owner;
	struct som_pack *pack;
	unsigned int p;

	lockdep_assert_held(&region->lock);
	for (; nr; nr--, idx++) {
		pack = xa_load(&region->packs, idx - SOM_PACK_FIRST);
		if (!pack)
			continue;
		for (p = 0; p < SOM_PAGES_PER_BLOCK; p++) {
			owner = pack->owner[p];
			if (!owner || owner == SOM_PACK_DEAD)
				continue;
			owner--;
			if (owner == to) {
				to++;
				continue;
			}
			if (from < to)
				som_vm_zap_range(mm, region, from, to);
			from = owner;
			to = owner + 1;
		}
	}
	if (from < to)
		som_vm_zap_range(mm, region, from, to);
}

/* Zap the owner's entries for index @idx, if it is live. */
static void som_pack_unmap(struct som_mover *mv, pgoff_t idx)
{
	if (mv->live)
		som_vm_zap_range(mv->mm, mv->region,
				 idx << SOM_PAGES_PER_BLOCK_SHIFT,
				 (idx + 1) << SOM_PAGES_PER_BLOCK_SHIFT);
}

/*
 * Read page @p of the block at @vaddr into @buf with the machine-check
 * safe copy: the pass reads pages the owner may never touch again, and
 * an error there must not bring the kernel down. Returns whether it is
 * not all zeros, or -EIO (the machine check's report makes it a hole).
 */
static int som_pack_read(const void *vaddr, unsigned int p, void *buf)
{
	if (copy_mc_to_kernel(buf, vaddr + (p << PAGE_SHIFT), PAGE_SIZE))
		return -EIO;
	return !!memchr_inv(buf, 0, PAGE_SIZE);
}

/* The pages of 2 MiB at @vaddr that are not all zeros, or -EIO. */
static int som_pack_count(const void *vaddr, void *buf)
{
	unsigned int p;
	int nr = 0, ret;

	for (p = 0; p < SOM_PAGES_PER_BLOCK; p++) {
		ret = som_pack_read(vaddr, p, buf);
		if (ret < 0)
			return ret;
		nr += ret;
	}
	return nr;
}

/*
 * Pack index @idx of a locked region, which holds block @bfn, if at most
 * som_pack_threshold of its pages are not all zeros; @buf is a page to
 * read through. Returns 0 whether it did or not, or an error that left
 * the index as it was.
 */
static int som_pack_block(struct som_mover *mv, pgoff_t idx,
			  unsigned long bfn, void *buf)
{
	struct som_region *region = mv->region;
	unsigned int p, nr = 0, threshold = READ_ONCE(som_pack_threshold);
	pgoff_t pgoff = idx << SOM_PAGES_PER_BLOCK_SHIFT;
	struct som_sparse *sp;
	void *vaddr;
	u32 slot;
	int err;

	if (!threshold || region->claim.unmovable ||
	    xa_load(&region->sparse, idx) ||
	    som_table_chunk(&region->table,
			    round_down(idx, SOM_BLOCKS_PER_CHUNK)) != SOM_NO_BLOCK ||
	    som_region_poisoned(region, pgoff, SOM_PAGES_PER_BLOCK) ||
	    som_pool_block_poisoned(region->pool, bfn))
		return 0;
	vaddr = som_pool_block_vaddr(region->pool, bfn);
	/* A first look, while the owner may still write: a filter only. */
	err = som_pack_count(vaddr, buf);
	if (err < 0 || err > threshold)
		return 0;
	sp = kzalloc(sizeof(*sp), GFP_KERNEL_ACCOUNT);
	if (!sp)
		return -ENOMEM;
	err = xa_reserve(&region->sparse, idx, GFP_KERNEL_ACCOUNT);
	if (err)
		goto err_free;
	/* From here on nothing writes the block: the data is final. */
	som_pack_unmap(mv, idx);
	for (p = 0; p < SOM_PAGES_PER_BLOCK; p++) {
		err = som_pack_read(vaddr, p, buf);
		if (err < 0)
			goto err_undo;
		if (!err)
			continue;
		err = 0;
		if (++nr > threshold)
			goto err_undo;
		err = som_pack_take(region, pgoff + p, &slot, true);
		if (err)
			goto err_undo;
		sp->slot[p] = slot + 1;
		memcpy(som_pack_slot_vaddr(region,
					   som_pack_slot_block(region, slot),
					   slot), buf, PAGE_SIZE);
	}
	som_region_release(region, idx, idx);
	xa_store(&region->sparse, idx, sp, GFP_NOWAIT);
	region->nr_sparse++;
	atomic_long_inc(&som_pack_stats.sparse);
	atomic_long_inc(&som_pack_stats.packed);
	return 0;

err_undo:
	for (p = 0; p < SOM_PAGES_PER_BLOCK; p++)
		if (sp->slot[p])
			som_pack_put(region, sp->slot[p] - 1);
	xa_release(&region->sparse, idx);
err_free:
	kfree(sp);
	return err;
}

/*
 * Give sparse index @idx of a locked region a block again if more than
 * SOM_PACK_DENSE of its pages are in use: the pages' slots are copied
 * into it and freed. Returns 0 whether it did or not, or an error of
 * som_region_fill() that left the index as it was.
 */
static int som_pack_densify(struct som_mover *mv, pgoff_t idx,
			    struct som_sparse *sp)
{
	struct som_region *region = mv->region;
	unsigned long bfn, from, entry;
	unsigned int p, nr = 0;
	void *vaddr;
	u32 slot;
	int err;

	for (p = 0; p < SOM_PAGES_PER_BLOCK; p++)
		nr += !!sp->slot[p];
	if (nr <= SOM_PACK_DENSE)
		return 0;
	entry = som_table_get(&region->table, idx);
	err = som_region_fill(region, idx, &bfn);
	if (err) {
		/* The reservation the fill made for the hole goes too. */
		if (entry == SOM_TABLE_ABSENT)
			som_region_release_table(region, idx, idx);
		return err;
	}
	som_pack_unmap(mv, idx);
	vaddr = som_pool_block_vaddr(region->pool, bfn);
	for (p = 0; p < SOM_PAGES_PER_BLOCK; p++) {
		if (!sp->slot[p])
			continue;
		slot = sp->slot[p] - 1;
		from = som_pack_slot_block(region, slot);
		if (som_region_poisoned(region, som_pack_slot_pgoff(slot), 1)) {
			som_region_poison_page(region, (idx << SOM_PAGES_PER_BLOCK_SHIFT) + p);
			continue;
		}
		if (!copy_mc_to_kernel(vaddr + (p << PAGE_SHIFT),
				       som_pack_slot_vaddr(region, from, slot),
				       PAGE_SIZE))
			continue;
		/* A new error: a hole of the slot and of the page. */
		som_pack_slot_lost(region, from, slot);
		som_region_poison_page(region, (idx << SOM_PAGES_PER_BLOCK_SHIFT) + p);
	}
	som_pack_free_map(region, sp, idx, 0, SOM_PAGES_PER_BLOCK - 1);
	atomic_long_inc(&som_pack_stats.densified);
	return 0;
}

/**
 * som_pack_copy() - copy a page for compaction
 * @to: the page's new slot
 * @from: its slot in the block being emptied
 *
 * Not static, so that error injection finds it by name whatever the
 * compiler makes of a static one.
 *
 * Return: 0, or -EIO if a memory error was met (the caller records it).
 */
noinline int som_pack_copy(void *to, const void *from)
{
	return copy_mc_to_kernel(to, from, PAGE_SIZE) ? -EIO : 0;
}
ALLOW_ERROR_INJECTION(som_pack_copy, ERRNO);

/*
 * The pack block of a locked region that compaction would empty: the one
 * with the fewest slots in use, if that is at most half of them and the
 * other blocks have free slots for them all and an eighth of a block
 * more. A block with a hole a memory
 * error left (which must stay SIGBUS) or an error the pool recorded is
 * neither emptied nor filled; one with a dead slot is not emptied, and
 * its free slots are not counted (take may still use, or revive, them).
 * Returns its number and sets *@used, or returns -1.
 */
static long som_pack_victim(struct som_region *region, unsigned int *used)
{
	unsigned int p, nr, least = SOM_PAGES_PER_BLOCK / 2 + 1;
	unsigned long k, free = 0, victim_free = 0;
	struct som_pack *pack;
	long victim = -1;
	bool dead;

	xa_for_each(&region->packs, k, pack) {
		if (som_pack_block_bad(region, k))
			continue;
		for (p = 0, nr = 0, dead = false; p < SOM_PAGES_PER_BLOCK; p++) {
			nr += !!pack->owner[p];
			dead |= pack->owner[p] == SOM_PACK_DEAD;
		}
		if (dead)
			continue;
		free += SOM_PAGES_PER_BLOCK - nr;
		if (nr >= least)
			continue;
		least = nr;
		victim = k;
		victim_free = SOM_PAGES_PER_BLOCK - nr;
	}
	/*
	 * Room for its pages and an eighth of a block more: filled to the
	 * last slot, the others would take a new pack block at the next
	 * fault, and this one would be emptied again a pass later.
	 */
	if (victim < 0 || WARN_ON_ONCE(!least) ||
	    free - victim_free < least + SOM_PAGES_PER_BLOCK / 8)
		return -1;
	*used = least;
	return victim;
}

/*
 * Empty one pack block of a locked region into the free slots of the
 * others, and give it back to the pool. Returns 1 if it did, 0 if no
 * block is worth it, or an error that left every page readable where its
 * sparse map says: -EIO if a page could not be read (it is a hole a
 * memory error left, its owner SIGBUS as for any error in a pack block),
 * -ENOSPC if the others' free slots turned out unusable (an error took
 * them), or an error of som_pack_take().
 */
static int som_pack_compact(struct som_mover *mv)
{
	struct som_region *region = mv->region;
	struct som_sparse *sp;
	struct som_pack *pack;
	unsigned int p, left;
	unsigned long bfn, pfn;
	u32 from, to;
	pgoff_t owner;
	int err = 0;
	void *dst;
	long k;

	lockdep_assert_held(&region->lock);
	if (region->nr_packs < 2)
		return 0;
	k = som_pack_victim(region, &left);
	if (k < 0)
		return 0;
	pack = xa_load(&region->packs, k);
	/* Nothing writes the block from here on: its owners fault again. */
	if (mv->live)
		som_pack_zap(mv->mm, region, SOM_PACK_FIRST + k, 1);
	bfn = som_pack_slot_block(region, (u32)k << SOM_PAGES_PER_BLOCK_SHIFT);
	for (p = 0; left && p < SOM_PAGES_PER_BLOCK; p++) {
		if (!pack->owner[p])
			continue;
		from = ((u32)k << SOM_PAGES_PER_BLOCK_SHIFT) | p;
		owner = pack->owner[p] - 1;
		sp = xa_load(&region->sparse,
			     owner >> SOM_PAGES_PER_BLOCK_SHIFT);
		if (WARN_ON_ONCE(!sp || sp->slot[owner &
					(SOM_PAGES_PER_BLOCK - 1)] != from + 1)) {
			err = -EFAULT;
			break;
		}
		/*
		 * An error the pool recorded since the block was chosen, or
		 * one the copy meets: the page stays on its slot, a hole now,
		 * as a move (som_mover_copy()) and densify leave one.
		 */
		pfn = som_bfn_to_pfn(bfn) + p;
		if (som_pool_page_poisoned(region->pool, pfn)) {
			som_region_poison_page(region,
					       som_pack_slot_pgoff(from));
			err = -EIO;
			break;
		}
		/* Not into the block being emptied: a put marks it again. */
		xa_clear_mark(&region->packs, k, SOM_PACK_ROOM);
		err = som_pack_take(region, owner, &to, false);
		if (err)
			break;
		dst = som_pack_slot_vaddr(region, som_pack_slot_block(region, to),
					  to);
		if (som_pack_copy(dst, som_pack_slot_vaddr(region, bfn, from))) {
			som_pack_put(region, to);
			som_pack_slot_lost(region, bfn, from);
			err = -EIO;
			break;
		}
		sp->slot[owner & (SOM_PAGES_PER_BLOCK - 1)] = to + 1;
		/* The last one frees @pack and gives the block back. */
		left--;
		som_pack_put(region, from);
	}
	if (!err) {
		atomic_long_inc(&som_pack_stats.compacted);
		return 1;
	}
	/* What is left of the block keeps its free slots in use. */
	xa_set_mark(&region->packs, k, SOM_PACK_ROOM);
	return err;
}

/* Look at candidate @idx of a locked region: pack or densify it. */
static int som_pack_index(struct som_mover *mv, pgoff_t idx, void *buf)
{
	struct som_region *region = mv->region;
	unsigned long entry = som_table_get(&region->table, idx);
	struct som_sparse *sp;

	sp = region->nr_sparse ? xa_load(&region->sparse, idx) : NULL;
	if (sp)
		return som_pack_densify(mv, idx, sp);
	return som_table_is_block(entry) ? som_pack_block(mv, idx, entry, buf) : 0;
}

/*
 * Take what a pass holds over a region, as a move does: the migration
 * mutex, then the region with its owner's mmap_lock (som_mover_lock()).
 * Returns 0, or an error of som_mover_lock() (-ENOENT: the region died).
 */
static int som_pack_lock(struct som_mover *mv, struct som_region *region)
{
	int err, tries;

	err = mutex_lock_killable(&som_migrate_mutex);
	if (err)
		return err;
	/* -EAGAIN: the owner is half way through munmap() or exit. */
	for (tries = 0;; tries++) {
		err = som_mover_lock(mv, region);
		if (err != -EAGAIN || tries == 50)
			break;
		msleep(20);
	}
	if (err)
		mutex_unlock(&som_migrate_mutex);
	return err;
}

static void som_pack_unlock(struct som_mover *mv)
{
	som_mover_unlock(mv);
	mutex_unlock(&som_migrate_mutex);
}

/*
 * Look at the candidates of one region, a batch per hold of its locks,
 * and at most SOM_PACK_PASS of them: faults mark new ones all the time.
 * What is left is for the next pass, which is queued. Then empty up to
 * SOM_PACK_COMPACT part used pack blocks into the others. @buf: a page.
 */
static int som_pack_region(struct som_region *region, void *buf)
{
	unsigned long idx, n, looked = 0;
	struct som_mover mv;
	bool more = false;
	int err, ret;
	void *v;

	do {
		err = som_pack_lock(&mv, region);
		if (err) {
			/* What is left waits for the next pass. */
			more = err != -ENOENT &&
			       !xa_empty(&region->pack_candidates);
			break;
		}
		n = 0;
		xa_for_each(&region->pack_candidates, idx, v) {
			xa_erase(&region->pack_candidates, idx);
			if (region->mapping)
				err = som_pack_index(&mv, idx, buf);
			if (err || ++n == SOM_PACK_BATCH)
				break;
		}
		looked += n;
		more = !xa_empty(&region->pack_candidates);
		som_pack_unlock(&mv);
		if (!err && fatal_signal_pending(current))
			err = -EINTR;
		cond_resched();
	} while (more && !err && looked < SOM_PACK_PASS);
	ret = err;
	/*
	 * Then pack blocks that churn left part used, one per hold, whatever
	 * a candidate met: compaction takes no memory.
	 */
	for (n = 0; ret != -EINTR && ret != -ENOENT && n < SOM_PACK_COMPACT &&
	     READ_ONCE(region->nr_packs) > 1; n++) {
		err = som_pack_lock(&mv, region);
		if (err)
			break;
		err = region->mapping ? som_pack_compact(&mv) : 0;
		som_pack_unlock(&mv);
		if (err <= 0)
			break;
		if (fatal_signal_pending(current))
			ret = -EINTR;
		cond_resched();
	}
	if (more && READ_ONCE(som_pack_threshold))
		queue_delayed_work(system_dfl_wq, &som_pack_work,
				   SOM_PACK_DELAY);
	return ret == -EINTR || err == -EINTR ? -EINTR : 0;
}

/**
 * som_pack_run() - one packing pass over every region
 *
 * Context: Process context, may sleep for long.
 * Return: 0, -EINTR if a fatal signal stopped it, or -ENOMEM if the
 * regions could not be listed. A region that could not be packed (memory
 * short, a pool too full for a pack block) is skipped.
 */
int som_pack_run(void)
{
	struct som_region **regions;
	unsigned long nr, i;
	int err = 0;
	void *buf;

	buf = kmalloc(PAGE_SIZE, GFP_KERNEL);
	regions = som_regions_get(&nr);
	if (!regions || !buf) {
		if (regions)
			som_regions_put(regions, nr);
		kfree(buf);
		return -ENOMEM;
	}
	for (i = 0; i < nr && err != -EINTR; i++)
		err = som_pack_region(regions[i], buf);
	som_regions_put(regions, nr);
	kfree(buf);
	return err == -EINTR ? err : 0;
}

/* The background pass: only with packing on (run compacts either way). */
static void som_pack_work_fn(struct work_struct *work)
{
	if (READ_ONCE(som_pack_threshold))
		som_pack_run();
}

/**
 * som_pack_exit() - stop the background pass for good
 *
 * Context: Module exit, once no region is left to queue it.
 */
void som_pack_exit(void)
{
	disable_delayed_work_sync(&som_pack_work);
}

/* /sys/kernel/mm/som/packing/ */

/* Writing 1 runs a pass over every region's candidates, to its end. */
static ssize_t run_store(struct kobject *kobj, struct kobj_attribute *attr,
			 const char *buf, size_t count)
{
	return som_sysfs_run(buf, count, som_pack_run);
}

static ssize_t threshold_show(struct kobject *kobj,
			      struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", READ_ONCE(som_pack_threshold));
}

/* Pages, at most SOM_PACK_THRESHOLD_MAX. */
static ssize_t threshold_store(struct kobject *kobj,
			       struct kobj_attribute *attr, const char *buf,
			       size_t count)
{
	unsigned int pages;
	int err;

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	err = kstrtouint(buf, 0, &pages);
	if (err)
		return err;
	if (pages > SOM_PACK_THRESHOLD_MAX)
		return -EINVAL;
	WRITE_ONCE(som_pack_threshold, pages);
	/* Off means off once the write returns: a running pass ends first. */
	if (!pages)
		flush_delayed_work(&som_pack_work);
	return count;
}

static SOM_COUNT_ATTR(som_pack_packed_attr, packed, &som_pack_stats.packed);
static SOM_COUNT_ATTR(som_pack_densified_attr, densified,
		      &som_pack_stats.densified);
static SOM_COUNT_ATTR(som_pack_sparse_attr, sparse_indices,
		      &som_pack_stats.sparse);
static SOM_COUNT_ATTR(som_pack_blocks_attr, pack_blocks,
		      &som_pack_stats.blocks);
static SOM_COUNT_ATTR(som_pack_pages_attr, pack_pages, &som_pack_stats.pages);
static SOM_COUNT_ATTR(som_pack_compacted_attr, compacted,
		      &som_pack_stats.compacted);

static struct kobj_attribute som_pack_run_attr = __ATTR_WO(run);
static struct kobj_attribute som_pack_threshold_attr = __ATTR_RW(threshold);

static struct attribute *som_packing_attrs[] = {
	&som_pack_run_attr.attr,
	&som_pack_threshold_attr.attr,
	&som_pack_packed_attr.attr.attr,
	&som_pack_densified_attr.attr.attr,
	&som_pack_sparse_attr.attr.attr,
	&som_pack_blocks_attr.attr.attr,
	&som_pack_pages_attr.attr.attr,
	&som_pack_compacted_attr.attr.attr,
	NULL,
};

const struct attribute_group som_packing_group = {
	.name = "packing",
	.attrs = som_packing_attrs,
};
