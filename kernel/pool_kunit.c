// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests of the som pool alone: chunks, 2 MiB blocks, whole-chunk
 * allocation, reservations and zeroing, with no VMA and no region.
 *
 * The pool manages real memory, so the suite needs some that nobody else
 * uses: som_pool_kunit.base= a 1 GiB aligned physical address inside a
 * boot-reserved range (memmap=) and som_pool_kunit.chunks= how many GiB
 * of it (at least 2), with som.ko loaded without ranges= over it. Without
 * base= every case is skipped. The debug tier of `vm/run test` loads it so.
 *
 * The cases share one pool set up by the suite and each leaves it as it
 * found it: all memory free, none reserved. Each starts once the zeroing
 * worker has zeroed everything.
 */
#include <kunit/test.h>
#include <linux/bitmap.h>
#include <linux/ioport.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/string.h>

#include "pool.h"

static unsigned long base;
module_param(base, ulong, 0444);
MODULE_PARM_DESC(base, "1 GiB aligned physical address of reserved memory for the test pool");

static unsigned int chunks = 2;
module_param(chunks, uint, 0444);
MODULE_PARM_DESC(chunks, "GiB of it to use (at least 2)");

static struct som_pool som_test_pool;

/*
 * What the running case holds: blocks it allocated (bit per block of the
 * test pool) and reservations. The exit hook gives back whatever a failed
 * case left, so that one failure does not spill into the next cases.
 */
static unsigned long *som_test_taken;
static unsigned long som_test_reserved;

static unsigned long som_test_blocks(void)
{
	return (unsigned long)chunks * SOM_BLOCKS_PER_CHUNK;
}

static u64 som_test_total(void)
{
	return (u64)chunks * SOM_CHUNK_SIZE;
}

static struct som_pool_stats som_test_stats(void)
{
	struct som_pool_stats stats;

	som_pool_get_stats(&som_test_pool, &stats);
	return stats;
}

/* Is @bfn a block of the test pool? */
static bool som_test_owns(unsigned long bfn)
{
	unsigned long first = base >> SOM_BLOCK_SHIFT;

	return bfn >= first && bfn < first + som_test_blocks();
}

static unsigned long som_test_index(unsigned long bfn)
{
	return bfn - (base >> SOM_BLOCK_SHIFT);
}

static int som_test_reserve(unsigned long nr)
{
	int err = som_pool_reserve(&som_test_pool, nr);

	if (!err)
		som_test_reserved += nr;
	return err;
}

static void som_test_unreserve(unsigned long nr)
{
	som_pool_unreserve(&som_test_pool, nr);
	som_test_reserved -= nr;
}

static unsigned long som_test_alloc_block(void)
{
	unsigned long bfn = som_pool_alloc_block(&som_test_pool);

	if (som_test_owns(bfn)) {
		__set_bit(som_test_index(bfn), som_test_taken);
		som_test_reserved--;
	}
	return bfn;
}

static unsigned long som_test_alloc_chunk(void)
{
	unsigned long bfn = som_pool_alloc_chunk(&som_test_pool);

	if (som_test_owns(bfn)) {
		bitmap_set(som_test_taken, som_test_index(bfn),
			   SOM_BLOCKS_PER_CHUNK);
		som_test_reserved -= SOM_BLOCKS_PER_CHUNK;
	}
	return bfn;
}

static void som_test_free_block(unsigned long bfn)
{
	__clear_bit(som_test_index(bfn), som_test_taken);
	som_pool_free_block(&som_test_pool, bfn);
}

/* Reserve and allocate @nr blocks into @bfn[]. */
static void som_test_alloc(struct kunit *test, unsigned long *bfn,
			   unsigned long nr)
{
	unsigned long i;

	KUNIT_ASSERT_EQ(test, 0, som_test_reserve(nr));
	for (i = 0; i < nr; i++) {
		bfn[i] = som_test_alloc_block();
		KUNIT_ASSERT_TRUE(test, som_test_owns(bfn[i]));
	}
}

static void som_test_free(unsigned long *bfn, unsigned long nr)
{
	while (nr--)
		som_test_free_block(bfn[nr]);
}

static void som_test_free_chunk(unsigned long bfn)
{
	unsigned int i;

	for (i = 0; i < SOM_BLOCKS_PER_CHUNK; i++)
		som_test_free_block(bfn + i);
}

