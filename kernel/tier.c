// SPDX-License-Identifier: GPL-2.0
/*
 * Memory tiers: a source is of the fast tier (local DRAM) or the slow one
 * (CXL, a far node), as its administrator says (sources/<name>/tier).
 * Faults take blocks from the fast chunks of a node before its slow ones;
 * a tiering pass then moves what the aging scans found (age_scan.c):
 *
 *	demotion	a block of the fast tier idle for demote_age scans
 *			or more moves to the slow tier
 *	promotion	a block of the slow tier used within promote_age
 *			scans moves back to the fast tier
 *
 * demote_age is always above promote_age, and a pass remembers the
 * blocks it demoted and never promotes them: no block goes both ways in
 * one pass, even one its owner touches right after it moved. A block its
 * owner touched between the scan and the pass is not demoted (its entry
 * says so). Demotion runs first, over
 * every region, so that the room it makes on the fast tier is there for
 * promotion. Each direction moves at most max_bytes a pass (a GiB that
 * moves whole takes what is left): with a pass after each of the aging
 * worker's scans, that bounds the copy rate to max_bytes per
 * aging/interval_ms, plus what passes run by hand move.
 *
 * Blocks move through the migration path (migrate.c): the owner keeps
 * running, and a GiB that one chunk backs whole moves whole to a wholly
 * free chunk of the other tier when there is one, so that it keeps its
 * 1 GiB entry; only where none is free does it move block by block.
 * Compaction leaves a GiB whose blocks are of both tiers alone, and the
 * other moves (evacuation, policy, memory errors) keep a block in its
 * tier where they can: nothing undoes a pass. A region's policy wins:
 * blocks move only to nodes its claim allows (a bound region stays on its
 * nodes even if all of them are slow), promotion goes to the node the
 * policy names first (the block's own node for local placement, the
 * nearest fast one after it), and an unmovable region never moves.
 *
 * On by default: nothing moves unless an administrator has both declared
 * a slow source and started the aging worker, and each of those is off
 * by default. A slow source without tiering would only be the memory a
 * node hands out last. tiering/enabled turns the passes after scans off;
 * tiering/run runs one at any time.
 */
#include <linux/atomic.h>
#include <linux/ktime.h>
#include <linux/mutex.h>
#include <linux/sched/signal.h>
#include <linux/sysfs.h>
#include <linux/xarray.h>

#include "age.h"
#include "migrate.h"
#include "pack.h"
#include "region.h"
#include "som.h"
#include "som_trace.h"

#define SOM_TIER_BATCH	32	/* blocks moved per hold of a region's locks */
#define SOM_TIER_LOOK	512	/* indices looked at per hold */

static bool som_tier_enabled = true;
/* demote_age > promote_age always (som_tier_age_store()). */
static unsigned int som_tier_demote_age = 4;
static unsigned int som_tier_promote_age;
static u64 som_tier_max_bytes = 1ULL << 30;
/* Serialises writers of the two ages. */
static DEFINE_MUTEX(som_tier_knob_mutex);

/*
 * One pass: its knobs, what it may still move, in blocks, and the blocks
 * it demoted (by block number; about max of them, a GiB moved whole may
 * add 511; freed at its end). If one of those could not be noted, the
 * pass promotes nothing. A noted block its owner gives back may reach
 * another owner in the same pass: that one waits for the next pass.
 */
struct som_tier_budget {
	unsigned int demote_age;
	unsigned int promote_age;
	unsigned long left[SOM_TIER_NR];	/* indexed by destination */
	unsigned long moved[SOM_TIER_NR];
	unsigned long short_of_room;
	unsigned long max;
	struct xarray demoted;
	bool forgot;
};

/*
 * Where a pass is in one region, for one direction: the next index, the
 * GiB whose entries it noted last in this hold of the region's locks,
 * and whether the region found no room.
 */
struct som_tier_cursor {
	unsigned long idx;
	pgoff_t noted;
	bool full;
};

/* Is the block at @idx, of tier @tier, to move to the other tier? */
static bool som_tier_wants(struct som_region *region, pgoff_t idx, int tier,
			   const struct som_tier_budget *tp)
{
	unsigned int age = som_ages_get(&region->ages, &region->table, idx);

	if (age == SOM_AGE_ABSENT)
		return false;
	if (tier == SOM_TIER_FAST)
		return age >= tp->demote_age;
	return age <= tp->promote_age;
}

