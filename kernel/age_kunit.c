// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests of a region's ages alone (age.c) over a made-up table: the
 * forms a GiB's ages take, what each index reads back, and what they
 * cost. som.ko must be loaded (it owns the slab cache of struct
 * som_gib_ages).
 */
#include <kunit/test.h>
#include <linux/bitmap.h>
#include <linux/xarray.h>

#include "age.h"
#include "pool.h"
#include "table.h"

#define GIB	SOM_BLOCKS_PER_CHUNK

struct som_age_test {
	struct som_table table;
	struct som_ages ages;
	DECLARE_BITMAP(used, GIB);
};

static void som_age_test_exit(struct kunit *test)
{
	struct som_age_test *t = test->priv;

	if (t) {
		som_ages_destroy(&t->ages);
		som_table_destroy(&t->table);
	}
}

/* A table whose GiB 0 is chunk 7 whole, and empty ages. */
static struct som_age_test *som_age_test_new(struct kunit *test)
{
	struct som_age_test *t = kunit_kzalloc(test, sizeof(*t), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, t);
	som_table_init(&t->table);
	som_ages_init(&t->ages);
	test->priv = t;
	KUNIT_ASSERT_EQ(test, som_table_reserve(&t->table, 0, GIB - 1,
						GFP_KERNEL), 0);
	KUNIT_ASSERT_EQ(test, som_table_hold(&t->table, 0, GFP_KERNEL), 0);
	som_table_set_chunk(&t->table, 0, 7);
	return t;
}

static void som_age_test_scan(struct som_age_test *t)
{
	som_ages_advance(&t->ages, &t->table, 0, t->used);
}

/* A GiB used or not all alike keeps one age and costs no memory. */
static void som_age_test_uniform_gib_costs_nothing(struct kunit *test)
{
	struct som_age_test *t = som_age_test_new(test);
	u64 bytes[SOM_AGE_NR] = { 0 };
	int i;

	KUNIT_EXPECT_EQ(test, som_ages_get(&t->ages, &t->table, 5), 0);
	for (i = 1; i <= SOM_AGE_NR + 3; i++) {
		som_age_test_scan(t);
		KUNIT_EXPECT_EQ(test, som_ages_get(&t->ages, &t->table, 300),
				min(i, SOM_AGE_NR - 1));
		KUNIT_EXPECT_EQ(test, som_ages_bytes(&t->ages), 0);
	}
	som_ages_count(&t->ages, &t->table, bytes);
	KUNIT_EXPECT_EQ(test, bytes[SOM_AGE_NR - 1], 1ULL << SOM_CHUNK_SHIFT);
	bitmap_fill(t->used, GIB);
	som_age_test_scan(t);
	KUNIT_EXPECT_EQ(test, som_ages_get(&t->ages, &t->table, 511), 0);
	KUNIT_EXPECT_NULL(test, xa_load(&t->ages.gibs, 0));
}

/* Indices that differ cost one struct som_gib_ages, until they agree. */
static void som_age_test_mixed_gib_splits_and_merges(struct kunit *test)
{
	struct som_age_test *t = som_age_test_new(test);
	u64 bytes[SOM_AGE_NR] = { 0 };
	unsigned int i;

	som_age_test_scan(t);			/* all 1 */
	bitmap_set(t->used, 0, 100);
	som_age_test_scan(t);			/* 100 at 0, the rest 2 */
	KUNIT_EXPECT_EQ(test, t->ages.nr_split, 1);
	KUNIT_EXPECT_GT(test, som_ages_bytes(&t->ages), 0);
	for (i = 0; i < GIB; i++)
		KUNIT_EXPECT_EQ(test, som_ages_get(&t->ages, &t->table, i),
				i < 100 ? 0 : 2);
	som_ages_count(&t->ages, &t->table, bytes);
	KUNIT_EXPECT_EQ(test, bytes[0], 100ULL << SOM_BLOCK_SHIFT);
	KUNIT_EXPECT_EQ(test, bytes[2], 412ULL << SOM_BLOCK_SHIFT);
	/* Each index ages on its own. */
	bitmap_zero(t->used, GIB);
	__set_bit(511, t->used);
	som_age_test_scan(t);
	KUNIT_EXPECT_EQ(test, som_ages_get(&t->ages, &t->table, 99), 1);
	KUNIT_EXPECT_EQ(test, som_ages_get(&t->ages, &t->table, 100), 3);
	KUNIT_EXPECT_EQ(test, som_ages_get(&t->ages, &t->table, 511), 0);
	/* All used: one form again, no memory. */
	bitmap_fill(t->used, GIB);
	som_age_test_scan(t);
	KUNIT_EXPECT_EQ(test, t->ages.nr_split, 0);
	KUNIT_EXPECT_EQ(test, som_ages_bytes(&t->ages), 0);
	/* Ages that catch up at the cap agree too. */
	bitmap_zero(t->used, GIB);
	__set_bit(3, t->used);
	som_age_test_scan(t);
	KUNIT_EXPECT_EQ(test, t->ages.nr_split, 1);
	for (i = 0; i < SOM_AGE_NR; i++) {
		bitmap_zero(t->used, GIB);
		som_age_test_scan(t);
	}
	KUNIT_EXPECT_EQ(test, t->ages.nr_split, 0);
	KUNIT_EXPECT_EQ(test, som_ages_get(&t->ages, &t->table, 3),
			SOM_AGE_NR - 1);
}

