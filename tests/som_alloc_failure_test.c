// SPDX-License-Identifier: GPL-2.0
/*
 * Allocation failures inside som's operations: for n = 1, 2, ..., make
 * the n-th slab allocation (variant slab: failslab) or page allocation
 * (variant page: fail_page_alloc, order 0 included) of this thread fail
 * during a whole /dev/som or som file life cycle, until the cycle makes
 * fewer than n of them. Every step may fail, but only with a clean error
 * (or SIGBUS for a hole that cannot be filled); the kernel log must stay
 * clean (the host checks) and the pool must be exact after each cycle.
 *
 * Needs a kernel with CONFIG_FAILSLAB and CONFIG_FAIL_PAGE_ALLOC (the
 * debug tier; skipped elsewhere), som.ko with a pool of at least 2 GiB,
 * and root.
 */
#define _GNU_SOURCE
#include <fcntl.h>

#include "kselftest_harness.h"
#include "som_util.h"
#include "som_pool_util.h"
#include "som_fail_cycles.h"

FIXTURE(alloc_failure) {
	long long total;
	int armed;
};

FIXTURE_VARIANT(alloc_failure) {
	const char *dir;	/* the fault-injection capability's debugfs */
	const char *what;
};

FIXTURE_VARIANT_ADD(alloc_failure, slab) {
	.dir = "/sys/kernel/debug/failslab/",
	.what = "slab allocations",
};

FIXTURE_VARIANT_ADD(alloc_failure, page) {
	.dir = "/sys/kernel/debug/fail_page_alloc/",
	.what = "page allocations",
};

static int alloc_failure_set(const char *dir, const char *file, const char *val)
{
	char path[256];

	snprintf(path, sizeof(path), "%s%s", dir, file);
	return som_write_file(path, val);
}

FIXTURE_SETUP(alloc_failure)
{
	char path[256];

	self->armed = 0;
	if (access(SOM_DEV, F_OK))
		SKIP(return, "som.ko is not loaded");
	snprintf(path, sizeof(path), "%signore-gfp-wait", variant->dir);
	if (access(path, W_OK) || access("/proc/thread-self/fail-nth", W_OK))
		SKIP(return, "no %s / fail-nth in this kernel (the debug tier has them)",
		     variant->dir);
	/* Let GFP_KERNEL allocations fail too, and quietly. */
	ASSERT_EQ(0, alloc_failure_set(variant->dir, "ignore-gfp-wait", "N"));
	ASSERT_EQ(0, alloc_failure_set(variant->dir, "verbose", "0"));
	if (!access("/sys/kernel/debug/fail_page_alloc/min-order", F_OK) &&
	    strstr(variant->dir, "page")) {
		ASSERT_EQ(0, alloc_failure_set(variant->dir, "min-order", "0"));
		ASSERT_EQ(0, alloc_failure_set(variant->dir, "ignore-gfp-highmem", "N"));
	}
	self->armed = 1;
	ASSERT_LE(0, som_fail_open());
	self->total = som_stat("total_bytes");
	ASSERT_EQ(self->total, som_stat("free_bytes"));
}

FIXTURE_TEARDOWN(alloc_failure)
{
	if (!self->armed)
		return;
	som_fail_close();
	alloc_failure_set(variant->dir, "ignore-gfp-wait", "Y");
	if (strstr(variant->dir, "page")) {
		alloc_failure_set(variant->dir, "min-order", "1");
		alloc_failure_set(variant->dir, "ignore-gfp-highmem", "Y");
	}
}

static void som_inject(struct __test_metadata *_metadata, long long total,
		       const char *what, const char *kind, int (*cycle)(void))
{
	long n, fired = 0;
	int bad = 0;

	for (n = 1; n < 10000; n++) {
		ASSERT_EQ(0, som_fail_arm(n));
		bad += cycle();
		if (!som_fail_fired())
			break;	/* the cycle made fewer than n allocations */
		fired++;
		EXPECT_EQ(total, som_stat("free_bytes"))
			TH_LOG("%s: failing allocation %ld left the pool short",
			       what, n);
		EXPECT_EQ(0, som_stat("reserved_bytes"));
	}
	TH_LOG("%s: failed each of its %ld %s in turn", what, fired, kind);
	EXPECT_EQ(0, bad);
	EXPECT_LT(0, fired);
	/* And with nothing failing, the cycle works. */
	EXPECT_EQ(0, cycle());
	EXPECT_EQ(total, som_stat("free_bytes"));
}

TEST_F_TIMEOUT(alloc_failure, dev_som_cycle_survives_each_failure, 900)
{
	som_inject(_metadata, self->total, "/dev/som cycle", variant->what,
		   som_dev_cycle);
}

TEST_F_TIMEOUT(alloc_failure, som_file_cycle_survives_each_failure, 900)
{
	som_inject(_metadata, self->total, "som file cycle", variant->what,
		   som_file_cycle);
}

/*
 * A fault on memory mmap() reserved may not fail for want of the bytes
 * that describe it (the table's split GiB, the pool's per-block bits):
 * failing each allocation of the first touch of a 2 MiB piece and of a
 * 4 KiB page in turn, every touch succeeds and reads zeros. (Page-table
 * pages may fail: the core retries the fault.)
 */
TEST_F_TIMEOUT(alloc_failure, fault_on_reserved_memory_never_fails, 300)
{
	long n, fired = 0;
	int dev, sig;
	char *p;

	for (n = 1; n < 1000; n++) {
		dev = open(SOM_DEV, O_RDWR);
		ASSERT_LE(0, dev);
		/*
		 * A GiB of the region reserved whole (one table entry), mapped
		 * 2 MiB past a GiB boundary: no 1 GiB entry, so the first fault
		 * splits the GiB's entry.
		 */
		p = som_map_past(dev, GiB, GiB, 2 * MiB);
		ASSERT_NE(MAP_FAILED, p);
		ASSERT_EQ(0, som_fail_arm(n));
		sig = som_probe(p, 0);
		if (!sig)
			sig = som_probe(p + 512 * MiB + 4 * KiB, 1);
		fired += som_fail_fired();
		EXPECT_EQ(0, sig)
			TH_LOG("failing allocation %ld of a fault: signal %d", n, sig);
		if (!sig) {
			EXPECT_EQ(0, p[4 * KiB]);
			EXPECT_EQ(1, p[512 * MiB + 4 * KiB]);
		}
		EXPECT_EQ(0, munmap(p, GiB));
		close(dev);
		EXPECT_EQ(self->total, som_stat("free_bytes"));
		if (sig || !som_fail.fired)
			break;
	}
	TH_LOG("%ld of the faults' %s failed in turn", fired, variant->what);
}

TEST_HARNESS_MAIN
