// SPDX-License-Identifier: GPL-2.0
/*
 * som files: a region behind a regular-file inode on som's own pseudo
 * filesystem, returned as a new fd by SOM_IOC_FILE. Being a regular file
 * is what lets ftruncate(), fallocate() and madvise(MADV_REMOVE) reach the
 * region: the VFS refuses them on a character device. The pattern is
 * mm/secretmem.c's.
 *
 * The filesystem is mounted while some som file exists (simple_pin_fs()),
 * and its file_system_type holds the module: an inode of it, reachable
 * through /proc/PID/fd for a while after its file is closed, never
 * outlives the code of its operations.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/fs.h>
#include <linux/falloc.h>
#include <linux/file.h>
#include <linux/fs_context.h>
#include <linux/module.h>
#include <linux/pseudo_fs.h>
#include <linux/sched/signal.h>
#include <linux/uaccess.h>
#include <uapi/linux/som.h>

#include "pack.h"
#include "region.h"
#include "som.h"
#include "swap.h"

#define SOM_FILE_MAGIC		0x534f4d46	/* "SOMF" */

/*
 * 4 EiB: far below the point where rounding a size up to 2 MiB could
 * overflow, and below the region's pack blocks (pack.h).
 */
#define SOM_FILE_MAX_BYTES	((loff_t)SOM_PACK_FIRST << SOM_BLOCK_SHIFT)

static struct vfsmount *som_file_mnt;
static int som_file_mnt_count;

/* The pool's "cannot reserve" is ENOSPC for a file, as on a full tmpfs. */
static int som_file_errno(int err)
{
	return err == -ENOMEM ? -ENOSPC : err;
}

/*
 * Lock what changing a som file's memory needs: for a change that frees
 * mapped memory (@zap: shrinking, punching a hole), current's mmap_lock
 * for write, then the region. Only the owner may change the file once it
 * is mapped, and only the owner's mm maps it, so that is the mmap_lock of
 * every mapping the change zaps. It must be the write lock: munmap()
 * clears page tables under the read lock and flushes the TLB only after,
 * so under a read lock a block could be freed while another CPU still
 * caches a translation to it. Zapping part of a 1 GiB entry also splits
 * it, which the core does only under mmap_lock.
 */
static int som_file_lock(struct som_region *region, bool zap)
{
	struct mm_struct *mm = zap ? current->mm : NULL;
	int err;

	if (mm && mmap_write_lock_killable(mm))
		return -EINTR;
	som_region_lock(region);
	err = som_region_may_modify(region);
	if (err) {
		som_region_unlock(region);
		if (mm)
			mmap_write_unlock(mm);
	}
	return err;
}

static void som_file_unlock(struct som_region *region, bool zap)
{
	som_region_unlock(region);
	if (zap && current->mm)
		mmap_write_unlock(current->mm);
}

/*
 * An overcommitting pool has no block to fill or read back into until
 * another is paged out (pressure.c), which needs the locks som_file_lock()
 * took: drop them, wait for a pass of reclaim, and take them again. The
 * inode lock stays, so the size does not change meanwhile. Returns with
 * the locks held again: 0 (try again), -ENOMEM (the pass paged out
 * nothing: give up), -EINTR, or -EPERM if another process mapped the file
 * first meanwhile and owns it now: then the caller must change nothing
 * more, not even undo what it did, since the mappings are another mm's.
 */
static int som_file_wait_pageout(struct som_region *region, bool zap)
{
	struct mm_struct *mm = zap ? current->mm : NULL;
	int err;

	som_file_unlock(region, zap);
	som_pressure_wait(som_pressure_kick(1, &region->claim));
	if (mm)
		mmap_write_lock(mm);
	som_region_lock(region);
	err = som_region_may_modify(region);
	if (err)
		return err;
	if (fatal_signal_pending(current))
		return -EINTR;
	return som_pressure_hopeless() ? -ENOMEM : 0;
}