/* Indices without a block have no age; a GiB without blocks goes. */
static void som_age_test_blocks_gone_are_forgotten(struct kunit *test)
{
	struct som_age_test *t = som_age_test_new(test);
	u64 bytes[SOM_AGE_NR] = { 0 };

	som_age_test_scan(t);
	som_age_test_scan(t);
	som_table_clear(&t->table, 0, 255);
	KUNIT_EXPECT_EQ(test, som_ages_get(&t->ages, &t->table, 0),
			SOM_AGE_ABSENT);
	KUNIT_EXPECT_EQ(test, som_ages_get(&t->ages, &t->table, 256), 2);
	som_ages_count(&t->ages, &t->table, bytes);
	KUNIT_EXPECT_EQ(test, bytes[2], 256ULL << SOM_BLOCK_SHIFT);
	/* Used bits where no block is count for nothing. */
	bitmap_set(t->used, 0, 256);
	som_age_test_scan(t);
	KUNIT_EXPECT_EQ(test, som_ages_get(&t->ages, &t->table, 256), 3);
	KUNIT_EXPECT_EQ(test, t->ages.nr_split, 0);
	som_table_clear(&t->table, 0, ULONG_MAX);
	som_ages_prune(&t->ages, &t->table);
	KUNIT_EXPECT_TRUE(test, xa_empty(&t->ages.gibs));
}

/* Marks stand for use the next scan cannot see; new blocks read young. */
static void som_age_test_marks_and_new_blocks(struct kunit *test)
{
	struct som_age_test *t = som_age_test_new(test);
	DECLARE_BITMAP(bits, GIB);
	int i;

	for (i = 0; i < 3; i++)
		som_age_test_scan(t);
	bitmap_zero(bits, GIB);
	__set_bit(10, bits);
	som_ages_mark(&t->ages, 0, bits);
	KUNIT_EXPECT_EQ(test, som_ages_get(&t->ages, &t->table, 10), 0);
	KUNIT_EXPECT_EQ(test, som_ages_get(&t->ages, &t->table, 11), 3);
	KUNIT_EXPECT_EQ(test, t->ages.nr_split, 1);
	som_age_test_scan(t);			/* the mark counts as use */
	KUNIT_EXPECT_EQ(test, som_ages_get(&t->ages, &t->table, 10), 0);
	KUNIT_EXPECT_EQ(test, som_ages_get(&t->ages, &t->table, 11), 4);
	som_age_test_scan(t);
	KUNIT_EXPECT_EQ(test, som_ages_get(&t->ages, &t->table, 10), 1);

	/* A whole GiB marked: one value, no memory; read as 0, then 0. */
	bitmap_fill(bits, GIB);
	som_ages_mark(&t->ages, 0, bits);
	KUNIT_EXPECT_EQ(test, t->ages.nr_split, 0);
	KUNIT_EXPECT_EQ(test, som_ages_get(&t->ages, &t->table, 11), 0);
	som_age_test_scan(t);
	KUNIT_EXPECT_NULL(test, xa_load(&t->ages.gibs, 0));

	/* A new block in an old GiB reads 0, the others keep their age. */
	som_age_test_scan(t);
	som_age_test_scan(t);
	bitmap_zero(bits, GIB);
	__set_bit(5, bits);
	som_ages_renew(&t->ages, 0, bits);
	KUNIT_EXPECT_EQ(test, som_ages_get(&t->ages, &t->table, 5), 0);
	KUNIT_EXPECT_EQ(test, som_ages_get(&t->ages, &t->table, 6), 2);
	/* Renewing what is young already costs nothing. */
	bitmap_fill(bits, GIB);
	som_ages_renew(&t->ages, 0, bits);
	KUNIT_EXPECT_EQ(test, t->ages.nr_split, 0);
	bitmap_zero(bits, GIB);
	__set_bit(7, bits);
	som_ages_renew(&t->ages, 0, bits);
	KUNIT_EXPECT_EQ(test, t->ages.nr_split, 0);
}

static struct kunit_case som_age_test_cases[] = {
	KUNIT_CASE(som_age_test_uniform_gib_costs_nothing),
	KUNIT_CASE(som_age_test_mixed_gib_splits_and_merges),
	KUNIT_CASE(som_age_test_blocks_gone_are_forgotten),
	KUNIT_CASE(som_age_test_marks_and_new_blocks),
	{}
};

static struct kunit_suite som_age_test_suite = {
	.name = "som_ages",
	.exit = som_age_test_exit,
	.test_cases = som_age_test_cases,
};

kunit_test_suite(som_age_test_suite);
