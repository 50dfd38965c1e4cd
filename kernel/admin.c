// SPDX-License-Identifier: GPL-2.0
/*
 * Pool administration through /dev/som: SOM_IOC_SOURCE_ADD and
 * SOM_IOC_SOURCE_REMOVE, for CAP_SYS_ADMIN only. They check the arguments
 * and hand them to the kind of source (source_*.c).
 */
#include <linux/capability.h>
#include <linux/numa.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <uapi/linux/som.h>

#include "som.h"
#include "source.h"

static bool som_reserved_zero(const __u64 *r, unsigned int n)
{
	while (n--)
		if (r[n])
			return false;
	return true;
}

/* Which fields each kind takes; the others must be -1 (fd, node) or 0. */
static bool som_source_args_ok(const struct som_source_args *a)
{
	bool range = a->kind == SOM_SOURCE_RESERVED ||
		     a->kind == SOM_SOURCE_DAX;
	bool hugetlb = a->kind == SOM_SOURCE_HUGETLB;
	bool has_fd = a->fd != -1, has_size = a->size;

	if (a->flags & ~SOM_SOURCE_FLAGS ||
	    !som_reserved_zero(a->__reserved, ARRAY_SIZE(a->__reserved)))
		return false;
	if (hugetlb != has_fd || hugetlb == has_size ||
	    (a->kind != SOM_SOURCE_BUDDY && a->node != -1) ||
	    (!range && a->start))
		return false;
	return a->kind >= SOM_SOURCE_RESERVED && a->kind <= SOM_SOURCE_DAX;
}

/**
 * som_ioctl_source_add() - SOM_IOC_SOURCE_ADD
 * @uarg: the caller's struct som_source_args
 *
 * Context: Process context, may sleep for long (buddy migrates memory).
 * Return: 0 or a negative errno, see include/uapi/linux/som.h.
 */
long som_ioctl_source_add(struct som_source_args __user *uarg)
{
	struct som_source_args arg;
	unsigned int flags;
	int err;

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	if (copy_from_user(&arg, uarg, sizeof(arg)))
		return -EFAULT;
	if (!som_source_args_ok(&arg) ||
	    strnlen(arg.name, sizeof(arg.name)) == sizeof(arg.name))
		return -EINVAL;
	flags = arg.flags;

	switch (arg.kind) {
	case SOM_SOURCE_RESERVED:
		err = som_reserved_add(arg.start, arg.size, flags,
				       arg.name);
		break;
	case SOM_SOURCE_HUGETLB:
		err = som_hugetlb_add(arg.fd, flags, arg.name);
		break;
	case SOM_SOURCE_BUDDY:
		err = som_buddy_add(arg.node == -1 ? NUMA_NO_NODE : arg.node,
				    arg.size, flags, arg.name);
		break;
	default:
		err = som_dax_add(arg.start, arg.size, flags, arg.name);
		break;
	}
	if (err)
		return err;
	if (copy_to_user(uarg->name, arg.name, sizeof(arg.name)))
		return -EFAULT;
	return 0;
}

/**
 * som_ioctl_source_remove() - SOM_IOC_SOURCE_REMOVE
 * @uarg: the caller's struct som_source_name
 *
 * Context: Process context, may sleep.
 * Return: 0 or a negative errno, see include/uapi/linux/som.h.
 */
long som_ioctl_source_remove(struct som_source_name __user *uarg)
{
	struct som_source_name arg;

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	if (copy_from_user(&arg, uarg, sizeof(arg)))
		return -EFAULT;
	if (arg.__reserved[0] || arg.__reserved[1] ||
	    strnlen(arg.name, sizeof(arg.name)) == sizeof(arg.name))
		return -EINVAL;
	return som_source_remove(arg.name);
}