static int som_file_release(struct inode *inode, struct file *file)
{
	struct som_region *region = file->private_data;

	/* setattr() through a /proc/PID/fd path may still find the inode. */
	inode_lock(inode);
	inode->i_private = NULL;
	inode_unlock(inode);
	som_region_destroy(region);
	simple_release_fs(&som_file_mnt, &som_file_mnt_count);
	return 0;
}

static int som_file_mmap(struct file *file, struct vm_area_struct *vma)
{
	return som_vma_mmap(file->private_data, vma);
}

static long som_file_fallocate(struct file *file, int mode, loff_t offset,
			       loff_t len)
{
	struct som_region *region = file->private_data;
	bool punch = mode & FALLOC_FL_PUNCH_HOLE, zap;
	struct inode *inode = file_inode(file);
	loff_t end = offset + len, size;
	int err;

	if (mode & ~(FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE))
		return -EOPNOTSUPP;
	if (end > SOM_FILE_MAX_BYTES)
		return -EFBIG;

	inode_lock(inode);
	/* Extending may have to shrink back on failure. */
	zap = punch || (!(mode & FALLOC_FL_KEEP_SIZE) && end > inode->i_size);
	err = som_file_lock(region, zap);
	if (err)
		goto out_inode_unlock;
	size = i_size_read(inode);
	if (punch) {
		if (offset >= size)
			goto out_unlock;
		while ((err = som_region_punch(region, offset,
					       min(end, size))) == -EAGAIN &&
		       !(err = som_file_wait_pageout(region, zap)))
			;
		goto out_unlock;
	}
	if (!(mode & FALLOC_FL_KEEP_SIZE) && end > size) {
		while ((err = som_region_resize(region, end)) == -EAGAIN &&
		       !(err = som_file_wait_pageout(region, zap)))
			;
		if (err)
			goto out_unlock;
	}
	/* Memory is never held past EOF: KEEP_SIZE allocates up to it. */
	while ((err = som_region_allocate(region, offset,
					  min(end, i_size_read(inode)))) ==
	       -EAGAIN && !(err = som_file_wait_pageout(region, zap)))
		;
	/*
	 * A failed call leaves the size alone (nothing past it is mapped),
	 * unless the file found another owner while it waited.
	 */
	if (err && err != -EPERM && i_size_read(inode) != size)
		som_region_resize_back(region, size);
out_unlock:
	som_file_unlock(region, zap);
out_inode_unlock:
	inode_unlock(inode);
	return som_file_errno(err);
}

static long som_file_ioctl(struct file *file, unsigned int cmd,
			   unsigned long arg)
{
	switch (cmd) {
	case SOM_IOC_MAPPING:
		return som_ioctl_mapping((void __user *)arg);
	case SOM_IOC_POLICY:
		return som_ioctl_policy(file->private_data,
					(void __user *)arg);
	case SOM_IOC_PAGEOUT:
		return som_ioctl_pageout(file->private_data,
					 (void __user *)arg);
	default:
		return -ENOTTY;
	}
}

static const struct file_operations som_file_fops = {
	.owner = THIS_MODULE,
	.release = som_file_release,
	.mmap = som_file_mmap,
	.get_unmapped_area = som_get_unmapped_area,
	.fallocate = som_file_fallocate,
	.fsync = noop_fsync,
	.llseek = generic_file_llseek,
	.unlocked_ioctl = som_file_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
};

/* ftruncate() and the attributes; the VFS holds i_rwsem. */
static int som_file_setattr(struct mnt_idmap *idmap, struct dentry *dentry,
			    struct iattr *attr)
{
	struct inode *inode = d_inode(dentry);
	struct som_region *region = inode->i_private;
	bool shrink;
	int err;

