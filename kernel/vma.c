// SPDX-License-Identifier: GPL-2.0
/*
 * The som VMA, whether it maps /dev/som or a som file: its creation and
 * placement, page faults, debugger access and life cycle.
 *
 * A fault maps the largest entry that fits: 1 GiB where the VMA covers the
 * whole naturally aligned GiB around the address (at the same alignment in
 * the region), the architecture maps huge PFN entries of that size
 * (CONFIG_ARCH_SUPPORTS_PUD_PFNMAP, as vfio-pci requires) and the CPU has
 * 1 GiB pages, else 2 MiB (CONFIG_ARCH_SUPPORTS_PMD_PFNMAP), else 4 KiB. The core
 * asks for the largest size first and falls back on VM_FAULT_FALLBACK. All
 * three sizes are filled from the region's table, so after a partial
 * munmap() or mprotect() has zapped a 1 GiB entry the remaining pieces
 * refault from the same blocks with the same data, and after a migration
 * has moved blocks (migrate.c) the range refaults from their new place.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/file.h>
#include <linux/mm.h>
#include <linux/mman.h>
#include <linux/pagemap.h>
#include <linux/timekeeping.h>

#include "compat.h"
#include "region.h"
#include "som.h"
#include "som_trace.h"
#include "swap.h"

struct som_fault_stats som_fault_stats;

static bool som_has_pud_pages(void)
{
#ifdef CONFIG_X86
	return boot_cpu_has(X86_FEATURE_GBPAGES);
#else
	return has_transparent_pud_hugepage();
#endif
}

/*
 * The region page offset of the naturally aligned piece of @order around
 * the fault, provided the VMA covers all of it and the piece is equally
 * aligned in the region; -ENOSPC otherwise.
 */
static int som_fault_piece(struct vm_fault *vmf, unsigned int order,
			   pgoff_t *pgoff)
{
	struct vm_area_struct *vma = vmf->vma;
	unsigned long size = PAGE_SIZE << order;
	unsigned long addr = ALIGN_DOWN(vmf->address, size);

	if (addr < vma->vm_start || addr + size > vma->vm_end)
		return -ENOSPC;
	*pgoff = linear_page_index(vma, addr);
	if (!IS_ALIGNED(*pgoff, 1UL << order))
		return -ENOSPC;
	return 0;
}

/* What a 1 GiB or 2 MiB fault finds where its entry goes. */
enum som_fault_slot {
	SOM_FAULT_EMPTY,
	SOM_FAULT_LEAF,		/* an entry of this size */
	SOM_FAULT_TABLE,	/* smaller entries map part of the piece */
};

static enum som_fault_slot som_fault_slot(struct vm_fault *vmf,
					  unsigned int order)
{
	if (order == PUD_ORDER) {
		pud_t pud = pudp_get(vmf->pud);

		return pud_none(pud) ? SOM_FAULT_EMPTY :
		       pud_leaf(pud) ? SOM_FAULT_LEAF : SOM_FAULT_TABLE;
	} else {
		pmd_t pmd = pmdp_get_lockless(vmf->pmd);

		return pmd_none(pmd) ? SOM_FAULT_EMPTY :
		       pmd_leaf(pmd) ? SOM_FAULT_LEAF : SOM_FAULT_TABLE;
	}
}

/* The clock a fault's cost is read from, only while som_fault is traced. */
static u64 som_fault_clock(void)
{
	return trace_som_fault_enabled() ? ktime_get_ns() : 0;
}

/* @pfn: the first frame of the entry, reported only if it was mapped. */
static void som_fault_trace(struct vm_fault *vmf, unsigned int order,
			    unsigned long pfn, vm_fault_t ret, u64 start)
{
	trace_som_fault(vmf->address, vmf->pgoff, PAGE_SIZE << order,
			(ret & VM_FAULT_NOPAGE) ? pfn : 0,
			(__force unsigned int)ret,
			start ? ktime_get_ns() - start : 0);
}

