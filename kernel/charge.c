// SPDX-License-Identifier: GPL-2.0
/*
 * som memory charged to cgroups, and limits per cgroup: the way the hugetlb
 * cgroup controller charges reservations, without being a controller (a
 * module cannot add one).
 *
 * A region is bound, at its first reservation, to the cgroup (v2) of the
 * task making it; from then on every index it reserves is charged there,
 * 2 MiB each, and every index it gives back is uncharged there, wherever
 * the task has gone since. A charge goes up the hierarchy: each cgroup's
 * usage counts its descendants', and a reservation that would take any
 * cgroup on the way to the root past its limit fails whole.
 *
 * A cgroup has a record here while a region is bound to it or to a
 * descendant, or while it has a limit. Records are found by cgroup id and
 * point to their parent's; they hold no reference to the cgroup itself,
 * except that a limit holds one so that the limit can be dropped once the
 * cgroup is removed (som_charges_prune()). A removed cgroup's record lives
 * on until its last region goes, still counted in its ancestors.
 *
 * Per user as well, for machines that put nothing in cgroups (the cgroup
 * core is still needed, as in every distribution's kernel): the region is
 * bound to the caller's uid too, and an optional limit (uid_limit_bytes
 * in sysfs, off by default) holds for each uid's memory. A user's record
 * lives while a region is bound to it.
 *
 * One spinlock guards every record: charges are taken per reservation
 * (an mmap(), a som file's growth or the fill of one of its holes), not
 * per fault, and a walk up the hierarchy is a few pointer hops.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/capability.h>
#include <linux/cgroup.h>
#include <linux/cred.h>
#include <linux/hashtable.h>
#include <linux/overflow.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/uaccess.h>

#include "charge.h"
#include "som.h"

/**
 * struct som_charge - som memory charged to one cgroup, or to one user
 * @node:	in som_charges (cgroups) or som_users, hashed by @id
 * @id:		the cgroup's id (cgroup_id(): its directory's inode number),
 *		or the user's kuid
 * @parent:	the parent cgroup's record, referenced; NULL for the root
 *		and for users
 * @refs:	the regions bound to it, its children's records, its limit
 * @limited:	the cgroup, referenced, while it has a limit of its own
 * @user:	a user's record: som_uid_limit is its limit
 * @usage:	bytes charged to the cgroup and its descendants, or the user
 * @pending:	bytes of reservations under way (som_charge_try() to
 *		som_charge_commit() or som_charge_cancel()): held against the
 *		limit, not yet in @usage or @peak
 * @peak:	the most @usage has been
 * @limit:	bytes, or SOM_CGROUP_NO_LIMIT (cgroups)
 * @failures:	reservations refused because of its limit
 */
struct som_charge {
	struct hlist_node node;
	u64 id;
	struct som_charge *parent;
	unsigned long refs;
	struct cgroup *limited;
	bool user;
	u64 usage;
	u64 pending;
	u64 peak;
	u64 limit;
	u64 failures;
};

static DEFINE_HASHTABLE(som_charges, 6);
static DEFINE_HASHTABLE(som_users, 4);
static DEFINE_SPINLOCK(som_charge_lock);	/* every record, the limit */
static unsigned long som_nr_charges;	/* records of both kinds */
static unsigned long som_nr_limited;	/* records with @limited set */
static u64 som_uid_limit = SOM_CGROUP_NO_LIMIT;

static struct som_charge *som_charge_find(u64 id)
{
	struct som_charge *charge;

	lockdep_assert_held(&som_charge_lock);
	hash_for_each_possible(som_charges, charge, node, id)
		if (charge->id == id)
			return charge;
	return NULL;
}

static struct som_charge *som_user_find(kuid_t uid)
{
	struct som_charge *charge;

	lockdep_assert_held(&som_charge_lock);
	hash_for_each_possible(som_users, charge, node, __kuid_val(uid))
		if (charge->id == __kuid_val(uid))
			return charge;
	return NULL;
}

/* Drop a reference; a record without any goes, and its parent's ref. */
static void som_charge_put_locked(struct som_charge *charge)
{
	struct som_charge *parent;

	lockdep_assert_held(&som_charge_lock);
	while (charge && !--charge->refs) {
		WARN_ON_ONCE(charge->usage || charge->pending ||
			     charge->limited);
		parent = charge->parent;
		hash_del(&charge->node);
		som_nr_charges--;
		kfree(charge);
		charge = parent;
	}
}

