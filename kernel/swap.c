// SPDX-License-Identifier: GPL-2.0
/*
 * The swap store: one file or block device, added by the administrator
 * (SOM_IOC_SWAP_ADD), that som memory is paged out to. It is cut into
 * 2 MiB slots, one per block paged out; a bitmap says which are used. A
 * region records the slot of each of its indices that is paged out
 * (region_swap.c), and a slot is used exactly as long as a region records
 * it, so the store cannot go while any region still needs it:
 * SOM_IOC_SWAP_REMOVE reads every slot back first.
 *
 * som opens the store anew for itself, with the flags its I/O needs
 * (swap_io.c: buffered, random access), so that nothing the caller does
 * with its own descriptor afterwards (fcntl() setting O_APPEND or
 * O_DIRECT) changes where or how som's data goes; a block device it
 * opens exclusively, so that nothing mounts it, swaps to it or opens it
 * exclusively meanwhile.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/bitmap.h>
#include <linux/blkdev.h>
#include <linux/capability.h>
#include <linux/delay.h>
#include <linux/error-injection.h>
#include <linux/falloc.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/magic.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/pagemap.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/vmalloc.h>
#include <uapi/linux/som.h>

#include "migrate.h"
#include "region.h"
#include "som.h"
#include "swap.h"

#define SOM_SWAP_MAX_SIZE	(64ULL << 40)

/**
 * struct som_swap_store - the store in place
 * @file:	som's own open file of it
 * @nr_slots:	2 MiB slots in it
 * @nr_used:	slots that hold a block's data
 * @hint:	where to look for a free slot first
 * @used:	which slots do
 * @going:	SOM_IOC_SWAP_REMOVE is reading it back: no new slots
 * @path:	the path of the file it was added with, for swap/store
 *
 * @nr_used, @hint, @used and @going are protected by som_swap_lock.
 */
struct som_swap_store {
	struct file *file;
	unsigned long nr_slots;
	unsigned long nr_used;
	unsigned long hint;
	unsigned long *used;
	bool going;
	char *path;
};

/*
 * The store, or NULL. It changes only under som_swap_mutex (add and
 * remove) and som_swap_lock; a caller holding a slot may read it bare,
 * since a store with a slot used cannot go.
 */
static struct som_swap_store *som_swap_store;
static DEFINE_SPINLOCK(som_swap_lock);
static DEFINE_MUTEX(som_swap_mutex);

/**
 * struct som_swap_stats - what paging has done since load
 * @out_bytes:	written to a store
 * @in_bytes:	read back from one
 * @write_errors: writes that failed (the block stayed in the pool)
 * @read_errors: reads that failed (the owner got SIGBUS, or a remove
 *		failed)
 * @reclaimed_bytes: of @out_bytes, paged out by swap/reclaim
 */
static struct som_swap_stats {
	atomic_long_t out_bytes;
	atomic_long_t in_bytes;
	atomic_long_t write_errors;
	atomic_long_t read_errors;
	atomic_long_t reclaimed_bytes;
} som_swap_stats;

/**
 * som_swap_ready() - is there a store that takes new blocks?
 *
 * Return: whether a store is in place and not being removed.
 */
bool som_swap_ready(void)
{
	bool ready;

	spin_lock(&som_swap_lock);
	ready = som_swap_store && !som_swap_store->going;
	spin_unlock(&som_swap_lock);
	return ready;
}

/**
 * som_swap_get_slot() - take a free slot of the store
 *
 * Return: the slot, -ENODEV if there is no store or it is being removed,
 * -ENOSPC if it is full.
 */
long som_swap_get_slot(void)
{
	struct som_swap_store *s;
	unsigned long slot;
	long ret = -ENODEV;

	spin_lock(&som_swap_lock);
	s = som_swap_store;
	if (s && !s->going) {
		ret = -ENOSPC;
		slot = find_next_zero_bit(s->used, s->nr_slots, s->hint);
		if (slot >= s->nr_slots)
			slot = find_first_zero_bit(s->used, s->nr_slots);
		if (slot < s->nr_slots) {
			__set_bit(slot, s->used);
			s->nr_used++;
			s->hint = slot + 1;
			ret = slot;
		}
	}
	spin_unlock(&som_swap_lock);
	return ret;
}
ALLOW_ERROR_INJECTION(som_swap_get_slot, ERRNO);