static void som_pool_test_new_chunks_are_counted_and_zeroed(struct kunit *test)
{
	struct som_pool_stats stats = som_test_stats();
	u64 per_chunk = kmalloc_size_roundup(sizeof(struct som_chunk));

	KUNIT_EXPECT_EQ(test, som_test_total(), stats.total_bytes);
	KUNIT_EXPECT_EQ(test, som_test_total(), stats.free_bytes);
	KUNIT_EXPECT_EQ(test, 0, stats.reserved_bytes);
	KUNIT_EXPECT_EQ(test, som_test_total(), stats.zeroed_bytes);
	KUNIT_EXPECT_EQ(test, chunks * per_chunk + sizeof(som_test_pool),
			stats.metadata_bytes);
	/* The design's budget: at most 1 KiB of metadata per GiB. */
	KUNIT_EXPECT_LE(test, per_chunk, 1024);
}

static void som_pool_test_add_chunk_refuses_bad_chunks(struct kunit *test)
{
	static const struct {
		u64 offset;
		int err;
	} cases[] = {
		{ SOM_BLOCK_SIZE, -EINVAL },
		{ PAGE_SIZE, -EINVAL },
		{ SOM_CHUNK_SIZE - 1, -EINVAL },
		{ 0, -EEXIST },
		{ SOM_CHUNK_SIZE, -EEXIST },
	};
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(cases); i++)
		KUNIT_EXPECT_EQ_MSG(test, cases[i].err,
				    som_pool_add_chunk(&som_test_pool,
						       base + cases[i].offset),
				    "chunk at base + %llu", cases[i].offset);
	KUNIT_EXPECT_EQ(test, som_test_total(), som_test_stats().total_bytes);
}

/*
 * Reservation steps: reserve (or unreserve) whole * all blocks + delta,
 * expect @err and then whole_after * all + delta_after reserved.
 */
static void som_pool_test_reservations_are_exact(struct kunit *test)
{
	static const struct {
		bool reserve;
		long whole, delta;
		int err;
		long whole_after, delta_after;
	} steps[] = {
		{ true, 0, 0, 0, 0, 0 },
		{ true, 1, 0, 0, 1, 0 },
		{ true, 0, 1, -ENOMEM, 1, 0 },
		{ false, 1, 0, 0, 0, 0 },
		{ true, 1, 1, -ENOMEM, 0, 0 },
		{ true, 0, 1, 0, 0, 1 },
		{ true, 1, -1, 0, 1, 0 },
		{ true, 0, 1, -ENOMEM, 1, 0 },
		{ false, 0, 1, 0, 1, -1 },
		{ false, 1, -1, 0, 0, 0 },
	};
	unsigned long all = som_test_blocks(), nr, want;
	struct som_pool_stats stats;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(steps); i++) {
		nr = steps[i].whole * all + steps[i].delta;
		if (steps[i].reserve)
			KUNIT_EXPECT_EQ_MSG(test, steps[i].err,
					    som_test_reserve(nr),
					    "step %u", i);
		else
			som_test_unreserve(nr);
		want = steps[i].whole_after * all + steps[i].delta_after;
		stats = som_test_stats();
		KUNIT_EXPECT_EQ_MSG(test, (u64)want * SOM_BLOCK_SIZE,
				    stats.reserved_bytes, "step %u", i);
		KUNIT_EXPECT_EQ_MSG(test, som_test_total() -
				    (u64)want * SOM_BLOCK_SIZE,
				    stats.free_bytes, "step %u", i);
	}
}

static void som_pool_test_alloc_block_consumes_a_reservation(struct kunit *test)
{
	unsigned long bfn[3];
	struct som_pool_stats stats;

	som_test_alloc(test, bfn, ARRAY_SIZE(bfn));
	KUNIT_EXPECT_NE(test, bfn[0], bfn[1]);
	KUNIT_EXPECT_NE(test, bfn[1], bfn[2]);
	KUNIT_EXPECT_NE(test, bfn[0], bfn[2]);
	stats = som_test_stats();
	KUNIT_EXPECT_EQ(test, 0, stats.reserved_bytes);
	KUNIT_EXPECT_EQ(test, som_test_total() - 3 * SOM_BLOCK_SIZE,
			stats.free_bytes);
	som_test_free(bfn, ARRAY_SIZE(bfn));
	KUNIT_EXPECT_EQ(test, som_test_total(), som_test_stats().free_bytes);
	flush_work(&som_test_pool.zero_work);
	KUNIT_EXPECT_EQ(test, som_test_total(), som_test_stats().zeroed_bytes);
}