/* Does every index of the GiB at @first, of tier @tier, want to move? */
static bool som_tier_wants_gib(struct som_region *region, pgoff_t first,
			       int tier, const struct som_tier_budget *tp)
{
	unsigned int i;

	for (i = 0; i < SOM_BLOCKS_PER_CHUNK; i++)
		if (!som_tier_wants(region, first + i, tier, tp))
			return false;
	return true;
}

/* The node to look for room on first, for the block @bfn at @idx. */
static int som_tier_node(struct som_region *region, pgoff_t idx,
			 unsigned long bfn, int to)
{
	struct som_claim *claim = &region->claim;
	bool unmovable;

	if (to == SOM_TIER_FAST && (claim->mode == SOM_CLAIM_PREFERRED ||
				    claim->mode == SOM_CLAIM_INTERLEAVE))
		return som_claim_target(claim, idx);
	return som_pool_block_node(region->pool, bfn, &unmovable);
}

/* A block that wanted to move and found no room. */
static void som_tier_short(struct som_tier_budget *tp)
{
	if (tp->short_of_room < tp->max)
		tp->short_of_room++;
}

/* Take @n blocks off the pass's budget for tier @to. */
static void som_tier_spend(struct som_tier_budget *tp, int to, unsigned long n)
{
	tp->left[to] -= min(n, tp->left[to]);
}

/* Block @bfn arrived on tier @to in this pass: if demoted, remember it. */
static void som_tier_arrived(struct som_tier_budget *tp, int to,
			     unsigned long bfn)
{
	if (to == SOM_TIER_SLOW &&
	    xa_is_err(xa_store(&tp->demoted, bfn, xa_mk_value(0),
			       GFP_KERNEL | __GFP_NOWARN)))
		tp->forgot = true;
}

/*
 * Did this pass demote (or may it have demoted) any of the @nr blocks
 * from @bfn on?
 */
static bool som_tier_was_demoted(struct som_tier_budget *tp,
				 unsigned long bfn, unsigned long nr)
{
	unsigned long at = bfn;

	return tp->forgot || xa_find(&tp->demoted, &at, bfn + nr - 1,
				     XA_PRESENT);
}

/*
 * Move the blocks of a locked region that want tier @to there, from the
 * cursor on, until SOM_TIER_BATCH have moved or SOM_TIER_LOOK indices
 * were looked at. Before a GiB's blocks are judged for demotion, the
 * entries its owner mapped since the scan mark them used: memory touched
 * between the scan and the pass is not cold. A block that finds no room
 * stops the region's moves that way for this pass; it and the blocks
 * after it that want to move count as short of room (at most max_bytes'
 * worth a pass). Returns 1 if there may be more, else 0.
 */
static int som_tier_batch(struct som_mover *mv, struct som_assembly *as,
			  struct som_tier_cursor *cur, int to,
			  struct som_tier_budget *tp)
{
	struct som_region *region = mv->region;
	struct som_pool *pool = region->pool;
	int from = to == SOM_TIER_FAST ? SOM_TIER_SLOW : SOM_TIER_FAST;
	unsigned long bfn, dst, moved = 0, looked = 0;
	pgoff_t first;
	unsigned int i;
	int nid;

