// SPDX-License-Identifier: GPL-2.0
/*
 * /sys/kernel/mm/som: the pool's counters, one value per file, for the
 * whole pool and per NUMA node (nodes/nodeN/); add_range and
 * remove_source for administrators; migration/, compaction's controls
 * and what migrations have done; the low watermark of free memory,
 * whose free_low file poll() waits on; the sources live in sources/
 * (source.c), metadata/ in metadata.c. Nothing here shows a physical
 * address.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/capability.h>
#include <linux/kernfs.h>
#include <linux/kobject.h>
#include <linux/sysfs.h>

#include <linux/numa.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "charge.h"
#include "migrate.h"
#include "pack.h"
#include "region.h"
#include "som.h"
#include "source.h"
#include "swap.h"

static struct kobject *som_mm_kobj;	/* /sys/kernel/mm, referenced */
static struct kobject *som_kobj;	/* /sys/kernel/mm/som */
static struct kobject *som_nodes_kobj;	/* /sys/kernel/mm/som/nodes */

/* /sys/kernel/mm/som/nodes/nodeN */
struct som_node_kobj {
	struct kobject kobj;
	int nid;
};

static struct som_node_kobj **som_node_kobjs;	/* [nr_node_ids] */

/* A counter of the pool: @offset locates it in struct som_pool_stats. */
struct som_pool_attr {
	struct kobj_attribute attr;
	size_t offset;
};

static ssize_t som_pool_attr_show(struct kobject *kobj,
				  struct kobj_attribute *attr, char *buf)
{
	struct som_pool_attr *pattr = container_of(attr, struct som_pool_attr,
						   attr);
	struct som_pool_stats stats;
	int nid = NUMA_NO_NODE;

	if (kobj != som_kobj)
		nid = container_of(kobj, struct som_node_kobj, kobj)->nid;
	som_pool_get_stats(&som_pool, nid, &stats);
	return sysfs_emit(buf, "%llu\n",
			  *(u64 *)((char *)&stats + pattr->offset));
}

/* A memory-error counter: @offset locates it in struct som_poison_stats. */
struct som_poison_attr {
	struct kobj_attribute attr;
	size_t offset;
};

static ssize_t som_poison_attr_show(struct kobject *kobj,
				    struct kobj_attribute *attr, char *buf)
{
	struct som_poison_attr *pattr = container_of(attr,
						     struct som_poison_attr,
						     attr);
	struct som_poison_stats stats;
	int nid = NUMA_NO_NODE;

	if (kobj != som_kobj)
		nid = container_of(kobj, struct som_node_kobj, kobj)->nid;
	som_pool_poison_stats(&som_pool, nid, NULL, &stats);
	return sysfs_emit(buf, "%llu\n",
			  *(u64 *)((char *)&stats + pattr->offset));
}

#define SOM_POISON_ATTR(_name, _field)					\
	static struct som_poison_attr som_##_name = {			\
		__ATTR(_name, 0444, som_poison_attr_show, NULL),	\
		offsetof(struct som_poison_stats, _field),		\
	}

SOM_POISON_ATTR(poison_events, events);
SOM_POISON_ATTR(poisoned_pages, pages);
SOM_POISON_ATTR(retired_bytes, retired_bytes);
SOM_POISON_ATTR(poisoned_pages_outside, pages_outside);

static struct som_pool_attr som_total_bytes = {
	__ATTR(total_bytes, 0444, som_pool_attr_show, NULL),
	offsetof(struct som_pool_stats, total_bytes),
};

static struct som_pool_attr som_free_bytes = {
	__ATTR(free_bytes, 0444, som_pool_attr_show, NULL),
	offsetof(struct som_pool_stats, free_bytes),
};

static struct som_pool_attr som_reserved_bytes = {
	__ATTR(reserved_bytes, 0444, som_pool_attr_show, NULL),
	offsetof(struct som_pool_stats, reserved_bytes),
};

static struct som_pool_attr som_zeroed_bytes = {
	__ATTR(zeroed_bytes, 0444, som_pool_attr_show, NULL),
	offsetof(struct som_pool_stats, zeroed_bytes),
};

