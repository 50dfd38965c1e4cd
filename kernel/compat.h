/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The kernel interfaces som uses that differ between the kernels it is
 * built for (Debian's 6.12 and 7.3), each behind one name. Which form a
 * kernel has is read from its own headers when som is built (the
 * SOM_HAVE_* flags set in Kbuild), so a kernel between the two gets
 * whichever form it has, whatever its version number.
 */
#ifndef _SOM_COMPAT_H
#define _SOM_COMPAT_H

#include <linux/huge_mm.h>
#include <linux/mm.h>
#include <linux/sched/mm.h>
#ifdef SOM_HAVE_PFN_T
#include <linux/pfn_t.h>
#endif

/*
 * The pfn argument of vmf_insert_pfn_pmd() and _pud(): a pfn_t with
 * PFN_DEV (no struct page) where pfn_t exists, the pfn itself after.
 */
#ifdef SOM_HAVE_PFN_T
#define som_pfn_arg(pfn)	__pfn_to_pfn_t(pfn, PFN_DEV)
#else
#define som_pfn_arg(pfn)	(pfn)
#endif

/*
 * Has the process turned THP off for all its VMAs with
 * prctl(PR_SET_THP_DISABLE)? Kernels whose mm flags are a bitmap also know
 * a milder form that spares VM_HUGEPAGE VMAs, som's among them: that one
 * stops no som fault, so it is not counted here.
 */
static inline bool som_mm_thp_disabled(struct mm_struct *mm)
{
#ifdef SOM_HAVE_MM_FLAGS_BITMAP
	return mm_flags_test(MMF_DISABLE_THP_COMPLETELY, mm);
#else
	return test_bit(MMF_DISABLE_THP, &mm->flags);
#endif
}

/* Remove the entries of a VM_PFNMAP range (inside one VMA). */
static inline void som_zap_pfn_range(struct vm_area_struct *vma,
				     unsigned long addr, unsigned long size)
{
#ifdef SOM_HAVE_ZAP_SPECIAL_VMA_RANGE
	zap_special_vma_range(vma, addr, size);
#else
	zap_vma_ptes(vma, addr, size);
#endif
}

/* The default placement of a mapping in current's address space. */
static inline unsigned long som_default_area(struct file *file,
					     unsigned long addr,
					     unsigned long len,
					     unsigned long pgoff,
					     unsigned long flags)
{
#ifdef SOM_HAVE_GET_AREA_MM
	return mm_get_unmapped_area(current->mm, file, addr, len, pgoff, flags);
#else
	return mm_get_unmapped_area(file, addr, len, pgoff, flags);
#endif
}

/* MODULE_IMPORT_NS() took an identifier, and takes a string now. */
#ifdef SOM_HAVE_NS_IDENT
#define SOM_IMPORT_NS(ns)	MODULE_IMPORT_NS(ns)
#else
#define SOM_IMPORT_NS(ns)	MODULE_IMPORT_NS(#ns)
#endif

#endif /* _SOM_COMPAT_H */