/**
 * som_swap_put_slot() - give back a slot of som_swap_get_slot()
 * @slot: the slot; its data is not needed any more
 */
void som_swap_put_slot(unsigned long slot)
{
	struct som_swap_store *s;

	spin_lock(&som_swap_lock);
	s = som_swap_store;
	if (!WARN_ON_ONCE(!s || slot >= s->nr_slots ||
			  !test_bit(slot, s->used))) {
		__clear_bit(slot, s->used);
		s->nr_used--;
	}
	spin_unlock(&som_swap_lock);
}

/**
 * som_swap_write() - write a block's data to a slot
 * @slot: a slot of som_swap_get_slot()
 * @data: 2 MiB of kernel memory
 *
 * Context: Process context, may sleep until the data is on the store.
 * Return: 0, -ENOMEM, or -EIO (or another error of the file's write).
 */
int som_swap_write(unsigned long slot, const void *data)
{
	struct som_swap_store *s = READ_ONCE(som_swap_store);
	int err;

	err = som_swap_io_write(s->file, (loff_t)slot << SOM_BLOCK_SHIFT, data);
	if (err) {
		atomic_long_inc(&som_swap_stats.write_errors);
		pr_warn_ratelimited("writing slot %lu of the swap store failed: %d\n",
				    slot, err);
		return err;
	}
	atomic_long_add(SOM_BLOCK_SIZE, &som_swap_stats.out_bytes);
	return 0;
}
ALLOW_ERROR_INJECTION(som_swap_write, ERRNO);

/**
 * som_swap_read() - read a slot's data
 * @slot: a slot of som_swap_get_slot()
 * @data: 2 MiB of kernel memory
 *
 * Context: Process context, may sleep; a fatal signal stops it.
 * Return: 0, -EINTR, -ENOMEM, or -EIO if the store could not give the
 * data back (an I/O error, or a store cut short).
 */
int som_swap_read(unsigned long slot, void *data)
{
	struct som_swap_store *s = READ_ONCE(som_swap_store);
	int err;

	err = som_swap_io_read(s->file, (loff_t)slot << SOM_BLOCK_SHIFT, data);
	if (!err) {
		atomic_long_add(SOM_BLOCK_SIZE, &som_swap_stats.in_bytes);
		return 0;
	}
	if (err == -EINTR || err == -ENOMEM)
		return err;
	atomic_long_inc(&som_swap_stats.read_errors);
	pr_warn_ratelimited("reading slot %lu of the swap store failed: %d\n",
			    slot, err);
	return -EIO;
}
ALLOW_ERROR_INJECTION(som_swap_read, ERRNO);

/**
 * som_swap_metadata_bytes() - what the store's description costs
 *
 * Return: its descriptor and bitmap, 0 without a store.
 */
u64 som_swap_metadata_bytes(void)
{
	u64 bytes = 0;

	spin_lock(&som_swap_lock);
	if (som_swap_store)
		bytes = kmalloc_size_roundup(sizeof(*som_swap_store)) +
			BITS_TO_LONGS(som_swap_store->nr_slots) *
			sizeof(unsigned long) +
			(som_swap_store->path ?
			 kmalloc_size_roundup(strlen(som_swap_store->path) + 1) :
			 0);
	spin_unlock(&som_swap_lock);
	return bytes;
}

/*
 * Can @file hold the store? A block device, or a regular file of a file
 * system on a block device or of tmpfs: not a file of FUSE (its server
 * may be a process whose som memory a page-out holds locked while it
 * waits for the write), of a network file system, of procfs (another
 * process's memory) or of som itself; not one marked append-only or
 * immutable, which som's own open would write to anyway.
 */
static int som_swap_check(struct file *file)
{
	struct inode *inode = file_inode(file);
	struct super_block *sb = inode->i_sb;
	umode_t mode = inode->i_mode;

	if (!S_ISREG(mode) && !S_ISBLK(mode))
		return -EINVAL;
	if (S_ISREG(mode) &&
	    (!(sb->s_type->fs_flags & FS_REQUIRES_DEV) ||
	     sb->s_magic == FUSE_SUPER_MAGIC) &&
	    sb->s_magic != TMPFS_MAGIC)
		return -EINVAL;
	if (S_ISREG(mode) && (IS_APPEND(inode) || IS_IMMUTABLE(inode)))
		return -EPERM;
	if ((file->f_mode & (FMODE_READ | FMODE_WRITE)) !=
	    (FMODE_READ | FMODE_WRITE))
		return -EINVAL;
	if (IS_SWAPFILE(file->f_mapping->host))
		return -EBUSY;
	return 0;
}

