// SPDX-License-Identifier: GPL-2.0
/*
 * Memory errors in som memory: where they come from and what is done.
 *
 * On Linux 6.12 memory_failure() ignores pfns without struct page
 * ("memory outside kernel control"): for som memory nothing would be
 * unmapped or retired. So som listens itself. On x86 the MCE decode chain
 * reports every logged machine check with its physical address, in a
 * worker after the fact: an uncorrected memory error (SRAO from a patrol
 * scrub, SRAR consumed by a load, UCNA) that falls in the pool is queued
 * here. An administrator (or a test) may also declare a page poisoned
 * with SOM_IOC_POISON. Either way, one error at a time:
 *
 *	1. the pool records the page and retires its 2 MiB block if it is
 *	   free (pool_poison.c); if every free block of its set is promised
 *	   to mappings, one mapping's reservation moves elsewhere;
 *	2. if a region holds the block, the page becomes a hole of that
 *	   region (region_poison.c) and the block's other 511 pages move to
 *	   a healthy block with a machine-check-safe copy (migrate.c); the
 *	   old block is retired as it is freed.
 *
 * An SRAR in the owner's user code has already sent the owner SIGBUS by
 * the time the decode chain runs (the kernel's own path, kill_me_maybe():
 * si_code SI_KERNEL, no address); from then on the page is a hole and a
 * touch gets BUS_MCEERR_AR with its address.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/capability.h>
#include <linux/kfifo.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/pagemap.h>
#include <linux/uaccess.h>
#include <linux/workqueue.h>
#include <uapi/linux/som.h>
#ifdef CONFIG_X86_MCE
#include <asm/mce.h>
#endif

#include "migrate.h"
#include "pack.h"
#include "region.h"
#include "som.h"
#include "som_trace.h"

/* One error handled at a time; outside som_migrate_mutex. */
static DEFINE_MUTEX(som_poison_mutex);

/**
 * som_poison_page() - handle a memory error in a page of the pool
 * @pfn: the page
 * @how: where the report came from, for the kernel log
 *
 * Context: Process context, may sleep for long (it may move 2 MiB).
 * Return: 0; -ENOENT if @pfn is not pool memory; -ENOMEM if the region
 * holding it could not be looked for (the block is retired when freed,
 * but the page was left mapped).
 */
int som_poison_page(unsigned long pfn, const char *how)
{
	struct som_poison_where where;
	int state, err = 0;

	mutex_lock(&som_poison_mutex);
	state = som_pool_poison(&som_pool, pfn, &where);
	switch (state) {
	case SOM_POISON_RETIRED:
		pr_info("%s at pfn %#lx: its 2 MiB block is retired\n", how,
			pfn);
		break;
	case SOM_POISON_IN_USE:
		err = som_migrate_poison(&som_pool, pfn);
		if (err == 1)
			pr_info("%s at pfn %#lx: the owner lost 4 KiB; the rest of its block moved\n",
				how, pfn);
		else if (!err)
			pr_info("%s at pfn %#lx: the owner lost 4 KiB; its block stays in place\n",
				how, pfn);
		else if (err == -ENOENT)
			pr_info("%s at pfn %#lx: its 2 MiB block left its owner meanwhile (freed, or moved without the page) and is retired\n",
				how, pfn);
		else
			pr_err("%s at pfn %#lx: its owner's mapping not changed (%d)\n",
			       how, pfn, err);
		if (err == 1 || err == -ENOENT)
			err = 0;
		break;
	default:
		err = state;
	}
	trace_som_poison(pfn, how, state, err);
	mutex_unlock(&som_poison_mutex);
	return err;
}

/* Resolve the page behind @addr in a som mapping of the caller. */
static int som_poison_addr_pfn(unsigned long addr, unsigned long *pfn)
{
	struct mm_struct *mm = current->mm;
	struct som_region *region;
	struct vm_area_struct *vma;
	unsigned long entry;
	pgoff_t pgoff;
	int err = 0;

	if (mmap_read_lock_killable(mm))
		return -EINTR;
	vma = vma_lookup(mm, addr);
	if (!vma || vma->vm_ops != &som_vm_ops) {
		mmap_read_unlock(mm);
		return -EINVAL;
	}
	region = vma->vm_private_data;
	pgoff = linear_page_index(vma, addr);
	som_region_lock(region);
	entry = som_table_get(&region->table,
			      pgoff >> SOM_PAGES_PER_BLOCK_SHIFT);
	if (som_region_poisoned(region, pgoff, 1))
		err = -EHWPOISON;
	else if (region->mapping &&
		 som_pack_sparse(region, pgoff >> SOM_PAGES_PER_BLOCK_SHIFT,
				 pgoff >> SOM_PAGES_PER_BLOCK_SHIFT))
		err = som_pack_page(region, pgoff, false, pfn);
	else if (!som_table_is_block(entry))
		err = -ENODATA;
	else
		*pfn = som_bfn_to_pfn(entry) +
		       (pgoff & (SOM_PAGES_PER_BLOCK - 1));
	som_region_unlock(region);
	mmap_read_unlock(mm);
	return err;
}

