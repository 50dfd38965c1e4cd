// SPDX-License-Identifier: GPL-2.0
/*
 * som's metadata accounting: /sys/kernel/mm/som/metadata_bytes is every
 * byte som allocates to describe memory, its parts (metadata/) add up to
 * it, each part follows what a mapping does, and the parts kept in som's
 * own slab caches are exactly what /proc/slabinfo shows of them.
 *
 * Needs som.ko loaded with a pool of at least 2 GiB that nothing else
 * uses, and root. The slabinfo check needs exact slab counts: the test
 * VMs boot with slab_debug=F,som_* for that (a cache with debugging on
 * has no per-CPU slabs hiding free objects); elsewhere it is skipped.
 */
#define _GNU_SOURCE
#include <stdio.h>

#include "kselftest_harness.h"
#include "som_util.h"
#include "som_slab_util.h"

#define META	"metadata/"

/* Every part, and the total, read one after the other. */
struct som_meta {
	long long total, chunks, chunk_bits, pool, sources, source_tables;
	long long regions;
	long long table_split, table_nodes, ages, charges, swap, region_total;
};

static void som_meta_read(struct som_meta *m)
{
	m->total = som_stat("metadata_bytes");
	m->chunks = som_stat(META "chunks_bytes");
	m->chunk_bits = som_stat(META "chunk_bits_bytes");
	m->pool = som_stat(META "pool_bytes");
	m->sources = som_stat(META "sources_bytes");
	m->source_tables = som_stat(META "source_tables_bytes");
	m->regions = som_stat(META "regions_bytes");
	m->table_split = som_stat(META "table_split_bytes");
	m->table_nodes = som_stat(META "table_node_bytes");
	m->ages = som_stat(META "ages_bytes");
	m->charges = som_stat(META "charges_bytes");
	m->swap = som_stat(META "swap_bytes");
	m->region_total = som_stat("region_metadata_bytes");
}

static long long som_meta_sum(const struct som_meta *m)
{
	return m->chunks + m->chunk_bits + m->pool + m->sources +
	       m->source_tables + m->regions + m->table_split +
	       m->table_nodes + m->ages + m->charges + m->swap;
}

/*
 * The same, once the parts add up: the zeroing worker, cleaning blocks
 * freed before, gives chunks' per-block bits back between two reads (up
 * to 60 s). A total that never matches its parts is still seen as such.
 */
static void som_meta_read_settled(struct som_meta *m)
{
	int tries;

	for (tries = 0; tries < 600; tries++) {
		som_meta_read(m);
		if (m->total == som_meta_sum(m))
			return;
		usleep(100000);
	}
}

FIXTURE(metadata) {
	int fd;
	long long free_start;
};

FIXTURE_SETUP(metadata)
{
	SOM_OPEN_DEV(self->fd);
	self->free_start = som_stat("free_bytes");
	ASSERT_LE(2 * (long long)GiB, self->free_start)
		TH_LOG("these tests need a pool of at least 2 GiB");
}

FIXTURE_TEARDOWN(metadata)
{
	if (self->fd < 0)
		return;
	close(self->fd);
	EXPECT_EQ(self->free_start, som_stat("free_bytes"));
	EXPECT_EQ(0, som_stat("reserved_bytes"));
}

TEST_F(metadata, parts_add_up_to_the_total)
{
	struct som_meta m;
	char *p;

	p = som_map_shared(self->fd, 64 * MiB);
	ASSERT_NE(MAP_FAILED, p);
	p[0] = 1;
	p[3 * MiB] = 1;
	som_meta_read_settled(&m);
	ASSERT_LT(0, m.chunks);
	EXPECT_LE(0, m.chunk_bits);
	EXPECT_LT(0, m.pool);
	EXPECT_LT(0, m.sources);
	EXPECT_LT(0, m.source_tables);
	EXPECT_LT(0, m.regions);
	/* Two blocks of 32 reserved: the GiB is split. */
	EXPECT_LT(0, m.table_split);
	EXPECT_EQ(0, m.table_nodes);	/* one GiB at index 0: the root */
	EXPECT_EQ(0, m.ages);		/* never scanned: every index young */
	/* The mapping's user, cgroup and its ancestors up to the root. */
	EXPECT_LT(0, m.charges);
	EXPECT_EQ(m.total, som_meta_sum(&m));
	EXPECT_EQ(m.region_total, m.regions + m.table_split + m.table_nodes +
				  m.ages);
	EXPECT_EQ(0, munmap(p, 64 * MiB));
}

/*
 * A GiB mapped by one 1 GiB entry costs its region one xarray slot: no
 * split GiB, and no node while it is the only GiB. Two GiBs take one
 * node of 64 slots.
 */