/*
 * som's own open file of the store @file names, for @size bytes: a block
 * device exclusively (held by @holder), a regular file allocated to
 * @size where its file system can (fallocate()), so that a full disk
 * shows now rather than when a block is paged out. Both without
 * readahead: slots are read one at a time, in no order.
 */
static struct file *som_swap_open(struct file *file, u64 size, void *holder)
{
	struct file *f;
	int err;

	if (S_ISBLK(file_inode(file)->i_mode)) {
		f = bdev_file_open_by_dev(file_bdev(file)->bd_dev,
					  BLK_OPEN_READ | BLK_OPEN_WRITE |
					  BLK_OPEN_EXCL, holder, NULL);
		if (IS_ERR(f))
			return f;
		if (bdev_nr_bytes(file_bdev(f)) < size) {
			fput(f);
			return ERR_PTR(-EINVAL);
		}
	} else {
		f = dentry_open(&file->f_path, O_RDWR | O_LARGEFILE,
				current_cred());
		if (IS_ERR(f))
			return f;
		err = vfs_fallocate(f, 0, 0, size);
		if (err && err != -EOPNOTSUPP) {
			fput(f);
			return ERR_PTR(err);
		}
	}
	f->f_mode |= FMODE_RANDOM;
	/* A writeback error from before is not one of som's writes. */
	if (file_check_and_advance_wb_err(f))
		pr_info("the swap store had a write error before som took it\n");
	return f;
}

/* The path @file was opened by, for swap/store; NULL if it has none. */
static char *som_swap_path(struct file *file)
{
	char *buf = kmalloc(PATH_MAX, GFP_KERNEL), *p, *path = NULL;

	if (!buf)
		return NULL;
	p = file_path(file, buf, PATH_MAX);
	if (!IS_ERR(p))
		path = kstrdup(p, GFP_KERNEL_ACCOUNT);
	kfree(buf);
	return path;
}

/**
 * som_ioctl_swap_add() - SOM_IOC_SWAP_ADD
 * @uarg: a struct som_swap_args
 *
 * A regular file's @size is allocated at once where its file system can
 * (fallocate()), so that a full disk shows here rather than when a block
 * is paged out.
 *
 * Context: Process context, may sleep.
 * Return: 0 or a negative errno (see the uapi header).
 */
long som_ioctl_swap_add(struct som_swap_args __user *uarg)
{
	struct som_swap_args args;
	struct som_swap_store *s;
	struct file *file;
	int err;

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	if (copy_from_user(&args, uarg, sizeof(args)))
		return -EFAULT;
	if (args.flags || args.__reserved[0] || args.__reserved[1] ||
	    !args.size || !IS_ALIGNED(args.size, SOM_BLOCK_SIZE) ||
	    args.size > SOM_SWAP_MAX_SIZE)
		return -EINVAL;
	file = fget(args.fd);
	if (!file)
		return -EBADF;
	err = som_swap_check(file);
	if (err)
		goto err_fput;
	s = kzalloc(sizeof(*s), GFP_KERNEL_ACCOUNT);
	err = -ENOMEM;
	if (!s)
		goto err_fput;
	s->nr_slots = args.size >> SOM_BLOCK_SHIFT;
	s->used = kvcalloc(BITS_TO_LONGS(s->nr_slots), sizeof(unsigned long),
			   GFP_KERNEL_ACCOUNT);
	if (!s->used)
		goto err_free;

	mutex_lock(&som_swap_mutex);
	err = -EBUSY;
	if (som_swap_store)
		goto err_unlock;
	s->path = som_swap_path(file);
	s->file = som_swap_open(file, args.size, s);
	if (IS_ERR(s->file)) {
		err = PTR_ERR(s->file);
		goto err_unlock;
	}
	spin_lock(&som_swap_lock);
	som_swap_store = s;
	spin_unlock(&som_swap_lock);
	som_pool_set_store(&som_pool, s->nr_slots);
	mutex_unlock(&som_swap_mutex);
	fput(file);
	return 0;

err_unlock:
	mutex_unlock(&som_swap_mutex);
	kfree(s->path);
	kvfree(s->used);
err_free:
	kfree(s);
err_fput:
	fput(file);
	return err;
}