/* SOM_POISON_FORGET: memory outside the pool was replaced. */
static long som_poison_forget(const struct som_poison *arg)
{
	int nr;

	if (arg->flags != SOM_POISON_FORGET || arg->addr || !arg->len ||
	    !PAGE_ALIGNED(arg->phys) || !PAGE_ALIGNED(arg->len) ||
	    arg->phys + arg->len < arg->phys)
		return -EINVAL;
	nr = som_pool_forget_poison(&som_pool, arg->phys, arg->len);
	return nr < 0 ? nr : 0;
}

/**
 * som_ioctl_poison() - SOM_IOC_POISON
 * @uarg: the caller's struct som_poison
 *
 * Context: Process context, may sleep.
 * Return: 0 or a negative errno, see include/uapi/linux/som.h.
 */
long som_ioctl_poison(struct som_poison __user *uarg)
{
	struct som_poison arg;
	unsigned long pfn;
	int err;

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	if (copy_from_user(&arg, uarg, sizeof(arg)))
		return -EFAULT;
	if ((arg.flags & ~SOM_POISON_FLAGS) || arg.__pad || arg.__reserved)
		return -EINVAL;
	if (arg.flags & SOM_POISON_FORGET)
		return som_poison_forget(&arg);
	if (arg.len)
		return -EINVAL;
	if (arg.flags & SOM_POISON_ADDR) {
		err = som_poison_addr_pfn(arg.addr, &pfn);
		if (err)
			return err;
	} else {
		pfn = arg.phys >> PAGE_SHIFT;
		if (!som_pool_contains(&som_pool, PFN_PHYS(pfn), PAGE_SIZE))
			return -EINVAL;
	}
	if (!(arg.flags & SOM_POISON_LOOKUP)) {
		err = som_poison_page(pfn, "injected error");
		if (err)
			return err == -ENOENT ? -EINVAL : err;
	}
	arg.phys = PFN_PHYS(pfn);
	if (copy_to_user(uarg, &arg, sizeof(arg)))
		return -EFAULT;
	return 0;
}

#ifdef CONFIG_X86_MCE
/*
 * Machine checks come from the MCE decode chain's worker; they are handled
 * in a worker of som's own, so that moving 2 MiB does not hold up the
 * reports of other errors. Errors beyond what the queue holds are only
 * logged: the kernel logged the machine check itself, too.
 */
static DEFINE_SPINLOCK(som_mce_lock);
static DEFINE_KFIFO(som_mce_fifo, unsigned long, 64);

static void som_mce_work_fn(struct work_struct *work)
{
	unsigned long pfn;

	while (kfifo_out_spinlocked(&som_mce_fifo, &pfn, 1, &som_mce_lock))
		som_poison_page(pfn, "memory error");
}

static DECLARE_WORK(som_mce_work, som_mce_work_fn);

static int som_mce_notify(struct notifier_block *nb, unsigned long val,
			  void *data)
{
	struct mce *m = data;
	unsigned long pfn;

	if (!m || !(m->status & MCI_STATUS_UC) || !mce_is_memory_error(m) ||
	    !mce_usable_address(m))
		return NOTIFY_DONE;
	pfn = (m->addr & MCI_ADDR_PHYSADDR) >> PAGE_SHIFT;
	if (!som_pool_contains(&som_pool, PFN_PHYS(pfn), PAGE_SIZE))
		return NOTIFY_DONE;
	if (!kfifo_in_spinlocked(&som_mce_fifo, &pfn, 1, &som_mce_lock))
		pr_err("memory error at pfn %#lx not handled: too many at once\n",
		       pfn);
	queue_work(system_long_wq, &som_mce_work);
	return NOTIFY_OK;
}

static struct notifier_block som_mce_nb = {
	.notifier_call	= som_mce_notify,
	.priority	= MCE_PRIO_UC,
};

/**
 * som_poison_init() - listen to machine checks
 *
 * Context: Process context (module init).
 */
void som_poison_init(void)
{
	mce_register_decode_chain(&som_mce_nb);
}

/**
 * som_poison_exit() - stop listening, finish what was queued
 *
 * Context: Process context (module exit).
 */
void som_poison_exit(void)
{
	mce_unregister_decode_chain(&som_mce_nb);
	flush_work(&som_mce_work);
}
#else
void som_poison_init(void)
{
}

void som_poison_exit(void)
{
}
#endif
