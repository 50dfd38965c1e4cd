/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Charging som memory to cgroups (charge.c): one record per cgroup that
 * holds som memory or has a som limit, linked to its parent's.
 */
#ifndef _SOM_CHARGE_H
#define _SOM_CHARGE_H

#include <linux/types.h>
#include <uapi/linux/som.h>

struct som_charge;

/**
 * struct som_charges - what a region's reservations are charged to
 * @cgroup:	the record of its cgroup (whose ancestors' follow)
 * @user:	the record of its user
 *
 * Both NULL until the region's first reservation binds them.
 */
struct som_charges {
	struct som_charge *cgroup;
	struct som_charge *user;
};

#ifdef CONFIG_CGROUPS
int som_charge_bind(struct som_charges *ch);
int som_charge_try(struct som_charges *ch, unsigned long nr_blocks,
		   bool count);
void som_charge_commit(struct som_charges *ch, unsigned long nr_blocks);
void som_charge_cancel(struct som_charges *ch, unsigned long nr_blocks);
void som_charge_undo(struct som_charges *ch, unsigned long nr_blocks);
void som_charge_put(struct som_charges *ch);
u64 som_charges_metadata_bytes(void);
long som_ioctl_cgroup(struct som_cgroup __user *uarg);
long som_ioctl_user(struct som_user __user *uarg);
u64 som_uid_limit_get(void);
int som_uid_limit_set(u64 limit);
void som_charges_exit(void);
#else
/* Without cgroups nothing is charged, and nothing limits. */
static inline int som_charge_bind(struct som_charges *ch)
{
	return 0;
}

static inline int som_charge_try(struct som_charges *ch,
				 unsigned long nr_blocks, bool count)
{
	return 0;
}

static inline void som_charge_commit(struct som_charges *ch,
				     unsigned long nr_blocks)
{
}

static inline void som_charge_cancel(struct som_charges *ch,
				     unsigned long nr_blocks)
{
}

static inline void som_charge_undo(struct som_charges *ch,
				   unsigned long nr_blocks)
{
}

static inline void som_charge_put(struct som_charges *ch)
{
}

static inline long som_ioctl_user(struct som_user __user *uarg)
{
	return -EOPNOTSUPP;
}

static inline u64 som_uid_limit_get(void)
{
	return SOM_CGROUP_NO_LIMIT;
}

static inline int som_uid_limit_set(u64 limit)
{
	return -EOPNOTSUPP;
}

static inline u64 som_charges_metadata_bytes(void)
{
	return 0;
}

static inline long som_ioctl_cgroup(struct som_cgroup __user *uarg)
{
	return -EOPNOTSUPP;
}

static inline void som_charges_exit(void)
{
}
#endif

#endif /* _SOM_CHARGE_H */