/*
 * The records a region's reservation is charged to, one after the other:
 * its cgroup's and its ancestors', then its user's.
 */
static struct som_charge *som_charge_first(struct som_charges *ch)
{
	return ch->cgroup ?: ch->user;
}

static struct som_charge *som_charge_next(struct som_charges *ch,
					  struct som_charge *c)
{
	if (c->user)
		return NULL;
	return c->parent ?: ch->user;
}

static u64 som_charge_limit(struct som_charge *c)
{
	return c->user ? som_uid_limit : c->limit;
}

/* How many records @cgrp and its ancestors lack. */
static unsigned int som_charge_missing(struct cgroup *cgrp)
{
	unsigned int nr = 0;

	for (; cgrp; cgrp = cgroup_parent(cgrp)) {
		if (som_charge_find(cgroup_id(cgrp)))
			break;
		nr++;
	}
	return nr;
}

/*
 * @cgrp's record, referenced: the missing records of it and its ancestors
 * are made from @spare, each referenced by its child's.
 */
static struct som_charge *som_charge_link(struct cgroup *cgrp,
					  struct hlist_head *spare)
{
	struct som_charge *charge, *child = NULL, *leaf = NULL;
	bool found;

	lockdep_assert_held(&som_charge_lock);
	for (; cgrp; cgrp = cgroup_parent(cgrp)) {
		charge = som_charge_find(cgroup_id(cgrp));
		found = charge;
		if (!charge) {
			charge = hlist_entry(spare->first, struct som_charge,
					     node);
			hlist_del(&charge->node);
			charge->id = cgroup_id(cgrp);
			charge->limit = SOM_CGROUP_NO_LIMIT;
			hash_add(som_charges, &charge->node, charge->id);
			som_nr_charges++;
		}
		charge->refs++;
		if (child)
			child->parent = charge;
		else
			leaf = charge;
		if (found)
			break;
		child = charge;
	}
	return leaf;
}

/* The record of @uid, referenced; made from @spare if need be. */
static struct som_charge *som_user_link(kuid_t uid, struct hlist_head *spare)
{
	struct som_charge *charge = som_user_find(uid);

	if (!charge) {
		charge = hlist_entry(spare->first, struct som_charge, node);
		hlist_del(&charge->node);
		charge->id = __kuid_val(uid);
		charge->user = true;
		charge->limit = SOM_CGROUP_NO_LIMIT;
		hash_add(som_users, &charge->node, charge->id);
		som_nr_charges++;
	}
	charge->refs++;
	return charge;
}

/*
 * The record of @cgrp, or of the calling task's cgroup if @cgrp is NULL,
 * referenced; made, with its ancestors', if need be. With @user, the
 * calling task's user's record as well.
 */
static int som_charge_get(struct cgroup *cgrp, struct som_charge **out,
			  struct som_charge **user)
{
	kuid_t uid = current_uid();
	struct som_charge *charge;
	struct hlist_node *tmp;
	unsigned int nr_spare = 0, need;
	struct cgroup *at;
	HLIST_HEAD(spare);

	for (;;) {
		rcu_read_lock();
		spin_lock(&som_charge_lock);
		/* The task's cgroup cannot go while the task is in it. */
		at = cgrp ?: task_dfl_cgroup(current);
		need = som_charge_missing(at) +
		       (user && !som_user_find(uid));
		if (need <= nr_spare) {
			*out = som_charge_link(at, &spare);
			if (user)
				*user = som_user_link(uid, &spare);
			spin_unlock(&som_charge_lock);
			rcu_read_unlock();
			break;
		}
		spin_unlock(&som_charge_lock);
		rcu_read_unlock();
		while (nr_spare < need) {
			charge = kzalloc(sizeof(*charge), GFP_KERNEL);
			if (!charge)
				break;
			hlist_add_head(&charge->node, &spare);
			nr_spare++;
		}
		if (nr_spare < need) {
			*out = NULL;
			break;
		}
	}
	hlist_for_each_entry_safe(charge, tmp, &spare, node)
		kfree(charge);
	return *out ? 0 : -ENOMEM;
}

/**
 * som_charge_bind() - the records a region charges from now on
 * @ch: set to the calling task's cgroup's and user's records, referenced
 *
 * Context: Process context, may sleep.
 * Return: 0 or -ENOMEM.
 */