/*
 * -ENOSPC: the entry does not fit, try a smaller one. -EHWPOISON: a page
 * a memory error took (region_poison.c); the core sends SIGBUS with
 * BUS_MCEERR_AR. Anything else is SIGBUS: past the end of a som file, a
 * punched hole of a som file that the empty pool cannot fill again (as on
 * a full tmpfs), or a block the swap store could not give back. -EINTR,
 * a fatal signal that stopped the read of a block paged out, is SIGBUS
 * too: the task dies of its fatal signal anyway, and a kernel copy from
 * the address (a write() from som memory) stops with -EFAULT rather than
 * faulting again and again, as it would if the fault just returned.
 */
static vm_fault_t som_fault_error(int err)
{
	switch (err) {
	case -ENOSPC:
		return VM_FAULT_FALLBACK;
	case -EHWPOISON:
		return VM_FAULT_HWPOISON;
	default:
		return VM_FAULT_SIGBUS;
	}
}

/*
 * -EAGAIN: an overcommitting pool has no block for the fault until
 * another is paged out (pool_overcommit.c), which needs the locks the
 * fault holds (its mm's or its VMA's, and for the fault's own memory the
 * region's). Ask for a pass of reclaim (pressure.c), drop them, wait for
 * the pass killably and have the core fault again, as a fault waiting
 * for I/O does. A fault that already waited and finds that the pass
 * paged out nothing, or that may not drop its locks, gets SIGBUS: no
 * movable block is left to make room (or the store is full). With
 * FAULT_FLAG_RETRY_NOWAIT, the core retries with the locks still held.
 */
static vm_fault_t som_fault_wait(struct vm_fault *vmf)
{
	struct som_region *region = vmf->vma->vm_private_data;
	struct file *file;
	unsigned long pass;

	if (!(vmf->flags & FAULT_FLAG_ALLOW_RETRY) ||
	    ((vmf->flags & FAULT_FLAG_TRIED) && som_pressure_hopeless()))
		return VM_FAULT_SIGBUS;
	pass = som_pressure_kick(1, &region->claim);
	if (vmf->flags & FAULT_FLAG_RETRY_NOWAIT)
		return VM_FAULT_RETRY;
	/*
	 * Once the lock is dropped the VMA may go, and with its file the
	 * last reference to the module this sleeps in: hold the file.
	 */
	file = get_file(vmf->vma->vm_file);
	release_fault_lock(vmf);
	som_pressure_wait(pass);
	fput(file);
	/* Major: the core then faults again as FAULT_FLAG_TRIED. */
	return VM_FAULT_RETRY | VM_FAULT_MAJOR;
}

/*
 * Insert a 1 GiB or 2 MiB entry for @pfn. The region lock is held, so no
 * other som fault or zap changes the entry read here (the core's
 * vmf->orig_pmd was read before the lock was taken). The core may still
 * put a table under an empty PUD (pmd_alloc()) or clear a leaf it splits
 * after a fallback; insert_pfn_p?d() checks again under the page-table
 * lock, and write is asked for only on a leaf. A table there: fall back to
 * the smaller entries that map part of the piece. A leaf maps the same
 * block (a migration zaps under the lock before it changes a block): only
 * a write fault asks for the write bit. A new entry gets its write bit from
 * vm_page_prot; asking for "write" where another thread's fault just put
 * an entry would turn a harmless race into a WARN in insert_pfn_p?d().
 */
static vm_fault_t som_fault_insert(struct vm_fault *vmf, unsigned int order,
				   unsigned long pfn)
{
	enum som_fault_slot slot = som_fault_slot(vmf, order);
	bool write;

	if (slot == SOM_FAULT_TABLE)
		return VM_FAULT_FALLBACK;
	write = (vmf->flags & FAULT_FLAG_WRITE) && slot == SOM_FAULT_LEAF;
#ifdef CONFIG_ARCH_SUPPORTS_PUD_PFNMAP
	if (order == PUD_ORDER) {
		atomic_long_inc(&som_fault_stats.pud);
		return vmf_insert_pfn_pud(vmf, som_pfn_arg(pfn), write);
	}
#endif
#ifdef CONFIG_ARCH_SUPPORTS_PMD_PFNMAP
	if (order == PMD_ORDER) {
		atomic_long_inc(&som_fault_stats.pmd);
		return vmf_insert_pfn_pmd(vmf, som_pfn_arg(pfn), write);
	}
#endif
	return VM_FAULT_FALLBACK;
}

