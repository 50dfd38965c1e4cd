// SPDX-License-Identifier: GPL-2.0
/*
 * The pool's sources: a registry of batches of chunks, one per add, each
 * shown in /sys/kernel/mm/som/sources/<name>/ and removed as a whole.
 *
 * Adding is all or nothing: the kind (source_*.c) finds the memory and
 * fills in the chunk addresses, then som_source_add() checks them against
 * the pool, adds them with their NUMA node, and publishes the source.
 * Removing first moves the blocks in use out of the source's chunks
 * (migrate.c), then asks the pool to let go of them, then hands the
 * memory back through the kind.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/ctype.h>
#include <linux/ioport.h>
#include <linux/memory.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/numa.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/sysfs.h>

#include "migrate.h"
#include "som.h"
#include "som_trace.h"
#include "source.h"

/* Serializes adding and removing sources, and the overlap check. */
static DEFINE_MUTEX(som_sources_lock);
static LIST_HEAD(som_sources);
static struct kobject *som_sources_kobj;	/* /sys/kernel/mm/som/sources */

#define to_som_source(k) container_of(k, struct som_source, kobj)

static ssize_t kind_show(struct kobject *kobj, struct kobj_attribute *attr,
			 char *buf)
{
	return sysfs_emit(buf, "%s\n", to_som_source(kobj)->ops->kind);
}

static ssize_t nodes_show(struct kobject *kobj, struct kobj_attribute *attr,
			  char *buf)
{
	return sysfs_emit(buf, "%*pbl\n",
			  nodemask_pr_args(&to_som_source(kobj)->nodes));
}

static ssize_t chunks_show(struct kobject *kobj, struct kobj_attribute *attr,
			   char *buf)
{
	return sysfs_emit(buf, "%lu\n", to_som_source(kobj)->nr_chunks);
}

static ssize_t bytes_show(struct kobject *kobj, struct kobj_attribute *attr,
			  char *buf)
{
	return sysfs_emit(buf, "%llu\n",
			  (u64)to_som_source(kobj)->nr_chunks * SOM_CHUNK_SIZE);
}

static ssize_t used_bytes_show(struct kobject *kobj,
			       struct kobj_attribute *attr, char *buf)
{
	unsigned long used = som_pool_owner_used(&som_pool,
						 to_som_source(kobj));

	return sysfs_emit(buf, "%llu\n", (u64)used * SOM_BLOCK_SIZE);
}

static ssize_t struct_page_show(struct kobject *kobj,
				struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%d\n", to_som_source(kobj)->struct_page);
}

static ssize_t movable_show(struct kobject *kobj, struct kobj_attribute *attr,
			    char *buf)
{
	return sysfs_emit(buf, "%d\n", !to_som_source(kobj)->unmovable);
}

static const char * const som_tier_names[SOM_TIER_NR] = {
	[SOM_TIER_FAST] = "fast",
	[SOM_TIER_SLOW] = "slow",
};

static ssize_t tier_show(struct kobject *kobj, struct kobj_attribute *attr,
			 char *buf)
{
	return sysfs_emit(buf, "%s\n",
			  som_tier_names[READ_ONCE(to_som_source(kobj)->slow)]);
}

/* A new tier applies to the blocks in use at tiering's next pass. */
static ssize_t tier_store(struct kobject *kobj, struct kobj_attribute *attr,
			  const char *buf, size_t count)
{
	struct som_source *src = to_som_source(kobj);
	int tier;

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	tier = sysfs_match_string(som_tier_names, buf);
	if (tier < 0)
		return tier;
	/*
	 * Not under som_sources_lock: removing a source deletes this file
	 * under it, and waits for this write to end. Chunks on their way
	 * into the pool get the tier from som_source_add() after insertion.
	 */
	WRITE_ONCE(src->slow, tier == SOM_TIER_SLOW);
	som_pool_set_owner_tier(&som_pool, src, &src->slow);
	return count;
}

