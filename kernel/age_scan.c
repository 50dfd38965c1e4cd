// SPDX-License-Identifier: GPL-2.0
/*
 * Aging scans: which of its memory each region's owner used since the
 * last scan. A scan reads which 2 MiB indices the owner's page-table
 * entries map, ages the rest (age.c), and unmaps every entry; a touch
 * faults the piece in again, so an entry there at the next scan means
 * the memory was used meanwhile. /sys/kernel/mm/som/aging/ runs scans
 * and reports the pool's ages; SOM_IOC_PROC_AGES reports a process's.
 *
 * Why unmapping and not the accessed bits of the entries: clearing an
 * accessed bit hides every later access that a TLB entry still serves,
 * and som's 1 GiB and 2 MiB entries are the ones that stay in the TLB:
 * the hottest memory would look the coldest. The clear must be followed
 * by a TLB flush of the range, and 6.12 and 7.3 export none to modules on
 * x86 (flush_tlb_mm_range(), ptep_clear_flush_young() and the young
 * helpers are all internal; Documentation/kernel-facts.md). The unmap is
 * zap_vma_ptes(), which flushes. Its cost is a fault per entry the owner
 * uses in each interval: one per GiB of 1 GiB entries, 512 per GiB of
 * 2 MiB entries (vm/run bench measures both).
 *
 * Context: a scan holds each owner's mmap_lock for read and the region
 * lock while it looks at one GiB of the region; faults there wait for it.
 */
#include <linux/atomic.h>
#include <linux/bitmap.h>
#include <linux/ktime.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/pagemap.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/sysfs.h>
#include <linux/workqueue.h>

#include "age.h"
#include "migrate.h"
#include "pack.h"
#include "region.h"
#include "som_trace.h"
#include "som.h"

/* One scan at a time, by the worker or a writer of aging/scan. */
static DEFINE_MUTEX(som_age_mutex);
static atomic64_t som_age_nr_scans;
static atomic64_t som_age_ns;
/* Milliseconds between the worker's scans; 0: no worker. */
static unsigned int som_age_interval_ms;
/* Serialises writers of interval_ms (never held by the worker). */
static DEFINE_MUTEX(som_age_interval_mutex);
static bool som_age_stopping;

static void som_age_work_fn(struct work_struct *work);
static DECLARE_DELAYED_WORK(som_age_work, som_age_work_fn);

/*
 * Set in @used the indices of the GiB from @first (1 GiB aligned) that an
 * entry of @vma maps now, looking at the pages [@lo, @hi) of the region
 * only. An index found used is not looked at further. Only a @killable
 * walk stops for a fatal signal (-EINTR).
 */
static int som_age_used(struct vm_area_struct *vma, pgoff_t first,
			pgoff_t lo, pgoff_t hi, unsigned long *used,
			bool killable)
{
	pgoff_t gib = first << SOM_PAGES_PER_BLOCK_SHIFT, pg;
	unsigned long addr, end, size, span, next;
	unsigned int i;

	lo = max3(lo, gib, vma->vm_pgoff);
	hi = min3(hi, gib + SOM_PAGES_PER_CHUNK,
		  vma->vm_pgoff + vma_pages(vma));
	if (lo >= hi)
		return 0;
	addr = vma->vm_start + ((lo - vma->vm_pgoff) << PAGE_SHIFT);
	end = vma->vm_start + ((hi - vma->vm_pgoff) << PAGE_SHIFT);
	while (addr < end) {
		if (killable && fatal_signal_pending(current))
			return -EINTR;
		size = som_entry_at(vma->vm_mm, addr, &span);
		next = min(ALIGN_DOWN(addr, span) + span, end);
		pg = linear_page_index(vma, addr);
		i = (pg >> SOM_PAGES_PER_BLOCK_SHIFT) - first;
		if (size > PAGE_SIZE) {
			pg = linear_page_index(vma, next - 1);
			bitmap_set(used, i,
				   (pg >> SOM_PAGES_PER_BLOCK_SHIFT) - first - i + 1);
		} else if (size) {
			__set_bit(i, used);
			/* On to the next index: this one is used. */
			next = min(addr + ((SOM_PAGES_PER_BLOCK -
					    (pg & (SOM_PAGES_PER_BLOCK - 1))) <<
					   PAGE_SHIFT), end);
		}
		addr = next;
		cond_resched();
	}
	return 0;
}