/*
 * Map the naturally aligned 1 GiB or 2 MiB piece around the fault from
 * one chunk or one block, holding the region lock from the lookup until
 * the entry is in.
 */
static vm_fault_t som_fault_huge(struct vm_fault *vmf, unsigned int order)
{
	struct som_region *region = vmf->vma->vm_private_data;
	u64 start = som_fault_clock();
	unsigned long pfn = 0;
	vm_fault_t ret;
	pgoff_t pgoff;
	int err;

	/* A size that does not fit the mapping there is not traced. */
	if (som_fault_piece(vmf, order, &pgoff))
		return VM_FAULT_FALLBACK;
	som_region_lock(region);
	if (order == PUD_ORDER)
		err = som_region_chunk(region, pgoff, &pfn);
	else
		err = som_region_block(region, pgoff, 1UL << order, &pfn);
	ret = err ? som_fault_error(err) : som_fault_insert(vmf, order, pfn);
	som_region_unlock(region);
	if (err == -EAGAIN)
		ret = som_fault_wait(vmf);
	som_fault_trace(vmf, order, pfn, ret, start);
	return ret;
}

/*
 * Has a fault of another size mapped the piece around @vmf since the core
 * found no entry there and called ->fault? A 2 MiB fault may run under
 * the per-VMA lock alone, beside this one, and may have put a leaf where
 * this one saw an empty PMD. vmf_insert_pfn() would then take the leaf
 * for a table (a VM_BUG_ON in walk_to_pmd()). Stable under the region
 * lock. A 1 GiB leaf cannot appear here: the core put a PMD table under
 * the PUD first.
 */
static bool som_fault_mapped_huge(struct vm_fault *vmf)
{
	return pud_leaf(pudp_get(vmf->pud)) ||
	       pmd_leaf(pmdp_get_lockless(vmf->pmd));
}

static vm_fault_t som_fault_pte(struct vm_fault *vmf)
{
	struct som_region *region = vmf->vma->vm_private_data;
	u64 start = som_fault_clock();
	unsigned long pfn = 0;
	vm_fault_t ret;
	int err;

	som_region_lock(region);
	if (som_fault_mapped_huge(vmf)) {
		som_region_unlock(region);
		som_fault_trace(vmf, 0, 0, VM_FAULT_NOPAGE, start);
		return VM_FAULT_NOPAGE;
	}
	err = som_region_block(region, vmf->pgoff, 1, &pfn);
	if (err) {
		som_region_unlock(region);
		ret = err == -EAGAIN ? som_fault_wait(vmf) : som_fault_error(err);
		som_fault_trace(vmf, 0, 0, ret, start);
		return ret;
	}
	ret = vmf_insert_pfn(vmf->vma, vmf->address & PAGE_MASK, pfn);
	som_region_unlock(region);
	if (ret == VM_FAULT_NOPAGE)
		atomic_long_inc(&som_fault_stats.pte);
	som_fault_trace(vmf, 0, pfn, ret, start);
	return ret;
}

static vm_fault_t som_vm_huge_fault(struct vm_fault *vmf, unsigned int order)
{
	switch (order) {
	case PUD_ORDER:
		if (!IS_ENABLED(CONFIG_ARCH_SUPPORTS_PUD_PFNMAP) ||
		    !som_has_pud_pages())
			return VM_FAULT_FALLBACK;
		return som_fault_huge(vmf, order);
	case PMD_ORDER:
		if (!IS_ENABLED(CONFIG_ARCH_SUPPORTS_PMD_PFNMAP))
			return VM_FAULT_FALLBACK;
		return som_fault_huge(vmf, order);
	default:
		return VM_FAULT_FALLBACK;
	}
}

/*
 * Did the core skip the huge levels because THP is off for this mapping's
 * process (prctl(PR_SET_THP_DISABLE), which Redis, for one, sets whenever
 * THP is "always")? vma_thp_disabled() stops ->huge_fault() for every
 * VMA then, PFN mappings included; but som's entries are not transparent
 * huge pages: nothing is copied on fork, split, collapsed or reclaimed,
 * and the memory is reserved in 2 MiB blocks whatever the entry size.
 * MADV_NOHUGEPAGE on the mapping itself is honoured.
 */