/* A block device's exclusive hold goes now, even if a read still runs. */
static void som_swap_free(struct som_swap_store *s)
{
	if (S_ISBLK(file_inode(s->file)->i_mode))
		bdev_fput(s->file);
	else
		fput(s->file);
	kfree(s->path);
	kvfree(s->used);
	kfree(s);
}

/* Read back every slot of every region; the first error, or 0. */
static int som_swap_read_back(void)
{
	struct som_region **regions;
	unsigned long nr, i;
	int err = 0, e;

	regions = som_regions_get(&nr);
	if (!regions)
		return -ENOMEM;
	for (i = 0; i < nr && err != -EINTR; i++) {
		e = som_region_read_back(regions[i]);
		if (e && !err)
			err = e;
		if (e == -EINTR)
			err = e;
	}
	som_regions_put(regions, nr);
	return err;
}

/**
 * som_ioctl_swap_remove() - SOM_IOC_SWAP_REMOVE
 *
 * No slot is handed out from the start: page-outs take
 * som_migrate_mutex from their slot's allocation until a region records
 * it, so once this has taken the mutex, every slot used is in a region.
 *
 * Context: Process context, may sleep.
 * Return: 0 or a negative errno (see the uapi header).
 */
long som_ioctl_swap_remove(void)
{
	struct som_swap_store *s;
	int err, tries;

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	mutex_lock(&som_swap_mutex);
	s = som_swap_store;
	if (!s) {
		mutex_unlock(&som_swap_mutex);
		return -ENOENT;
	}
	/*
	 * No promise may count on it any more, and none may need it now:
	 * checked with no migration holding a block it has not placed yet.
	 */
	mutex_lock(&som_migrate_mutex);
	err = som_pool_drop_store(&som_pool);
	if (err) {
		mutex_unlock(&som_migrate_mutex);
		mutex_unlock(&som_swap_mutex);
		return err;
	}
	spin_lock(&som_swap_lock);
	s->going = true;
	spin_unlock(&som_swap_lock);
	mutex_unlock(&som_migrate_mutex);

	/*
	 * A region whose file is being closed is off the list of regions
	 * before it frees its slots: wait a second at most for those.
	 */
	for (tries = 0;; tries++) {
		err = som_swap_read_back();
		if (err || !READ_ONCE(s->nr_used) || tries == 50)
			break;
		msleep(20);
	}
	spin_lock(&som_swap_lock);
	if (!err && s->nr_used)
		err = -EBUSY;
	if (err)
		s->going = false;
	else
		som_swap_store = NULL;
	spin_unlock(&som_swap_lock);
	if (err)
		som_pool_set_store(&som_pool, s->nr_slots);
	mutex_unlock(&som_swap_mutex);
	if (!err)
		som_swap_free(s);
	return err;
}

/**
 * som_swap_init() - start the worker that does the store's I/O
 *
 * Return: 0 or -ENOMEM.
 */
int som_swap_init(void)
{
	int err;

	err = som_swap_io_init();
	if (err)
		return err;
	err = som_pressure_init();
	if (err)
		som_swap_io_exit();
	return err;
}

/**
 * som_swap_exit() - let the store go at module exit
 *
 * Context: No region is left, so no slot is used; the sysfs files are
 * gone.
 */
void som_swap_exit(void)
{
	struct som_swap_store *s;

	spin_lock(&som_swap_lock);
	s = som_swap_store;
	som_swap_store = NULL;
	spin_unlock(&som_swap_lock);
	if (s) {
		WARN_ON_ONCE(s->nr_used);
		som_swap_free(s);
	}
	som_pressure_exit();
	som_swap_io_exit();
}

static ssize_t som_swap_show_u64(char *buf, bool used)
{
	u64 v = 0;

	spin_lock(&som_swap_lock);
	if (som_swap_store)
		v = (u64)(used ? som_swap_store->nr_used :
			  som_swap_store->nr_slots) << SOM_BLOCK_SHIFT;
	spin_unlock(&som_swap_lock);
	return sysfs_emit(buf, "%llu\n", v);
}