/**
 * som_age_note() - keep what entries about to be zapped say of use
 * @region: the region
 * @vma: its owner's VMA
 * @from: first page offset in the region to be zapped
 * @to: page offset past it
 *
 * A move, a split, a punch or a memory error zaps entries the next scan
 * would have counted as use: marks their indices used instead. Zapping
 * part of an entry zaps all of it, so a GiB that one 1 GiB entry maps is
 * marked used whole; elsewhere the 2 MiB indices the range touches are
 * looked at, and only they (a mover zaps one block at a time, and should
 * not walk the whole GiB for each).
 *
 * Context: Caller holds the owner's mmap_lock and the region lock.
 */
void som_age_note(struct som_region *region, struct vm_area_struct *vma,
		  pgoff_t from, pgoff_t to)
{
	DECLARE_BITMAP(used, SOM_BLOCKS_PER_CHUNK);
	unsigned long addr, span;
	pgoff_t first, last, lo, hi;

	lockdep_assert_held(&region->lock);
	from = max(from, vma->vm_pgoff);
	to = min(to, vma->vm_pgoff + vma_pages(vma));
	if (from >= to)
		return;
	first = round_down(from >> SOM_PAGES_PER_BLOCK_SHIFT,
			   SOM_BLOCKS_PER_CHUNK);
	last = (to - 1) >> SOM_PAGES_PER_BLOCK_SHIFT;
	for (; first <= last; first += SOM_BLOCKS_PER_CHUNK) {
		lo = max(from, first << SOM_PAGES_PER_BLOCK_SHIFT);
		hi = min(to, (first + SOM_BLOCKS_PER_CHUNK) <<
			     SOM_PAGES_PER_BLOCK_SHIFT);
		addr = vma->vm_start + ((lo - vma->vm_pgoff) << PAGE_SHIFT);
		bitmap_zero(used, SOM_BLOCKS_PER_CHUNK);
		if (som_entry_at(vma->vm_mm, addr, &span) == PUD_SIZE)
			bitmap_fill(used, SOM_BLOCKS_PER_CHUNK);
		else
			som_age_used(vma, first,
				     round_down(lo, SOM_PAGES_PER_BLOCK),
				     round_up(hi, SOM_PAGES_PER_BLOCK), used,
				     false);
		som_ages_mark(&region->ages, first, used);
	}
}

/**
 * som_age_note_range() - som_age_note() over every VMA of a region
 * @mm: the region's owner
 * @region: the region
 * @from: first page offset in the region to be zapped
 * @to: page offset past it
 *
 * Context: Caller holds @mm's mmap_lock and the region lock.
 */
void som_age_note_range(struct mm_struct *mm, struct som_region *region,
			pgoff_t from, pgoff_t to)
{
	VMA_ITERATOR(vmi, mm, region->vm_start);
	struct vm_area_struct *vma;

	mmap_assert_locked(mm);
	while ((vma = som_region_next_vma(region, &vmi)))
		som_age_note(region, vma, from, to);
}

/*
 * Age the first GiB of @region at or after index *@idx that holds
 * anything, and zap the owner's entries there; *@idx then points past
 * it. Both locks are taken for that GiB only, so that the region's
 * faults and its owner's mmap calls wait for one GiB at most. An owner
 * that mlockall()ed its future mappings keeps its entries: its memory
 * then always looks used.
 * Return: 0, 1 when nothing is left to scan, -EINTR.
 */