static bool som_fault_thp_skipped(struct vm_fault *vmf)
{
	struct vm_area_struct *vma = vmf->vma;

	return has_transparent_hugepage() &&
	       !(vma->vm_flags & VM_NOHUGEPAGE) &&
	       som_mm_thp_disabled(vma->vm_mm);
}

/*
 * A fault the core sent to the 4 KiB level. If it skipped the huge levels
 * only because of PR_SET_THP_DISABLE and found no table under the PMD,
 * map the 2 MiB piece here as ->huge_fault() would: vmf->pmd is set, and
 * the slot is checked again under the region lock. The core has already
 * put a PMD table under the PUD, so a 1 GiB entry cannot be had this way.
 * With no ->map_pages, ->fault runs under mmap_lock (vmf_can_call_fault()
 * retries a per-VMA-lock fault), which the prctl takes for write: the
 * flag read here is the one the core saw.
 */
static vm_fault_t som_vm_fault(struct vm_fault *vmf)
{
	vm_fault_t ret;

	if (som_fault_thp_skipped(vmf) && pmd_none(pmdp_get_lockless(vmf->pmd))) {
		ret = som_vm_huge_fault(vmf, PMD_ORDER);
		if (!(ret & VM_FAULT_FALLBACK))
			return ret;
	}
	return som_fault_pte(vmf);
}

static void som_vm_zap(struct mm_struct *mm, struct som_region *region,
		       pgoff_t first, pgoff_t end, bool note)
{
	VMA_ITERATOR(vmi, mm, region->vm_start);
	struct vm_area_struct *vma;
	pgoff_t from, to;

	mmap_assert_locked(mm);
	while ((vma = som_region_next_vma(region, &vmi))) {
		from = max(first, vma->vm_pgoff);
		to = min(end, vma->vm_pgoff + vma_pages(vma));
		if (from >= to)
			continue;
		if (note)
			som_age_note(region, vma, from, to);
		som_zap_pfn_range(vma, vma->vm_start +
				  ((from - vma->vm_pgoff) << PAGE_SHIFT),
				  (to - from) << PAGE_SHIFT);
	}
}

/**
 * som_vm_zap_range() - zap what an mm maps of a range of a region
 * @mm: the region's owner
 * @region: the region
 * @first: first page offset in the region
 * @end: page offset past the range
 *
 * Zapping part of a 1 GiB entry zaps all of it; the rest refaults from
 * the region's table. What the entries said of use goes to the region's
 * ages first (som_age_note()).
 *
 * Context: Caller holds @mm's mmap_lock and the region lock (so that no
 * fault maps the range again before the caller is done with it).
 */
void som_vm_zap_range(struct mm_struct *mm, struct som_region *region,
		      pgoff_t first, pgoff_t end)
{
	som_vm_zap(mm, region, first, end, true);
}

/**
 * som_vm_zap_scanned() - som_vm_zap_range() for an aging scan
 * @mm: the region's owner
 * @region: the region
 * @first: first page offset in the region
 * @end: page offset past the range
 *
 * The same, for a range whose use the scan has just read.
 *
 * Context: As for som_vm_zap_range().
 */
void som_vm_zap_scanned(struct mm_struct *mm, struct som_region *region,
			pgoff_t first, pgoff_t end)
{
	som_vm_zap(mm, region, first, end, false);
}

/**
 * som_vm_count() - the VMAs of a region in its owner's VMA tree
 * @mm: the region's owner
 * @region: the region
 *
 * Context: Caller holds @mm's mmap_lock and the region lock.
 * Return: their number. Fewer than the region counts means that a
 * munmap() has taken some out of the tree but not closed them yet: their
 * page tables may still map the region's blocks.
 */
unsigned long som_vm_count(struct mm_struct *mm, struct som_region *region)
{
	VMA_ITERATOR(vmi, mm, region->vm_start);
	unsigned long nr = 0;

	mmap_assert_locked(mm);
	while (som_region_next_vma(region, &vmi))
		nr++;
	return nr;
}