TEST_F(metadata, whole_gibs_cost_a_slot_each)
{
	struct som_meta before, one, two;
	char *p;

	if (!som_cpu_has_gbpages())
		SKIP(return, "som maps no 1 GiB entries here (x86 without pdpe1gb, or arm64)");
	som_meta_read(&before);
	p = som_map_shared(self->fd, 2 * GiB);
	ASSERT_NE(MAP_FAILED, p);
	p[0] = 1;
	ASSERT_EQ((long long)GiB, som_page_size(self->fd, p))
		TH_LOG("no whole free chunk for a 1 GiB entry");
	som_meta_read(&one);
	EXPECT_EQ(before.table_split, one.table_split);
	p[GiB] = 1;
	ASSERT_EQ((long long)GiB, som_page_size(self->fd, p + GiB));
	som_meta_read(&two);
	EXPECT_EQ(before.table_split, two.table_split);
	EXPECT_GE(576, two.table_nodes - before.table_nodes);
	/* Whole chunks need no per-block bits. */
	EXPECT_EQ(before.chunks, two.chunks);
	EXPECT_GE(before.chunk_bits, two.chunk_bits);
	EXPECT_EQ(0, munmap(p, 2 * GiB));
}

/*
 * A GiB whose blocks are not one chunk's in order costs one split GiB of
 * 808 bytes (12 bits per 2 MiB); unmapping gives it back.
 */
TEST_F(metadata, a_split_gib_costs_one_table)
{
	long long size = som_slab_object_size("som_gib");
	struct som_meta before, after;
	size_t off;
	char *p;

	ASSERT_LT(0, size) TH_LOG("no slab cache som_gib");
	som_meta_read(&before);
	/* 2 MiB past a GiB boundary: no 1 GiB entry can map it. */
	p = som_map_past(self->fd, GiB, GiB, 2 * MiB);
	ASSERT_NE(MAP_FAILED, p);
	for (off = 0; off < GiB; off += 4 * MiB)
		p[off] = 1;
	EXPECT_EQ(2 * (long long)MiB, som_page_size(self->fd, p));
	som_meta_read(&after);
	EXPECT_EQ(size, after.table_split - before.table_split);
	EXPECT_EQ(0, munmap(p, GiB));
	som_meta_read(&after);
	EXPECT_EQ(before.table_split, after.table_split);
	EXPECT_EQ(before.regions, after.regions);
}

/* The parts in som's slab caches are what /proc/slabinfo counts. */
TEST_F(metadata, slab_parts_match_slabinfo)
{
	static const char *const caches[] = {
		"som_chunk", "som_chunk_bits", "som_gib",
	};
	struct som_meta m;
	long long want[3];
	unsigned int i;
	size_t off;
	char *p[2];

	for (i = 0; i < 3; i++)
		if (!som_slab_exact(caches[i]))
			SKIP(return, "slab counts of %s are not exact (boot with slab_debug=F,som_*)",
			     caches[i]);
	/* Two regions whose 2 MiB faults alternate: split GiBs, mixed chunks. */
	for (i = 0; i < 2; i++) {
		p[i] = som_map_shared(self->fd, 256 * MiB);
		ASSERT_NE(MAP_FAILED, p[i]);
		if (i == 0) {
			close(self->fd);
			self->fd = open(SOM_DEV, O_RDWR);
			ASSERT_LE(0, self->fd);
		}
	}
	for (off = 0; off < 256 * MiB; off += 2 * MiB)
		for (i = 0; i < 2; i++)
			p[i][off] = 1;
	/*
	 * The zeroing worker changes chunks' bits, allocating and freeing
	 * them outside the pool lock: it must be done before the two reads.
	 */
	ASSERT_EQ(0, som_wait_all_zeroed(600));
	som_meta_read(&m);
	want[0] = m.chunks;
	want[1] = m.chunk_bits;
	want[2] = m.table_split;
	EXPECT_EQ(want[0], som_slabinfo_active("som_chunk") *
			   som_slab_object_size("som_chunk"));
	EXPECT_EQ(want[1], som_slabinfo_active("som_chunk_bits") *
			   som_slab_object_size("som_chunk_bits"));
	EXPECT_EQ(want[2], som_slabinfo_active("som_gib") *
			   som_slab_object_size("som_gib"));
	EXPECT_LT(0, m.table_split);
	EXPECT_LT(0, m.chunk_bits);
	for (i = 0; i < 2; i++)
		EXPECT_EQ(0, munmap(p[i], 256 * MiB));
}

TEST_HARNESS_MAIN