static int som_age_scan_gib(struct som_region *region, struct mm_struct *mm,
			    bool live, pgoff_t *idx)
{
	DECLARE_BITMAP(used, SOM_BLOCKS_PER_CHUNK);
	struct vm_area_struct *vma;
	pgoff_t first, pages;
	int ret = 0;

	if (live && mmap_read_lock_killable(mm))
		return -EINTR;
	mutex_lock(&region->lock);
	/* Gone, or an owner arrived after the scan looked: next time. */
	if (region->dead || region->mm != mm ||
	    som_table_next(&region->table, idx, SOM_PACK_FIRST - 1) ==
	    SOM_TABLE_ABSENT) {
		if (!region->dead)
			som_ages_prune(&region->ages, &region->table);
		ret = 1;
		goto out;
	}
	first = round_down(*idx, SOM_BLOCKS_PER_CHUNK);
	pages = first << SOM_PAGES_PER_BLOCK_SHIFT;
	bitmap_zero(used, SOM_BLOCKS_PER_CHUNK);
	if (live) {
		VMA_ITERATOR(vmi, mm, region->vm_start);

		while ((vma = som_region_next_vma(region, &vmi))) {
			ret = som_age_used(vma, first, pages,
					   pages + SOM_PAGES_PER_CHUNK, used,
					   true);
			if (ret)
				goto out;
		}
	}
	som_ages_advance(&region->ages, &region->table, first, used);
	if (live && !(mm->def_flags & VM_LOCKED))
		som_vm_zap_scanned(mm, region, pages,
				   pages + SOM_PAGES_PER_CHUNK);
	*idx = first + SOM_BLOCKS_PER_CHUNK;
	if (!*idx)
		ret = 1;
out:
	mutex_unlock(&region->lock);
	if (live)
		mmap_read_unlock(mm);
	cond_resched();
	return ret;
}

/* Age one region, a GiB at a time; @gibs counts the GiBs it aged. */
static int som_age_scan_region(struct som_region *region,
			       unsigned long *gibs)
{
	struct mm_struct *mm;
	pgoff_t idx = 0;
	bool live;
	int err;

	mutex_lock(&region->lock);
	if (region->dead) {
		mutex_unlock(&region->lock);
		return 0;
	}
	mm = region->mm;
	if (mm)
		mmgrab(mm);
	mutex_unlock(&region->lock);
	live = mm && mmget_not_zero(mm);
	do {
		err = som_age_scan_gib(region, mm, live, &idx);
		*gibs += !err;
	} while (!err);
	if (live)
		mmput(mm);
	if (mm)
		mmdrop(mm);
	return err < 0 ? err : 0;
}

/**
 * som_age_scan() - age every region's memory once
 *
 * Context: Process context, may sleep; takes each owner's mmap_lock and
 * each region's lock in turn.
 * Return: 0, -EINTR if a fatal signal stopped it (the regions it did not
 * reach keep their ages), -ENOMEM.
 */
int som_age_scan(void)
{
	unsigned long nr, i = 0, gibs = 0;
	struct som_region **regions;
	u64 start, ns;
	int err = 0;

	if (mutex_lock_killable(&som_age_mutex))
		return -EINTR;
	start = ktime_get_ns();
	regions = som_regions_get(&nr);
	if (!regions) {
		err = -ENOMEM;
		goto out;
	}
	for (i = 0; i < nr && !err; i++)
		err = som_age_scan_region(regions[i], &gibs);
	som_regions_put(regions, nr);
	if (!err)
		atomic64_inc(&som_age_nr_scans);
out:
	ns = ktime_get_ns() - start;
	atomic64_add(ns, &som_age_ns);
	trace_som_age_scan(i, gibs, ns, err);
	mutex_unlock(&som_age_mutex);
	return err;
}

/**
 * som_age_scans() - the scans done since load
 *
 * Return: their number.
 */
u64 som_age_scans(void)
{
	return atomic64_read(&som_age_nr_scans);
}

static void som_age_queue(void)
{
	unsigned int ms = READ_ONCE(som_age_interval_ms);

	if (ms && !READ_ONCE(som_age_stopping))
		mod_delayed_work(system_dfl_wq, &som_age_work,
				 msecs_to_jiffies(ms));
}

