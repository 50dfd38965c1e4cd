// SPDX-License-Identifier: GPL-2.0
/*
 * som's own functions failing: som.ko marks the functions whose failure
 * the rest of it must handle (ALLOW_ERROR_INJECTION(), each returning an
 * errno it documents, having changed nothing), and fail_function makes
 * the n-th call of one of them return that errno, for n = 1, 2, ...
 * until a life cycle (tests/som_fail_cycles.h: /dev/som, som file, source
 * add and removal under use, compaction, a policy change that moves
 * memory) makes fewer than n calls. The calls are counted wherever they
 * come from (fail-nth cannot count them, see som_fail_cycles.h), so
 * background compaction is off meanwhile, and the cycles' own set-up is
 * not counted. Every step may fail, but only with a clean error; the
 * data a cycle wrote must survive, the pool must be exact after each
 * cycle and the kernel log clean (the host checks). fail_function's own
 * "times" going to 0 is what says the named function failed.
 *
 * Needs CONFIG_FAIL_FUNCTION (the debug tier; skipped elsewhere), som.ko
 * with a pool of at least 2 GiB on node 0, SOM_SPARE_RANGES for the
 * source cycle, and root.
 */
#define _GNU_SOURCE
#include <fcntl.h>

#include "kselftest_harness.h"
#include "som_util.h"
#include "som_pool_util.h"
#include "som_fail_cycles.h"

#define FEI	SOM_FEI

FIXTURE(fail_function) {
	long long total, rate;
	int armed;
};

FIXTURE_VARIANT(fail_function) {
	const char *func;
	int err;			/* what it returns, as it documents */
	int (*cycle)(void);
	const char *what;
};

#define FEI_VARIANT(name, fn, e, cyc)			\
	FIXTURE_VARIANT_ADD(fail_function, name) {	\
		.func = #fn, .err = e,			\
		.cycle = som_##cyc##_cycle,		\
		.what = #cyc " cycle",			\
	}

FEI_VARIANT(pool_reserve_dev, som_pool_reserve, ENOMEM, dev);
FEI_VARIANT(pool_reserve_file, som_pool_reserve, ENOMEM, file);
FEI_VARIANT(region_map_dev, som_region_map, ENOMEM, dev);
FEI_VARIANT(region_map_file, som_region_map, ENOMEM, file);
FEI_VARIANT(region_fill_dev, som_region_fill, ENOMEM, dev);
FEI_VARIANT(region_fill_file, som_region_fill, ENOMEM, file);
FEI_VARIANT(region_allocate_file, som_region_allocate, ENOMEM, file);
FEI_VARIANT(chunk_create_source, som_chunk_create, ENOMEM, source);
FEI_VARIANT(migrate_region_out_source, som_migrate_region_out, ENOSPC, source);
FEI_VARIANT(mover_lock_source, som_mover_lock, EAGAIN, source);
FEI_VARIANT(assemble_begin_compact, som_pool_assemble_begin, EBUSY, compact);
FEI_VARIANT(mover_assemble_compact, som_mover_assemble, EBUSY, compact);
FEI_VARIANT(mover_lock_compact, som_mover_lock, EAGAIN, compact);
FEI_VARIANT(mover_lock_policy, som_mover_lock, EAGAIN, policy);
FEI_VARIANT(swap_write_swap, som_swap_write, EIO, swap);
FEI_VARIANT(swap_read_swap, som_swap_read, EIO, swap);
FEI_VARIANT(swap_get_slot_swap, som_swap_get_slot, ENOSPC, swap);

static int fei_set(const char *file, const char *val)
{
	return som_write_file(file, val);
}

FIXTURE_SETUP(fail_function)
{
	uint64_t size, start;
	char path[256], val[32];

	self->armed = 0;
	if (access(SOM_DEV, F_OK))
		SKIP(return, "som.ko is not loaded");
	if (access(FEI "inject", W_OK))
		SKIP(return, "no fail_function in this kernel (the debug tier has it)");
	if (variant->cycle == som_source_cycle ||
	    variant->cycle == som_policy_cycle)
		ASSERT_TRUE(parse_range(getenv("SOM_SPARE_RANGES"), &size, &start))
			TH_LOG("the source cycle needs SOM_SPARE_RANGES");
	if (variant->cycle == som_compact_cycle)
		ASSERT_LE(2 * (long long)GiB, node_stat(0, "total_bytes"));
	self->total = som_stat("total_bytes");
	ASSERT_EQ(self->total, som_stat("free_bytes"));
	/* No background pass: the cycles' compaction runs in this thread. */
	self->rate = som_stat("migration/compact_rate");
	ASSERT_EQ(0, som_sysfs_write("migration/compact_rate", "0"));

	/* Only this function, only the n-th call. */
	ASSERT_EQ(0, fei_set(FEI "inject", "\n"));
	ASSERT_EQ(0, fei_set(FEI "inject", variant->func))
		TH_LOG("%s is not injectable: is it marked ALLOW_ERROR_INJECTION()?",
		       variant->func);
	self->armed = 1;
	snprintf(path, sizeof(path), FEI "%s/retval", variant->func);
	snprintf(val, sizeof(val), "%#lx", (unsigned long)-variant->err);
	ASSERT_EQ(0, fei_set(path, val));
	ASSERT_EQ(0, som_fail_open_fei());
}

FIXTURE_TEARDOWN(fail_function)
{
	char rate[32];

	if (!self->armed)
		return;
	som_fail_close();
	fei_set(FEI "inject", "\n");
	snprintf(rate, sizeof(rate), "%lld", self->rate);
	som_sysfs_write("migration/compact_rate", rate);
}

TEST_F_TIMEOUT(fail_function, cycle_survives_each_failure, 900)
{
	long n, fired = 0;
	int bad = 0;

	for (n = 1; n < 10000; n++) {
		ASSERT_EQ(0, som_fail_arm(n));
		bad += variant->cycle();
		if (!som_fail_fired())
			break;	/* the cycle made fewer than n calls */
		fired++;
		EXPECT_EQ(self->total, som_stat("total_bytes"));
		EXPECT_EQ(self->total, som_stat("free_bytes"))
			TH_LOG("%s: failing call %ld of %s left the pool short",
			       variant->what, n, variant->func);
		EXPECT_EQ(0, som_stat("reserved_bytes"));
	}
	TH_LOG("%s: each of its %ld calls of %s() failed in turn (-%d)",
	       variant->what, fired, variant->func, variant->err);
	EXPECT_EQ(0, bad);
	EXPECT_LT(0, fired)
		TH_LOG("%s never called %s()", variant->what, variant->func);
	/* And with nothing failing, the cycle works. */
	EXPECT_EQ(0, variant->cycle());
	EXPECT_EQ(self->total, som_stat("free_bytes"));
}

TEST_HARNESS_MAIN