static struct som_pool_attr som_unmovable_total_bytes = {
	__ATTR(unmovable_total_bytes, 0444, som_pool_attr_show, NULL),
	offsetof(struct som_pool_stats, unmovable_total_bytes),
};

static struct som_pool_attr som_unmovable_free_bytes = {
	__ATTR(unmovable_free_bytes, 0444, som_pool_attr_show, NULL),
	offsetof(struct som_pool_stats, unmovable_free_bytes),
};

/* A fault counter. */
struct som_fault_attr {
	struct kobj_attribute attr;
	atomic_long_t *count;
};

static ssize_t som_fault_attr_show(struct kobject *kobj,
				   struct kobj_attribute *attr, char *buf)
{
	struct som_fault_attr *fattr = container_of(attr,
						    struct som_fault_attr,
						    attr);

	return sysfs_emit(buf, "%ld\n", atomic_long_read(fattr->count));
}

#define SOM_FAULT_ATTR(_name, _field)					\
	static struct som_fault_attr som_##_name = {			\
		__ATTR(_name, 0444, som_fault_attr_show, NULL),		\
		&som_fault_stats._field,				\
	}

/* What zeroing has cost: zero_{worker,fault}_{bytes,ns}. */
struct som_zero_attr {
	struct kobj_attribute attr;
	atomic64_t *count;
};

static ssize_t som_zero_attr_show(struct kobject *kobj,
				  struct kobj_attribute *attr, char *buf)
{
	struct som_zero_attr *zattr = container_of(attr, struct som_zero_attr,
						   attr);

	return sysfs_emit(buf, "%lld\n", atomic64_read(zattr->count));
}

#define SOM_ZERO_ATTR(_name, _field)					\
	static struct som_zero_attr som_##_name = {			\
		__ATTR(_name, 0444, som_zero_attr_show, NULL),		\
		&som_pool.zero_stats._field,				\
	}

SOM_ZERO_ATTR(zero_worker_bytes, worker_bytes);
SOM_ZERO_ATTR(zero_worker_ns, worker_ns);
SOM_ZERO_ATTR(zero_fault_bytes, fault_bytes);
SOM_ZERO_ATTR(zero_fault_ns, fault_ns);

SOM_FAULT_ATTR(faults_pud, pud);
SOM_FAULT_ATTR(faults_pmd, pmd);
SOM_FAULT_ATTR(faults_pte, pte);

static ssize_t add_range_store(struct kobject *kobj,
			       struct kobj_attribute *attr,
			       const char *buf, size_t count)
{
	int err;

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	err = som_reserved_add_list(buf);
	return err ? err : count;
}

static struct kobj_attribute add_range_attr = __ATTR_WO(add_range);

static ssize_t remove_source_store(struct kobject *kobj,
				   struct kobj_attribute *attr,
				   const char *buf, size_t count)
{
	char copy[2 * SOM_SOURCE_NAME_LEN], *name;
	int err;

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	if (strscpy(copy, buf, sizeof(copy)) < 0)
		return -EINVAL;
	name = strim(copy);
	if (strlen(name) >= SOM_SOURCE_NAME_LEN)
		return -ENOENT;
	err = som_source_remove(name);
	return err ? err : count;
}

static struct kobj_attribute remove_source_attr = __ATTR_WO(remove_source);

/**
 * som_count_attr_show() - show the counter of a struct som_count_attr
 * @kobj: its directory
 * @attr: the attr member of a struct som_count_attr
 * @buf: the page to fill
 *
 * Return: bytes written.
 */
ssize_t som_count_attr_show(struct kobject *kobj, struct kobj_attribute *attr,
			    char *buf)
{
	struct som_count_attr *cattr = container_of(attr, struct som_count_attr,
						    attr);

	return sysfs_emit(buf, "%ld\n", atomic_long_read(cattr->count));
}

/* A migration counter: migration/<name>. */
#define SOM_MIGRATE_ATTR(_name, _field)					\
	static struct som_count_attr som_migrate_##_name = {		\
		__ATTR(_name, 0444, som_count_attr_show, NULL),		\
		&som_migrate_stats._field,				\
	}