static void som_age_work_fn(struct work_struct *work)
{
	if (!READ_ONCE(som_age_interval_ms))
		return;
	if (!som_age_scan())
		som_tier_after_scan();
	som_age_queue();
}

/**
 * som_age_init() - nothing to start: the worker is off until told
 *
 * Context: Module init.
 */
void som_age_init(void)
{
	WRITE_ONCE(som_age_stopping, false);
}

/**
 * som_age_exit() - stop the worker for good
 *
 * Context: Module exit or init failing, with aging/ gone from sysfs.
 */
void som_age_exit(void)
{
	WRITE_ONCE(som_age_stopping, true);
	disable_delayed_work_sync(&som_age_work);
}

/* aging/: the worker's interval, a scan on demand, the pool's ages. */

static ssize_t scan_store(struct kobject *kobj, struct kobj_attribute *attr,
			  const char *buf, size_t count)
{
	return som_sysfs_run(buf, count, som_age_scan);
}

static struct kobj_attribute som_age_scan_attr = __ATTR_WO(scan);

static ssize_t interval_ms_show(struct kobject *kobj,
				struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", READ_ONCE(som_age_interval_ms));
}

static ssize_t interval_ms_store(struct kobject *kobj,
				 struct kobj_attribute *attr, const char *buf,
				 size_t count)
{
	unsigned int ms;
	int err;

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	err = kstrtouint(buf, 0, &ms);
	if (err)
		return err;
	mutex_lock(&som_age_interval_mutex);
	WRITE_ONCE(som_age_interval_ms, ms);
	/* At 0, no scan runs once this returns: a running one is waited for. */
	if (ms)
		som_age_queue();
	else
		cancel_delayed_work_sync(&som_age_work);
	mutex_unlock(&som_age_interval_mutex);
	return count;
}

static struct kobj_attribute som_age_interval_attr = __ATTR_RW(interval_ms);

static ssize_t scans_show(struct kobject *kobj, struct kobj_attribute *attr,
			  char *buf)
{
	return sysfs_emit(buf, "%llu\n", som_age_scans());
}

static struct kobj_attribute som_age_scans_attr = __ATTR_RO(scans);

static ssize_t scan_ns_show(struct kobject *kobj, struct kobj_attribute *attr,
			    char *buf)
{
	return sysfs_emit(buf, "%lld\n", atomic64_read(&som_age_ns));
}

static struct kobj_attribute som_age_ns_attr = __ATTR_RO(scan_ns);

/* Bytes of the pool's memory (in regions) of each age, space-separated. */
static ssize_t idle_bytes_show(struct kobject *kobj,
			       struct kobj_attribute *attr, char *buf)
{
	u64 bytes[SOM_AGE_NR] = { 0 };
	struct som_region **regions;
	unsigned long nr, i;
	int len = 0;

	regions = som_regions_get(&nr);
	if (!regions)
		return -ENOMEM;
	for (i = 0; i < nr; i++) {
		mutex_lock(&regions[i]->lock);
		if (!regions[i]->dead)
			som_ages_count(&regions[i]->ages, &regions[i]->table,
				       bytes);
		mutex_unlock(&regions[i]->lock);
	}
	som_regions_put(regions, nr);
	for (i = 0; i < SOM_AGE_NR; i++)
		len += sysfs_emit_at(buf, len, "%llu%c", bytes[i],
				     i + 1 < SOM_AGE_NR ? ' ' : '\n');
	return len;
}

static struct kobj_attribute som_age_idle_attr = __ATTR_RO(idle_bytes);

static struct attribute *som_aging_attrs[] = {
	&som_age_scan_attr.attr,
	&som_age_interval_attr.attr,
	&som_age_scans_attr.attr,
	&som_age_ns_attr.attr,
	&som_age_idle_attr.attr,
	NULL,
};

const struct attribute_group som_aging_group = {
	.name = "aging",
	.attrs = som_aging_attrs,
};