static void som_pool_test_blocks_come_from_split_chunks_first(struct kunit *test)
{
	unsigned long bfn[2], whole;

	som_test_alloc(test, bfn, 2);
	KUNIT_EXPECT_EQ(test, bfn[0] / SOM_BLOCKS_PER_CHUNK,
			bfn[1] / SOM_BLOCKS_PER_CHUNK);
	KUNIT_ASSERT_EQ(test, 0, som_test_reserve(SOM_BLOCKS_PER_CHUNK));
	whole = som_test_alloc_chunk();
	KUNIT_ASSERT_TRUE(test, som_test_owns(whole));
	KUNIT_EXPECT_TRUE(test, IS_ALIGNED(whole, SOM_BLOCKS_PER_CHUNK));
	KUNIT_EXPECT_NE(test, bfn[0] / SOM_BLOCKS_PER_CHUNK,
			whole / SOM_BLOCKS_PER_CHUNK);
	som_test_free_chunk(whole);
	som_test_free(bfn, 2);
}

static void som_pool_test_alloc_chunk_needs_a_whole_free_chunk(struct kunit *test)
{
	unsigned long *whole, bfn;
	unsigned int i, k;

	/* Not enough reserved for a chunk. */
	KUNIT_ASSERT_EQ(test, 0, som_test_reserve(SOM_BLOCKS_PER_CHUNK - 1));
	KUNIT_EXPECT_EQ(test, SOM_NO_BLOCK, som_test_alloc_chunk());
	som_test_unreserve(SOM_BLOCKS_PER_CHUNK - 1);

	/*
	 * Split every chunk: take all but the last whole, one block of the
	 * last, then give back all but the first block of the whole ones.
	 * Most of the pool is free, none of it as a whole chunk.
	 */
	whole = kunit_kcalloc(test, chunks, sizeof(*whole), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, whole);
	for (i = 0; i < chunks - 1; i++) {
		KUNIT_ASSERT_EQ(test, 0, som_test_reserve(SOM_BLOCKS_PER_CHUNK));
		whole[i] = som_test_alloc_chunk();
		KUNIT_ASSERT_TRUE(test, som_test_owns(whole[i]));
	}
	som_test_alloc(test, &bfn, 1);
	for (i = 0; i < chunks - 1; i++)
		for (k = 1; k < SOM_BLOCKS_PER_CHUNK; k++)
			som_test_free_block(whole[i] + k);

	KUNIT_EXPECT_EQ(test, 0, som_test_reserve(SOM_BLOCKS_PER_CHUNK));
	KUNIT_EXPECT_EQ(test, SOM_NO_BLOCK, som_test_alloc_chunk());
	/* A failed chunk allocation leaves the reservation alone. */
	KUNIT_EXPECT_EQ(test, (u64)SOM_CHUNK_SIZE,
			som_test_stats().reserved_bytes);
	som_test_unreserve(SOM_BLOCKS_PER_CHUNK);
	som_test_free(&bfn, 1);
	for (i = 0; i < chunks - 1; i++)
		som_test_free_block(whole[i]);
}

/*
 * Dirty a block, then take every block of the pool: whether the worker or
 * the allocator zeroed it, the dirty block comes back all zeros, and the
 * full pool has nothing free.
 */
static void som_pool_test_a_freed_block_comes_back_zeroed(struct kunit *test)
{
	unsigned long all = som_test_blocks(), dirty, *bfn, i;
	void *vaddr;

	som_test_alloc(test, &dirty, 1);
	vaddr = som_pool_block_vaddr(&som_test_pool, dirty);
	KUNIT_ASSERT_NOT_NULL(test, vaddr);
	memset(vaddr, 0xa5, SOM_BLOCK_SIZE);
	som_test_free(&dirty, 1);

	bfn = kunit_kcalloc(test, all, sizeof(*bfn), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, bfn);
	som_test_alloc(test, bfn, all);
	KUNIT_EXPECT_EQ(test, 0, som_test_stats().free_bytes);
	for (i = 0; i < all && bfn[i] != dirty; i++)
		;
	KUNIT_ASSERT_LT(test, i, all);
	KUNIT_EXPECT_NULL(test, memchr_inv(vaddr, 0, SOM_BLOCK_SIZE));
	som_test_free(bfn, all);
	KUNIT_EXPECT_EQ(test, som_test_total(), som_test_stats().free_bytes);
}

static void som_pool_test_contains_finds_overlaps(struct kunit *test)
{
	const u64 end = som_test_total();
	const struct {
		s64 offset;
		u64 size;
		bool want;
	} cases[] = {
		{ 0, 1, true },
		{ -PAGE_SIZE, PAGE_SIZE, false },
		{ -PAGE_SIZE, PAGE_SIZE + 1, true },
		{ end - 1, 1, true },
		{ end, SOM_CHUNK_SIZE, false },
		{ -(s64)SOM_CHUNK_SIZE, 2 * end, true },
	};
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(cases); i++)
		KUNIT_EXPECT_EQ_MSG(test, cases[i].want,
				    som_pool_contains(&som_test_pool,
						      base + cases[i].offset,
						      cases[i].size),
				    "case %u", i);
}