	/* Entries mapped while the locks were dropped count too. */
	cur->noted = ULONG_MAX;
	for (;; cur->idx++) {
		bfn = som_table_next(&region->table, &cur->idx, ULONG_MAX);
		/* Pack blocks (pack.c), last in the table, stay for now. */
		if (bfn == SOM_TABLE_ABSENT || som_pack_is_pack(cur->idx) ||
		    !tp->left[to])
			return 0;
		if (moved >= SOM_TIER_BATCH || ++looked > SOM_TIER_LOOK)
			return 1;
		if (!som_table_is_block(bfn))
			continue;
		first = round_down(cur->idx, SOM_BLOCKS_PER_CHUNK);
		if (to == SOM_TIER_SLOW && mv->live && first != cur->noted) {
			som_age_note_range(mv->mm, region,
					   first << SOM_PAGES_PER_BLOCK_SHIFT,
					   (first + SOM_BLOCKS_PER_CHUNK) <<
					   SOM_PAGES_PER_BLOCK_SHIFT);
			cur->noted = first;
			/* A walk of the GiB's entries: worth many looks. */
			looked += SOM_TIER_LOOK / 8;
		}
		if (som_pool_block_tier(pool, bfn) != from ||
		    !som_tier_wants(region, cur->idx, from, tp) ||
		    (to == SOM_TIER_FAST && som_tier_was_demoted(tp, bfn, 1)))
			continue;
		if (cur->full) {
			som_tier_short(tp);
			continue;
		}
		nid = som_tier_node(region, cur->idx, bfn, to);
		/*
		 * A GiB one chunk backs moves whole, in a batch of its own,
		 * if any budget is left: splitting it would cost its 1 GiB
		 * entry. Only where no whole chunk is free does it go block
		 * by block. One this pass demoted part of (block by block,
		 * into a chunk now whole) waits for the next pass, whole.
		 */
		if (cur->idx == first &&
		    som_mover_gib_chunk(mv, first) != SOM_NO_BLOCK &&
		    som_tier_wants_gib(region, first, from, tp)) {
			if (to == SOM_TIER_FAST &&
			    som_tier_was_demoted(tp, bfn,
						 SOM_BLOCKS_PER_CHUNK)) {
				cur->idx += SOM_BLOCKS_PER_CHUNK - 1;
				continue;
			}
			if (moved)
				return 1;
			if (!som_mover_move_gib(mv, first, nid, false, to, as)) {
				for (i = 0; i < SOM_BLOCKS_PER_CHUNK; i++)
					som_tier_arrived(tp, to,
							 som_table_get(&region->table,
								       first + i));
				som_tier_spend(tp, to, SOM_BLOCKS_PER_CHUNK);
				tp->moved[to] += SOM_BLOCKS_PER_CHUNK;
				cur->idx += SOM_BLOCKS_PER_CHUNK - 1;
				moved = SOM_TIER_BATCH;
				continue;
			}
		}
		dst = som_pool_alloc_spare_tier(pool, &region->claim, nid,
						false, to);
		if (dst == SOM_NO_BLOCK) {
			cur->full = true;
			som_tier_short(tp);
			continue;
		}
		som_mover_move(mv, cur->idx, dst);
		som_tier_arrived(tp, to, dst);
		som_tier_spend(tp, to, 1);
		tp->moved[to]++;
		moved++;
	}
}

/*
 * Move a region's blocks that want tier @to there, a batch per hold of
 * its locks. A region between states is left for the next pass.
 */
static int som_tier_region(struct som_region *region,
			   struct som_assembly *as, int to,
			   struct som_tier_budget *tp)
{
	struct som_tier_cursor cur = { .noted = ULONG_MAX };
	struct som_mover mv;
	int err, more;

	do {
		err = som_mover_lock(&mv, region);
		if (err)
			return err == -EINTR ? err : 0;
		more = 0;
		if (!region->claim.unmovable)
			more = som_tier_batch(&mv, as, &cur, to, tp);
		som_mover_unlock(&mv);
		if (fatal_signal_pending(current))
			return -EINTR;
		cond_resched();
	} while (more);
	return 0;
}

/**
 * som_tier_pass() - demote the cold blocks, then promote the hot ones
 *
 * Ages are those of the last aging scan: before the first one nothing
 * is known, and nothing moves. Without a slow tier in the pool there is
 * nothing to do either.
 *
 * Context: Process context, may sleep; takes som_migrate_mutex, then each
 * region as a migration does.
 * Return: 0 (blocks that found no room are counted, not an error);
 * -ENOMEM; -EINTR.
 */
int som_tier_pass(void)
{
	struct som_tier_stats stats[SOM_TIER_NR];
	struct som_tier_budget tp = { };
	struct som_region **regions;
	struct som_assembly *as;
	unsigned long nr, i, max;
	int to, err = 0;
	u64 start;

	som_pool_tier_stats(&som_pool, stats);
	if (!som_age_scans() || !stats[SOM_TIER_SLOW].total_bytes)
		return 0;
	mutex_lock(&som_tier_knob_mutex);
	tp.demote_age = som_tier_demote_age;
	tp.promote_age = som_tier_promote_age;
	mutex_unlock(&som_tier_knob_mutex);
	max = READ_ONCE(som_tier_max_bytes) >> SOM_BLOCK_SHIFT;
	tp.max = max;
	tp.left[SOM_TIER_FAST] = stats[SOM_TIER_FAST].total_bytes ? max : 0;
	tp.left[SOM_TIER_SLOW] = tp.left[SOM_TIER_FAST];
	xa_init(&tp.demoted);
	as = som_assembly_alloc();
	if (!as)
		return -ENOMEM;
	if (mutex_lock_killable(&som_migrate_mutex)) {
		som_assembly_free(as);
		return -EINTR;
	}
	start = ktime_get_ns();
	regions = som_regions_get(&nr);
	if (!regions) {
		err = -ENOMEM;
		goto out;
	}
	for (to = SOM_TIER_SLOW; to >= SOM_TIER_FAST && !err; to--)
		for (i = 0; i < nr && !err && tp.left[to] &&
		     !(to == SOM_TIER_FAST && tp.forgot); i++)
			err = som_tier_region(regions[i], as, to, &tp);
	som_regions_put(regions, nr);
	atomic_long_inc(&som_migrate_stats.tier_passes);
out:
	mutex_unlock(&som_migrate_mutex);
	som_assembly_free(as);
	xa_destroy(&tp.demoted);
	atomic_long_add(tp.moved[SOM_TIER_SLOW],
			&som_migrate_stats.blocks_demoted);
	atomic_long_add(tp.moved[SOM_TIER_FAST],
			&som_migrate_stats.blocks_promoted);
	atomic_long_add(tp.short_of_room, &som_migrate_stats.blocks_short);
	trace_som_tier_pass(tp.moved[SOM_TIER_SLOW], tp.moved[SOM_TIER_FAST],
			    tp.short_of_room, ktime_get_ns() - start, err);
	return err;
}

