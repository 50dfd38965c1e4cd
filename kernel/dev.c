// SPDX-License-Identifier: GPL-2.0
/*
 * /dev/som: each open file is one empty region; mmap(MAP_SHARED) of it
 * gives the caller single-owner memory.
 *
 * The VMA is VM_PFNMAP (no struct page behind it, GUP refuses it), VM_IO
 * (so that MADV_DOFORK cannot clear VM_DONTCOPY), VM_DONTCOPY (fork never
 * gives a child the memory), VM_DONTDUMP and VM_DONTEXPAND (mremap cannot
 * grow it past its reservation).
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

#include "region.h"
#include "som.h"

static int som_open(struct inode *inode, struct file *file)
{
	struct som_region *region = som_region_create(&som_pool);

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
	int err;

	if (!(vma->vm_flags & VM_MAYSHARE))
		return -EINVAL;
	err = som_region_map(file->private_data, vma);
	if (err)
		return err;
	vm_flags_set(vma, VM_PFNMAP | VM_IO | VM_DONTCOPY | VM_DONTDUMP |
			  VM_DONTEXPAND | VM_HUGEPAGE);
	vma->vm_ops = &som_vm_ops;
	vma->vm_private_data = file->private_data;
	return 0;
}

/*
 * Place mappings of at least 1 GiB (2 MiB) at a virtual address with the
 * same 1 GiB (2 MiB) alignment as their file offset, so that they can be
 * mapped with 1 GiB (2 MiB) entries. A caller's address hint wins.
 */
static unsigned long som_get_unmapped_area(struct file *file,
					   unsigned long addr,
					   unsigned long len,
					   unsigned long pgoff,
					   unsigned long flags)
{
	unsigned long align = len >= PUD_SIZE ? PUD_SIZE : PMD_SIZE;
	unsigned long off = pgoff << PAGE_SHIFT, ret;

	if (addr || (flags & MAP_FIXED) || len < PMD_SIZE || len + align < len)
		goto out;
	ret = mm_get_unmapped_area(current->mm, file, 0, len + align, pgoff,
				   flags);
	if (IS_ERR_VALUE(ret))
		goto out;
	return ret + ((off - ret) & (align - 1));
out:
	return mm_get_unmapped_area(current->mm, file, addr, len, pgoff, flags);
}

static long som_ioctl_mapping(struct som_region *region,
			      struct som_mapping __user *uarg)
{
	struct mm_struct *mm = current->mm;
	struct vm_area_struct *vma;
	struct som_mapping arg;
	int err = 0;

	if (copy_from_user(&arg, uarg, sizeof(arg)))
		return -EFAULT;
	if (arg.flags || arg.__pad || arg.__reserved[0] || arg.__reserved[1])
		return -EINVAL;
	if (mmap_read_lock_killable(mm))
		return -EINTR;
	vma = vma_lookup(mm, arg.addr);
	if (!vma || vma->vm_ops != &som_vm_ops ||
	    vma->vm_private_data != region) {
		err = -EINVAL;
	} else {
		arg.page_size = som_mapped_size(mm, arg.addr);
		arg.offset = ((u64)linear_page_index(vma, arg.addr)
			      << PAGE_SHIFT) + offset_in_page(arg.addr);
	}
	mmap_read_unlock(mm);
	if (err)
		return err;
	if (copy_to_user(uarg, &arg, sizeof(arg)))
		return -EFAULT;
	return 0;
}

static long som_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	switch (cmd) {
	case SOM_IOC_MAPPING:
		return som_ioctl_mapping(file->private_data,
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
