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
 * The cases share one pool set up by the suite, every chunk on node 0 and
 * movable, and each leaves it as it found it: all memory free, none
 * reserved, every chunk back where it was. Each starts once the zeroing
 * worker has zeroed everything. The cases about nodes need a kernel with
 * two possible nodes (the test VM has two); they pretend the last chunk
 * lies on node 1.
 */
#include <kunit/test.h>
#include <linux/bitmap.h>
#include <linux/delay.h>
#include <linux/ioport.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/nodemask.h>
#include <linux/numa.h>
#include <linux/string.h>

#include "compat.h"
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
 * test pool) and the reservations of its two claims. The exit hook gives
 * back whatever a failed case left, so that one failure does not spill
 * into the next cases.
 */
static unsigned long *som_test_taken;
static struct som_claim som_test_claim;	/* the default policy */
static struct som_claim som_test_other;	/* for the cases about policies */

/* Where the last chunk is now: the node cases move it. */
static int som_test_last_nid;
static bool som_test_last_unmovable;

/* The owner of chunk @i, as the pool sees it: any distinct pointer. */
static const void *som_test_owner(unsigned int i)
{
	return (const void *)(unsigned long)(i + 1);
}

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

	som_pool_get_stats(&som_test_pool, NUMA_NO_NODE, &stats);
	return stats;
}

static struct som_pool_stats som_test_node_stats(int nid)
{
	struct som_pool_stats stats;

	som_pool_get_stats(&som_test_pool, nid, &stats);
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

/* The chunk a block of the test pool lies in. */
static unsigned int som_test_chunk_of(unsigned long bfn)
{
	return som_test_index(bfn) / SOM_BLOCKS_PER_CHUNK;
}

static int som_test_reserve_for(struct som_claim *claim, unsigned long nr)
{
	return som_pool_reserve(&som_test_pool, claim, nr);
}

static int som_test_reserve(unsigned long nr)
{
	return som_test_reserve_for(&som_test_claim, nr);
}

static void som_test_unreserve_for(struct som_claim *claim, unsigned long nr)
{
	som_pool_unreserve(&som_test_pool, claim, nr);
}

static void som_test_unreserve(unsigned long nr)
{
	som_test_unreserve_for(&som_test_claim, nr);
}

static unsigned long som_test_alloc_block_for(struct som_claim *claim,
					      pgoff_t idx)
{
	unsigned long bfn = som_pool_alloc_block(&som_test_pool, claim, idx);

	if (som_test_owns(bfn))
		__set_bit(som_test_index(bfn), som_test_taken);
	return bfn;
}

static unsigned long som_test_alloc_block(void)
{
	return som_test_alloc_block_for(&som_test_claim, 0);
}

static unsigned long som_test_alloc_chunk(void)
{
	unsigned long bfn = som_pool_alloc_chunk(&som_test_pool,
						 &som_test_claim, 0);

	if (som_test_owns(bfn))
		bitmap_set(som_test_taken, som_test_index(bfn),
			   SOM_BLOCKS_PER_CHUNK);
	return bfn;
}

static phys_addr_t som_test_chunk_phys(unsigned int i)
{
	return base + (u64)i * SOM_CHUNK_SIZE;
}

/* Take the last chunk out and put it back on @nid, of the given kind. */
static int som_test_move_last(int nid, bool unmovable)
{
	unsigned int last = chunks - 1;
	int err;

	err = som_pool_remove(&som_test_pool, som_test_owner(last));
	if (err)
		return err;
	err = som_pool_add_chunk(&som_test_pool, som_test_chunk_phys(last),
				 nid, unmovable, som_test_owner(last));
	if (!err) {
		som_test_last_nid = nid;
		som_test_last_unmovable = unmovable;
	}
	flush_work(&som_test_pool.zero_work);
	return err;
}

/* A claim of @mode over the nodes of @mask (bit n for node n). */
static void som_test_policy(struct som_claim *claim, enum som_claim_mode mode,
			    unsigned long mask, bool unmovable)
{
	int nid;

	claim->mode = mode;
	nodes_clear(claim->nodes);
	for (nid = 0; nid < BITS_PER_LONG; nid++)
		if (mask & BIT(nid))
			node_set(nid, claim->nodes);
	claim->interleave_shift = 0;
	claim->unmovable = unmovable;
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
	u64 per_chunk = sizeof(struct som_chunk);

	KUNIT_EXPECT_EQ(test, som_test_total(), stats.total_bytes);
	KUNIT_EXPECT_EQ(test, som_test_total(), stats.free_bytes);
	KUNIT_EXPECT_EQ(test, 0, stats.reserved_bytes);
	KUNIT_EXPECT_EQ(test, som_test_total(), stats.zeroed_bytes);
	KUNIT_EXPECT_EQ(test, chunks * per_chunk, stats.chunks_bytes);
	/* Every chunk free and zeroed: no bits in use, at most the spare. */
	KUNIT_EXPECT_LE(test, stats.chunk_bits_bytes,
			sizeof(struct som_chunk_bits));
	KUNIT_EXPECT_EQ(test, stats.chunks_bytes + stats.chunk_bits_bytes +
			kmalloc_size_roundup(nr_node_ids * 2 *
					     sizeof(struct som_pool_set)) +
			sizeof(som_test_pool),
			stats.metadata_bytes);
	/* The budget of a GiB mapped whole: 128 bytes, the table's included. */
	KUNIT_EXPECT_LE(test, per_chunk, 96);
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
						       base + cases[i].offset,
						       0, false,
						       som_test_owner(chunks)),
				    "chunk at base + %llu", cases[i].offset);
	KUNIT_EXPECT_EQ(test, -EINVAL,
			som_pool_add_chunk(&som_test_pool,
					   som_test_chunk_phys(chunks),
					   nr_node_ids, false,
					   som_test_owner(chunks)));
	KUNIT_EXPECT_EQ(test, -EINVAL,
			som_pool_add_chunk(&som_test_pool,
					   som_test_chunk_phys(chunks),
					   NUMA_NO_NODE, false,
					   som_test_owner(chunks)));
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