static ssize_t size_bytes_show(struct kobject *kobj,
			       struct kobj_attribute *attr, char *buf)
{
	return som_swap_show_u64(buf, false);
}

static ssize_t used_bytes_show(struct kobject *kobj,
			       struct kobj_attribute *attr, char *buf)
{
	return som_swap_show_u64(buf, true);
}

static ssize_t store_show(struct kobject *kobj, struct kobj_attribute *attr,
			  char *buf)
{
	ssize_t ret;

	spin_lock(&som_swap_lock);
	if (som_swap_store)
		ret = sysfs_emit(buf, "%s\n", som_swap_store->path ?: "?");
	else
		ret = sysfs_emit(buf, "\n");
	spin_unlock(&som_swap_lock);
	return ret;
}

#define SOM_SWAP_STAT(name, field)					\
static ssize_t name##_show(struct kobject *kobj,			\
			   struct kobj_attribute *attr, char *buf)	\
{									\
	return sysfs_emit(buf, "%ld\n",					\
			  atomic_long_read(&som_swap_stats.field));	\
}									\
static struct kobj_attribute som_swap_##name##_attr = __ATTR_RO(name)

SOM_SWAP_STAT(out_bytes, out_bytes);
SOM_SWAP_STAT(in_bytes, in_bytes);
SOM_SWAP_STAT(write_errors, write_errors);
SOM_SWAP_STAT(read_errors, read_errors);
SOM_SWAP_STAT(reclaimed_bytes, reclaimed_bytes);

/* Page out BYTES of the coldest memory (pageout.c), now. */
static ssize_t reclaim_store(struct kobject *kobj, struct kobj_attribute *attr,
			     const char *buf, size_t count)
{
	u64 bytes, done;
	char *end;
	int err;

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	bytes = memparse(buf, &end);
	if (end == buf || (*end && *end != '\n'))
		return -EINVAL;
	err = som_reclaim(bytes, NULL, &done);
	atomic_long_add(done, &som_swap_stats.reclaimed_bytes);
	return err ? err : count;
}

static struct kobj_attribute som_swap_reclaim_attr = __ATTR_WO(reclaim);

static ssize_t overcommit_show(struct kobject *kobj,
			       struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%d\n", READ_ONCE(som_pool.overcommit));
}

/* Whether the pool may promise the store's room too (pool_overcommit.c). */
static ssize_t overcommit_store(struct kobject *kobj,
				struct kobj_attribute *attr,
				const char *buf, size_t count)
{
	bool on;
	int err;

	err = som_sysfs_admin_bool(buf, &on);
	if (err)
		return err;
	som_pool_set_overcommit(&som_pool, on);
	return count;
}

static struct kobj_attribute som_swap_overcommit_attr = __ATTR_RW(overcommit);

static ssize_t overcommitted_bytes_show(struct kobject *kobj,
					struct kobj_attribute *attr,
					char *buf)
{
	return sysfs_emit(buf, "%llu\n",
			  (u64)som_pool_overcommitted(&som_pool) <<
			  SOM_BLOCK_SHIFT);
}

static struct kobj_attribute som_swap_overcommitted_attr =
	__ATTR_RO(overcommitted_bytes);

static struct kobj_attribute som_swap_size_attr = __ATTR_RO(size_bytes);
static struct kobj_attribute som_swap_used_attr = __ATTR_RO(used_bytes);
static struct kobj_attribute som_swap_store_attr = __ATTR_RO(store);

static struct attribute *som_swap_attrs[] = {
	&som_swap_store_attr.attr,
	&som_swap_size_attr.attr,
	&som_swap_used_attr.attr,
	&som_swap_out_bytes_attr.attr,
	&som_swap_in_bytes_attr.attr,
	&som_swap_write_errors_attr.attr,
	&som_swap_read_errors_attr.attr,
	&som_swap_reclaim_attr.attr,
	&som_swap_reclaimed_bytes_attr.attr,
	&som_swap_overcommit_attr.attr,
	&som_swap_overcommitted_attr.attr,
	&som_pressure_passes_attr.attr,
	&som_pressure_reclaimed_bytes_attr.attr,
	&som_pressure_waits_attr.attr,
	&som_pressure_failures_attr.attr,
	NULL,
};

const struct attribute_group som_swap_group = {
	.name = "swap",
	.attrs = som_swap_attrs,
};