/* What memory errors have cost this source (pool_poison.c). */
static ssize_t som_source_poison_show(struct kobject *kobj, char *buf,
				      size_t offset)
{
	struct som_poison_stats stats;

	som_pool_poison_stats(&som_pool, NUMA_NO_NODE, to_som_source(kobj),
			      &stats);
	return sysfs_emit(buf, "%llu\n", *(u64 *)((char *)&stats + offset));
}

static ssize_t poison_events_show(struct kobject *kobj,
				  struct kobj_attribute *attr, char *buf)
{
	return som_source_poison_show(kobj, buf,
				      offsetof(struct som_poison_stats, events));
}

static ssize_t poisoned_pages_show(struct kobject *kobj,
				   struct kobj_attribute *attr, char *buf)
{
	return som_source_poison_show(kobj, buf,
				      offsetof(struct som_poison_stats, pages));
}

static ssize_t retired_bytes_show(struct kobject *kobj,
				  struct kobj_attribute *attr, char *buf)
{
	return som_source_poison_show(kobj, buf,
				      offsetof(struct som_poison_stats,
					       retired_bytes));
}

static struct kobj_attribute som_source_kind = __ATTR_RO(kind);
static struct kobj_attribute som_source_nodes = __ATTR_RO(nodes);
static struct kobj_attribute som_source_chunks = __ATTR_RO(chunks);
static struct kobj_attribute som_source_bytes = __ATTR_RO(bytes);
static struct kobj_attribute som_source_used_bytes = __ATTR_RO(used_bytes);
static struct kobj_attribute som_source_struct_page = __ATTR_RO(struct_page);
static struct kobj_attribute som_source_movable = __ATTR_RO(movable);
static struct kobj_attribute som_source_tier = __ATTR_RW(tier);
static struct kobj_attribute som_source_poison_events = __ATTR_RO(poison_events);
static struct kobj_attribute som_source_poisoned_pages = __ATTR_RO(poisoned_pages);
static struct kobj_attribute som_source_retired_bytes = __ATTR_RO(retired_bytes);

static struct attribute *som_source_attrs[] = {
	&som_source_kind.attr,
	&som_source_nodes.attr,
	&som_source_chunks.attr,
	&som_source_bytes.attr,
	&som_source_used_bytes.attr,
	&som_source_struct_page.attr,
	&som_source_movable.attr,
	&som_source_tier.attr,
	&som_source_poison_events.attr,
	&som_source_poisoned_pages.attr,
	&som_source_retired_bytes.attr,
	NULL,
};
ATTRIBUTE_GROUPS(som_source);

static void som_source_kobj_release(struct kobject *kobj)
{
	som_source_free(to_som_source(kobj));
}

static const struct kobj_type som_source_ktype = {
	.release = som_source_kobj_release,
	.sysfs_ops = &kobj_sysfs_ops,
	.default_groups = som_source_groups,
};

/**
 * som_source_alloc() - a source of @nr_chunks chunks, not filled in yet
 * @ops: its kind
 * @nr_chunks: how many chunks it will have
 * @flags: SOM_SOURCE_* flags: its chunks serve unmovable claims only,
 *	its memory is of the slow tier
 *
 * Context: Process context, may sleep.
 * Return: the source, or NULL if out of memory.
 */
struct som_source *som_source_alloc(const struct som_source_ops *ops,
				    unsigned long nr_chunks, unsigned int flags)
{
	struct som_source *src;

	src = kzalloc(sizeof(*src), GFP_KERNEL);
	if (!src)
		return NULL;
	src->chunks = kvcalloc(nr_chunks, sizeof(*src->chunks), GFP_KERNEL);
	if (!src->chunks) {
		kfree(src);
		return NULL;
	}
	src->ops = ops;
	src->nr_chunks = nr_chunks;
	src->unmovable = flags & SOM_SOURCE_UNMOVABLE;
	src->slow = flags & SOM_SOURCE_SLOW;
	return src;
}

