// SPDX-License-Identifier: GPL-2.0
/*
 * Compaction: give 1 GiB entries back to memory that faults had to map
 * with 2 MiB or 4 KiB entries because no chunk was wholly free when they
 * came (the pool was fragmented).
 *
 * A candidate is a 1 GiB aligned GiB of a region with a movable claim
 * that some VMA maps at a 1 GiB aligned address, whose 512 indices all
 * have a slot, and whose blocks are not already the 512 blocks of one
 * chunk in order. For each one, the indices only reserved are filled
 * (the memory was promised to the mapping anyway), the chunk that costs
 * fewest copies is chosen (the one holding most of the GiB, or a wholly
 * free one), other regions' blocks are moved out of it, and the GiB is
 * assembled there (migrate.c). The next fault on the GiB maps it with one
 * 1 GiB entry.
 *
 * Two triggers: an administrator's write to
 * /sys/kernel/mm/som/migration/compact runs a pass at once, and a 1 GiB
 * fault that falls back kicks a background pass a little later, which
 * moves at most compact_rate blocks per second (0 turns it off).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/jiffies.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/wait.h>
#include <linux/workqueue.h>

#include "migrate.h"
#include "pack.h"
#include "region.h"
#include "swap.h"
#include "som.h"

/* Blocks per second the background pass may move; 0: no background pass. */
unsigned int som_compact_rate = 256;

/* How long after a fault falls back the background pass starts. */
#define SOM_COMPACT_DELAY	(2 * HZ)

static void som_compact_work_fn(struct work_struct *work);
static DECLARE_DELAYED_WORK(som_compact_work, som_compact_work_fn);
static bool som_compact_stopping;
/* Where the background pass waits out its rate; woken when that changes. */
static DECLARE_WAIT_QUEUE_HEAD(som_compact_wait);

/* Passes running now: what migration/compact_running shows. */
atomic_t som_compact_running;

/* How many blocks of a GiB one chunk holds. */
struct som_chunk_count {
	unsigned long cfn;
	unsigned int nr;
};

/*
 * Do the blocks of the GiB at @first of a locked region lie in chunks of
 * both tiers? Tiering (tier.c) moved some of them for their ages: putting
 * them back into one chunk would undo that, and the next pass would move
 * them again.
 */
static bool som_compact_mixed_tiers(struct som_region *region, pgoff_t first)
{
	pgoff_t idx = first, last = first + SOM_BLOCKS_PER_CHUNK - 1;
	unsigned long bfn;
	int tier = -1, t;

	for (;; idx++) {
		bfn = som_table_next(&region->table, &idx, last);
		if (bfn == SOM_TABLE_ABSENT)
			return false;
		if (!som_table_is_block(bfn))
			continue;
		t = som_pool_block_tier(region->pool, bfn);
		if (tier >= 0 && t != tier)
			return true;
		tier = t;
	}
}

/*
 * Is the GiB at @first of a locked region a candidate? Its region may
 * move and wants the whole GiB on one node. Its 512 indices all have a
 * slot (a som file's holes stay holes), some hold a block, and they are
 * not one chunk in order yet, nor in chunks of both tiers. And a fault
 * must be able to map it with one entry afterwards: some VMA maps it
 * whole at a 1 GiB aligned address, or, for a som file, nothing maps it
 * now. /dev/som memory must also have no page table under it yet
 * (som_pud_table()): it lives only as long as its mapping, which would
 * keep 2 MiB entries; a som file's mapping gets the 1 GiB entry when it
 * is mapped again.
 */
