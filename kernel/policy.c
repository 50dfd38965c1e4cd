// SPDX-License-Identifier: GPL-2.0
/*
 * SOM_IOC_POLICY: where a region's memory comes from, as mbind() says it
 * for ordinary memory: the faulting CPU's node, a preferred node, a bound
 * set of nodes, or interleaving over nodes by 2 MiB or 1 GiB; and whether
 * it must be physically stable (unmovable). Memory the region already
 * holds moves to follow a new placement (migrate.c).
 */
#include <linux/nodemask.h>
#include <linux/uaccess.h>
#include <uapi/linux/som.h>

#include "migrate.h"
#include "region.h"
#include "som.h"

/**
 * som_ioctl_policy() - SOM_IOC_POLICY on /dev/som or a som file
 * @region: the region of the file the ioctl was issued on
 * @uarg: the caller's struct som_policy
 *
 * Context: Process context.
 * Return: 0; -EFAULT; -EINVAL for a bad mode, flags, reserved fields or
 * nodes; the errors of som_migrate_policy().
 */
long som_ioctl_policy(struct som_region *region,
		      struct som_policy __user *uarg)
{
	struct som_policy arg;
	unsigned int i, weight;
	nodemask_t nodes;

	if (copy_from_user(&arg, uarg, sizeof(arg)))
		return -EFAULT;
	if (arg.mode > SOM_POLICY_INTERLEAVE || arg.flags & ~SOM_POLICY_FLAGS ||
	    arg.__reserved[0] || arg.__reserved[1])
		return -EINVAL;
	if ((arg.flags & SOM_POLICY_INTERLEAVE_1G) &&
	    arg.mode != SOM_POLICY_INTERLEAVE)
		return -EINVAL;

	nodes_clear(nodes);
	for (i = 0; i < SOM_MAX_NODES; i++) {
		if (!(arg.nodes[i / 64] & (1ULL << (i % 64))))
			continue;
		if (i >= MAX_NUMNODES || !node_possible(i))
			return -EINVAL;
		node_set(i, nodes);
	}
	weight = nodes_weight(nodes);
	if ((arg.mode == SOM_POLICY_LOCAL && weight) ||
	    (arg.mode == SOM_POLICY_PREFERRED && weight != 1) ||
	    (arg.mode >= SOM_POLICY_BIND && !weight))
		return -EINVAL;

	return som_migrate_policy(region, (enum som_claim_mode)arg.mode,
				  &nodes,
				  arg.flags & SOM_POLICY_INTERLEAVE_1G ?
				  SOM_CHUNK_SHIFT - SOM_BLOCK_SHIFT : 0,
				  arg.flags & SOM_POLICY_UNMOVABLE);
}