SOM_MIGRATE_ATTR(blocks_moved, blocks_moved);
SOM_MIGRATE_ATTR(bytes_copied, bytes_copied);
SOM_MIGRATE_ATTR(blocks_evacuated, blocks_evacuated);
SOM_MIGRATE_ATTR(blocks_placed, blocks_placed);
SOM_MIGRATE_ATTR(gib_assembled, gib_assembled);
SOM_MIGRATE_ATTR(compact_runs, compact_runs);
SOM_MIGRATE_ATTR(compact_failed, compact_failed);

/**
 * som_sysfs_admin_bool() - parse a boolean an administrator wrote
 * @buf: what was written
 * @on: set to its value
 *
 * Return: 0, -EPERM without CAP_SYS_ADMIN, or -EINVAL (kstrtobool()).
 */
int som_sysfs_admin_bool(const char *buf, bool *on)
{
	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	return kstrtobool(buf, on);
}

/**
 * som_sysfs_run() - a store that runs something when 1 is written
 * @buf: what was written: a boolean (kstrtobool())
 * @count: its length
 * @run: what to run, until it is done
 *
 * Context: a sysfs store; needs CAP_SYS_ADMIN.
 * Return: @count, -EPERM, -EINVAL, or what @run returned.
 */
ssize_t som_sysfs_run(const char *buf, size_t count, int (*run)(void))
{
	bool on;
	int err;

	err = som_sysfs_admin_bool(buf, &on);
	if (err)
		return err;
	if (on)
		err = run();
	return err ? err : count;
}

static int som_compact_now(void)
{
	return som_compact(false);
}

/* Writing 1 runs a compaction pass and returns when it is done. */
static ssize_t compact_store(struct kobject *kobj, struct kobj_attribute *attr,
			     const char *buf, size_t count)
{
	return som_sysfs_run(buf, count, som_compact_now);
}

static struct kobj_attribute compact_attr = __ATTR_WO(compact);

static ssize_t zero_ahead_show(struct kobject *kobj,
			       struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%d\n", som_pool_zero_ahead(&som_pool));
}

static ssize_t zero_ahead_store(struct kobject *kobj,
				struct kobj_attribute *attr, const char *buf,
				size_t count)
{
	bool on;
	int err;

	err = som_sysfs_admin_bool(buf, &on);
	if (err)
		return err;
	som_pool_set_zero_ahead(&som_pool, on);
	return count;
}

static struct kobj_attribute zero_ahead_attr = __ATTR_RW(zero_ahead);

/* The low watermark of free memory (pool_low.c); free_low is pollable. */
static struct kernfs_node *som_free_low_kn;

static ssize_t free_low_bytes_show(struct kobject *kobj,
				   struct kobj_attribute *attr, char *buf)
{
	u64 bytes, events;

	som_pool_get_low(&som_pool, &bytes, &events);
	return sysfs_emit(buf, "%llu\n", bytes);
}

static ssize_t free_low_bytes_store(struct kobject *kobj,
				    struct kobj_attribute *attr,
				    const char *buf, size_t count)
{
	u64 bytes;
	int err;

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	err = kstrtou64(buf, 0, &bytes);
	if (err)
		return err;
	som_pool_set_free_low(&som_pool, bytes);
	return count;
}

static struct kobj_attribute free_low_bytes_attr = __ATTR_RW(free_low_bytes);

/* The limit of each user's som memory (charge.c): bytes, or "max". */
static ssize_t uid_limit_bytes_show(struct kobject *kobj,
				    struct kobj_attribute *attr, char *buf)
{
	u64 limit = som_uid_limit_get();

	if (limit == SOM_CGROUP_NO_LIMIT)
		return sysfs_emit(buf, "max\n");
	return sysfs_emit(buf, "%llu\n", limit);
}

static ssize_t uid_limit_bytes_store(struct kobject *kobj,
				     struct kobj_attribute *attr,
				     const char *buf, size_t count)
{
	u64 limit;
	int err;

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	if (sysfs_streq(buf, "max")) {
		limit = SOM_CGROUP_NO_LIMIT;
	} else {
		err = kstrtou64(buf, 0, &limit);
		if (err || limit == SOM_CGROUP_NO_LIMIT)
			return -EINVAL;
	}
	err = som_uid_limit_set(limit);
	return err ?: count;
}

