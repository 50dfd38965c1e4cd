// SPDX-License-Identifier: GPL-2.0
/*
 * /sys/kernel/mm/som: the pool's counters, one value per file, and
 * add_range, through which an administrator adds a boot-reserved range.
 * Nothing here shows a physical address.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/capability.h>
#include <linux/kernfs.h>
#include <linux/kobject.h>
#include <linux/sysfs.h>

#include "som.h"
#include "source_reserved.h"

static struct kobject *som_mm_kobj;	/* /sys/kernel/mm, referenced */
static struct kobject *som_kobj;	/* /sys/kernel/mm/som */

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

	som_pool_get_stats(&som_pool, &stats);
	return sysfs_emit(buf, "%llu\n",
			  *(u64 *)((char *)&stats + pattr->offset));
}

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

static struct som_pool_attr som_metadata_bytes = {
	__ATTR(metadata_bytes, 0444, som_pool_attr_show, NULL),
	offsetof(struct som_pool_stats, metadata_bytes),
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

static struct som_fault_attr som_faults_pud = {
	__ATTR(faults_pud, 0444, som_fault_attr_show, NULL),
	&som_fault_stats.pud,
};

static struct som_fault_attr som_faults_pmd = {
	__ATTR(faults_pmd, 0444, som_fault_attr_show, NULL),
	&som_fault_stats.pmd,
};

static struct som_fault_attr som_faults_pte = {
	__ATTR(faults_pte, 0444, som_fault_attr_show, NULL),
	&som_fault_stats.pte,
};

static ssize_t add_range_store(struct kobject *kobj,
			       struct kobj_attribute *attr,
			       const char *buf, size_t count)
{
	int err;

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	err = som_reserved_add_list(&som_pool, buf);
	return err ? err : count;
}

static struct kobj_attribute add_range_attr = __ATTR_WO(add_range);

static struct attribute *som_attrs[] = {
	&som_total_bytes.attr.attr,
	&som_free_bytes.attr.attr,
	&som_reserved_bytes.attr.attr,
	&som_zeroed_bytes.attr.attr,
	&som_metadata_bytes.attr.attr,
	&som_faults_pud.attr.attr,
	&som_faults_pmd.attr.attr,
	&som_faults_pte.attr.attr,
	&add_range_attr.attr,
	NULL,
};

static const struct attribute_group som_attr_group = {
	.attrs = som_attrs,
};

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
 * som_sysfs_init() - create /sys/kernel/mm/som
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
	err = sysfs_create_group(som_kobj, &som_attr_group);
	if (err)
		goto err_put_som;
	return 0;

err_put_som:
	kobject_put(som_kobj);
err_put_mm:
	kobject_put(som_mm_kobj);
	return err;
}

/**
 * som_sysfs_exit() - remove /sys/kernel/mm/som
 *
 * Context: Process context (module exit).
 */
void som_sysfs_exit(void)
{
	sysfs_remove_group(som_kobj, &som_attr_group);
	kobject_put(som_kobj);
	kobject_put(som_mm_kobj);
}