/*
 * A block taken, freed and zeroed again passes its chunk through a state
 * whose blocks differ and back. However often that happens, the pool at
 * rest keeps exactly one spare struct som_chunk_bits: what it reports
 * does not depend on the order in which the worker and the allocators
 * ran.
 */
static void som_pool_test_a_pool_at_rest_keeps_one_spare(struct kunit *test)
{
	struct som_pool_stats stats;
	unsigned long bfn[2];
	int round, wait;

	for (round = 0; round < 3; round++) {
		som_test_alloc(test, bfn, 2);
		som_test_free(bfn, 2);
		for (wait = 0; wait < 500; wait++) {
			flush_work(&som_test_pool.zero_work);
			stats = som_test_stats();
			if (stats.zeroed_bytes == stats.free_bytes)
				break;
			msleep(20);
		}
		KUNIT_ASSERT_EQ(test, stats.free_bytes, stats.zeroed_bytes);
		KUNIT_EXPECT_EQ(test, sizeof(struct som_chunk_bits),
				stats.chunk_bits_bytes);
	}
}

/*
 * The low watermark of free memory follows what is free: a reservation
 * and a block taken without one (a mover's) take the pool under it, and
 * giving them back brings it over again. Each crossing down counts.
 */
static void som_pool_test_low_watermark_follows_free_memory(struct kunit *test)
{
	u64 wm = som_test_total() - SOM_BLOCK_SIZE, bytes, before, events;
	unsigned long bfn;

	KUNIT_EXPECT_FALSE(test, som_pool_get_low(&som_test_pool, &bytes,
						  &before));
	KUNIT_EXPECT_EQ(test, 0, bytes);
	som_pool_set_free_low(&som_test_pool, wm);
	KUNIT_EXPECT_FALSE(test, som_pool_get_low(&som_test_pool, &bytes,
						  &events));
	KUNIT_EXPECT_EQ(test, wm, bytes);

	/* One block under the watermark is still at it: not low. */
	KUNIT_ASSERT_EQ(test, 0, som_test_reserve(1));
	KUNIT_EXPECT_FALSE(test, som_pool_get_low(&som_test_pool, &bytes,
						  &events));
	KUNIT_ASSERT_EQ(test, 0, som_test_reserve(1));
	KUNIT_EXPECT_TRUE(test, som_pool_get_low(&som_test_pool, &bytes,
						 &events));
	som_test_unreserve(2);
	KUNIT_EXPECT_FALSE(test, som_pool_get_low(&som_test_pool, &bytes,
						  &events));

	bfn = som_pool_alloc_spare(&som_test_pool, &som_test_claim, 0, false);
	KUNIT_ASSERT_TRUE(test, som_test_owns(bfn));
	__set_bit(som_test_index(bfn), som_test_taken);
	KUNIT_EXPECT_FALSE(test, som_pool_get_low(&som_test_pool, &bytes,
						  &events));
	KUNIT_ASSERT_EQ(test, 0, som_test_reserve(1));
	KUNIT_EXPECT_TRUE(test, som_pool_get_low(&som_test_pool, &bytes,
						 &events));
	som_test_free_block(bfn);
	KUNIT_EXPECT_FALSE(test, som_pool_get_low(&som_test_pool, &bytes,
						  &events));
	som_test_unreserve(1);
	KUNIT_EXPECT_EQ(test, before + 2, events);

	/* Over what is free: low at once; 0: off. */
	som_pool_set_free_low(&som_test_pool, som_test_total() + 1);
	KUNIT_EXPECT_TRUE(test, som_pool_get_low(&som_test_pool, &bytes,
						 &events));
	som_pool_set_free_low(&som_test_pool, 0);
	KUNIT_EXPECT_FALSE(test, som_pool_get_low(&som_test_pool, &bytes,
						  &events));
	KUNIT_EXPECT_EQ(test, before + 3, events);
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

/*
 * A chunk leaves the pool only whole and unused: not while a block of it
 * is allocated, nor while the rest of its set could not cover what is
 * reserved there; then it goes, and can come back.
 */
static void som_pool_test_remove_refuses_chunks_in_use(struct kunit *test)
{
	unsigned long all = som_test_blocks(), bfn;
	unsigned int c;

	som_test_alloc(test, &bfn, 1);
	c = som_test_chunk_of(bfn);
	KUNIT_EXPECT_EQ(test, -EBUSY,
			som_pool_remove(&som_test_pool, som_test_owner(c)));
	KUNIT_EXPECT_EQ(test, som_test_total(), som_test_stats().total_bytes);
	som_test_free(&bfn, 1);
	flush_work(&som_test_pool.zero_work);

	KUNIT_ASSERT_EQ(test, 0, som_test_reserve(all - SOM_BLOCKS_PER_CHUNK + 1));
	KUNIT_EXPECT_EQ(test, -EBUSY,
			som_pool_remove(&som_test_pool, som_test_owner(c)));
	som_test_unreserve(1);
	KUNIT_EXPECT_EQ(test, 0,
			som_pool_remove(&som_test_pool, som_test_owner(c)));
	KUNIT_EXPECT_EQ(test, som_test_total() - SOM_CHUNK_SIZE,
			som_test_stats().total_bytes);
	KUNIT_EXPECT_EQ(test, 0, som_test_stats().free_bytes);
	KUNIT_EXPECT_FALSE(test, som_pool_contains(&som_test_pool,
						   som_test_chunk_phys(c),
						   SOM_CHUNK_SIZE));
	/* Removing what is gone removes nothing. */
	KUNIT_EXPECT_EQ(test, 0,
			som_pool_remove(&som_test_pool, som_test_owner(c)));
	som_test_unreserve(all - SOM_BLOCKS_PER_CHUNK);
	KUNIT_EXPECT_EQ(test, 0,
			som_pool_add_chunk(&som_test_pool,
					   som_test_chunk_phys(c), 0, false,
					   som_test_owner(c)));
	flush_work(&som_test_pool.zero_work);
	KUNIT_EXPECT_EQ(test, som_test_total(), som_test_stats().zeroed_bytes);
}

/*
 * A chunk that leaves the pool with a poisoned page comes back with that
 * page's block retired, in the same hold of the lock that puts it in,
 * until the pool is told to forget it.
 */
static void som_pool_test_poison_comes_back_with_its_chunk(struct kunit *test)
{
	unsigned long pfn = (som_test_chunk_phys(0) >> PAGE_SHIFT) +
			    3 * (SOM_BLOCK_SIZE >> PAGE_SHIFT) + 5;
	struct som_poison_where where;
	struct som_poison_stats ps;

	flush_work(&som_test_pool.zero_work);
	KUNIT_ASSERT_EQ(test, SOM_POISON_RETIRED,
			som_pool_poison(&som_test_pool, pfn, &where));
	KUNIT_EXPECT_EQ(test, -EBUSY,
			som_pool_forget_poison(&som_test_pool,
					       som_test_chunk_phys(0),
					       SOM_CHUNK_SIZE));
	KUNIT_ASSERT_EQ(test, 0, som_pool_remove(&som_test_pool,
						 som_test_owner(0)));
	som_pool_poison_stats(&som_test_pool, NUMA_NO_NODE, NULL, &ps);
	KUNIT_EXPECT_EQ(test, 0, ps.pages);
	KUNIT_EXPECT_EQ(test, 1, ps.pages_outside);

	KUNIT_ASSERT_EQ(test, 0,
			som_pool_add_chunk(&som_test_pool,
					   som_test_chunk_phys(0), 0, false,
					   som_test_owner(0)));
	som_pool_poison_stats(&som_test_pool, NUMA_NO_NODE, NULL, &ps);
	KUNIT_EXPECT_EQ(test, 1, ps.events);
	KUNIT_EXPECT_EQ(test, 1, ps.pages);
	KUNIT_EXPECT_EQ(test, SOM_BLOCK_SIZE, ps.retired_bytes);
	KUNIT_EXPECT_EQ(test, 0, ps.pages_outside);
	KUNIT_EXPECT_TRUE(test, som_pool_page_poisoned(&som_test_pool, pfn));
	KUNIT_EXPECT_EQ(test, som_test_total() - SOM_BLOCK_SIZE,
			som_test_stats().free_bytes);

	/* Told the memory was replaced, the pool uses all of it again. */
	KUNIT_ASSERT_EQ(test, 0, som_pool_remove(&som_test_pool,
						 som_test_owner(0)));
	KUNIT_EXPECT_EQ(test, 1,
			som_pool_forget_poison(&som_test_pool,
					       som_test_chunk_phys(0),
					       SOM_CHUNK_SIZE));
	KUNIT_ASSERT_EQ(test, 0,
			som_pool_add_chunk(&som_test_pool,
					   som_test_chunk_phys(0), 0, false,
					   som_test_owner(0)));
	som_pool_poison_stats(&som_test_pool, NUMA_NO_NODE, NULL, &ps);
	KUNIT_EXPECT_EQ(test, 0, ps.pages + ps.pages_outside);
	flush_work(&som_test_pool.zero_work);
	KUNIT_EXPECT_EQ(test, som_test_total(), som_test_stats().zeroed_bytes);
}

/*
 * A chunk set aside to assemble a GiB in still counts as free; faults take
 * its blocks only when no other chunk has one, and the assembler takes
 * only blocks nobody has reserved.
 */
static void som_pool_test_a_chunk_set_aside_still_counts(struct kunit *test)
{
	unsigned long nr = som_test_blocks() - SOM_BLOCKS_PER_CHUNK;
	unsigned long first, last, cfn, base, *bfn, i;
	u64 free;

	bfn = kunit_kcalloc(test, nr, sizeof(*bfn), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, bfn);
	som_test_alloc(test, &first, 1);
	cfn = som_bfn_to_cfn(first);
	base = cfn * SOM_BLOCKS_PER_CHUNK;
	free = som_test_stats().free_bytes;
	KUNIT_ASSERT_EQ(test, 0, som_pool_assemble_begin(&som_test_pool, cfn));
	KUNIT_EXPECT_EQ(test, -EBUSY,
			som_pool_assemble_begin(&som_test_pool, cfn));
	KUNIT_EXPECT_EQ(test, free, som_test_stats().free_bytes);

	/* Every other chunk's blocks go first, then one of this one's. */
	som_test_alloc(test, bfn, nr);
	for (i = 0; i < nr; i++)
		KUNIT_EXPECT_NE(test, cfn, som_bfn_to_cfn(bfn[i]));
	som_test_alloc(test, &last, 1);
	KUNIT_EXPECT_EQ(test, cfn, som_bfn_to_cfn(last));
	KUNIT_EXPECT_EQ(test, -EINVAL,
			som_pool_assemble_take(&som_test_pool, last));

	for (i = base; i == first || i == last; i++)
		;
	KUNIT_EXPECT_EQ(test, 0, som_pool_assemble_take(&som_test_pool, i));
	som_pool_free_block(&som_test_pool, i);
	KUNIT_ASSERT_EQ(test, 0, som_test_reserve(SOM_BLOCKS_PER_CHUNK - 2));
	KUNIT_EXPECT_EQ(test, -ENOSPC,
			som_pool_assemble_take(&som_test_pool, i));
	som_test_unreserve(SOM_BLOCKS_PER_CHUNK - 2);

	som_pool_assemble_end(&som_test_pool, cfn);
	som_test_free(&last, 1);
	som_test_free(bfn, nr);
	som_test_free(&first, 1);
}

static int som_test_node_of(unsigned long bfn)
{
	return som_test_chunk_of(bfn) == chunks - 1 ? som_test_last_nid : 0;
}

/* Reservations and blocks go where the claim's policy says. */
static void som_pool_test_blocks_follow_the_policy(struct kunit *test)
{
	unsigned long node0 = som_test_blocks() - SOM_BLOCKS_PER_CHUNK;
	struct som_claim *claim = &som_test_other;
	unsigned long bfn[4];
	pgoff_t idx;
	bool unmovable;

	if (nr_node_ids < 2)
		kunit_skip(test, "needs two possible NUMA nodes");
	KUNIT_ASSERT_EQ(test, 0, som_test_move_last(1, false));
	KUNIT_EXPECT_EQ(test, (u64)SOM_CHUNK_SIZE,
			som_test_node_stats(1).total_bytes);

	/* Preferred: node 1 first. */
	som_test_policy(claim, SOM_CLAIM_PREFERRED, BIT(1), false);
	KUNIT_ASSERT_EQ(test, 0, som_test_reserve_for(claim, 1));
	KUNIT_EXPECT_EQ(test, (u64)SOM_BLOCK_SIZE,
			som_test_node_stats(1).reserved_bytes);
	bfn[0] = som_test_alloc_block_for(claim, 0);
	KUNIT_ASSERT_TRUE(test, som_test_owns(bfn[0]));
	KUNIT_EXPECT_EQ(test, 1, som_test_node_of(bfn[0]));
	KUNIT_EXPECT_EQ(test, 1, som_pool_block_node(&som_test_pool, bfn[0],
						     &unmovable));
	KUNIT_EXPECT_FALSE(test, unmovable);
	som_test_free(bfn, 1);

	/* Bind to node 0: node 1's memory is out of reach. */
	som_test_policy(claim, SOM_CLAIM_BIND, BIT(0), false);
	KUNIT_EXPECT_EQ(test, -ENOMEM, som_test_reserve_for(claim, node0 + 1));
	KUNIT_ASSERT_EQ(test, 0, som_test_reserve_for(claim, node0));
	KUNIT_EXPECT_EQ(test, 0, som_test_node_stats(0).free_bytes);
	KUNIT_EXPECT_EQ(test, (u64)SOM_CHUNK_SIZE,
			som_test_node_stats(1).free_bytes);
	som_test_unreserve_for(claim, node0);

	/*
	 * Interleave over both: everything is reserved on node 0 first;
	 * allocating the odd indices moves their reservations to node 1.
	 */
	som_test_policy(claim, SOM_CLAIM_INTERLEAVE, BIT(0) | BIT(1), false);
	KUNIT_ASSERT_EQ(test, 0, som_test_reserve_for(claim, 4));
	KUNIT_EXPECT_EQ(test, 4 * SOM_BLOCK_SIZE,
			som_test_node_stats(0).reserved_bytes);
	for (idx = 0; idx < 4; idx++) {
		bfn[idx] = som_test_alloc_block_for(claim, idx);
		KUNIT_ASSERT_TRUE(test, som_test_owns(bfn[idx]));
		KUNIT_EXPECT_EQ_MSG(test, (int)(idx % 2),
				    som_test_node_of(bfn[idx]),
				    "index %lu", idx);
	}
	KUNIT_EXPECT_EQ(test, 0, som_test_stats().reserved_bytes);
	KUNIT_EXPECT_EQ(test, SOM_CHUNK_SIZE - 2 * SOM_BLOCK_SIZE,
			som_test_node_stats(1).free_bytes);
	som_test_free(bfn, 4);

	/*
	 * Preferred node 1 when node 1 is taken: the reservation falls back
	 * to node 0, and so does the block.
	 */
	som_test_policy(&som_test_claim, SOM_CLAIM_BIND, BIT(1), false);
	KUNIT_ASSERT_EQ(test, 0, som_test_reserve(SOM_BLOCKS_PER_CHUNK));
	KUNIT_ASSERT_EQ(test, 0, som_test_node_stats(1).free_bytes);
	som_test_policy(claim, SOM_CLAIM_PREFERRED, BIT(1), false);
	KUNIT_ASSERT_EQ(test, 0, som_test_reserve_for(claim, 1));
	bfn[0] = som_test_alloc_block_for(claim, 0);
	KUNIT_ASSERT_TRUE(test, som_test_owns(bfn[0]));
	KUNIT_EXPECT_EQ(test, 0, som_test_node_of(bfn[0]));
	som_test_free(bfn, 1);
	som_test_unreserve(SOM_BLOCKS_PER_CHUNK);
}

/* Unmovable claims and movable ones never share a chunk. */
static void som_pool_test_unmovable_chunks_are_kept_apart(struct kunit *test)
{
	unsigned long movable = som_test_blocks() - SOM_BLOCKS_PER_CHUNK;
	struct som_claim *claim = &som_test_other;
	struct som_pool_stats stats;
	unsigned long bfn, whole;
	bool unmovable;

	KUNIT_ASSERT_EQ(test, 0, som_test_move_last(0, true));
	stats = som_test_stats();
	KUNIT_EXPECT_EQ(test, (u64)SOM_CHUNK_SIZE, stats.unmovable_total_bytes);
	KUNIT_EXPECT_EQ(test, (u64)SOM_CHUNK_SIZE, stats.unmovable_free_bytes);

	/* Movable claims cannot reach the unmovable chunk... */
	KUNIT_EXPECT_EQ(test, -ENOMEM, som_test_reserve(movable + 1));
	KUNIT_ASSERT_EQ(test, 0, som_test_reserve(movable));
	KUNIT_EXPECT_EQ(test, (u64)SOM_CHUNK_SIZE, som_test_stats().free_bytes);

	/* ... and unmovable ones get only it, as blocks or whole. */
	som_test_policy(claim, SOM_CLAIM_LOCAL, 0, true);
	KUNIT_ASSERT_EQ(test, 0, som_test_reserve_for(claim, 1));
	bfn = som_test_alloc_block_for(claim, 0);
	KUNIT_ASSERT_TRUE(test, som_test_owns(bfn));
	KUNIT_EXPECT_EQ(test, chunks - 1, som_test_chunk_of(bfn));
	som_pool_block_node(&som_test_pool, bfn, &unmovable);
	KUNIT_EXPECT_TRUE(test, unmovable);
	som_test_free(&bfn, 1);
	flush_work(&som_test_pool.zero_work);
	KUNIT_ASSERT_EQ(test, 0,
			som_test_reserve_for(claim, SOM_BLOCKS_PER_CHUNK));
	KUNIT_EXPECT_EQ(test, -ENOMEM, som_test_reserve_for(claim, 1));
	whole = som_pool_alloc_chunk(&som_test_pool, claim, 0);
	KUNIT_ASSERT_TRUE(test, som_test_owns(whole));
	bitmap_set(som_test_taken, som_test_index(whole),
		   SOM_BLOCKS_PER_CHUNK);
	KUNIT_EXPECT_EQ(test, chunks - 1, som_test_chunk_of(whole));
	KUNIT_EXPECT_EQ(test, 0, som_test_stats().unmovable_free_bytes);
	som_test_free_chunk(whole);
	som_test_unreserve(movable);
}

static int som_pool_test_init(struct kunit *test)
{
	if (!base || chunks < 2)
		kunit_skip(test, "needs som_pool_kunit.base= and chunks= >= 2");
	flush_work(&som_test_pool.zero_work);
	return 0;
}

/*
 * A failed poison case can leave chunk 0 out of the pool, or in it with a
 * retired block, or remembered: put it back whole.
 */
/*
 * Overcommit (pool_overcommit.c), with a store of 8 slots: off, nothing
 * past the pool; on, the pool plus 7. A block paged out gives its place
 * to the claim that needs one, reading it back takes an unpromised
 * block, and the pool's counters say what is promised beyond it.
 */
static void som_pool_test_overcommit_promises_the_store(struct kunit *test)
{
	unsigned long total = som_test_blocks(), a, b;
	struct som_pool *pool = &som_test_pool;
	struct som_pool_stats stats;

	som_pool_set_store(pool, 8);
	KUNIT_EXPECT_EQ(test, -ENOMEM, som_test_reserve(total + 1));
	som_pool_set_overcommit(pool, true);
	KUNIT_EXPECT_EQ(test, -ENOMEM, som_test_reserve(total + 8));
	KUNIT_ASSERT_EQ(test, 0, som_test_reserve(total + 7));
	KUNIT_EXPECT_EQ(test, 7, som_test_claim.nr_lost);
	KUNIT_EXPECT_EQ(test, 7, som_pool_overcommitted(pool));
	KUNIT_EXPECT_EQ(test, -ENOMEM,
			som_test_reserve_for(&som_test_other, 1));
	stats = som_test_stats();
	KUNIT_EXPECT_EQ(test, 0, stats.free_bytes);
	KUNIT_EXPECT_EQ(test, som_test_total(), stats.reserved_bytes);
	/* The store cannot go while it keeps promises. */
	KUNIT_EXPECT_EQ(test, -EBUSY, som_pool_drop_store(pool));
	som_test_unreserve(total + 7);
	KUNIT_EXPECT_EQ(test, 0, som_test_claim.nr_lost);

	/* Unmovable claims get no room. */
	som_test_policy(&som_test_other, SOM_CLAIM_LOCAL, 0, true);
	KUNIT_EXPECT_EQ(test, -ENOMEM,
			som_test_reserve_for(&som_test_other, 1));
	som_test_policy(&som_test_other, SOM_CLAIM_LOCAL, 0, false);

	/* One block left unpromised, and 8 promised past it. */
	KUNIT_ASSERT_EQ(test, 0, som_test_reserve_for(&som_test_other,
						      total - 1));
	KUNIT_ASSERT_EQ(test, 0, som_test_reserve(8));
	KUNIT_EXPECT_EQ(test, 7, som_test_claim.nr_lost);
	a = som_test_alloc_block();
	KUNIT_ASSERT_TRUE(test, som_test_owns(a));
	/* Paged out: its block is free, its promise the store's. */
	__clear_bit(som_test_index(a), som_test_taken);
	som_pool_free_block_out(pool, &som_test_claim, a);
	KUNIT_EXPECT_EQ(test, 1, som_test_claim.nr_out);
	KUNIT_EXPECT_EQ(test, 7, som_pool_overcommitted(pool));
	KUNIT_EXPECT_EQ(test, 0, som_test_stats().free_bytes);
	/* A lost reservation takes the place... */
	b = som_test_alloc_block();
	KUNIT_ASSERT_TRUE(test, som_test_owns(b));
	KUNIT_EXPECT_EQ(test, 6, som_test_claim.nr_lost);
	KUNIT_EXPECT_EQ(test, 7, som_pool_overcommitted(pool));
	/* ...so reading back must wait for a page-out. */
	KUNIT_EXPECT_EQ(test, SOM_NO_BLOCK,
			som_pool_alloc_block_back(pool, &som_test_claim, 1));
	KUNIT_EXPECT_TRUE(test, som_pool_short(pool, &som_test_claim));
	__clear_bit(som_test_index(b), som_test_taken);
	som_pool_free_block_out(pool, &som_test_claim, b);
	a = som_pool_alloc_block_back(pool, &som_test_claim, 1);
	KUNIT_ASSERT_TRUE(test, som_test_owns(a));
	__set_bit(som_test_index(a), som_test_taken);
	KUNIT_EXPECT_EQ(test, 1, som_test_claim.nr_out);
	KUNIT_EXPECT_EQ(test, 7, som_pool_overcommitted(pool));

	som_test_free_block(a);
	som_pool_drop_out(pool, &som_test_claim, 1);
	som_test_unreserve(6);
	som_test_unreserve_for(&som_test_other, total - 1);
	KUNIT_EXPECT_EQ(test, 0, som_test_claim.nr_lost);
	KUNIT_EXPECT_EQ(test, 0, som_pool_overcommitted(pool));
	/* Off: the store may go, and its room goes with it. */
	som_pool_set_overcommit(pool, false);
	KUNIT_EXPECT_EQ(test, 0, som_pool_drop_store(pool));
	KUNIT_EXPECT_EQ(test, -ENOMEM, som_test_reserve(total + 1));
}

static void som_test_unpoison_chunk0(struct kunit *test)
{
	phys_addr_t phys = som_test_chunk_phys(0);
	struct som_poison_stats ps;

	som_pool_poison_stats(&som_test_pool, NUMA_NO_NODE, NULL, &ps);
	if (!ps.pages && !ps.pages_outside &&
	    som_pool_contains(&som_test_pool, phys, SOM_CHUNK_SIZE))
		return;
	som_pool_remove(&som_test_pool, som_test_owner(0));
	som_pool_forget_poison(&som_test_pool, phys, SOM_CHUNK_SIZE);
	KUNIT_EXPECT_EQ(test, 0,
			som_pool_add_chunk(&som_test_pool, phys, 0, false,
					   som_test_owner(0)));
	flush_work(&som_test_pool.zero_work);
}

/* Every case gives back what it took; what a failed one left is freed. */
static void som_pool_test_exit(struct kunit *test)
{
	unsigned long left = bitmap_weight(som_test_taken, som_test_blocks());
	unsigned long i, reserved = som_test_claim.nr_reserved +
				    som_test_other.nr_reserved;
	struct som_pool_stats stats;

	if (!base || chunks < 2)
		return;
	for_each_set_bit(i, som_test_taken, som_test_blocks())
		som_test_free_block((base >> SOM_BLOCK_SHIFT) + i);
	som_pool_drop_out(&som_test_pool, &som_test_claim,
			  som_test_claim.nr_out);
	som_test_unreserve_for(&som_test_claim, som_test_claim.nr_reserved +
			       som_test_claim.nr_lost);
	som_test_unreserve_for(&som_test_other, som_test_other.nr_reserved +
			       som_test_other.nr_lost);
	som_pool_set_overcommit(&som_test_pool, false);
	som_pool_set_store(&som_test_pool, 0);
	som_test_policy(&som_test_claim, SOM_CLAIM_LOCAL, 0, false);
	som_test_policy(&som_test_other, SOM_CLAIM_LOCAL, 0, false);
	som_pool_set_free_low(&som_test_pool, 0);
	som_test_unpoison_chunk0(test);
	if (som_test_last_nid || som_test_last_unmovable)
		KUNIT_EXPECT_EQ(test, 0, som_test_move_last(0, false));
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

	err = som_pool_init(&som_test_pool);
	if (err)
		return err;
	err = som_claim_init(&som_test_claim);
	if (err)
		goto err_destroy_pool;
	err = som_claim_init(&som_test_other);
	if (err)
		goto err_destroy_claim;
	if (!base || chunks < 2)
		return 0;
	/* The pool zeroes what it is given: never let it near live RAM. */
	if (region_intersects(base, size, IORESOURCE_SYSTEM_RAM,
			      IORES_DESC_NONE) != REGION_DISJOINT) {
		pr_err("som_pool_kunit: %#lx + %llu bytes is System RAM\n",
		       base, size);
		err = -EINVAL;
		goto err_destroy_other;
	}
	som_test_taken = bitmap_zalloc(som_test_blocks(), GFP_KERNEL);
	if (!som_test_taken) {
		err = -ENOMEM;
		goto err_destroy_other;
	}
	for (i = 0; i < chunks; i++) {
		err = som_pool_add_chunk(&som_test_pool,
					 som_test_chunk_phys(i), 0, false,
					 som_test_owner(i));
		if (err)
			goto err_free_taken;
	}
	return 0;

err_free_taken:
	bitmap_free(som_test_taken);
	som_test_taken = NULL;
err_destroy_other:
	som_claim_destroy(&som_test_other);
err_destroy_claim:
	som_claim_destroy(&som_test_claim);
err_destroy_pool:
	som_pool_destroy(&som_test_pool);
	return err;
}

static void som_pool_test_suite_exit(struct kunit_suite *suite)
{
	som_pool_destroy(&som_test_pool);
	som_claim_destroy(&som_test_other);
	som_claim_destroy(&som_test_claim);
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
	KUNIT_CASE(som_pool_test_a_pool_at_rest_keeps_one_spare),
	KUNIT_CASE(som_pool_test_low_watermark_follows_free_memory),
	KUNIT_CASE(som_pool_test_contains_finds_overlaps),
	KUNIT_CASE(som_pool_test_block_vaddr_only_for_its_blocks),
	KUNIT_CASE(som_pool_test_remove_refuses_chunks_in_use),
	KUNIT_CASE(som_pool_test_poison_comes_back_with_its_chunk),
	KUNIT_CASE(som_pool_test_a_chunk_set_aside_still_counts),
	KUNIT_CASE(som_pool_test_blocks_follow_the_policy),
	KUNIT_CASE(som_pool_test_unmovable_chunks_are_kept_apart),
	KUNIT_CASE(som_pool_test_overcommit_promises_the_store),
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
SOM_IMPORT_NS(EXPORTED_FOR_KUNIT_TESTING);