static struct kobj_attribute uid_limit_bytes_attr =
	__ATTR_RW(uid_limit_bytes);

static ssize_t free_low_show(struct kobject *kobj,
			     struct kobj_attribute *attr, char *buf)
{
	u64 bytes, events;

	return sysfs_emit(buf, "%d\n",
			  som_pool_get_low(&som_pool, &bytes, &events));
}

static struct kobj_attribute free_low_attr = __ATTR_RO(free_low);

static ssize_t free_low_events_show(struct kobject *kobj,
				    struct kobj_attribute *attr, char *buf)
{
	u64 bytes, events;

	som_pool_get_low(&som_pool, &bytes, &events);
	return sysfs_emit(buf, "%llu\n", events);
}

static struct kobj_attribute free_low_events_attr = __ATTR_RO(free_low_events);

static ssize_t compact_rate_show(struct kobject *kobj,
				 struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", READ_ONCE(som_compact_rate));
}

static ssize_t compact_rate_store(struct kobject *kobj,
				  struct kobj_attribute *attr,
				  const char *buf, size_t count)
{
	unsigned int rate;
	int err;

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	err = kstrtouint(buf, 0, &rate);
	if (err)
		return err;
	som_compact_set_rate(rate);
	return count;
}

static struct kobj_attribute compact_rate_attr = __ATTR_RW(compact_rate);

static ssize_t compact_running_show(struct kobject *kobj,
				    struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%d\n", atomic_read(&som_compact_running));
}

static struct kobj_attribute compact_running_attr = __ATTR_RO(compact_running);

static struct attribute *som_migrate_attrs[] = {
	&som_migrate_blocks_moved.attr.attr,
	&som_migrate_bytes_copied.attr.attr,
	&som_migrate_blocks_evacuated.attr.attr,
	&som_migrate_blocks_placed.attr.attr,
	&som_migrate_gib_assembled.attr.attr,
	&som_migrate_compact_runs.attr.attr,
	&som_migrate_compact_failed.attr.attr,
	&compact_attr.attr,
	&compact_rate_attr.attr,
	&compact_running_attr.attr,
	NULL,
};

static const struct attribute_group som_migrate_group = {
	.name = "migration",
	.attrs = som_migrate_attrs,
};

/* The counters, of the whole pool and of each node. */
static struct attribute *som_counter_attrs[] = {
	&som_total_bytes.attr.attr,
	&som_free_bytes.attr.attr,
	&som_reserved_bytes.attr.attr,
	&som_zeroed_bytes.attr.attr,
	&som_unmovable_total_bytes.attr.attr,
	&som_unmovable_free_bytes.attr.attr,
	&som_poison_events.attr.attr,
	&som_poisoned_pages.attr.attr,
	&som_retired_bytes.attr.attr,
	NULL,
};

static const struct attribute_group som_counter_group = {
	.attrs = som_counter_attrs,
};

/* What only the whole pool has. */
static struct attribute *som_pool_attrs[] = {
	&som_metadata_bytes_attr.attr,
	&som_region_metadata_bytes_attr.attr,
	&som_faults_pud.attr.attr,
	&som_faults_pmd.attr.attr,
	&som_faults_pte.attr.attr,
	&som_zero_worker_bytes.attr.attr,
	&som_zero_worker_ns.attr.attr,
	&som_zero_fault_bytes.attr.attr,
	&som_zero_fault_ns.attr.attr,
	&zero_ahead_attr.attr,
	&free_low_bytes_attr.attr,
	&uid_limit_bytes_attr.attr,
	&free_low_attr.attr,
	&free_low_events_attr.attr,
	&som_poisoned_pages_outside.attr.attr,
	&add_range_attr.attr,
	&remove_source_attr.attr,
	NULL,
};

static const struct attribute_group som_pool_group = {
	.attrs = som_pool_attrs,
};

static const struct attribute_group *som_groups[] = {
	&som_counter_group,
	&som_pool_group,
	&som_migrate_group,
	&som_metadata_group,
	&som_aging_group,
	&som_tiering_group,
	&som_swap_group,
	&som_packing_group,
	NULL,
};

static const struct attribute_group *som_node_groups[] = {
	&som_counter_group,
	NULL,
};