/**
 * som_source_alloc_range() - a source of one contiguous physical range
 * @ops: its kind
 * @start: physical start, 1 GiB aligned
 * @size: length, a multiple of 1 GiB
 * @flags: SOM_SOURCE_* flags: its chunks serve unmovable claims only,
 *	its memory is of the slow tier
 *
 * Context: Process context, may sleep.
 * Return: the source with every chunk filled in, or NULL if out of memory.
 */
struct som_source *som_source_alloc_range(const struct som_source_ops *ops,
					  u64 start, u64 size, unsigned int flags)
{
	struct som_source *src;
	unsigned long i;

	src = som_source_alloc(ops, size >> SOM_CHUNK_SHIFT, flags);
	if (!src)
		return NULL;
	for (i = 0; i < src->nr_chunks; i++)
		src->chunks[i] = start + ((u64)i << SOM_CHUNK_SHIFT);
	src->struct_page = pfn_valid(PHYS_PFN(start));
	return src;
}

/**
 * som_source_free() - free a source that never reached the pool
 * @src: the source; its kind's memory must already be given back
 */
void som_source_free(struct som_source *src)
{
	kvfree(src->chunks);
	kfree(src);
}

/* The node of the memory at @phys: its struct page's, else the firmware's. */
static int som_phys_nid(phys_addr_t phys)
{
	unsigned long pfn = PHYS_PFN(phys);
	int nid;

	if (pfn_valid(pfn))
		return page_to_nid(pfn_to_page(pfn));
	nid = phys_to_target_node(phys);
	return nid == NUMA_NO_NODE ? first_online_node : nid;
}

static bool som_source_name_ok(const char *name)
{
	const char *c;

	if (!*name || strnlen(name, SOM_SOURCE_NAME_LEN) == SOM_SOURCE_NAME_LEN ||
	    !strcmp(name, ".") || !strcmp(name, ".."))
		return false;
	for (c = name; *c; c++)
		if (!isalnum(*c) && !strchr(".-_:@", *c))
			return false;
	return true;
}

static struct som_source *som_source_find(const char *name)
{
	struct som_source *src;

	lockdep_assert_held(&som_sources_lock);
	list_for_each_entry(src, &som_sources, list)
		if (!strcmp(src->name, name))
			return src;
	return NULL;
}

/* Give @src a name: @name if it is good and free, else one made up. */
static int som_source_name(struct som_source *src, const char *name)
{
	unsigned long n;

	lockdep_assert_held(&som_sources_lock);
	if (!*name) {
		for (n = 0; ; n++) {
			snprintf(src->name, sizeof(src->name), "%s%lu",
				 src->ops->kind, n);
			if (!som_source_find(src->name))
				return 0;
		}
	}
	strscpy(src->name, name, sizeof(src->name));
	if (!som_source_name_ok(src->name)) {
		pr_err_ratelimited("source name \"%.*s\" refused: use letters, digits and .-_:@\n",
				   SOM_SOURCE_NAME_LEN, name);
		return -EINVAL;
	}
	if (som_source_find(src->name)) {
		pr_err_ratelimited("source name \"%s\" refused: taken\n",
				   src->name);
		return -EEXIST;
	}
	return 0;
}

/* Describe every chunk of @src, outside the pool, onto @chunks. */
static int som_source_describe(struct som_source *src,
			       struct list_head *chunks)
{
	struct som_chunk *chunk;
	unsigned long i;
	int nid;

	for (i = 0; i < src->nr_chunks; i++) {
		if (som_pool_contains(&som_pool, src->chunks[i],
				      SOM_CHUNK_SIZE)) {
			pr_err_ratelimited("%s source refused: its memory is in the pool already\n",
					   src->ops->kind);
			return -EBUSY;
		}
		nid = som_phys_nid(src->chunks[i]);
		chunk = som_chunk_create(&som_pool, src->chunks[i], nid,
					 src->unmovable, src);
		if (IS_ERR(chunk))
			return PTR_ERR(chunk);
		chunk->slow = src->slow;
		list_add_tail(&chunk->list, chunks);
		node_set(nid, src->nodes);
	}
	return 0;
}

