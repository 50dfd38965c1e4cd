// SPDX-License-Identifier: GPL-2.0
/*
 * SOM_IOC_PROC_USAGE: how much som memory a process maps, and with which
 * entry sizes; SOM_IOC_PROC_AGES: how long it has gone unused. smaps,
 * numa_maps and page_idle skip PFN-mapped VMAs, so without these an
 * administrator could not see which processes hold the pool, or how much
 * of it they use.
 */
#include <linux/capability.h>
#include <linux/mm.h>
#include <linux/pagemap.h>
#include <linux/pid.h>
#include <linux/sched/mm.h>
#include <linux/sched/task.h>
#include <linux/uaccess.h>
#include <uapi/linux/som.h>

#include "region.h"
#include "som.h"

/*
 * The address space of @nr (0: the caller), with a reference, if the
 * caller may look at it: its own, or any with CAP_SYS_PTRACE. An ERR_PTR:
 * -EINVAL for a negative @nr, -EPERM, -ESRCH.
 */
static struct mm_struct *som_usage_mm(pid_t nr)
{
	struct task_struct *task;
	struct mm_struct *mm;
	struct pid *pid;

	if (nr < 0)
		return ERR_PTR(-EINVAL);
	if (nr && nr != task_tgid_vnr(current) && !capable(CAP_SYS_PTRACE))
		return ERR_PTR(-EPERM);
	if (!nr)
		return get_task_mm(current) ?: ERR_PTR(-ESRCH);
	pid = find_get_pid(nr);
	if (!pid)
		return ERR_PTR(-ESRCH);
	task = get_pid_task(pid, PIDTYPE_TGID);
	put_pid(pid);
	if (!task)
		return ERR_PTR(-ESRCH);
	mm = get_task_mm(task);
	put_task_struct(task);
	return mm ?: ERR_PTR(-ESRCH);
}

/**
 * som_ioctl_proc_usage() - SOM_IOC_PROC_USAGE on /dev/som
 * @uarg: the caller's struct som_proc_usage
 *
 * Context: Process context; takes the process's mmap_lock for read.
 * Return: 0, -EFAULT, -EINVAL, -EPERM (another process, without
 * CAP_SYS_PTRACE), -ESRCH (no such process or no address space), -EINTR.
 */
long som_ioctl_proc_usage(struct som_proc_usage __user *uarg)
{
	struct som_proc_usage arg;
	struct vm_area_struct *vma;
	struct vma_iterator vmi;
	struct mm_struct *mm;
	u64 entries[3] = { 0 };
	int err = 0;

	if (copy_from_user(&arg, uarg, sizeof(arg)))
		return -EFAULT;
	if (arg.flags || arg.__reserved[0] || arg.__reserved[1])
		return -EINVAL;
	mm = som_usage_mm(arg.pid);
	if (IS_ERR(mm))
		return PTR_ERR(mm);

	arg.mappings = 0;
	arg.mapped_bytes = 0;
	if (mmap_read_lock_killable(mm)) {
		err = -EINTR;
		goto out;
	}
	vma_iter_init(&vmi, mm, 0);
	for_each_vma(vmi, vma) {
		if (vma->vm_ops != &som_vm_ops)
			continue;
		arg.mappings++;
		arg.mapped_bytes += vma->vm_end - vma->vm_start;
		err = som_count_entries(vma, entries);
		if (err)
			break;
	}
	mmap_read_unlock(mm);
	if (err)
		goto out;
	arg.entries_4k = entries[0];
	arg.entries_2m = entries[1];
	arg.entries_1g = entries[2];
	if (copy_to_user(uarg, &arg, sizeof(arg)))
		err = -EFAULT;
out:
	mmput(mm);
	return err;
}

/* Fill @map, one byte per 2 MiB of [@addr, @addr + @len) of @mm. */
static int som_ages_map(struct mm_struct *mm, u64 addr, u64 len,
			u8 __user *map)
{
	struct som_region *region;
	struct vm_area_struct *vma;
	u8 buf[64];
	unsigned int n = 0;
	u64 a;

	if (mmap_read_lock_killable(mm))
		return -EINTR;
	for (a = addr; a < addr + len; a += SOM_BLOCK_SIZE) {
		buf[n] = SOM_AGE_NONE;
		vma = vma_lookup(mm, a);
		if (vma && vma->vm_ops == &som_vm_ops) {
			region = vma->vm_private_data;
			som_region_lock(region);
			buf[n] = som_ages_get(&region->ages, &region->table,
					      linear_page_index(vma, a) >>
					      SOM_PAGES_PER_BLOCK_SHIFT);
			som_region_unlock(region);
		}
		if (++n < sizeof(buf) && a + SOM_BLOCK_SIZE < addr + len)
			continue;
		/* Never copy to user memory with mmap_lock held. */
		mmap_read_unlock(mm);
		if (copy_to_user(map, buf, n))
			return -EFAULT;
		map += n;
		n = 0;
		if (fatal_signal_pending(current))
			return -EINTR;
		if (mmap_read_lock_killable(mm))
			return -EINTR;
		cond_resched();
	}
	mmap_read_unlock(mm);
	return 0;
}

/**
 * som_ioctl_proc_ages() - SOM_IOC_PROC_AGES on /dev/som
 * @uarg: the caller's struct som_proc_ages
 *
 * Context: Process context; takes the process's mmap_lock for read and
 * each region's lock.
 * Return: 0, -EFAULT, -EINVAL, -EPERM (another process, without
 * CAP_SYS_PTRACE), -ESRCH (no such process or no address space), -EINTR,
 * -ENOMEM.
 */
long som_ioctl_proc_ages(struct som_proc_ages __user *uarg)
{
	struct som_region **regions;
	struct som_proc_ages arg;
	struct mm_struct *mm;
	unsigned long nr, i;
	int err = 0;

	if (copy_from_user(&arg, uarg, sizeof(arg)))
		return -EFAULT;
	if (arg.flags || arg.__reserved[0] || arg.__reserved[1] ||
	    !IS_ALIGNED(arg.addr | arg.len, SOM_BLOCK_SIZE) ||
	    arg.addr + arg.len < arg.addr)
		return -EINVAL;
	mm = som_usage_mm(arg.pid);
	if (IS_ERR(mm))
		return PTR_ERR(mm);

	arg.scans = som_age_scans();
	memset(arg.idle_bytes, 0, sizeof(arg.idle_bytes));
	regions = som_regions_get(&nr);
	if (!regions) {
		err = -ENOMEM;
		goto out;
	}
	for (i = 0; i < nr; i++) {
		som_region_lock(regions[i]);
		if (!regions[i]->dead && regions[i]->mm == mm)
			som_ages_count(&regions[i]->ages, &regions[i]->table,
				       arg.idle_bytes);
		som_region_unlock(regions[i]);
	}
	som_regions_put(regions, nr);
	if (arg.len)
		err = som_ages_map(mm, arg.addr, arg.len,
				   u64_to_user_ptr(arg.map));
	if (!err && copy_to_user(uarg, &arg, sizeof(arg)))
		err = -EFAULT;
out:
	mmput(mm);
	return err;
}