static void som_node_kobj_release(struct kobject *kobj)
{
	kfree(container_of(kobj, struct som_node_kobj, kobj));
}

static const struct kobj_type som_node_ktype = {
	.release = som_node_kobj_release,
	.sysfs_ops = &kobj_sysfs_ops,
	.default_groups = som_node_groups,
};

static void som_nodes_exit(void)
{
	int nid;

	for (nid = 0; som_node_kobjs && nid < nr_node_ids; nid++)
		if (som_node_kobjs[nid])
			kobject_put(&som_node_kobjs[nid]->kobj);
	kfree(som_node_kobjs);
	som_node_kobjs = NULL;
	kobject_put(som_nodes_kobj);
}

/* nodes/nodeN for every possible node: chunks may come from any of them. */
static int som_nodes_init(void)
{
	struct som_node_kobj *nk;
	int nid, err;

	som_nodes_kobj = kobject_create_and_add("nodes", som_kobj);
	som_node_kobjs = kcalloc(nr_node_ids, sizeof(*som_node_kobjs),
				 GFP_KERNEL);
	if (!som_nodes_kobj || !som_node_kobjs) {
		err = -ENOMEM;
		goto err_exit;
	}
	for_each_node(nid) {
		nk = kzalloc(sizeof(*nk), GFP_KERNEL);
		if (!nk) {
			err = -ENOMEM;
			goto err_exit;
		}
		nk->nid = nid;
		err = kobject_init_and_add(&nk->kobj, &som_node_ktype,
					   som_nodes_kobj, "node%d", nid);
		if (err) {
			kobject_put(&nk->kobj);
			goto err_exit;
		}
		som_node_kobjs[nid] = nk;
	}
	return 0;

err_exit:
	som_nodes_exit();
	return err;
}

/*
 * mm_kobj is not exported on 6.12; find /sys/kernel/mm through
 * kernel_kobj's kernfs node, whose children's priv is their kobject.
 */
static struct kobject *som_find_mm_kobj(void)
{
	struct kernfs_node *kn;
	struct kobject *kobj;

	kn = kernfs_find_and_get(kernel_kobj->sd, "mm");
	if (!kn)
		return NULL;
	kobj = kobject_get(kn->priv);
	kernfs_put(kn);
	return kobj;
}

/**
 * som_sysfs_init() - create /sys/kernel/mm/som, its nodes/ and sources/
 *
 * Context: Process context (module init).
 * Return: 0, -ENOENT if /sys/kernel/mm is missing, or -ENOMEM.
 */
int som_sysfs_init(void)
{
	int err;

	som_mm_kobj = som_find_mm_kobj();
	if (!som_mm_kobj) {
		pr_err("/sys/kernel/mm not found\n");
		return -ENOENT;
	}
	som_kobj = kobject_create_and_add("som", som_mm_kobj);
	if (!som_kobj) {
		err = -ENOMEM;
		goto err_put_mm;
	}
	err = sysfs_create_groups(som_kobj, som_groups);
	if (err)
		goto err_put_som;
	err = som_nodes_init();
	if (err)
		goto err_remove_group;
	err = som_sources_init(som_kobj);
	if (err)
		goto err_nodes_exit;
	som_free_low_kn = sysfs_get_dirent(som_kobj->sd, "free_low");
	som_pool_set_low_file(&som_pool, som_free_low_kn);
	return 0;

err_nodes_exit:
	som_nodes_exit();
err_remove_group:
	sysfs_remove_groups(som_kobj, som_groups);
err_put_som:
	kobject_put(som_kobj);
err_put_mm:
	kobject_put(som_mm_kobj);
	return err;
}

/**
 * som_sysfs_exit() - remove every source, then /sys/kernel/mm/som
 *
 * Context: Process context (module exit, or init failing).
 */
void som_sysfs_exit(void)
{
	som_pool_set_low_file(&som_pool, NULL);
	kernfs_put(som_free_low_kn);
	som_free_low_kn = NULL;
	/* First add_range and remove_source, waiting for their writers. */
	sysfs_remove_groups(som_kobj, som_groups);
	som_sources_exit();
	som_nodes_exit();
	kobject_put(som_kobj);
	kobject_put(som_mm_kobj);
}