static void som_pool_test_block_vaddr_only_for_its_blocks(struct kunit *test)
{
	unsigned long first = base >> SOM_BLOCK_SHIFT;
	char *a = som_pool_block_vaddr(&som_test_pool, first);
	char *b = som_pool_block_vaddr(&som_test_pool, first + 1);

	KUNIT_ASSERT_NOT_NULL(test, a);
	KUNIT_EXPECT_PTR_EQ(test, a + SOM_BLOCK_SIZE, b);
	KUNIT_EXPECT_NULL(test, som_pool_block_vaddr(&som_test_pool,
						     first + som_test_blocks()));
	KUNIT_EXPECT_NULL(test, som_pool_block_vaddr(&som_test_pool, first - 1));
}

static int som_pool_test_init(struct kunit *test)
{
	if (!base || chunks < 2)
		kunit_skip(test, "needs som_pool_kunit.base= and chunks= >= 2");
	flush_work(&som_test_pool.zero_work);
	return 0;
}

/* Every case gives back what it took; what a failed one left is freed. */
static void som_pool_test_exit(struct kunit *test)
{
	unsigned long left = bitmap_weight(som_test_taken, som_test_blocks());
	unsigned long i, reserved = som_test_reserved;
	struct som_pool_stats stats;

	if (!base || chunks < 2)
		return;
	for_each_set_bit(i, som_test_taken, som_test_blocks())
		som_test_free_block((base >> SOM_BLOCK_SHIFT) + i);
	if (reserved)
		som_test_unreserve(reserved);
	KUNIT_EXPECT_EQ_MSG(test, 0, left, "blocks the case did not free");
	KUNIT_EXPECT_EQ_MSG(test, 0, reserved, "reservations it did not drop");
	stats = som_test_stats();
	KUNIT_EXPECT_EQ(test, som_test_total(), stats.free_bytes);
	KUNIT_EXPECT_EQ(test, 0, stats.reserved_bytes);
}

static int som_pool_test_suite_init(struct kunit_suite *suite)
{
	u64 size = som_test_total();
	unsigned int i;
	int err;

	som_pool_init(&som_test_pool);
	if (!base || chunks < 2)
		return 0;
	/* The pool zeroes what it is given: never let it near live RAM. */
	if (region_intersects(base, size, IORESOURCE_SYSTEM_RAM,
			      IORES_DESC_NONE) != REGION_DISJOINT) {
		pr_err("som_pool_kunit: %#lx + %llu bytes is System RAM\n",
		       base, size);
		return -EINVAL;
	}
	som_test_taken = bitmap_zalloc(som_test_blocks(), GFP_KERNEL);
	if (!som_test_taken)
		return -ENOMEM;
	for (i = 0; i < chunks; i++) {
		err = som_pool_add_chunk(&som_test_pool,
					 base + (u64)i * SOM_CHUNK_SIZE);
		if (err)
			goto err_destroy;
	}
	return 0;

err_destroy:
	som_pool_destroy(&som_test_pool);
	bitmap_free(som_test_taken);
	som_test_taken = NULL;
	return err;
}

static void som_pool_test_suite_exit(struct kunit_suite *suite)
{
	som_pool_destroy(&som_test_pool);
	bitmap_free(som_test_taken);
	som_test_taken = NULL;
}

static struct kunit_case som_pool_test_cases[] = {
	KUNIT_CASE(som_pool_test_new_chunks_are_counted_and_zeroed),
	KUNIT_CASE(som_pool_test_add_chunk_refuses_bad_chunks),
	KUNIT_CASE(som_pool_test_reservations_are_exact),
	KUNIT_CASE(som_pool_test_alloc_block_consumes_a_reservation),
	KUNIT_CASE(som_pool_test_blocks_come_from_split_chunks_first),
	KUNIT_CASE(som_pool_test_alloc_chunk_needs_a_whole_free_chunk),
	KUNIT_CASE(som_pool_test_a_freed_block_comes_back_zeroed),
	KUNIT_CASE(som_pool_test_contains_finds_overlaps),
	KUNIT_CASE(som_pool_test_block_vaddr_only_for_its_blocks),
	{}
};

static struct kunit_suite som_pool_test_suite = {
	.name = "som_pool",
	.init = som_pool_test_init,
	.exit = som_pool_test_exit,
	.suite_init = som_pool_test_suite_init,
	.suite_exit = som_pool_test_suite_exit,
	.test_cases = som_pool_test_cases,
};

kunit_test_suite(som_pool_test_suite);

MODULE_DESCRIPTION("KUnit tests of the som pool");
MODULE_LICENSE("GPL");
MODULE_IMPORT_NS(EXPORTED_FOR_KUNIT_TESTING);
