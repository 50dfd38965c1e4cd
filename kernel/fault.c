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
				  vmf->flags & FAULT_FLAG_WRITE);
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
				  vmf->flags & FAULT_FLAG_WRITE);
}

static vm_fault_t som_fault_pte(struct vm_fault *vmf)
{
	unsigned long pfn;
	int err;

	err = som_region_block(vmf->vma->vm_private_data, vmf->pgoff, &pfn);
	if (err)
		return som_fault_error(err);
	atomic_long_inc(&som_fault_stats.pte);
	return vmf_insert_pfn(vmf->vma, vmf->address & PAGE_MASK, pfn);
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

/* A split or an mremap() move made a new VMA from one of ours. */
static void som_vm_open(struct vm_area_struct *vma)
{
	som_region_open(vma->vm_private_data);
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
