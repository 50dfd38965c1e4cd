// SPDX-License-Identifier: GPL-2.0
/*
 * What som spends describing the memory it manages, part by part, in
 * /sys/kernel/mm/som/metadata/ (one value per file), and the totals the
 * top directory shows (metadata_bytes, region_metadata_bytes).
 *
 * The parts that grow with the memory are the chunk descriptors (one per
 * GiB in the pool) and the sources' chunk tables (an address per GiB),
 * the bits of chunks whose blocks differ, and the
 * regions' tables: one xarray slot per mapped GiB, plus a split GiB for
 * each GiB that is not backed whole by one chunk, and their ages: nothing
 * for a GiB used all alike, a slot for one of one age, 256 bytes for
 * one whose indices differ. The rest is fixed: the
 * pool and its per-node sets, the sources, the regions' descriptors.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kobject.h>
#include <linux/numa.h>
#include <linux/sysfs.h>

#include "charge.h"
#include "region.h"
#include "som.h"
#include "source.h"
#include "swap.h"

/**
 * som_metadata_get() - every part of som's metadata, now
 * @m: filled in
 *
 * Context: Process context, may sleep; takes the pool lock, the sources'
 * lock and each region's lock in turn, so the parts are each exact but
 * not one snapshot.
 */
void som_metadata_get(struct som_metadata *m)
{
	struct som_regions_metadata r;
	struct som_pool_stats stats;

	som_pool_get_stats(&som_pool, NUMA_NO_NODE, &stats);
	som_regions_count_metadata(&r);
	m->chunks = stats.chunks_bytes;
	m->chunk_bits = stats.chunk_bits_bytes;
	m->pool = stats.metadata_bytes - stats.chunks_bytes -
		  stats.chunk_bits_bytes;
	m->sources = som_sources_metadata_bytes(&m->source_tables) -
		     m->source_tables;
	m->regions = r.regions;
	m->table_split = r.table_split;
	m->table_nodes = r.table_nodes;
	m->ages = r.ages;
	m->charges = som_charges_metadata_bytes();
	m->swap = som_swap_metadata_bytes() + r.swap;
	m->pack = r.pack;
	m->total = stats.metadata_bytes + m->sources + m->source_tables +
		   r.regions + r.table_split + r.table_nodes + r.ages +
		   m->charges + m->swap + m->pack;
}

/* A part of struct som_metadata: @offset locates it. */
struct som_metadata_attr {
	struct kobj_attribute attr;
	size_t offset;
};

static ssize_t som_metadata_attr_show(struct kobject *kobj,
				      struct kobj_attribute *attr, char *buf)
{
	struct som_metadata_attr *mattr =
		container_of(attr, struct som_metadata_attr, attr);
	struct som_metadata m;

	som_metadata_get(&m);
	return sysfs_emit(buf, "%llu\n", *(u64 *)((char *)&m + mattr->offset));
}

#define SOM_METADATA_ATTR(_name, _field)				\
	struct som_metadata_attr som_metadata_##_name = {		\
		__ATTR(_name, 0444, som_metadata_attr_show, NULL),	\
		offsetof(struct som_metadata, _field),			\
	}

static SOM_METADATA_ATTR(chunks_bytes, chunks);
static SOM_METADATA_ATTR(chunk_bits_bytes, chunk_bits);
static SOM_METADATA_ATTR(pool_bytes, pool);
static SOM_METADATA_ATTR(sources_bytes, sources);
static SOM_METADATA_ATTR(source_tables_bytes, source_tables);
static SOM_METADATA_ATTR(regions_bytes, regions);
static SOM_METADATA_ATTR(table_split_bytes, table_split);
static SOM_METADATA_ATTR(table_node_bytes, table_nodes);
static SOM_METADATA_ATTR(ages_bytes, ages);
static SOM_METADATA_ATTR(charges_bytes, charges);
static SOM_METADATA_ATTR(swap_bytes, swap);
static SOM_METADATA_ATTR(pack_bytes, pack);

static struct attribute *som_metadata_attrs[] = {
	&som_metadata_chunks_bytes.attr.attr,
	&som_metadata_chunk_bits_bytes.attr.attr,
	&som_metadata_pool_bytes.attr.attr,
	&som_metadata_sources_bytes.attr.attr,
	&som_metadata_source_tables_bytes.attr.attr,
	&som_metadata_regions_bytes.attr.attr,
	&som_metadata_table_split_bytes.attr.attr,
	&som_metadata_table_node_bytes.attr.attr,
	&som_metadata_ages_bytes.attr.attr,
	&som_metadata_charges_bytes.attr.attr,
	&som_metadata_swap_bytes.attr.attr,
	&som_metadata_pack_bytes.attr.attr,
	NULL,
};

/* /sys/kernel/mm/som/metadata/ */
const struct attribute_group som_metadata_group = {
	.name = "metadata",
	.attrs = som_metadata_attrs,
};

/* Every byte of it. */
static ssize_t metadata_bytes_show(struct kobject *kobj,
				   struct kobj_attribute *attr, char *buf)
{
	struct som_metadata m;

	som_metadata_get(&m);
	return sysfs_emit(buf, "%llu\n", m.total);
}

struct kobj_attribute som_metadata_bytes_attr = __ATTR_RO(metadata_bytes);

/* Of that, what the regions and their tables take. */
static ssize_t region_metadata_bytes_show(struct kobject *kobj,
					  struct kobj_attribute *attr,
					  char *buf)
{
	struct som_regions_metadata r;

	som_regions_count_metadata(&r);
	return sysfs_emit(buf, "%llu\n",
			  r.regions + r.table_split + r.table_nodes + r.ages +
			  r.pack);
}

struct kobj_attribute som_region_metadata_bytes_attr =
	__ATTR_RO(region_metadata_bytes);