/**
 * som_tier_after_scan() - the pass that follows each of the aging
 *	worker's scans, if tiering is enabled
 *
 * Context: The aging worker.
 */
void som_tier_after_scan(void)
{
	if (READ_ONCE(som_tier_enabled))
		som_tier_pass();
}

/* tiering/: the knobs, a pass on demand, what passes moved, each tier. */

static ssize_t run_store(struct kobject *kobj, struct kobj_attribute *attr,
			 const char *buf, size_t count)
{
	return som_sysfs_run(buf, count, som_tier_pass);
}

static ssize_t enabled_show(struct kobject *kobj, struct kobj_attribute *attr,
			    char *buf)
{
	return sysfs_emit(buf, "%d\n", READ_ONCE(som_tier_enabled));
}

static ssize_t enabled_store(struct kobject *kobj, struct kobj_attribute *attr,
			     const char *buf, size_t count)
{
	bool on;
	int err;

	err = som_sysfs_admin_bool(buf, &on);
	if (err)
		return err;
	WRITE_ONCE(som_tier_enabled, on);
	return count;
}

/*
 * An age knob: 0 .. SOM_AGE_NR - 1 scans (ERANGE), and demote_age above
 * promote_age (EINVAL): else a block would be demoted and promoted back
 * in the same pass.
 */
static ssize_t som_tier_age_store(unsigned int *knob, const char *buf,
				  size_t count)
{
	unsigned int age;
	int err;

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	err = kstrtouint(buf, 0, &age);
	if (err)
		return err;
	if (age >= SOM_AGE_NR)
		return -ERANGE;
	mutex_lock(&som_tier_knob_mutex);
	if (knob == &som_tier_demote_age ? age <= som_tier_promote_age :
	    age >= som_tier_demote_age)
		err = -EINVAL;
	else
		WRITE_ONCE(*knob, age);
	mutex_unlock(&som_tier_knob_mutex);
	return err ? err : count;
}

/* The two age knobs: show and store each through these. */
static ssize_t som_tier_age_show(const unsigned int *knob, char *buf)
{
	return sysfs_emit(buf, "%u\n", READ_ONCE(*knob));
}

static ssize_t demote_age_show(struct kobject *kobj,
			       struct kobj_attribute *attr, char *buf)
{
	return som_tier_age_show(&som_tier_demote_age, buf);
}

static ssize_t demote_age_store(struct kobject *kobj,
				struct kobj_attribute *attr, const char *buf,
				size_t count)
{
	return som_tier_age_store(&som_tier_demote_age, buf, count);
}

static ssize_t promote_age_show(struct kobject *kobj,
				struct kobj_attribute *attr, char *buf)
{
	return som_tier_age_show(&som_tier_promote_age, buf);
}

static ssize_t promote_age_store(struct kobject *kobj,
				 struct kobj_attribute *attr, const char *buf,
				 size_t count)
{
	return som_tier_age_store(&som_tier_promote_age, buf, count);
}

static ssize_t max_bytes_show(struct kobject *kobj,
			      struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%llu\n", READ_ONCE(som_tier_max_bytes));
}

/*
 * Rounded down to whole 2 MiB blocks; 0 stops every move. A GiB that
 * moves whole needs only some budget left, and takes what is left.
 */
