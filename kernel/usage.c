// SPDX-License-Identifier: GPL-2.0
/*
 * SOM_IOC_PROC_USAGE: how much som memory a process maps, and with which
 * entry sizes. smaps and numa_maps skip PFN-mapped VMAs, so without this
 * an administrator could not see which processes hold the pool.
 */
#include <linux/capability.h>
#include <linux/mm.h>
#include <linux/pid.h>
#include <linux/sched/mm.h>
#include <linux/sched/task.h>
#include <linux/uaccess.h>
#include <uapi/linux/som.h>

#include "som.h"

/* The address space of @nr (0: the caller), with a reference; or NULL. */
static struct mm_struct *som_usage_mm(pid_t nr)
{
	struct task_struct *task;
	struct mm_struct *mm;
	struct pid *pid;

	if (!nr)
		return get_task_mm(current);
	pid = find_get_pid(nr);
	if (!pid)
		return NULL;
	task = get_pid_task(pid, PIDTYPE_TGID);
	put_pid(pid);
	if (!task)
		return NULL;
	mm = get_task_mm(task);
	put_task_struct(task);
	return mm;
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
	if (arg.pid < 0 || arg.flags || arg.__reserved[0] || arg.__reserved[1])
		return -EINVAL;
	if (arg.pid && arg.pid != task_tgid_vnr(current) &&
	    !capable(CAP_SYS_PTRACE))
		return -EPERM;
	mm = som_usage_mm(arg.pid);
	if (!mm)
		return -ESRCH;

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
