// SPDX-License-Identifier: GPL-2.0
/*
 * Allocation failures inside som's operations: for n = 1, 2, ..., make
 * the n-th slab allocation of this thread fail (/proc/thread-self/fail-nth
 * with failslab, the mechanism syzkaller uses) during a whole /dev/som or
 * som file life cycle, until the cycle makes fewer than n allocations.
 * Every step may fail, but only with a clean error (or SIGBUS for a hole
 * that cannot be filled); the kernel log must stay clean (the host checks)
 * and the pool must be exact after each cycle.
 *
 * Needs a kernel with CONFIG_FAILSLAB (the debug tier; skipped elsewhere),
 * som.ko with a pool of at least 2 GiB, and root.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/falloc.h>

#include "kselftest_harness.h"
#include "som_util.h"

#define SOM_FAILSLAB	"/sys/kernel/debug/failslab/"

/* Arm: the @nth fault-injection check of this thread fails. */
static int som_fail_nth(int fd, long nth)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%ld", nth);
	return pwrite(fd, buf, strlen(buf), 0) == (ssize_t)strlen(buf) ? 0 : -1;
}

/* Was the armed failure injected? Disarms either way. */
static int som_fail_fired(int fd)
{
	char buf[32] = "";
	int fired;

	fired = pread(fd, buf, sizeof(buf) - 1, 0) > 0 && atol(buf) == 0;
	som_fail_nth(fd, 0);
	return fired;
}

static int som_errno_ok(void)
{
	return errno == ENOMEM || errno == ENOSPC || errno == EINTR ||
	       errno == EAGAIN;
}

FIXTURE(failslab) {
	int nth;
	long long total;
};

FIXTURE_SETUP(failslab)
{
	self->nth = -1;
	if (access(SOM_DEV, F_OK))
		SKIP(return, "som.ko is not loaded");
	if (access(SOM_FAILSLAB "ignore-gfp-wait", W_OK) ||
	    access("/proc/thread-self/fail-nth", W_OK))
		SKIP(return, "no failslab / fail-nth in this kernel (the debug tier has them)");
	/* Let GFP_KERNEL allocations fail too, and quietly. */
	ASSERT_EQ(0, som_write_file(SOM_FAILSLAB "ignore-gfp-wait", "N"));
	ASSERT_EQ(0, som_write_file(SOM_FAILSLAB "verbose", "0"));
	self->nth = open("/proc/thread-self/fail-nth", O_RDWR);
	ASSERT_LE(0, self->nth);
	self->total = som_stat("total_bytes");
	ASSERT_EQ(self->total, som_stat("free_bytes"));
}

FIXTURE_TEARDOWN(failslab)
{
	if (self->nth < 0)
		return;
	som_fail_nth(self->nth, 0);
	close(self->nth);
	som_write_file(SOM_FAILSLAB "ignore-gfp-wait", "Y");
}

/* One /dev/som life cycle; returns the number of unclean failures. */
static int som_dev_cycle(void)
{
	int fd, bad = 0;
	char *p;

	fd = open(SOM_DEV, O_RDWR);
	if (fd < 0)
		return !som_errno_ok();
	p = mmap(NULL, 64 * MiB, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		bad += !som_errno_ok();
	} else {
		som_probe(p, 1);
		som_probe(p + 33 * MiB, 1);
		bad += munmap(p, 64 * MiB) != 0;
	}
	close(fd);
	return bad;
}

/* One som file life cycle; returns the number of unclean failures. */
static int som_file_cycle(void)
{
	int dev, fd, bad = 0;
	char *p;

	dev = open(SOM_DEV, O_RDWR);
	if (dev < 0)
		return !som_errno_ok();
	fd = som_file(dev, 4 * MiB, 0);
	close(dev);
	if (fd < 0) {
		errno = -fd;
		return !som_errno_ok();
	}
	p = mmap(NULL, 8 * MiB, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (fallocate(fd, 0, 0, 8 * MiB))
		bad += !som_errno_ok();
	if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 2 * MiB,
		      2 * MiB))
		bad += !som_errno_ok();
	if (p != MAP_FAILED) {
		/* A hole that cannot be filled again is SIGBUS, nothing else. */
		bad += som_probe(p + 2 * MiB, 1) == SIGSEGV;
		bad += som_probe(p, 0) == SIGSEGV;
		if (ftruncate(fd, 2 * MiB))
			bad += !som_errno_ok();
		bad += munmap(p, 8 * MiB) != 0;
	} else {
		bad += !som_errno_ok();
	}
	close(fd);
	return bad;
}

static void som_inject(struct __test_metadata *_metadata, int nth_fd,
		       long long total, const char *what, int (*cycle)(void))
{
	long n, fired = 0;
	int bad = 0;

	for (n = 1; n < 10000; n++) {
		ASSERT_EQ(0, som_fail_nth(nth_fd, n));
		bad += cycle();
		if (!som_fail_fired(nth_fd))
			break;	/* the cycle made fewer than n allocations */
		fired++;
		EXPECT_EQ(total, som_stat("free_bytes"))
			TH_LOG("%s: failing allocation %ld left the pool short",
			       what, n);
		EXPECT_EQ(0, som_stat("reserved_bytes"));
	}
	TH_LOG("%s: failed each of its %ld slab allocations in turn", what,
	       fired);
	EXPECT_EQ(0, bad);
	EXPECT_LT(0, fired);
	/* And with nothing failing, the cycle works. */
	EXPECT_EQ(0, cycle());
	EXPECT_EQ(total, som_stat("free_bytes"));
}

TEST_F_TIMEOUT(failslab, dev_som_cycle_survives_each_failure, 900)
{
	som_inject(_metadata, self->nth, self->total, "/dev/som cycle",
		   som_dev_cycle);
}

TEST_F_TIMEOUT(failslab, som_file_cycle_survives_each_failure, 900)
{
	som_inject(_metadata, self->nth, self->total, "som file cycle",
		   som_file_cycle);
}

TEST_HARNESS_MAIN
