// SPDX-License-Identifier: GPL-2.0
/*
 * Which page-table entry maps an address of a som VMA, and SOM_IOC_MAPPING,
 * which reports it to user space.
 *
 * smaps does not walk PFN-mapped VMAs, and the core's page walkers are not
 * exported, so this is a read-only walk in the style of
 * follow_pfnmap_start(), without its locks: it only reports what it sees.
 */
#include <linux/mm.h>
#include <linux/pagemap.h>
#include <linux/pgtable.h>
#include <linux/uaccess.h>
#include <uapi/linux/som.h>

#include "region.h"
#include "som.h"

/**
 * som_entry_at() - the entry that maps an address
 * @mm: the address space
 * @addr: an address inside a som VMA of @mm
 * @span: set to the size of that entry, or of the empty table range
 *	around @addr that holds no entry at all
 *
 * Context: Caller holds @mm's mmap_lock and has looked the VMA up under
 * it (som_mapped_size() says why that is enough).
 * Return: its size (PUD_SIZE, PMD_SIZE or PAGE_SIZE), or 0 if there is
 * none.
 */
unsigned long som_entry_at(struct mm_struct *mm, unsigned long addr,
			   unsigned long *span)
{
	pgd_t *pgdp = pgd_offset(mm, addr);
	p4d_t *p4dp, p4d;
	pud_t *pudp, pud;
	pmd_t *pmdp, pmd;

	*span = PGDIR_SIZE;
	if (pgd_none(*pgdp) || unlikely(pgd_bad(*pgdp)))
		return 0;
	*span = P4D_SIZE;
	p4dp = p4d_offset(pgdp, addr);
	p4d = p4dp_get(p4dp);
	if (p4d_none(p4d) || unlikely(p4d_bad(p4d)))
		return 0;
	*span = PUD_SIZE;
	pudp = pud_offset(p4dp, addr);
	pud = pudp_get(pudp);
	if (!pud_present(pud))
		return 0;
	if (pud_leaf(pud))
		return PUD_SIZE;
	*span = PMD_SIZE;
	pmdp = pmd_offset(pudp, addr);
	pmd = pmdp_get_lockless(pmdp);
	if (!pmd_present(pmd))
		return 0;
	if (pmd_leaf(pmd))
		return PMD_SIZE;
	*span = PAGE_SIZE;
	return pte_present(ptep_get(pte_offset_kernel(&pmd, addr))) ?
	       PAGE_SIZE : 0;
}

/**
 * som_mapped_size() - size of the entry that maps @addr
 * @mm: the address space
 * @addr: an address inside a som VMA of @mm
 *
 * Context: Caller holds @mm's mmap_lock and has looked the VMA up under
 * it. The tables under a live VMA are not freed while mmap_lock is held
 * (freeing needs it for write or the VMA detached), so the walk cannot
 * reach freed memory; an entry that changes under it is reported either
 * way.
 * Return: PUD_SIZE, PMD_SIZE or PAGE_SIZE, or 0 if nothing maps @addr.
 */
unsigned long som_mapped_size(struct mm_struct *mm, unsigned long addr)
{
	unsigned long span;

	mmap_assert_locked(mm);
	return som_entry_at(mm, addr, &span);
}

/**
 * som_pud_table() - is there a page table under the PUD entry of @addr?
 * @mm: the address space
 * @addr: an address inside a som VMA of @mm
 *
 * A zap empties a table but does not free it, and a fault maps a 1 GiB
 * entry only where the PUD entry is empty: under a table, even a GiB in
 * one chunk gets 2 MiB entries until the table goes (munmap, exit).
 *
 * Context: Caller holds @mm's mmap_lock and has looked the VMA up under it.
 * Return: true if a PMD table is there.
 */
bool som_pud_table(struct mm_struct *mm, unsigned long addr)
{
	unsigned long span, size;

	mmap_assert_locked(mm);
	size = som_entry_at(mm, addr, &span);
	return size != PUD_SIZE && span < PUD_SIZE;
}

/**
 * som_count_entries() - the entries that map a som VMA now, by size
 * @vma: a som VMA
 * @entries: incremented: [0] 4 KiB, [1] 2 MiB, [2] 1 GiB entries
 *
 * Skips empty table ranges whole, so an untouched mapping costs one step
 * per 1 GiB (or more).
 *
 * Context: Caller holds the mmap_lock of @vma's mm. May sleep.
 * Return: 0, or -EINTR if a fatal signal is pending.
 */
int som_count_entries(struct vm_area_struct *vma, u64 entries[3])
{
	unsigned long addr = vma->vm_start, size, span;

	mmap_assert_locked(vma->vm_mm);
	while (addr < vma->vm_end) {
		if (fatal_signal_pending(current))
			return -EINTR;
		size = som_entry_at(vma->vm_mm, addr, &span);
		if (size == PUD_SIZE)
			entries[2]++;
		else if (size == PMD_SIZE)
			entries[1]++;
		else if (size)
			entries[0]++;
		addr = ALIGN_DOWN(addr, span) + span;
		cond_resched();
	}
	return 0;
}

/**
 * som_ioctl_mapping() - SOM_IOC_MAPPING on /dev/som or a som file
 * @uarg: the caller's struct som_mapping
 *
 * Reports on any som mapping of the caller, whichever som descriptor the
 * ioctl was issued on: a process may learn about its own memory, and a
 * program that closed a som file after mapping it (as somrun does) has no
 * other descriptor to ask through.
 *
 * Context: Process context; takes current's mmap_lock for read, then the
 * region lock of the mapping's region.
 * Return: 0, -EFAULT for a bad pointer, -EINVAL for bad flags or reserved
 * fields or an address that no som VMA of current maps, -EINTR.
 */
long som_ioctl_mapping(struct som_mapping __user *uarg)
{
	struct som_region *region;
	struct mm_struct *mm = current->mm;
	struct vm_area_struct *vma;
	struct som_mapping arg;
	pgoff_t pgoff;
	int err = 0;

	if (copy_from_user(&arg, uarg, sizeof(arg)))
		return -EFAULT;
	if (arg.flags || arg.__pad || arg.__reserved[0] || arg.__reserved[1])
		return -EINVAL;
	if (mmap_read_lock_killable(mm))
		return -EINTR;
	vma = vma_lookup(mm, arg.addr);
	if (!vma || vma->vm_ops != &som_vm_ops) {
		err = -EINVAL;
	} else {
		/* The VMA's reference on its file keeps the region. */
		region = vma->vm_private_data;
		arg.page_size = som_mapped_size(mm, arg.addr);
		pgoff = linear_page_index(vma, arg.addr);
		arg.offset = ((u64)pgoff << PAGE_SHIFT) +
			     offset_in_page(arg.addr);
		arg.node = som_region_node(region, pgoff, &arg.out_flags);
	}
	mmap_read_unlock(mm);
	if (err)
		return err;
	if (copy_to_user(uarg, &arg, sizeof(arg)))
		return -EFAULT;
	return 0;
}
