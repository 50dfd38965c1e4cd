// SPDX-License-Identifier: GPL-2.0
/*
 * The swap store's I/O (swap.c): one 2 MiB write or read of a slot at a
 * time, done by a worker of the som_swap workqueue rather than by the
 * task that pages out or faults:
 *
 * - the worker holds none of the locks a page-out or a fault holds (the
 *   owner's mmap_lock, the region lock, som_migrate_mutex), so a file
 *   system whose reads take the inode lock (XFS, NFS) sees no inversion
 *   of the inode lock and mmap_lock;
 * - the I/O runs with the worker's credentials, charges the store's page
 *   cache to no owner's cgroup, and is not subject to the owner's
 *   RLIMIT_FSIZE, any of which would otherwise turn into SIGBUS or a
 *   refused page-out for reasons that are the administrator's business.
 *
 * som memory has no struct page, so both directions go through the
 * store's page cache, copying from and to kernel addresses (buffered I/O;
 * the store is opened without O_DIRECT). A write is written back and
 * checked against som's own file's cursor in the mapping's error
 * sequence, which reports each writeback error once to that file
 * whatever else reads the errors, and moves past it: one failed
 * writeback fails that page-out, not every later one. Then the range's
 * page cache is dropped, after a read too, so that what a page-out frees
 * is not held again as page cache.
 *
 * A read goes into a buffer of the worker's own, copied into the block
 * once the read is done: a fatal signal stops the faulting task's wait,
 * and the worker then finishes into its buffer and frees it.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/completion.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/pagemap.h>
#include <linux/refcount.h>
#include <linux/slab.h>
#include <linux/workqueue.h>

#include "pool.h"
#include "swap.h"

static struct workqueue_struct *som_swap_wq;

/**
 * struct som_swap_io - one slot's write or read
 * @work:	on som_swap_wq
 * @file:	the store, referenced
 * @buf:	2 MiB: the data to write (the caller's), or the worker's own
 *		buffer to read into
 * @pos:	the slot's offset in @file
 * @write:	write, else read
 * @err:	out: 0 or the error
 * @ref:	the waiter's and the worker's
 * @done:	completed when the I/O is over
 */
struct som_swap_io {
	struct work_struct work;
	struct file *file;
	void *buf;
	loff_t pos;
	bool write;
	int err;
	refcount_t ref;
	struct completion done;
};

static void som_swap_io_put(struct som_swap_io *io)
{
	if (!refcount_dec_and_test(&io->ref))
		return;
	fput(io->file);
	if (!io->write)
		kvfree(io->buf);
	kfree(io);
}

static void som_swap_io_fn(struct work_struct *work)
{
	struct som_swap_io *io = container_of(work, struct som_swap_io, work);
	struct address_space *mapping = io->file->f_mapping;
	loff_t end = io->pos + SOM_BLOCK_SIZE - 1, pos = io->pos;
	ssize_t n;
	int err;

	if (io->write)
		n = kernel_write(io->file, io->buf, SOM_BLOCK_SIZE, &pos);
	else
		n = kernel_read(io->file, io->buf, SOM_BLOCK_SIZE, &pos);
	err = n == SOM_BLOCK_SIZE ? 0 : n < 0 ? n : -EIO;
	if (io->write) {
		int e = filemap_fdatawrite_range(mapping, io->pos, end);

		filemap_fdatawait_range_keep_errors(mapping, io->pos, end);
		if (!err)
			err = e;
		/* Writes are one at a time: an error now is this one's. */
		e = file_check_and_advance_wb_err(io->file);
		if (!err)
			err = e;
	}
	invalidate_mapping_pages(mapping, io->pos >> PAGE_SHIFT,
				 end >> PAGE_SHIFT);
	io->err = err;
	complete(&io->done);
	som_swap_io_put(io);
}

static struct som_swap_io *som_swap_io_new(struct file *file, loff_t pos,
					   void *buf, bool write)
{
	struct som_swap_io *io = kmalloc(sizeof(*io), GFP_KERNEL);

	if (!io)
		return NULL;
	if (!buf) {
		buf = kvmalloc(SOM_BLOCK_SIZE, GFP_KERNEL);
		if (!buf) {
			kfree(io);
			return NULL;
		}
	}
	INIT_WORK(&io->work, som_swap_io_fn);
	io->file = get_file(file);
	io->buf = buf;
	io->pos = pos;
	io->write = write;
	io->err = 0;
	refcount_set(&io->ref, 2);
	init_completion(&io->done);
	return io;
}

/**
 * som_swap_io_write() - write 2 MiB to the store and see it written back
 * @file: the store
 * @pos: where, 2 MiB aligned
 * @data: the 2 MiB, kernel memory
 *
 * Context: Process context; sleeps, not interruptibly, until the data is
 * on the store or the write failed (@data is in use until then).
 * Return: 0, -ENOMEM, or the write's error.
 */
int som_swap_io_write(struct file *file, loff_t pos, const void *data)
{
	struct som_swap_io *io;
	int err;

	io = som_swap_io_new(file, pos, (void *)data, true);
	if (!io)
		return -ENOMEM;
	queue_work(som_swap_wq, &io->work);
	wait_for_completion(&io->done);
	err = io->err;
	som_swap_io_put(io);
	return err;
}

/**
 * som_swap_io_read() - read 2 MiB from the store
 * @file: the store
 * @pos: where, 2 MiB aligned
 * @data: where to put the 2 MiB
 *
 * Context: Process context, may sleep; a fatal signal stops the wait
 * (the read finishes in the worker's buffer, and @data is not written).
 * Return: 0, -EINTR, -ENOMEM, or the read's error (-EIO for a short one).
 */
int som_swap_io_read(struct file *file, loff_t pos, void *data)
{
	struct som_swap_io *io;
	int err;

	io = som_swap_io_new(file, pos, NULL, false);
	if (!io)
		return -ENOMEM;
	queue_work(som_swap_wq, &io->work);
	if (wait_for_completion_killable(&io->done)) {
		som_swap_io_put(io);
		return -EINTR;
	}
	err = io->err;
	if (!err)
		memcpy(data, io->buf, SOM_BLOCK_SIZE);
	som_swap_io_put(io);
	return err;
}

/**
 * som_swap_io_init() - start the worker
 *
 * Return: 0 or -ENOMEM.
 */
int som_swap_io_init(void)
{
	som_swap_wq = alloc_workqueue("som_swap", WQ_UNBOUND | WQ_MEM_RECLAIM,
				      0);
	return som_swap_wq ? 0 : -ENOMEM;
}

/**
 * som_swap_io_exit() - stop it, once every I/O is over
 */
void som_swap_io_exit(void)
{
	destroy_workqueue(som_swap_wq);
}