int som_charge_bind(struct som_charges *ch)
{
	return som_charge_get(NULL, &ch->cgroup, &ch->user);
}

/**
 * som_charge_try() - charge blocks to a region's cgroups and user
 * @ch: the region's records
 * @nr_blocks: how many 2 MiB blocks
 * @count: count a refusal as a failure (not when a smaller reservation
 *	will be tried next)
 *
 * The charge comes first, so that a refusal leaves the pool untouched: it
 * is pending until the caller commits it (the reservation went through)
 * or cancels it. Pending charges count against the limits, so that two
 * reservations under way cannot pass one together, but not in the usage
 * or the peak that readers see.
 *
 * Context: Any context that may take a spinlock.
 * Return: 0, or -ENOMEM (and nothing charged) if a limit on the way to the
 * root, or the user's, would be passed, or the bytes do not fit in 64
 * bits (a som file grown by exabytes); that record counts a failure.
 */
int som_charge_try(struct som_charges *ch, unsigned long nr_blocks,
		   bool count)
{
	u64 bytes = (u64)nr_blocks << SOM_BLOCK_SHIFT, limit, held;
	struct som_charge *c;

	if (nr_blocks > U64_MAX >> SOM_BLOCK_SHIFT)
		return -ENOMEM;
	spin_lock(&som_charge_lock);
	for (c = som_charge_first(ch); c; c = som_charge_next(ch, c)) {
		limit = som_charge_limit(c);
		if (check_add_overflow(c->usage, c->pending, &held) ||
		    check_add_overflow(held, bytes, &held) || held > limit) {
			c->failures += count;
			spin_unlock(&som_charge_lock);
			return -ENOMEM;
		}
	}
	for (c = som_charge_first(ch); c; c = som_charge_next(ch, c))
		c->pending += bytes;
	spin_unlock(&som_charge_lock);
	return 0;
}

/* What a charge som_charge_try() took becomes, or a committed one. */
enum som_charge_step {
	SOM_CHARGE_COMMIT,	/* pending -> usage, the peaks follow */
	SOM_CHARGE_CANCEL,	/* pending -> nothing */
	SOM_CHARGE_UNDO,	/* usage -> nothing */
};

static void som_charge_step(struct som_charges *ch, unsigned long nr_blocks,
			    enum som_charge_step step)
{
	u64 bytes = (u64)nr_blocks << SOM_BLOCK_SHIFT, *from;
	struct som_charge *c;

	spin_lock(&som_charge_lock);
	for (c = som_charge_first(ch); c; c = som_charge_next(ch, c)) {
		from = step == SOM_CHARGE_UNDO ? &c->usage : &c->pending;
		WARN_ON_ONCE(*from < bytes);
		*from -= min(*from, bytes);
		if (step == SOM_CHARGE_COMMIT) {
			c->usage += bytes;
			c->peak = max(c->peak, c->usage);
		}
	}
	spin_unlock(&som_charge_lock);
}

/**
 * som_charge_commit() - the reservation som_charge_try() charged went
 *	through
 * @ch: the region's records
 * @nr_blocks: as charged
 *
 * Only now does the charge show in the usage and the peaks: a reservation
 * the pool refused never held memory.
 *
 * Context: Any context that may take a spinlock.
 */
void som_charge_commit(struct som_charges *ch, unsigned long nr_blocks)
{
	som_charge_step(ch, nr_blocks, SOM_CHARGE_COMMIT);
}

/**
 * som_charge_cancel() - the reservation som_charge_try() charged failed
 * @ch: the region's records
 * @nr_blocks: as charged
 *
 * Context: Any context that may take a spinlock.
 */
void som_charge_cancel(struct som_charges *ch, unsigned long nr_blocks)
{
	som_charge_step(ch, nr_blocks, SOM_CHARGE_CANCEL);
}

/**
 * som_charge_undo() - uncharge blocks given back to the pool
 * @ch: the region's records
 * @nr_blocks: how many, all committed
 *
 * Context: Any context that may take a spinlock.
 */
void som_charge_undo(struct som_charges *ch, unsigned long nr_blocks)
{
	som_charge_step(ch, nr_blocks, SOM_CHARGE_UNDO);
}

/**
 * som_charge_put() - a region lets its records go
 * @ch: the records, NULL if the region never reserved; NULL afterwards
 *
 * Context: Any context that may take a spinlock.
 */