/**
 * som_source_add() - put a filled-in source's chunks into the pool
 * @src: the source from som_source_alloc(), every chunk filled in; it is
 *	consumed: on failure its memory is handed back and it is freed
 * @name: its name, or "" to have one made up from its kind; on success
 *	the name is copied back here (SOM_SOURCE_NAME_LEN bytes)
 *
 * Everything that can fail (checks, chunk descriptors, the sysfs
 * directory) is done before the chunks enter the pool, all at once; so a
 * failure never has to take back memory some process may already use.
 *
 * Context: Process context, may sleep.
 * Return: 0; -EBUSY if a chunk overlaps the pool; -EINVAL for a bad name;
 * -EEXIST if the name is taken; -ENOMEM.
 */
int som_source_add(struct som_source *src, char *name)
{
	struct som_chunk *chunk, *tmp;
	LIST_HEAD(chunks);
	int err;

	mutex_lock(&som_sources_lock);
	err = som_source_describe(src, &chunks);
	if (err)
		goto err_destroy;
	err = som_source_name(src, name);
	if (err)
		goto err_destroy;
	err = kobject_init_and_add(&src->kobj, &som_source_ktype,
				   som_sources_kobj, "%s", src->name);
	if (err)
		goto err_put;
	/*
	 * Nothing else adds to the pool: this lock serializes adding, so
	 * only -ENOMEM can come back (for the errors of memory that was
	 * in the pool before).
	 */
	err = som_pool_insert(&som_pool, &chunks);
	if (err) {
		WARN_ON_ONCE(err == -EEXIST);
		goto err_put;
	}
	/* A write to the tier file may have come since they were made. */
	som_pool_set_owner_tier(&som_pool, src, &src->slow);
	list_add_tail(&src->list, &som_sources);
	kobject_uevent(&src->kobj, KOBJ_ADD);
	strscpy(name, src->name, SOM_SOURCE_NAME_LEN);
	trace_som_source(src->name, true, src->nr_chunks, 0);
	pr_info("added %s source %s: %lu GiB on node(s) %*pbl%s%s\n",
		src->ops->kind, src->name, src->nr_chunks,
		nodemask_pr_args(&src->nodes),
		src->unmovable ? ", unmovable" : "",
		src->slow ? ", slow tier" : "");
	mutex_unlock(&som_sources_lock);
	return 0;

err_put:
	/* The kobject owns @src now: its release frees it. */
	list_for_each_entry_safe(chunk, tmp, &chunks, list)
		som_chunk_destroy(chunk);
	mutex_unlock(&som_sources_lock);
	src->ops->release(src);
	kobject_put(&src->kobj);
	return err;

err_destroy:
	list_for_each_entry_safe(chunk, tmp, &chunks, list)
		som_chunk_destroy(chunk);
	mutex_unlock(&som_sources_lock);
	src->ops->release(src);
	som_source_free(src);
	return err;
}

/* Poisoned pages handed back to the kernel's page allocator, at most. */
#define SOM_SOURCE_POISON_MAX	64

/*
 * Give the chunks of a source that left the pool back to where they came
 * from. Memory with struct pages goes back to the kernel: each poisoned
 * page of it is reported to memory_failure(), which takes it out of use
 * there (the kernel's own handler may have marked them already, and then
 * nothing changes). @pfns holds the poisoned pages of the chunks as they
 * left the pool, @nr of them.
 */