static bool som_compact_candidate(struct som_mover *mv, pgoff_t first)
{
	pgoff_t last = first + SOM_BLOCKS_PER_CHUNK - 1;
	struct som_region *region = mv->region;
	bool table = false;

	/*
	 * Unmovable; or blocks of one GiB wanted on different nodes; or
	 * pack blocks (pack.c), which no entry maps at their offsets.
	 */
	if (region->claim.unmovable || som_pack_is_pack(first) ||
	    (region->claim.mode == SOM_CLAIM_INTERLEAVE &&
	     region->claim.interleave_shift < SOM_CHUNK_SHIFT - SOM_BLOCK_SHIFT))
		return false;
	if (som_table_count(&region->table, first, last, SOM_TABLE_KIND_ABSENT) ||
	    !som_table_count(&region->table, first, last, SOM_TABLE_KIND_BLOCK) ||
	    som_mover_gib_chunk(mv, first) != SOM_NO_BLOCK)
		return false;
	/*
	 * A GiB with a hole a memory error left gets no 1 GiB entry; one
	 * with blocks paged out is not read back for one: its owner may
	 * never touch them again.
	 */
	if (som_region_poisoned(region, first << SOM_PAGES_PER_BLOCK_SHIFT,
				SOM_PAGES_PER_CHUNK) ||
	    som_region_swapped(region, first, last) ||
	    som_pack_sparse(region, first, last) ||
	    som_compact_mixed_tiers(region, first))
		return false;
	/*
	 * Nor are the holes of an overcommitted region filled: they would
	 * take the free blocks that faults waiting for room need.
	 */
	if (som_table_count(&region->table, first, last,
			    SOM_TABLE_KIND_RESERVED) &&
	    !som_pool_claim_backed(region->pool, &region->claim))
		return false;
	if (!mv->live || !region->nr_vmas)
		return region->mapping;
	if (!som_vm_maps_gib(mv->mm, region, first << SOM_PAGES_PER_BLOCK_SHIFT,
			     &table))
		return false;
	return region->mapping || !table;
}

/* The first candidate GiB of a locked region at or after @from (aligned). */
static pgoff_t som_compact_next(struct som_mover *mv, pgoff_t from)
{
	unsigned long idx = from;
	pgoff_t first;

	while (som_table_next(&mv->region->table, &idx, ULONG_MAX) !=
	       SOM_TABLE_ABSENT) {
		first = ALIGN_DOWN(idx, SOM_BLOCKS_PER_CHUNK);
		if (som_compact_candidate(mv, first))
			return first;
		idx = first + SOM_BLOCKS_PER_CHUNK;
		if (idx < first)
			break;
	}
	return ULONG_MAX;
}

/*
 * The chunk to assemble the GiB at @first of a locked region in, every
 * index of which holds a block: the one that costs fewest copies, counting
 * the other regions' blocks to move out of it, on the node the policy
 * wants the GiB on if it names one (preferred, interleaved by the GiB)
 * and a chunk there will do, and in the tier of the GiB's blocks (a
 * candidate's are all of one), so that compaction undoes no tiering
 * (tier.c). SOM_NO_BLOCK if none will do; *@foreign is set to the number
 * of blocks to move out.
 */
static unsigned long som_compact_target(struct som_mover *mv, pgoff_t first,
					struct som_chunk_count *counts,
					unsigned int *foreign)
{
	struct som_region *region = mv->region;
	unsigned int i, j, nr = 0, cost, best_cost = UINT_MAX;
	unsigned long cfn, best = SOM_NO_BLOCK;
	struct som_chunk_info info;
	int want = NUMA_NO_NODE, home = NUMA_NO_NODE, tier;
	bool unmovable, slow;

	if (region->claim.mode == SOM_CLAIM_PREFERRED ||
	    region->claim.mode == SOM_CLAIM_INTERLEAVE)
		want = som_claim_target(&region->claim, first);
	tier = som_pool_block_tier(region->pool,
				   som_table_get(&region->table, first));
	slow = tier == SOM_TIER_SLOW;

	for (i = 0; i < SOM_BLOCKS_PER_CHUNK; i++) {
		cfn = som_bfn_to_cfn(som_table_get(&region->table, first + i));
		for (j = 0; j < nr && counts[j].cfn != cfn; j++)
			;
		if (j == nr)
			counts[nr++] = (struct som_chunk_count){ cfn, 0 };
		counts[j].nr++;
	}
	for (j = 0; j < nr; j++) {
		if (som_pool_chunk_info(region->pool, counts[j].cfn, &info) ||
		    info.unmovable || info.isolated || info.assembling ||
		    info.poisoned || !som_claim_allows(&region->claim, info.nid) ||
		    info.slow != slow)
			continue;
		cost = 2 * SOM_BLOCKS_PER_CHUNK - 2 * counts[j].nr -
		       info.nr_free;
		/* Off the wanted node: only if nothing on it will do. */
		if (want != NUMA_NO_NODE && info.nid != want)
			cost += 2 * SOM_BLOCKS_PER_CHUNK;
		if (cost < best_cost) {
			best_cost = cost;
			best = counts[j].cfn;
			*foreign = SOM_BLOCKS_PER_CHUNK - counts[j].nr -
				   info.nr_free;
			home = info.nid;
		}
	}
	/* A wholly free chunk costs a copy of each block. */
	if (best_cost > SOM_BLOCKS_PER_CHUNK) {
		if (want != NUMA_NO_NODE)
			home = want;
		else if (home == NUMA_NO_NODE)
			home = som_pool_block_node(region->pool,
						   som_table_get(&region->table,
								 first),
						   &unmovable);
		cfn = som_pool_whole_chunk_tier(region->pool, &region->claim,
						home, tier < 0 ? SOM_TIER_ANY :
						tier);
		if (cfn != SOM_NO_BLOCK) {
			best = cfn;
			*foreign = 0;
		}
	}
	return best;
}