void som_charge_put(struct som_charges *ch)
{
	spin_lock(&som_charge_lock);
	som_charge_put_locked(ch->cgroup);
	som_charge_put_locked(ch->user);
	spin_unlock(&som_charge_lock);
	ch->cgroup = NULL;
	ch->user = NULL;
}

/* Remove @charge's own limit and the references it held. */
static void som_charge_unlimit(struct som_charge *charge)
{
	lockdep_assert_held(&som_charge_lock);
	charge->limit = SOM_CGROUP_NO_LIMIT;
	if (!charge->limited)
		return;
	cgroup_put(charge->limited);
	charge->limited = NULL;
	som_nr_limited--;
	som_charge_put_locked(charge);
}

/*
 * Has @cgrp been removed? rmdir takes CSS_ONLINE off its own css at once
 * (cgroup_destroy_locked()); css_is_dying() looks at CSS_DYING, which
 * only the controllers' csses get.
 */
static bool som_cgroup_removed(struct cgroup *cgrp)
{
	return !(READ_ONCE(cgrp->self.flags) & CSS_ONLINE);
}

/*
 * Drop the limits of removed cgroups, so that their records can go with
 * their last region: nobody can set them again (a removed cgroup's
 * directory is gone). A dropped record may take its parents with it, so
 * the walk starts over each time. (The last cgroup_put() only queues the
 * cgroup's release: it may be called under the spinlock.)
 */
static void som_charges_prune(void)
{
	struct som_charge *charge;
	unsigned int bkt;

	spin_lock(&som_charge_lock);
again:
	if (!som_nr_limited)
		goto out;
	hash_for_each(som_charges, bkt, charge, node) {
		if (charge->limited && som_cgroup_removed(charge->limited)) {
			som_charge_unlimit(charge);
			goto again;
		}
	}
out:
	spin_unlock(&som_charge_lock);
}

/* Set @cgrp's limit (@limit rounded down to 2 MiB, or none). */
static int som_charge_set_limit(struct cgroup *cgrp, u64 limit)
{
	struct som_charge *charge;
	int err;

	if (limit != SOM_CGROUP_NO_LIMIT)
		limit = round_down(limit, SOM_BLOCK_SIZE);
	err = som_charge_get(cgrp, &charge, NULL);
	if (err)
		return err;
	spin_lock(&som_charge_lock);
	if (limit == SOM_CGROUP_NO_LIMIT) {
		som_charge_unlimit(charge);
	} else {
		charge->limit = limit;
		if (!charge->limited) {
			cgroup_get(cgrp);
			charge->limited = cgrp;
			charge->refs++;
			som_nr_limited++;
		}
	}
	som_charge_put_locked(charge);
	spin_unlock(&som_charge_lock);
	return 0;
}

/**
 * som_ioctl_cgroup() - SOM_IOC_CGROUP on /dev/som
 * @uarg: the caller's struct som_cgroup
 *
 * Context: Process context, may sleep.
 * Return: 0, -EFAULT, -EINVAL, -EBADF, -ENOENT (a removed cgroup), -EPERM
 * or -ENOMEM.
 */
long som_ioctl_cgroup(struct som_cgroup __user *uarg)
{
	struct som_charge *charge;
	struct som_cgroup arg;
	struct cgroup *cgrp;
	int err = 0;

	if (copy_from_user(&arg, uarg, sizeof(arg)))
		return -EFAULT;
	if ((arg.flags & ~SOM_CGROUP_FLAGS) || arg.__reserved[0] ||
	    arg.__reserved[1])
		return -EINVAL;
	if ((arg.flags & SOM_CGROUP_SET_LIMIT) && !capable(CAP_SYS_ADMIN))
		return -EPERM;
	cgrp = cgroup_get_from_fd(arg.cgroup_fd);
	if (IS_ERR(cgrp))
		return PTR_ERR(cgrp);
	som_charges_prune();
	if (arg.flags & SOM_CGROUP_SET_LIMIT)
		err = som_charge_set_limit(cgrp, arg.limit);
	if (!err) {
		spin_lock(&som_charge_lock);
		charge = som_charge_find(cgroup_id(cgrp));
		arg.limit = charge ? charge->limit : SOM_CGROUP_NO_LIMIT;
		arg.usage = charge ? charge->usage : 0;
		arg.peak = charge ? charge->peak : 0;
		arg.failures = charge ? charge->failures : 0;
		spin_unlock(&som_charge_lock);
	}
	cgroup_put(cgrp);
	if (err)
		return err;
	return copy_to_user(uarg, &arg, sizeof(arg)) ? -EFAULT : 0;
}

