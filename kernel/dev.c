// SPDX-License-Identifier: GPL-2.0
/*
 * /dev/som: each open file is one empty region; mmap(MAP_SHARED) of it
 * gives the caller single-owner memory that lives as long as it is mapped.
 * SOM_IOC_FILE makes a som file instead (file.c); SOM_IOC_POLICY places
 * the region's memory (policy.c); the pool is administered here too
 * (admin.c).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/mman.h>
#include <linux/module.h>
#include <linux/pagemap.h>
#include <linux/uaccess.h>
#include <uapi/linux/som.h>

#include "charge.h"
#include "region.h"
#include "som.h"
#include "swap.h"

static int som_open(struct inode *inode, struct file *file)
{
	struct som_region *region = som_region_create(&som_pool, NULL);

	if (!region)
		return -ENOMEM;
	/* misc_open() left the miscdevice here; the region replaces it. */
	file->private_data = region;
	return 0;
}

static int som_release(struct inode *inode, struct file *file)
{
	som_region_destroy(file->private_data);
	return 0;
}

static int som_mmap(struct file *file, struct vm_area_struct *vma)
{
	return som_vma_mmap(file->private_data, vma);
}

static long som_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	switch (cmd) {
	case SOM_IOC_MAPPING:
		return som_ioctl_mapping((void __user *)arg);
	case SOM_IOC_FILE:
		return som_file_create((void __user *)arg);
	case SOM_IOC_POLICY:
		return som_ioctl_policy(file->private_data,
					(void __user *)arg);
	case SOM_IOC_SOURCE_ADD:
		return som_ioctl_source_add((void __user *)arg);
	case SOM_IOC_SOURCE_REMOVE:
		return som_ioctl_source_remove((void __user *)arg);
	case SOM_IOC_PROC_USAGE:
		return som_ioctl_proc_usage((void __user *)arg);
	case SOM_IOC_POISON:
		return som_ioctl_poison((void __user *)arg);
	case SOM_IOC_PROC_AGES:
		return som_ioctl_proc_ages((void __user *)arg);
	case SOM_IOC_CGROUP:
		return som_ioctl_cgroup((void __user *)arg);
	case SOM_IOC_USER:
		return som_ioctl_user((void __user *)arg);
	case SOM_IOC_SWAP_ADD:
		return som_ioctl_swap_add((void __user *)arg);
	case SOM_IOC_SWAP_REMOVE:
		return som_ioctl_swap_remove();
	case SOM_IOC_PAGEOUT:
		return som_ioctl_pageout(file->private_data,
					 (void __user *)arg);
	default:
		return -ENOTTY;
	}
}

static const struct file_operations som_fops = {
	.owner = THIS_MODULE,
	.open = som_open,
	.release = som_release,
	.mmap = som_mmap,
	.get_unmapped_area = som_get_unmapped_area,
	.fsync = noop_fsync,
	.unlocked_ioctl = som_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.llseek = noop_llseek,
};

static struct miscdevice som_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "som",
	.fops = &som_fops,
	.mode = 0600,
};

/**
 * som_dev_register() - create /dev/som
 *
 * Context: Process context (module init).
 * Return: 0 or the error of misc_register().
 */
int som_dev_register(void)
{
	return misc_register(&som_misc);
}

/**
 * som_dev_unregister() - remove /dev/som
 *
 * Context: Process context (module exit); no file of it is open.
 */
void som_dev_unregister(void)
{
	misc_deregister(&som_misc);
}