static void som_source_destroy(struct som_source *src, unsigned long *pfns,
			       unsigned int nr)
{
	bool struct_page = src->struct_page;
	unsigned int i;

	list_del(&src->list);
	kobject_del(&src->kobj);	/* waits for sysfs readers */
	src->ops->release(src);
	kobject_put(&src->kobj);
	for (i = 0; i < nr && i < SOM_SOURCE_POISON_MAX; i++) {
		if (IS_ENABLED(CONFIG_MEMORY_FAILURE) && struct_page)
			memory_failure_queue(pfns[i], 0);
	}
	if (nr > SOM_SOURCE_POISON_MAX)
		pr_warn("%u poisoned pages left the pool; %u were reported\n",
			nr, SOM_SOURCE_POISON_MAX);
}

/**
 * som_source_remove() - take a source's chunks out of the pool
 * @name: the source's name
 *
 * Blocks in use are moved elsewhere first.
 *
 * Context: Process context, may sleep.
 * Return: 0; -ENOENT if there is no such source; -EBUSY if an unmovable
 * chunk of it is in use, the rest of the pool could not cover the
 * reservations held on it, or a process's mappings were between states
 * for too long; -ENOSPC if the rest of the pool has no room for the
 * blocks in use (those already moved stay moved); -EINTR; -ENOMEM.
 */
int som_source_remove(const char *name)
{
	unsigned long poison[SOM_SOURCE_POISON_MAX];
	unsigned int nr_poison = 0;
	struct som_source *src;
	int err;

	mutex_lock(&som_sources_lock);
	src = som_source_find(name);
	if (!src) {
		err = -ENOENT;
		goto out_unlock;
	}
	err = som_migrate_evacuate(&som_pool, src);
	if (!err) {
		err = som_pool_remove_poisoned(&som_pool, src, poison,
					       SOM_SOURCE_POISON_MAX,
					       &nr_poison);
		if (err)
			som_pool_unisolate_owner(&som_pool, src);
	}
	trace_som_source(name, false, src->nr_chunks, err);
	if (err) {
		pr_info_ratelimited("source %s not removed (%d): %llu bytes of it are in use\n",
				    name, err,
				    (u64)som_pool_owner_used(&som_pool, src) *
				    SOM_BLOCK_SIZE);
		goto out_unlock;
	}
	pr_info("removed %s source %s (%lu GiB)\n", src->ops->kind, src->name,
		src->nr_chunks);
	som_source_destroy(src, poison, nr_poison);
out_unlock:
	mutex_unlock(&som_sources_lock);
	return err;
}

/**
 * som_source_claim() - claim a physical range exclusively for a source
 * @start: first byte
 * @size: length
 *
 * The claim is a "som" resource nested in the firmware's one: no driver
 * can claim the range, and /dev/mem refuses it. Its name is allocated, not
 * a string of this module: a claim leaked at unload (som_source_leak())
 * outlives the module's memory.
 *
 * Context: Process context, may sleep.
 * Return: the claim, or NULL if the range is claimed already, spans two
 * resources, or memory is short.
 */
struct resource *som_source_claim(u64 start, u64 size)
{
	char *name = kstrdup("som", GFP_KERNEL);
	struct resource *res;

	if (!name)
		return NULL;
	res = request_mem_region_exclusive(start, size, name);
	if (!res)
		kfree(name);
	return res;
}

/**
 * som_source_unclaim() - release what som_source_claim() claimed
 * @res: the claim
 */
void som_source_unclaim(struct resource *res)
{
	const char *name = res->name;

	release_mem_region(res->start, resource_size(res));
	kfree(name);
}

struct som_cover {
	u64 next;	/* first byte not yet known to be covered */
};

static int som_cover_one(struct resource *res, void *arg)
{
	struct som_cover *cover = arg;

	if (res->start > cover->next)
		return 1;	/* a hole: stop the walk */
	cover->next = max_t(u64, cover->next, res->end + 1);
	return 0;
}

/**
 * som_range_is_covered() - is a physical range wholly inside iomem
 *	resources of one descriptor?
 * @start: first byte
 * @size: length
 * @desc: an IORES_DESC_* value
 *
 * Return: true if every byte of [@start, @start + @size) is.
 */