static bool som_match_chunk(unsigned long bfn, void *arg)
{
	return som_bfn_to_cfn(bfn) == *(unsigned long *)arg;
}

/*
 * Put the GiB at @first of @region back into one chunk. Returns 0 if it
 * was done or there was nothing to do.
 */
static int som_compact_gib(struct som_region *region, pgoff_t first,
			   struct som_assembly *as,
			   struct som_chunk_count *counts)
{
	pgoff_t last = first + SOM_BLOCKS_PER_CHUNK - 1, idx;
	unsigned int foreign = 0;
	struct som_mover mv;
	unsigned long cfn = SOM_NO_BLOCK, bfn;
	int err;

	if (mutex_lock_killable(&som_migrate_mutex))
		return -EINTR;
	err = som_mover_lock(&mv, region);
	if (err)
		goto out_unlock;
	if (!som_compact_candidate(&mv, first)) {
		som_mover_unlock(&mv);
		goto out_unlock;
	}
	for (idx = first; idx <= last && !err; idx++)
		err = som_region_fill(region, idx, &bfn);
	/* The blocks filled in may be of the other tier: then, no GiB. */
	if (!err && som_compact_mixed_tiers(region, first)) {
		som_mover_unlock(&mv);
		goto out_unlock;
	}
	if (!err) {
		cfn = som_compact_target(&mv, first, counts, &foreign);
		err = cfn == SOM_NO_BLOCK ? -ENOSPC :
		      som_pool_assemble_begin(region->pool, cfn);
	}
	som_mover_unlock(&mv);
	if (err)
		goto out_unlock;

	if (foreign)
		err = som_migrate_out(som_match_chunk, &cfn, region, first,
				      last);
	if (!err) {
		err = som_mover_lock(&mv, region);
		if (!err) {
			err = som_mover_assemble(&mv, first, cfn, as);
			som_mover_unlock(&mv);
		}
	}
	som_pool_assemble_end(region->pool, cfn);
	if (!err)
		atomic_long_inc(&som_migrate_stats.gib_assembled);
out_unlock:
	mutex_unlock(&som_migrate_mutex);
	return err == -ENOENT ? 0 : err;
}

/* Keep a background pass at som_compact_rate blocks per second. */
static void som_compact_throttle(unsigned long moved, unsigned long start)
{
	unsigned int rate = READ_ONCE(som_compact_rate);
	unsigned long want;

	if (!rate)
		return;
	want = start + msecs_to_jiffies(moved * MSEC_PER_SEC / rate);
	if (time_before(jiffies, want))
		wait_event_timeout(som_compact_wait,
				   READ_ONCE(som_compact_stopping) ||
				   READ_ONCE(som_compact_rate) != rate,
				   want - jiffies);
}

/* Should a pass stop before its next GiB? */
static bool som_compact_stop(bool background)
{
	if (background)
		return READ_ONCE(som_compact_stopping) ||
		       !READ_ONCE(som_compact_rate);
	return fatal_signal_pending(current);
}

