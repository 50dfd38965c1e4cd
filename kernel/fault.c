// SPDX-License-Identifier: GPL-2.0
/*
 * The som VMA: page faults, debugger access and VMA life cycle.
 *
 * A fault maps the largest entry that fits: 1 GiB where the VMA covers the
 * whole naturally aligned GiB around the address (at the same alignment in
 * the region) and the CPU has 1 GiB pages, else 2 MiB, else 4 KiB. The core
 * asks for the largest size first and falls back on VM_FAULT_FALLBACK. All
 * three sizes are filled from the region's table, so after a partial
 * munmap() or mprotect() has zapped a 1 GiB entry the remaining pieces
 * refault from the same blocks with the same data.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/mm.h>
#include <linux/pagemap.h>
#include <linux/pfn_t.h>

#include "region.h"
#include "som.h"

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

/*
 * Ask vmf_insert_pfn_p?d() to make the entry writable only when a write
 * fault hits an entry that is already there (the pfn is then ours). A new
 * entry gets its write bit from vm_page_prot; asking for "write" there
 * would turn losing a race with another thread's fault at another size
 * into a WARN in insert_pfn_p?d() instead of a harmless refault.
 */
static bool som_fault_upgrade(struct vm_fault *vmf, bool leaf)
{
	return (vmf->flags & FAULT_FLAG_WRITE) && leaf;
}

static vm_fault_t som_fault_error(int err)
{
	switch (err) {
	case -ENOSPC:
		return VM_FAULT_FALLBACK;
	case -ENOMEM:
		return VM_FAULT_OOM;
	default:
		return VM_FAULT_SIGBUS;
	}
}

static vm_fault_t som_fault_pud(struct vm_fault *vmf)
{
#ifdef CONFIG_HAVE_ARCH_TRANSPARENT_HUGEPAGE_PUD
	unsigned long pfn;
	pgoff_t pgoff;
	int err;

	if (!som_has_pud_pages())
		return VM_FAULT_FALLBACK;
	err = som_fault_piece(vmf, PUD_ORDER, &pgoff);
	if (!err)
		err = som_region_chunk(vmf->vma->vm_private_data, pgoff, &pfn);
	if (err)
		return som_fault_error(err);
	atomic_long_inc(&som_fault_stats.pud);
	return vmf_insert_pfn_pud(vmf, __pfn_to_pfn_t(pfn, PFN_DEV),
				  som_fault_upgrade(vmf,
						    pud_leaf(pudp_get(vmf->pud))));
#else
	return VM_FAULT_FALLBACK;
#endif
}

static vm_fault_t som_fault_pmd(struct vm_fault *vmf)
{
	unsigned long pfn;
	pgoff_t pgoff;
	int err;

	err = som_fault_piece(vmf, PMD_ORDER, &pgoff);
	if (!err)
		err = som_region_block(vmf->vma->vm_private_data, pgoff, &pfn);
	if (err)
		return som_fault_error(err);
	atomic_long_inc(&som_fault_stats.pmd);
	return vmf_insert_pfn_pmd(vmf, __pfn_to_pfn_t(pfn, PFN_DEV),
				  som_fault_upgrade(vmf, pmd_leaf(vmf->orig_pmd)));
}

static vm_fault_t som_fault_pte(struct vm_fault *vmf)
{
	unsigned long pfn;
	vm_fault_t ret;
	int err;

	err = som_region_block(vmf->vma->vm_private_data, vmf->pgoff, &pfn);
	if (err)
		return som_fault_error(err);
	ret = vmf_insert_pfn(vmf->vma, vmf->address & PAGE_MASK, pfn);
	/*
	 * Another thread's fault may have put a 2 MiB or 1 GiB entry here
	 * meanwhile (faults run under the VMA lock only); then there is no
	 * PTE table to insert into, and the access is already mapped.
	 */
	if (ret == VM_FAULT_OOM &&
	    (pmd_leaf(pmdp_get_lockless(vmf->pmd)) ||
	     pud_leaf(pudp_get(vmf->pud))))
		return VM_FAULT_NOPAGE;
	if (ret == VM_FAULT_NOPAGE)
		atomic_long_inc(&som_fault_stats.pte);
	return ret;
}

static vm_fault_t som_vm_huge_fault(struct vm_fault *vmf, unsigned int order)
{
	switch (order) {
	case PMD_ORDER:
		return som_fault_pmd(vmf);
	case PUD_ORDER:
		return som_fault_pud(vmf);
	default:
		return VM_FAULT_FALLBACK;
	}
}

static vm_fault_t som_vm_fault(struct vm_fault *vmf)
{
	return som_fault_pte(vmf);
}

/*
 * Zap what the region's other VMAs map of @vma's offsets. For mremap():
 * move_page_tables() cannot move a PFN 1 GiB entry on 6.12 (get_old_pud()
 * sees a leaf as a bad entry and clears it without a TLB flush), so the
 * source is emptied here, before the move, and @vma refaults from the
 * region's table at the largest size its new address allows.
 */
static void som_vm_zap_sources(struct vm_area_struct *vma)
{
	VMA_ITERATOR(vmi, vma->vm_mm, 0);
	pgoff_t first = vma->vm_pgoff, end = first + vma_pages(vma);
	struct vm_area_struct *src;
	pgoff_t from, to;

	for_each_vma(vmi, src) {
		if (src->vm_ops != &som_vm_ops ||
		    src->vm_private_data != vma->vm_private_data)
			continue;
		from = max(first, src->vm_pgoff);
		to = min(end, src->vm_pgoff + vma_pages(src));
		if (from < to)
			zap_vma_ptes(src, src->vm_start +
				     ((from - src->vm_pgoff) << PAGE_SHIFT),
				     (to - from) << PAGE_SHIFT);
	}
}

/*
 * A split or an mremap() move made a new VMA from one of ours. A split's
 * new VMA lies inside the one being split, which is still in the tree;
 * a move's lies where nothing is mapped yet.
 */
static void som_vm_open(struct vm_area_struct *vma)
{
	som_region_open(vma->vm_private_data);
	if (!find_vma_intersection(vma->vm_mm, vma->vm_start, vma->vm_end))
		som_vm_zap_sources(vma);
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
	.fault = som_vm_fault,
	.huge_fault = som_vm_huge_fault,
	.access = som_vm_access,
};