bool som_range_is_covered(u64 start, u64 size, unsigned long desc)
{
	struct som_cover cover = { .next = start };

	walk_iomem_res_desc(desc, IORESOURCE_MEM, start, start + size - 1,
			    &cover, som_cover_one);
	return cover.next >= start + size;
}

/**
 * som_sources_metadata_bytes() - what the sources spend describing chunks
 * @tables: set to the part of it in their chunk tables (one address per
 *	chunk, as kmalloc rounds the table up)
 *
 * Return: the bytes of every struct som_source and its chunk table.
 */
u64 som_sources_metadata_bytes(u64 *tables)
{
	struct som_source *src;
	u64 bytes = 0;

	*tables = 0;
	mutex_lock(&som_sources_lock);
	list_for_each_entry(src, &som_sources, list) {
		bytes += kmalloc_size_roundup(sizeof(*src));
		*tables += kmalloc_size_roundup(src->nr_chunks *
						sizeof(*src->chunks));
	}
	mutex_unlock(&som_sources_lock);
	return bytes + *tables;
}

/*
 * Offlining a memory block waits for its pages to migrate away; the pages
 * of a buddy or hugetlb source never do while they are in the pool, so it
 * would wait until interrupted (or forever, for an in-kernel caller).
 * Refuse it at once instead.
 */
static int som_memory_callback(struct notifier_block *nb,
			       unsigned long action, void *arg)
{
	struct memory_notify *mn = arg;

	if (action == MEM_GOING_OFFLINE &&
	    som_pool_contains(&som_pool, PFN_PHYS(mn->start_pfn),
			      (u64)mn->nr_pages << PAGE_SHIFT))
		return notifier_from_errno(-EBUSY);
	return NOTIFY_OK;
}

static struct notifier_block som_memory_nb = {
	.notifier_call = som_memory_callback,
};

/**
 * som_sources_init() - create /sys/kernel/mm/som/sources
 * @parent: /sys/kernel/mm/som
 *
 * Also refuses the offlining of memory blocks that hold pool chunks.
 *
 * Return: 0 or -ENOMEM.
 */
int som_sources_init(struct kobject *parent)
{
	int err;

	som_sources_kobj = kobject_create_and_add("sources", parent);
	if (!som_sources_kobj)
		return -ENOMEM;
	err = register_memory_notifier(&som_memory_nb);
	if (err)
		kobject_put(som_sources_kobj);
	return err;
}

/*
 * A source that cannot leave the pool at exit keeps its memory for good:
 * handing memory back that som may still write would be far worse than
 * losing it until the next boot.
 */
static void som_source_leak(struct som_source *src, int err)
{
	pr_err("%s source %s could not leave the pool (%d): its %lu GiB are leaked, not handed back\n",
	       src->ops->kind, src->name, err, src->nr_chunks);
	list_del(&src->list);
	kobject_del(&src->kobj);
}

/**
 * som_sources_exit() - remove every source, then the sources directory
 *
 * Context: Module exit: no region is left and compaction is stopped, so
 * every chunk is free and none is set aside.
 */
void som_sources_exit(void)
{
	unsigned long poison[SOM_SOURCE_POISON_MAX];
	struct som_source *src, *tmp;
	unsigned int nr_poison;
	int err;

	mutex_lock(&som_sources_lock);
	list_for_each_entry_safe(src, tmp, &som_sources, list) {
		err = som_pool_remove_poisoned(&som_pool, src, poison,
					       SOM_SOURCE_POISON_MAX,
					       &nr_poison);
		if (err)
			som_source_leak(src, err);
		else
			som_source_destroy(src, poison, nr_poison);
	}
	mutex_unlock(&som_sources_lock);
	unregister_memory_notifier(&som_memory_nb);
	kobject_put(som_sources_kobj);
}