/* Compact every candidate GiB of one region. */
static int som_compact_region(struct som_region *region, bool background,
			      struct som_assembly *as,
			      struct som_chunk_count *counts)
{
	unsigned long moved, start;
	struct som_mover mv;
	pgoff_t first = 0;
	int err;

	for (;;) {
		if (som_compact_stop(background) ||
		    mutex_lock_killable(&som_migrate_mutex))
			return -EINTR;
		err = som_mover_lock(&mv, region);
		if (!err) {
			first = som_compact_next(&mv, first);
			som_mover_unlock(&mv);
		}
		mutex_unlock(&som_migrate_mutex);
		if (err == -EINTR)
			return err;
		if (err || first == ULONG_MAX)
			return 0;

		start = jiffies;
		moved = atomic_long_read(&som_migrate_stats.blocks_moved);
		err = som_compact_gib(region, first, as, counts);
		if (err == -EINTR)
			return err;
		if (err)
			atomic_long_inc(&som_migrate_stats.compact_failed);
		if (background)
			som_compact_throttle(atomic_long_read(&som_migrate_stats.blocks_moved) -
					     moved, start);
		first += SOM_BLOCKS_PER_CHUNK;
		if (!first)
			return 0;
	}
}

/**
 * som_compact() - one compaction pass over every region
 * @background: run as the background worker: at most som_compact_rate
 *	blocks per second, stop when it is set to 0
 *
 * Context: Process context, may sleep. Caller holds no som lock.
 * Return: 0 (GiBs that could not be assembled are counted in
 * compact_failed); -EINTR if a fatal signal (or, in the background, a
 * rate of 0) stopped it; -ENOMEM.
 */
int som_compact(bool background)
{
	struct som_chunk_count *counts;
	struct som_region **regions;
	struct som_assembly *as;
	unsigned long nr, i;
	int err = -ENOMEM;

	as = som_assembly_alloc();
	counts = kmalloc_array(SOM_BLOCKS_PER_CHUNK, sizeof(*counts),
			       GFP_KERNEL);
	regions = som_regions_get(&nr);
	if (!as || !counts || !regions)
		goto out_free;
	atomic_inc(&som_compact_running);
	atomic_long_inc(&som_migrate_stats.compact_runs);
	err = 0;
	for (i = 0; i < nr && !err; i++)
		err = som_compact_region(regions[i], background, as, counts);
	atomic_dec(&som_compact_running);
out_free:
	if (regions)
		som_regions_put(regions, nr);
	kfree(counts);
	som_assembly_free(as);
	return err;
}

static void som_compact_work_fn(struct work_struct *work)
{
	som_compact(true);
}

/**
 * som_compact_kick() - a 1 GiB fault fell back: compact in a while
 *
 * Context: Any; cheap when a pass is already due.
 */
void som_compact_kick(void)
{
	if (READ_ONCE(som_compact_rate) && !READ_ONCE(som_compact_stopping))
		queue_delayed_work(system_dfl_wq, &som_compact_work,
				   SOM_COMPACT_DELAY);
}

/**
 * som_compact_set_rate() - set the background pass's rate
 * @rate: blocks per second; 0 stops the pass and keeps it off
 *
 * A pass waiting out the old rate wakes up, and one is due when the rate
 * is turned on.
 */
void som_compact_set_rate(unsigned int rate)
{
	WRITE_ONCE(som_compact_rate, rate);
	wake_up_all(&som_compact_wait);
	som_compact_kick();
}

/**
 * som_compact_init() - have a 1 GiB fault that fell back kick compaction
 *
 * Context: Module init, before /dev/som exists.
 */
void som_compact_init(void)
{
	som_region_on_chunk_wanted(som_compact_kick);
}

/**
 * som_compact_exit() - stop the background pass for good
 *
 * Once it returns no background pass runs or is due, and none can be
 * queued again: a kick racing with it (a compact_rate write still under
 * way) finds the work disabled.
 *
 * Context: Module exit or init failing, before the sources go.
 */
void som_compact_exit(void)
{
	WRITE_ONCE(som_compact_stopping, true);
	wake_up_all(&som_compact_wait);
	disable_delayed_work_sync(&som_compact_work);
}