/**
 * som_ioctl_user() - SOM_IOC_USER on /dev/som
 * @uarg: the caller's struct som_user
 *
 * Context: Process context.
 * Return: 0, -EFAULT, -EINVAL (flags, reserved fields, without
 * SOM_USER_NEXT a uid with no mapping in the caller's user namespace) or
 * -ENOENT (with SOM_USER_NEXT, no user from @uid on holds som memory).
 */
long som_ioctl_user(struct som_user __user *uarg)
{
	struct user_namespace *ns = current_user_ns();
	struct som_charge *charge, *best = NULL;
	struct som_user arg;
	uid_t id, best_id = 0;
	unsigned int bkt;
	kuid_t uid;

	if (copy_from_user(&arg, uarg, sizeof(arg)))
		return -EFAULT;
	if ((arg.flags & ~SOM_USER_FLAGS) || arg.__reserved[0] ||
	    arg.__reserved[1])
		return -EINVAL;
	/* With SOM_USER_NEXT, @uid only says where to start. */
	uid = make_kuid(ns, arg.uid);
	if (!(arg.flags & SOM_USER_NEXT) && !uid_valid(uid))
		return -EINVAL;
	spin_lock(&som_charge_lock);
	if (arg.flags & SOM_USER_NEXT) {
		/* The next user, in the caller's numbering, from @uid on. */
		hash_for_each(som_users, bkt, charge, node) {
			id = from_kuid(ns, KUIDT_INIT(charge->id));
			if (id == (uid_t)-1 || id < arg.uid)
				continue;
			if (!best || id < best_id) {
				best = charge;
				best_id = id;
			}
		}
		if (!best) {
			spin_unlock(&som_charge_lock);
			return -ENOENT;
		}
		arg.uid = best_id;
	} else {
		best = som_user_find(uid);
	}
	arg.limit = som_uid_limit;
	arg.usage = best ? best->usage : 0;
	arg.peak = best ? best->peak : 0;
	arg.failures = best ? best->failures : 0;
	spin_unlock(&som_charge_lock);
	return copy_to_user(uarg, &arg, sizeof(arg)) ? -EFAULT : 0;
}

/**
 * som_uid_limit_get() - the limit of each user's som memory
 *
 * Return: bytes, or SOM_CGROUP_NO_LIMIT (the default: off).
 */
u64 som_uid_limit_get(void)
{
	return READ_ONCE(som_uid_limit);
}

/**
 * som_uid_limit_set() - limit each user's som memory
 * @limit: bytes (rounded down to 2 MiB), or SOM_CGROUP_NO_LIMIT for none
 *
 * A limit under a user's usage takes nothing away; new reservations fail.
 *
 * Return: 0 (-EOPNOTSUPP in a kernel without cgroups).
 */
int som_uid_limit_set(u64 limit)
{
	if (limit != SOM_CGROUP_NO_LIMIT)
		limit = round_down(limit, SOM_BLOCK_SIZE);
	spin_lock(&som_charge_lock);
	WRITE_ONCE(som_uid_limit, limit);
	spin_unlock(&som_charge_lock);
	return 0;
}

/**
 * som_charges_metadata_bytes() - what the records take
 *
 * Context: Any context that may take a spinlock.
 */
u64 som_charges_metadata_bytes(void)
{
	unsigned long nr;

	spin_lock(&som_charge_lock);
	nr = som_nr_charges;
	spin_unlock(&som_charge_lock);
	return (u64)nr * kmalloc_size_roundup(sizeof(struct som_charge));
}

/**
 * som_charges_exit() - drop every limit, at unload
 *
 * Every region is gone, so the limits hold the only references left.
 *
 * Context: Process context.
 */
void som_charges_exit(void)
{
	struct som_charge *charge;
	unsigned int bkt;

	spin_lock(&som_charge_lock);
again:
	hash_for_each(som_charges, bkt, charge, node) {
		if (charge->limited) {
			som_charge_unlimit(charge);
			goto again;
		}
	}
	WARN_ON_ONCE(som_nr_charges);
	spin_unlock(&som_charge_lock);
}
