// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests of a region's table alone (table.c): the forms a GiB takes
 * and what each index reads back, checked against a plain array. Block
 * numbers are made up; nothing here touches the pool or memory. som.ko
 * must be loaded (it owns the slab cache of split GiBs).
 */
#include <kunit/test.h>
#include <linux/module.h>
#include <linux/prandom.h>
#include <linux/xarray.h>

#include "pool.h"
#include "table.h"

#define GIB		SOM_BLOCKS_PER_CHUNK
#define NR_GIBS		3
#define NR_INDICES	(NR_GIBS * GIB)

/* Block @b of chunk @cfn. */
static unsigned long bfn(unsigned long cfn, unsigned int b)
{
	return cfn * GIB + b;
}

static void som_table_test_exit(struct kunit *test)
{
	struct som_table *table = test->priv;

	if (table)
		som_table_destroy(table);
}

static struct som_table *som_test_table(struct kunit *test)
{
	struct som_table *table = kunit_kzalloc(test, sizeof(*table),
						GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, table);
	som_table_init(table);
	test->priv = table;
	return table;
}

static void som_table_test_whole_gibs_cost_a_slot(struct kunit *test)
{
	struct som_table *table = som_test_table(test);

	/* One GiB at index 0: in the xarray's root, no node at all. */
	KUNIT_ASSERT_EQ(test, som_table_reserve(table, 0, GIB - 1, GFP_KERNEL),
			0);
	KUNIT_EXPECT_EQ(test, som_table_bytes(table), 0);
	KUNIT_ASSERT_EQ(test, som_table_hold(table, 0, GFP_KERNEL), 0);
	som_table_set_chunk(table, 0, 41);
	KUNIT_EXPECT_EQ(test, som_table_bytes(table), 0);
	som_table_clear(table, 0, ULONG_MAX);
	KUNIT_ASSERT_EQ(test, som_table_reserve(table, 0, 2 * GIB - 1,
						GFP_KERNEL), 0);
	KUNIT_EXPECT_EQ(test, som_table_count(table, 0, 2 * GIB - 1,
					      SOM_TABLE_KIND_RESERVED),
			2 * GIB);
	KUNIT_EXPECT_EQ(test, table->nr_split, 0);
	/* Two GiB entries: one xarray node, nothing per 2 MiB. */
	KUNIT_EXPECT_EQ(test, som_table_bytes(table), sizeof(struct xa_node));

	KUNIT_ASSERT_EQ(test, som_table_hold(table, GIB, GFP_KERNEL), 0);
	som_table_set_chunk(table, GIB, 40);
	KUNIT_EXPECT_EQ(test, som_table_chunk(table, GIB), 40);
	KUNIT_EXPECT_EQ(test, som_table_get(table, GIB + 5), bfn(40, 5));
	KUNIT_EXPECT_EQ(test, som_table_chunk(table, 0), SOM_NO_BLOCK);
	KUNIT_EXPECT_EQ(test, table->nr_split, 0);
}

static void som_table_test_blocks_in_order_become_a_chunk(struct kunit *test)
{
	struct som_table *table = som_test_table(test);
	int i;

	KUNIT_ASSERT_EQ(test, som_table_reserve(table, 0, GIB - 1,
						GFP_KERNEL), 0);
	for (i = GIB - 1; i > 0; i--)
		KUNIT_ASSERT_EQ(test, som_table_set(table, i, bfn(7, i),
						    GFP_KERNEL), 0);
	KUNIT_EXPECT_EQ(test, table->nr_split, 1);
	KUNIT_EXPECT_EQ(test, som_table_chunk(table, 0), SOM_NO_BLOCK);
	KUNIT_ASSERT_EQ(test, som_table_set(table, 0, bfn(7, 0), GFP_KERNEL), 0);
	KUNIT_EXPECT_EQ(test, table->nr_split, 0);
	KUNIT_EXPECT_EQ(test, som_table_chunk(table, 0), 7);

	/* Out of order: stays split. */
	KUNIT_ASSERT_EQ(test, som_table_set(table, 3, bfn(7, 4), GFP_KERNEL), 0);
	KUNIT_EXPECT_EQ(test, table->nr_split, 1);
	KUNIT_EXPECT_EQ(test, som_table_chunk(table, 0), SOM_NO_BLOCK);
	KUNIT_EXPECT_EQ(test, som_table_get(table, 3), bfn(7, 4));
	KUNIT_EXPECT_EQ(test, som_table_get(table, 4), bfn(7, 4));
}