	err = setattr_prepare(idmap, dentry, attr);
	if (err)
		return err;
	if ((attr->ia_valid & ATTR_SIZE) && attr->ia_size != inode->i_size) {
		if (!region)
			return -EBADF;
		if (attr->ia_size > SOM_FILE_MAX_BYTES)
			return -EFBIG;
		shrink = attr->ia_size < inode->i_size;
		err = som_file_lock(region, shrink);
		if (err)
			return err;
		while ((err = som_region_resize(region, attr->ia_size)) ==
		       -EAGAIN && !(err = som_file_wait_pageout(region, shrink)))
			;
		som_file_unlock(region, shrink);
		if (err)
			return som_file_errno(err);
	}
	setattr_copy(idmap, inode, attr);
	return 0;
}

static const struct inode_operations som_file_iops = {
	.setattr = som_file_setattr,
};

static int som_file_init_fs_context(struct fs_context *fc)
{
	return init_pseudo(fc, SOM_FILE_MAGIC) ? 0 : -ENOMEM;
}

static struct file_system_type som_file_fs = {
	.owner = THIS_MODULE,
	.name = "som",
	.init_fs_context = som_file_init_fs_context,
	.kill_sb = kill_anon_super,
};

/* A som file of @size bytes, its memory reserved. */
static struct file *som_file_new(loff_t size)
{
	struct som_region *region;
	struct inode *inode;
	struct file *file;
	int err;

	err = simple_pin_fs(&som_file_fs, &som_file_mnt, &som_file_mnt_count);
	if (err)
		return ERR_PTR(err);
	inode = alloc_anon_inode(som_file_mnt->mnt_sb);
	if (IS_ERR(inode)) {
		err = PTR_ERR(inode);
		goto err_release_fs;
	}
	/* A regular file whose space is allocated in 2 MiB blocks. */
	inode->i_mode |= S_IFREG;
	inode->i_op = &som_file_iops;
	inode->i_blkbits = SOM_BLOCK_SHIFT;

	region = som_region_create(&som_pool, inode->i_mapping);
	if (!region) {
		err = -ENOMEM;
		goto err_iput;
	}
	som_region_lock(region);
	err = som_region_resize(region, size);
	som_region_unlock(region);
	if (err)
		goto err_destroy_region;
	inode->i_private = region;

	/* The file's release drops this (fops_put() in __fput()). */
	__module_get(THIS_MODULE);
	file = alloc_file_pseudo(inode, som_file_mnt, "som", O_RDWR,
				 &som_file_fops);
	if (IS_ERR(file)) {
		err = PTR_ERR(file);
		goto err_module_put;
	}
	file->private_data = region;
	file->f_flags |= O_LARGEFILE;
	return file;

err_module_put:
	module_put(THIS_MODULE);
err_destroy_region:
	som_region_destroy(region);
err_iput:
	iput(inode);
err_release_fs:
	simple_release_fs(&som_file_mnt, &som_file_mnt_count);
	return ERR_PTR(som_file_errno(err));
}

/**
 * som_file_create() - SOM_IOC_FILE: make a som file and return its fd
 * @uarg: the caller's struct som_file_args
 *
 * Context: Process context, may sleep.
 * Return: the new file descriptor, or -EFAULT, -EINVAL, -EFBIG, -ENOSPC,
 * -EMFILE, -ENFILE or -ENOMEM.
 */
long som_file_create(struct som_file_args __user *uarg)
{
	struct som_file_args args;
	struct file *file;
	int fd;

	if (copy_from_user(&args, uarg, sizeof(args)))
		return -EFAULT;
	if ((args.flags & ~SOM_FILE_FLAGS) || args.__pad ||
	    args.__reserved[0] || args.__reserved[1])
		return -EINVAL;
	if (args.size > SOM_FILE_MAX_BYTES)
		return -EFBIG;

	fd = get_unused_fd_flags(args.flags & SOM_FILE_CLOEXEC ? O_CLOEXEC : 0);
	if (fd < 0)
		return fd;
	file = som_file_new(args.size);
	if (IS_ERR(file)) {
		put_unused_fd(fd);
		return PTR_ERR(file);
	}
	fd_install(fd, file);
	return fd;
}
