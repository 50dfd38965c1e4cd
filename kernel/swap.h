/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The swap store (swap.c): a file or block device that som memory is
 * paged out to, in 2 MiB slots, and the region side of paging
 * (region_swap.c, pageout.c).
 */
#ifndef _SOM_SWAP_H
#define _SOM_SWAP_H

#include <linux/nodemask.h>
#include <linux/sysfs.h>
#include <linux/types.h>

struct file;
struct som_claim;
struct som_region;
struct som_swap_args;
struct som_pageout;

/* swap.c: the store */
bool som_swap_ready(void);
long som_swap_get_slot(void);
void som_swap_put_slot(unsigned long slot);
int som_swap_write(unsigned long slot, const void *data);
int som_swap_read(unsigned long slot, void *data);
u64 som_swap_metadata_bytes(void);
long som_ioctl_swap_add(struct som_swap_args __user *uarg);
long som_ioctl_swap_remove(void);
int som_swap_init(void);
void som_swap_exit(void);
extern const struct attribute_group som_swap_group;

/* swap_io.c: the store's I/O */
int som_swap_io_write(struct file *file, loff_t pos, const void *data);
int som_swap_io_read(struct file *file, loff_t pos, void *data);
int som_swap_io_init(void);
void som_swap_io_exit(void);

/* region_swap.c: a region's blocks in the store */
int som_region_page_out(struct som_region *region, pgoff_t idx,
			unsigned long slot, const void *data);
bool som_region_swapped(struct som_region *region, pgoff_t first,
			pgoff_t last);
int som_region_swap_in(struct som_region *region, pgoff_t idx,
		       unsigned long bfn);
unsigned long som_region_drop_swap(struct som_region *region, pgoff_t first,
				   pgoff_t last);
int som_region_read_back(struct som_region *region);

/* pageout.c: SOM_IOC_PAGEOUT, and the administrator's reclaim */
long som_ioctl_pageout(struct som_region *region,
		       struct som_pageout __user *uarg);
int som_reclaim(u64 bytes, const nodemask_t *nodes, u64 *done);

/* pressure.c: paging out when an overcommitting pool runs short */
unsigned long som_pressure_kick(unsigned long blocks,
				const struct som_claim *claim);
void som_pressure_wait(unsigned long pass);
bool som_pressure_hopeless(void);
int som_pressure_init(void);
void som_pressure_exit(void);
extern struct kobj_attribute som_pressure_passes_attr;
extern struct kobj_attribute som_pressure_reclaimed_bytes_attr;
extern struct kobj_attribute som_pressure_waits_attr;
extern struct kobj_attribute som_pressure_failures_attr;

#endif /* _SOM_SWAP_H */