static void som_table_test_an_eighth_chunk_widens(struct kunit *test)
{
	struct som_table *table = som_test_table(test);
	int i;

	KUNIT_ASSERT_EQ(test, som_table_reserve(table, 0, GIB - 1,
						GFP_KERNEL), 0);
	for (i = 0; i < 7; i++)
		KUNIT_ASSERT_EQ(test, som_table_set(table, i, bfn(100 + i, i),
						    GFP_KERNEL), 0);
	KUNIT_EXPECT_EQ(test, table->nr_wide, 0);
	KUNIT_ASSERT_EQ(test, som_table_set(table, 7, bfn(107, 7), GFP_KERNEL),
			0);
	KUNIT_EXPECT_EQ(test, table->nr_wide, 1);
	for (i = 0; i < 8; i++)
		KUNIT_EXPECT_EQ(test, som_table_get(table, i), bfn(100 + i, i));
	KUNIT_EXPECT_EQ(test, som_table_get(table, 8), SOM_TABLE_RESERVED);

	/* Seven chunks again: narrow, same contents. */
	som_table_clear(table, 0, 0);
	KUNIT_EXPECT_EQ(test, table->nr_wide, 0);
	KUNIT_EXPECT_EQ(test, som_table_get(table, 0), SOM_TABLE_ABSENT);
	for (i = 1; i < 8; i++)
		KUNIT_EXPECT_EQ(test, som_table_get(table, i), bfn(100 + i, i));

	/* A slot nobody uses any more is taken by a new chunk. */
	som_table_clear(table, 1, 1);
	KUNIT_ASSERT_EQ(test, som_table_set(table, 9, bfn(200, 9), GFP_KERNEL),
			0);
	KUNIT_EXPECT_EQ(test, table->nr_wide, 0);
	KUNIT_EXPECT_EQ(test, som_table_get(table, 9), bfn(200, 9));
	for (i = 2; i < 8; i++)
		KUNIT_EXPECT_EQ(test, som_table_get(table, i), bfn(100 + i, i));
}

static void som_table_test_clear_cuts_a_chunk(struct kunit *test)
{
	struct som_table *table = som_test_table(test);
	pgoff_t idx;

	KUNIT_ASSERT_EQ(test, som_table_hold(table, GIB, GFP_KERNEL), 0);
	som_table_set_chunk(table, GIB, 9);
	som_table_clear(table, GIB + 88, GIB + 188);
	KUNIT_EXPECT_EQ(test, table->nr_split, 1);
	KUNIT_EXPECT_EQ(test, som_table_get(table, GIB + 87), bfn(9, 87));
	KUNIT_EXPECT_EQ(test, som_table_get(table, GIB + 88), SOM_TABLE_ABSENT);
	KUNIT_EXPECT_EQ(test, som_table_get(table, GIB + 189), bfn(9, 189));
	KUNIT_EXPECT_EQ(test, som_table_count(table, 0, 3 * GIB - 1,
					      SOM_TABLE_KIND_BLOCK), GIB - 101);
	idx = GIB + 88;
	KUNIT_EXPECT_EQ(test, som_table_next(table, &idx, ULONG_MAX),
			bfn(9, 189));
	KUNIT_EXPECT_EQ(test, idx, GIB + 189);

	som_table_clear(table, 0, ULONG_MAX);
	KUNIT_EXPECT_TRUE(test, som_table_empty(table));
	KUNIT_EXPECT_EQ(test, table->nr_split, 0);
}

static void som_table_test_reserve_with_partial_ends(struct kunit *test)
{
	struct som_table *table = som_test_table(test);
	pgoff_t idx = 0;

	KUNIT_ASSERT_EQ(test, som_table_reserve(table, 100, 2 * GIB + 10,
						GFP_KERNEL), 0);
	KUNIT_EXPECT_EQ(test, som_table_count(table, 0, 3 * GIB - 1,
					      SOM_TABLE_KIND_RESERVED),
			2 * GIB + 10 - 100 + 1);
	KUNIT_EXPECT_EQ(test, table->nr_split, 2);
	KUNIT_EXPECT_EQ(test, som_table_next(table, &idx, ULONG_MAX),
			SOM_TABLE_RESERVED);
	KUNIT_EXPECT_EQ(test, idx, 100);
	idx = 2 * GIB + 11;
	KUNIT_EXPECT_EQ(test, som_table_next(table, &idx, ULONG_MAX),
			SOM_TABLE_ABSENT);

	/* Filling the holes at the ends makes three whole GiBs. */
	KUNIT_ASSERT_EQ(test, som_table_reserve(table, 0, 3 * GIB - 1,
						GFP_KERNEL), 0);
	KUNIT_EXPECT_EQ(test, table->nr_split, 0);
	som_table_clear(table, 0, ULONG_MAX);
	KUNIT_EXPECT_TRUE(test, som_table_empty(table));
}

/* What GiB @g of @model is: the form table.h promises for it. */
static bool som_test_gib_whole(const unsigned long *model, unsigned int g,
			       unsigned long *cfn)
{
	const unsigned long *m = model + g * GIB;
	unsigned int i, absent = 0, reserved = 0, in_order = 0;

	*cfn = SOM_NO_BLOCK;
	for (i = 0; i < GIB; i++) {
		absent += m[i] == SOM_TABLE_ABSENT;
		reserved += m[i] == SOM_TABLE_RESERVED;
		in_order += som_table_is_block(m[i]) && m[i] == m[0] + i &&
			    IS_ALIGNED(m[0], GIB);
	}
	if (in_order == GIB)
		*cfn = m[0] / GIB;
	return absent == GIB || reserved == GIB || in_order == GIB;
}

