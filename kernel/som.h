/* SPDX-License-Identifier: GPL-2.0 */
/* What the parts of som.ko share. */
#ifndef _SOM_H
#define _SOM_H

#include <linux/atomic.h>
#include <linux/mm_types.h>

#include "pool.h"

/* The one pool of this module (main.c). */
extern struct som_pool som_pool;

/**
 * struct som_fault_stats - faults served, by the size of the entry mapped
 * @pud: 1 GiB entries
 * @pmd: 2 MiB entries
 * @pte: 4 KiB entries
 */
struct som_fault_stats {
	atomic_long_t pud;
	atomic_long_t pmd;
	atomic_long_t pte;
};

/* fault.c */
extern const struct vm_operations_struct som_vm_ops;
extern struct som_fault_stats som_fault_stats;

/* pgsize.c */
unsigned long som_mapped_size(struct mm_struct *mm, unsigned long addr);

/* dev.c */
int som_dev_register(void);
void som_dev_unregister(void);

/* sysfs.c */
int som_sysfs_init(void);
void som_sysfs_exit(void);

#endif /* _SOM_H */