static ssize_t max_bytes_store(struct kobject *kobj,
			       struct kobj_attribute *attr, const char *buf,
			       size_t count)
{
	u64 bytes;
	int err;

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	err = kstrtou64(buf, 0, &bytes);
	if (err)
		return err;
	WRITE_ONCE(som_tier_max_bytes, round_down(bytes, SOM_BLOCK_SIZE));
	return count;
}

static ssize_t som_tier_blocks_show(char *buf, atomic_long_t *blocks)
{
	return sysfs_emit(buf, "%llu\n",
			  (u64)atomic_long_read(blocks) * SOM_BLOCK_SIZE);
}

static ssize_t demoted_bytes_show(struct kobject *kobj,
				  struct kobj_attribute *attr, char *buf)
{
	return som_tier_blocks_show(buf, &som_migrate_stats.blocks_demoted);
}

static ssize_t promoted_bytes_show(struct kobject *kobj,
				   struct kobj_attribute *attr, char *buf)
{
	return som_tier_blocks_show(buf, &som_migrate_stats.blocks_promoted);
}

static ssize_t short_bytes_show(struct kobject *kobj,
				struct kobj_attribute *attr, char *buf)
{
	return som_tier_blocks_show(buf, &som_migrate_stats.blocks_short);
}

static ssize_t passes_show(struct kobject *kobj, struct kobj_attribute *attr,
			   char *buf)
{
	return sysfs_emit(buf, "%ld\n",
			  atomic_long_read(&som_migrate_stats.tier_passes));
}

/* Bytes of a tier's chunks (@free: of them, not allocated). */
static ssize_t som_tier_show(char *buf, int tier, bool free)
{
	struct som_tier_stats stats[SOM_TIER_NR];

	som_pool_tier_stats(&som_pool, stats);
	return sysfs_emit(buf, "%llu\n", free ? stats[tier].free_bytes :
			  stats[tier].total_bytes);
}

static ssize_t fast_bytes_show(struct kobject *kobj,
			       struct kobj_attribute *attr, char *buf)
{
	return som_tier_show(buf, SOM_TIER_FAST, false);
}

static ssize_t fast_free_bytes_show(struct kobject *kobj,
				    struct kobj_attribute *attr, char *buf)
{
	return som_tier_show(buf, SOM_TIER_FAST, true);
}

static ssize_t slow_bytes_show(struct kobject *kobj,
			       struct kobj_attribute *attr, char *buf)
{
	return som_tier_show(buf, SOM_TIER_SLOW, false);
}

static ssize_t slow_free_bytes_show(struct kobject *kobj,
				    struct kobj_attribute *attr, char *buf)
{
	return som_tier_show(buf, SOM_TIER_SLOW, true);
}

static struct kobj_attribute som_tier_run_attr = __ATTR_WO(run);
static struct kobj_attribute som_tier_enabled_attr = __ATTR_RW(enabled);
static struct kobj_attribute som_tier_demote_attr = __ATTR_RW(demote_age);
static struct kobj_attribute som_tier_promote_attr = __ATTR_RW(promote_age);
static struct kobj_attribute som_tier_max_attr = __ATTR_RW(max_bytes);
static struct kobj_attribute som_tier_demoted_attr = __ATTR_RO(demoted_bytes);
static struct kobj_attribute som_tier_promoted_attr = __ATTR_RO(promoted_bytes);
static struct kobj_attribute som_tier_short_attr = __ATTR_RO(short_bytes);
static struct kobj_attribute som_tier_passes_attr = __ATTR_RO(passes);
static struct kobj_attribute som_tier_fast_attr = __ATTR_RO(fast_bytes);
static struct kobj_attribute som_tier_fast_free_attr =
	__ATTR_RO(fast_free_bytes);
static struct kobj_attribute som_tier_slow_attr = __ATTR_RO(slow_bytes);
static struct kobj_attribute som_tier_slow_free_attr =
	__ATTR_RO(slow_free_bytes);

static struct attribute *som_tiering_attrs[] = {
	&som_tier_run_attr.attr,
	&som_tier_enabled_attr.attr,
	&som_tier_demote_attr.attr,
	&som_tier_promote_attr.attr,
	&som_tier_max_attr.attr,
	&som_tier_demoted_attr.attr,
	&som_tier_promoted_attr.attr,
	&som_tier_short_attr.attr,
	&som_tier_passes_attr.attr,
	&som_tier_fast_attr.attr,
	&som_tier_fast_free_attr.attr,
	&som_tier_slow_attr.attr,
	&som_tier_slow_free_attr.attr,
	NULL,
};

const struct attribute_group som_tiering_group = {
	.name = "tiering",
	.attrs = som_tiering_attrs,
};