/**
 * som_vm_maps_gib() - could a 1 GiB entry map a GiB of a region?
 * @mm: the region's owner
 * @region: the region
 * @first: page offset of the GiB in the region, 1 GiB aligned
 * @table: set if a page table lies under the address that maps the GiB
 *	(see som_pud_table()): then it gets 1 GiB entries only once the
 *	table is gone
 *
 * Context: Caller holds @mm's mmap_lock and the region lock.
 * Return: whether the CPU has 1 GiB pages and some VMA of @region maps
 * the whole GiB at a 1 GiB aligned address.
 */
bool som_vm_maps_gib(struct mm_struct *mm, struct som_region *region,
		     pgoff_t first, bool *table)
{
	VMA_ITERATOR(vmi, mm, region->vm_start);
	struct vm_area_struct *vma;
	unsigned long addr;

	mmap_assert_locked(mm);
	if (!IS_ENABLED(CONFIG_ARCH_SUPPORTS_PUD_PFNMAP) ||
	    !som_has_pud_pages())
		return false;
	while ((vma = som_region_next_vma(region, &vmi))) {
		if (first < vma->vm_pgoff ||
		    first + SOM_PAGES_PER_CHUNK > vma->vm_pgoff + vma_pages(vma))
			continue;
		addr = vma->vm_start + ((first - vma->vm_pgoff) << PAGE_SHIFT);
		if (IS_ALIGNED(addr, PUD_SIZE)) {
			*table = som_pud_table(mm, addr);
			return true;
		}
	}
	return false;
}

/*
 * A split or an mremap() move made a new VMA from one of ours. A split's
 * new VMA lies inside the one being split, which is still in the tree;
 * a move's lies where nothing is mapped yet.
 */
static void som_vm_open(struct vm_area_struct *vma)
{
	struct som_region *region = vma->vm_private_data;

	som_region_open(region, vma);
	if (find_vma_intersection(vma->vm_mm, vma->vm_start, vma->vm_end))
		return;
	/*
	 * An mremap() move: move_page_tables() cannot move a PFN 1 GiB
	 * entry on 6.12 (get_old_pud() sees a leaf as a bad entry and clears
	 * it without a TLB flush), so the source is emptied here, before the
	 * move, and the new VMA refaults from the region's table at the
	 * largest size its address allows. Under the region lock: a fault
	 * on another VMA of the region (under its VMA lock only) could
	 * otherwise put a 1 GiB entry back in the middle of the zap, which
	 * would then find it where it expects a table.
	 */
	som_region_lock(region);
	som_vm_zap_range(vma->vm_mm, region, vma->vm_pgoff,
			 vma->vm_pgoff + vma_pages(vma));
	som_region_unlock(region);
}

/*
 * A split at @addr inside a GiB that one 1 GiB entry maps: the core splits
 * only 2 MiB leaves at the new boundary (vma_adjust_trans_huge()); 6.12
 * splits a 1 GiB leaf there too, but 7.3 takes it for a table and oopses.
 * So the 1 GiB entry goes first, whatever the kernel, and the two halves
 * refault from the region's table at 2 MiB. Every split (munmap(),
 * mprotect(), madvise(), mbind(), mseal(), mmap(MAP_FIXED), and mremap()
 * for both ends of the range it moves) calls this with mmap_lock held for
 * write; the VMA is write-locked first so that no fault under the per-VMA
 * lock alone maps the GiB again before the split (the core write-locks it
 * only after this returns). The use a 1 GiB or 2 MiB entry cut by the
 * split showed goes to the region's ages (som_age_note()).
 */
static int som_vm_may_split(struct vm_area_struct *vma, unsigned long addr)
{
	struct som_region *region = vma->vm_private_data;
	unsigned long gib = ALIGN_DOWN(addr, PUD_SIZE), size;

	mmap_assert_write_locked(vma->vm_mm);
	/* No entry crosses @addr: a GiB boundary, or 2 MiB and no GiB. */
	if (addr == gib || (IS_ALIGNED(addr, PMD_SIZE) &&
			    (gib < vma->vm_start || gib + PUD_SIZE > vma->vm_end)))
		return 0;
	vma_start_write(vma);
	size = som_mapped_size(vma->vm_mm, addr);
	if (size <= PAGE_SIZE || IS_ALIGNED(addr, size))
		return 0;
	/*
	 * The entry across @addr goes, here or in the core: its use goes to
	 * the ages first. VMA lock, then region lock, as a fault takes them.
	 */
	som_region_lock(region);
	som_age_note(region, vma, linear_page_index(vma, addr),
		     linear_page_index(vma, addr) + 1);
	som_region_unlock(region);
	if (size == PUD_SIZE)
		som_zap_pfn_range(vma, gib, PUD_SIZE);
	return 0;
}