static void som_test_check(struct kunit *test, struct som_table *table,
			   const unsigned long *model)
{
	unsigned long nr_split = 0, cfn;
	unsigned int i, g;

	for (i = 0; i < NR_INDICES; i++)
		KUNIT_ASSERT_EQ_MSG(test, som_table_get(table, i), model[i],
				    "index %u", i);
	for (g = 0; g < NR_GIBS; g++) {
		nr_split += !som_test_gib_whole(model, g, &cfn);
		KUNIT_ASSERT_EQ_MSG(test, som_table_chunk(table, g * GIB), cfn,
				    "GiB %u", g);
	}
	KUNIT_ASSERT_EQ(test, table->nr_split, nr_split);
}

/*
 * Random sets, reservations, clears and whole chunks over three GiBs,
 * with blocks from ten chunks (more than a dictionary holds) and long
 * in-order runs, each checked against a plain array.
 */
static void som_table_test_random_ops_match_an_array(struct kunit *test)
{
	struct som_table *table = som_test_table(test);
	unsigned long *model, entry;
	struct rnd_state rnd;
	unsigned int op, i, a, b, n;
	int err;

	model = kunit_kmalloc_array(test, NR_INDICES, sizeof(*model),
				    GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, model);
	for (i = 0; i < NR_INDICES; i++)
		model[i] = SOM_TABLE_ABSENT;
	prandom_seed_state(&rnd, 42);

	for (op = 0; op < 20000; op++) {
		a = prandom_u32_state(&rnd) % NR_INDICES;
		n = prandom_u32_state(&rnd) % 8;
		b = min_t(unsigned int, NR_INDICES - 1,
			  a + (n < 6 ? n : prandom_u32_state(&rnd) % GIB));
		switch (prandom_u32_state(&rnd) % 6) {
		case 0:		/* a block, in order with its chunk */
		case 1:
			entry = bfn(64 + prandom_u32_state(&rnd) % 10, 0);
			for (i = a; i <= b; i++) {
				model[i] = entry + i % GIB;
				err = som_table_set(table, i, model[i],
						    GFP_KERNEL);
				KUNIT_ASSERT_EQ(test, err, 0);
			}
			break;
		case 2:
			KUNIT_ASSERT_EQ(test, som_table_reserve(table, a, b,
								GFP_KERNEL), 0);
			for (i = a; i <= b; i++)
				if (model[i] == SOM_TABLE_ABSENT)
					model[i] = SOM_TABLE_RESERVED;
			break;
		case 3:
			som_table_clear(table, a, b);
			for (i = a; i <= b; i++)
				model[i] = SOM_TABLE_ABSENT;
			break;
		case 4:
			entry = prandom_u32_state(&rnd) % 3 ?
				bfn(64 + prandom_u32_state(&rnd) % 10,
				    prandom_u32_state(&rnd) % GIB) :
				SOM_TABLE_RESERVED;
			model[a] = entry;
			KUNIT_ASSERT_EQ(test, som_table_set(table, a, entry,
							    GFP_KERNEL), 0);
			break;
		default:
			if (prandom_u32_state(&rnd) % 4)
				break;
			a = ALIGN_DOWN(a, GIB);
			KUNIT_ASSERT_EQ(test, som_table_hold(table, a,
							     GFP_KERNEL), 0);
			entry = 80 + prandom_u32_state(&rnd) % 3;
			som_table_set_chunk(table, a, entry);
			for (i = 0; i < GIB; i++)
				model[a + i] = bfn(entry, i);
			break;
		}
		if (!(op % 500))
			som_test_check(test, table, model);
	}
	som_test_check(test, table, model);
	for (i = 0; i < NR_GIBS * GIB; i += 77)
		KUNIT_EXPECT_EQ(test, som_table_count(table, i, i + 76,
						      SOM_TABLE_KIND_ABSENT) +
				som_table_count(table, i, i + 76,
						SOM_TABLE_KIND_RESERVED) +
				som_table_count(table, i, i + 76,
						SOM_TABLE_KIND_BLOCK), 77);
}

static struct kunit_case som_table_test_cases[] = {
	KUNIT_CASE(som_table_test_whole_gibs_cost_a_slot),
	KUNIT_CASE(som_table_test_blocks_in_order_become_a_chunk),
	KUNIT_CASE(som_table_test_an_eighth_chunk_widens),
	KUNIT_CASE(som_table_test_clear_cuts_a_chunk),
	KUNIT_CASE(som_table_test_reserve_with_partial_ends),
	KUNIT_CASE(som_table_test_random_ops_match_an_array),
	{}
};

static struct kunit_suite som_table_test_suite = {
	.name = "som_table",
	.exit = som_table_test_exit,
	.test_cases = som_table_test_cases,
};

kunit_test_suite(som_table_test_suite);
