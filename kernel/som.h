/* SPDX-License-Identifier: GPL-2.0 */
/* What the parts of som.ko share. */
#ifndef _SOM_H
#define _SOM_H

#include <linux/atomic.h>
#include <linux/compiler_types.h>
#include <linux/fs.h>
#include <linux/kobject.h>
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

/**
 * struct som_metadata - what som spends describing memory, in bytes
 * @total:	all of the below
 * @chunks:	the pool's chunk descriptors, one per GiB in the pool
 * @chunk_bits:	the bits of chunks whose blocks differ, and the one spare
 * @pool:	the pool and its per-node sets
 * @sources:	the sources' descriptors
 * @source_tables: their chunk tables, an address per chunk
 * @regions:	the regions' descriptors and per-node counters
 * @table_split: the regions' split GiBs
 * @table_nodes: the regions' table xarray nodes
 * @ages:	the regions' ages of their memory (age.h)
 * @charges:	the records of cgroups and users charged, and of cgroups
 *		limited (charge.c)
 * @swap:	the swap store's descriptor and slot bitmap, and the regions'
 *		records of their blocks in it (swap.c, region_swap.c)
 * @pack:	the regions' maps of sparse indices and pack blocks (pack.c)
 */
struct som_metadata {
	u64 total;
	u64 chunks;
	u64 chunk_bits;
	u64 pool;
	u64 sources;
	u64 source_tables;
	u64 regions;
	u64 table_split;
	u64 table_nodes;
	u64 ages;
	u64 charges;
	u64 swap;
	u64 pack;
};

/* metadata.c */
void som_metadata_get(struct som_metadata *m);
extern const struct attribute_group som_metadata_group;
extern struct kobj_attribute som_metadata_bytes_attr;
extern struct kobj_attribute som_region_metadata_bytes_attr;

struct som_region;
struct som_mapping;
struct som_file_args;
struct som_policy;
struct som_proc_usage;
struct som_proc_ages;
struct som_poison;
struct som_source_args;
struct som_source_name;

/* vma.c */
extern const struct vm_operations_struct som_vm_ops;
extern struct som_fault_stats som_fault_stats;
int som_vma_mmap(struct som_region *region, struct vm_area_struct *vma);
void som_vm_zap_range(struct mm_struct *mm, struct som_region *region,
		      pgoff_t first, pgoff_t end);
void som_vm_zap_scanned(struct mm_struct *mm, struct som_region *region,
			pgoff_t first, pgoff_t end);
unsigned long som_vm_count(struct mm_struct *mm, struct som_region *region);
bool som_vm_maps_gib(struct mm_struct *mm, struct som_region *region,
		     pgoff_t first, bool *table);
unsigned long som_get_unmapped_area(struct file *file, unsigned long addr,
				    unsigned long len, unsigned long pgoff,
				    unsigned long flags);

/* pgsize.c */
unsigned long som_entry_at(struct mm_struct *mm, unsigned long addr,
			   unsigned long *span);
unsigned long som_mapped_size(struct mm_struct *mm, unsigned long addr);
bool som_pud_table(struct mm_struct *mm, unsigned long addr);
int som_count_entries(struct vm_area_struct *vma, u64 entries[3]);
long som_ioctl_mapping(struct som_mapping __user *uarg);

/* usage.c */
long som_ioctl_proc_usage(struct som_proc_usage __user *uarg);
long som_ioctl_proc_ages(struct som_proc_ages __user *uarg);

/* policy.c */
long som_ioctl_policy(struct som_region *region,
		      struct som_policy __user *uarg);

/* admin.c */
long som_ioctl_source_add(struct som_source_args __user *uarg);
long som_ioctl_source_remove(struct som_source_name __user *uarg);

/* dev.c */
int som_dev_register(void);
void som_dev_unregister(void);

/* file.c */
long som_file_create(struct som_file_args __user *uarg);

/* dma_guard.c */
int som_dma_guard_init(void);
void som_dma_guard_exit(void);
bool som_dma_guard_ok(void);

/* sysfs.c */
/* poison.c */
int som_poison_page(unsigned long pfn, const char *how);
long som_ioctl_poison(struct som_poison __user *uarg);
void som_poison_init(void);
void som_poison_exit(void);

/* A read-only sysfs file showing a counter. */
struct som_count_attr {
	struct kobj_attribute attr;
	atomic_long_t *count;
};

ssize_t som_count_attr_show(struct kobject *kobj, struct kobj_attribute *attr,
			    char *buf);

#define SOM_COUNT_ATTR(_var, _name, _count)				\
	struct som_count_attr _var = {					\
		__ATTR(_name, 0444, som_count_attr_show, NULL),		\
		_count,							\
	}

int som_sysfs_admin_bool(const char *buf, bool *on);
int som_sysfs_init(void);
void som_sysfs_exit(void);
ssize_t som_sysfs_run(const char *buf, size_t count, int (*run)(void));

#endif /* _SOM_H */