static void som_vm_close(struct vm_area_struct *vma)
{
	som_region_unmap(vma->vm_private_data, vma);
}

/*
 * ptrace and /proc/pid/mem: get_user_pages() cannot reach PFN-mapped
 * memory, so the core falls back to this, one page at a time. Like GUP
 * with FOLL_FORCE on a shared mapping: reads need VM_MAYREAD, writes need
 * VM_WRITE.
 */
static int som_vm_access(struct vm_area_struct *vma, unsigned long addr,
			 void *buf, int len, int write)
{
	loff_t pos = ((loff_t)linear_page_index(vma, addr) << PAGE_SHIFT) +
		     offset_in_page(addr);

	if (write ? !(vma->vm_flags & VM_WRITE) :
		    !(vma->vm_flags & VM_MAYREAD))
		return -EFAULT;
	return som_region_access(vma->vm_private_data, pos, buf, len, write);
}

const struct vm_operations_struct som_vm_ops = {
	.open = som_vm_open,
	.close = som_vm_close,
	.may_split = som_vm_may_split,
	.fault = som_vm_fault,
	.huge_fault = som_vm_huge_fault,
	.access = som_vm_access,
};

/**
 * som_vma_mmap() - make @vma a som VMA of @region
 * @region: the region of the file being mapped
 * @vma: the VMA mmap() is creating
 *
 * The VMA is VM_PFNMAP (no struct page behind it, GUP refuses it), VM_IO
 * (so that MADV_DOFORK cannot clear VM_DONTCOPY), VM_DONTCOPY (fork never
 * gives a child the memory), VM_DONTDUMP and VM_DONTEXPAND (mremap() could
 * not grow a VM_PFNMAP VMA anyway).
 *
 * Context: Process context, caller holds current's mmap_lock for write.
 * Return: 0, -EINVAL for a private mapping, -EPERM while a module that
 * maps PFN-mapped memory for devices is loaded (dma_guard.c), or
 * som_region_map()'s error.
 */
int som_vma_mmap(struct som_region *region, struct vm_area_struct *vma)
{
	int err;

	if (!(vma->vm_flags & VM_MAYSHARE))
		return -EINVAL;
	if (!som_dma_guard_ok())
		return -EPERM;
	err = som_region_map(region, vma);
	if (err)
		return err;
	vm_flags_set(vma, VM_PFNMAP | VM_IO | VM_DONTCOPY | VM_DONTDUMP |
			  VM_DONTEXPAND | VM_HUGEPAGE);
	vma->vm_ops = &som_vm_ops;
	vma->vm_private_data = region;
	return 0;
}

/**
 * som_get_unmapped_area() - place a som mapping where huge entries fit
 * @file: the file being mapped
 * @addr: the caller's hint, or 0
 * @len: length of the mapping
 * @pgoff: page offset in the file
 * @flags: mmap() flags
 *
 * Places mappings of at least 1 GiB (2 MiB) at a virtual address with the
 * same 1 GiB (2 MiB) alignment as their file offset, so that they can be
 * mapped with 1 GiB (2 MiB) entries. A caller's address hint wins.
 *
 * Context: Process context, caller holds current's mmap_lock for write.
 * Return: the address, or a negative error.
 */
unsigned long som_get_unmapped_area(struct file *file, unsigned long addr,
				    unsigned long len, unsigned long pgoff,
				    unsigned long flags)
{
	unsigned long align = len >= PUD_SIZE ? PUD_SIZE : PMD_SIZE;
	unsigned long off = pgoff << PAGE_SHIFT, ret;

	if (addr || (flags & MAP_FIXED) || len < PMD_SIZE || len + align < len)
		goto out;
	ret = som_default_area(file, 0, len + align, pgoff, flags);
	if (IS_ERR_VALUE(ret))
		goto out;
	return ret + ((off - ret) & (align - 1));
out:
	return som_default_area(file, addr, len, pgoff, flags);
}
