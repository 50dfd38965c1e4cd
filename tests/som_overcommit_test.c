// SPDX-License-Identifier: GPL-2.0
/*
 * A pool that promises more than it holds (Documentation/admin-guide.md,
 * "Swap", "Overcommit"): with a swap store in place and swap/overcommit
 * on, mappings may reserve up to the pool plus the store; a fault that
 * finds no block waits while the coldest blocks are paged out, and the
 * low watermark pages out ahead of faults. Each test leaves a chosen
 * amount of the pool free with an untouched filler mapping, so that the
 * only memory that can be paged out is the test's own: every byte is
 * checked after it came back, and the pool's, the store's and the
 * overcommit counters are exact after every test.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sys/stat.h>

#include "kselftest_harness.h"
#include "som_util.h"
#include "som_swap_util.h"

static int overcommit(int on)
{
	return som_sysfs_write(SWAP "overcommit", on ? "1" : "0");
}

/* Blocks allocated to regions, in bytes. */
static long long allocated(void)
{
	return som_stat("total_bytes") - som_stat("free_bytes") -
	       som_stat("reserved_bytes");
}

FIXTURE(oc) {
	int dev;
	int store;
	char path[64];
	long long reserved;	/* the pool's reserved_bytes at the start */
	long long allocated;	/* and its allocated bytes */
	long long failures;	/* swap/pressure_failures at the start */
	int filler_fd;
	char *filler;
	size_t filler_len;
};

FIXTURE_SETUP(oc)
{
	SOM_OPEN_DEV(self->dev);
	snprintf(self->path, sizeof(self->path), "/tmp/som-oc-test.%d",
		 getpid());
	self->store = open(self->path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	ASSERT_LE(0, self->store);
	overcommit(0);
	if (swap_stat("size_bytes"))
		ASSERT_EQ(0, swap_remove(self->dev));
	ASSERT_EQ(0, swap_add(self->dev, self->store, STORE_SIZE));
	ASSERT_EQ(0, overcommit(1));
	ASSERT_EQ(1, swap_stat("overcommit"));
	ASSERT_EQ(0, swap_stat("overcommitted_bytes"));
	self->reserved = som_stat("reserved_bytes");
	self->allocated = allocated();
	self->failures = swap_stat("pressure_failures");
	self->filler = MAP_FAILED;
	self->filler_fd = -1;
}

FIXTURE_TEARDOWN(oc)
{
	if (self->dev < 0)
		return;
	if (self->filler != MAP_FAILED)
		EXPECT_EQ(0, munmap(self->filler, self->filler_len));
	if (self->filler_fd >= 0)
		close(self->filler_fd);
	EXPECT_EQ(0, swap_stat("used_bytes"));
	EXPECT_EQ(0, swap_stat("overcommitted_bytes"));
	EXPECT_EQ(0, overcommit(0));
	EXPECT_EQ(0, swap_remove(self->dev));
	EXPECT_EQ(self->reserved, som_stat("reserved_bytes"));
	EXPECT_EQ(self->allocated, allocated());
	close(self->store);
	unlink(self->path);
	close(self->dev);
}

/*
 * Map @len of a /dev/som region of its own (each open is one region,
 * and mappings of one descriptor map the same memory): the descriptor
 * goes to *@fd.
 */
static char *map_region(size_t len, int *fd)
{
	char *p;

	*fd = open(SOM_DEV, O_RDWR);
	if (*fd < 0)
		return MAP_FAILED;
	p = som_map_shared(*fd, len);
	if (p == MAP_FAILED) {
		close(*fd);
		*fd = -1;
	}
	return p;
}

/*
 * Reserve, without touching it, all of the pool's free memory but
 * @leave: nothing of it can be paged out, so what the test maps past
 * @leave comes from paging out its own memory.
 */
static int leave_free(FIXTURE_DATA(oc) *self, long long leave)
{
	long long free = som_stat("free_bytes");

	if (free <= leave)
		return -1;
	self->filler_len = free - leave;
	self->filler = map_region(self->filler_len, &self->filler_fd);
	if (self->filler == MAP_FAILED)
		return -1;
	return som_stat("free_bytes") == leave ? 0 : -1;
}

/*
 * The case: a program whose som memory is 1.5 times what the
 * pool has runs to completion, every word checked, its cold part in the
 * store; refused without overcommit; and the counters add up while it
 * runs, not only once it is gone.
 */
TEST_F_TIMEOUT(oc, one_and_a_half_times_the_pool_runs_every_word_checked, 900)
{
	size_t len = 96 * MiB;
	long long waits = swap_stat("pressure_waits"), in, used, mine;
	char *p;

	ASSERT_EQ(0, leave_free(self, 64 * MiB));
	ASSERT_EQ(0, overcommit(0));
	EXPECT_EQ(MAP_FAILED, som_map_shared(self->dev, len));
	EXPECT_EQ(ENOMEM, errno);
	ASSERT_EQ(0, overcommit(1));
	p = som_map_shared(self->dev, len);
	ASSERT_NE(MAP_FAILED, p);
	/* 64 MiB backed by the pool's blocks, 32 by the store's room. */
	EXPECT_EQ(32 * MiB, swap_stat("overcommitted_bytes"));
	EXPECT_EQ(0, som_stat("free_bytes"));

	som_fill(p, 0, len, 8, 11);
	in = swap_stat("in_bytes");
	EXPECT_EQ(-1, som_check(p, 0, len, 8, 11));
	EXPECT_LT(waits, swap_stat("pressure_waits"));
	EXPECT_LT(in, swap_stat("in_bytes"));
	EXPECT_EQ(self->failures, swap_stat("pressure_failures"));

	/*
	 * Every index is touched: what is not in a block is in the store,
	 * and it is exactly the program's reservations, backed or not.
	 */
	used = swap_stat("used_bytes");
	mine = allocated() - self->allocated;
	EXPECT_EQ((long long)len, mine + used);
	EXPECT_EQ(used, som_stat("reserved_bytes") - self->reserved -
			(long long)self->filler_len +
			swap_stat("overcommitted_bytes"));
	EXPECT_GE(STORE_SIZE - 2 * MiB, swap_stat("overcommitted_bytes"));

	EXPECT_EQ(0, munmap(p, len));
	EXPECT_EQ(0, swap_stat("used_bytes"));
	EXPECT_EQ(0, swap_stat("overcommitted_bytes"));
	EXPECT_EQ(64 * MiB, som_stat("free_bytes"));
}

/* Beyond the pool plus the store's room less one slot: ENOMEM. */
TEST_F(oc, promises_stop_at_the_pool_plus_the_store)
{
	size_t room = STORE_SIZE - 2 * MiB;
	char *p, *q;
	int fd;

	ASSERT_EQ(0, leave_free(self, 16 * MiB));
	EXPECT_EQ(MAP_FAILED, som_map_shared(self->dev,
					     16 * MiB + room + 2 * MiB));
	EXPECT_EQ(ENOMEM, errno);
	p = som_map_shared(self->dev, 16 * MiB + room - 4 * MiB);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ((long long)room - 4 * MiB,
		  swap_stat("overcommitted_bytes"));
	q = map_region(6 * MiB, &fd);
	EXPECT_EQ(MAP_FAILED, q);
	q = map_region(4 * MiB, &fd);
	ASSERT_NE(MAP_FAILED, q);
	EXPECT_EQ((long long)room, swap_stat("overcommitted_bytes"));
	EXPECT_EQ(0, munmap(q, 4 * MiB));
	close(fd);
	EXPECT_EQ(0, munmap(p, 16 * MiB + room - 4 * MiB));
	EXPECT_EQ(0, swap_stat("overcommitted_bytes"));
	EXPECT_EQ(16 * MiB, som_stat("free_bytes"));
}

/*
 * The store cannot go while the pool promises more than it holds; the
 * refusal changes nothing, and once the promises are gone it goes.
 */
TEST_F(oc, the_store_stays_while_promises_need_it)
{
	size_t len = 48 * MiB;
	char *p, *q;
	int fd;

	ASSERT_EQ(0, leave_free(self, 32 * MiB));
	p = som_map_shared(self->dev, len);
	ASSERT_NE(MAP_FAILED, p);
	som_fill(p, 0, len, 4096, 3);
	EXPECT_EQ(-EBUSY, swap_remove(self->dev));
	EXPECT_EQ(STORE_SIZE, swap_stat("size_bytes"));
	EXPECT_EQ(-1, som_check(p, 0, len, 4096, 3));
	/* A new promise still counts on the store. */
	q = map_region(8 * MiB, &fd);
	ASSERT_NE(MAP_FAILED, q);
	EXPECT_EQ(0, munmap(q, 8 * MiB));
	close(fd);
	EXPECT_EQ(0, munmap(p, len));
	/* Paged out with no promise beyond the pool: it reads back. */
	p = som_map_shared(self->dev, 16 * MiB);
	ASSERT_NE(MAP_FAILED, p);
	som_fill(p, 0, 16 * MiB, 4096, 4);
	EXPECT_EQ(16 * MiB, pageout(self->dev, 0, 16 * MiB));
	EXPECT_EQ(16 * MiB, swap_stat("used_bytes"));
	EXPECT_EQ(0, swap_stat("overcommitted_bytes"));
	EXPECT_EQ(16 * MiB, som_stat("free_bytes"));
	EXPECT_EQ(0, swap_remove(self->dev));
	EXPECT_EQ(0, swap_stat("overcommitted_bytes"));
	EXPECT_EQ(-1, som_check(p, 0, 16 * MiB, 4096, 4));
	EXPECT_EQ(0, munmap(p, 16 * MiB));
	/* The teardown removes a store: give it one. */
	ASSERT_EQ(0, swap_add(self->dev, self->store, STORE_SIZE));
}

/*
 * Nothing can be paged out: every other block of the pool is reserved
 * and untouched. The fault that needs a block gets SIGBUS at its
 * address, after a pass of reclaim that found nothing, rather than
 * waiting for ever.
 */
TEST_F(oc, a_fault_nothing_can_make_room_for_is_sigbus)
{
	char *b;
	int fd;

	ASSERT_EQ(0, self->allocated);
	ASSERT_EQ(0, leave_free(self, 0));
	b = map_region(2 * MiB, &fd);
	ASSERT_NE(MAP_FAILED, b);
	EXPECT_EQ(2 * MiB, swap_stat("overcommitted_bytes"));
	EXPECT_EQ(SIGBUS, som_probe(b + 4096, 1));
	EXPECT_EQ(b + 4096, som_probe_addr);
	EXPECT_EQ(self->failures + 1, swap_stat("pressure_failures"));
	EXPECT_EQ(0, munmap(b, 2 * MiB));
	close(fd);
	EXPECT_EQ(0, swap_stat("used_bytes"));
}

/*
 * A truncate and a hole punch that must read back a block paged out, to
 * zero part of it, while nothing is free: they wait for a page-out as a
 * fault does, rather than failing.
 */
TEST_F_TIMEOUT(oc, truncate_and_punch_wait_for_room_to_read_back, 600)
{
	size_t len = 8 * MiB;
	int fd, xfd;
	char *p, *x;

	ASSERT_EQ(0, leave_free(self, 16 * MiB));
	fd = som_file(self->dev, len, 0);
	ASSERT_LE(0, fd);
	p = som_map_shared(fd, len);
	ASSERT_NE(MAP_FAILED, p);
	som_fill(p, 0, len, 8, 9);
	ASSERT_EQ(0, munmap(p, len));
	ASSERT_EQ((long long)len, pageout(fd, 0, len));
	/* Another mapping takes every free block and touches them. */
	x = map_region(16 * MiB, &xfd);
	ASSERT_NE(MAP_FAILED, x);
	som_fill(x, 0, 16 * MiB, 4096, 10);
	EXPECT_EQ(0, som_stat("free_bytes"));

	EXPECT_EQ(0, ftruncate(fd, len - MiB));
	EXPECT_EQ(0, fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			       MiB, 2 * MiB));
	p = som_map_shared(fd, len - MiB);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(-1, som_check(p, 0, MiB, 8, 9));
	EXPECT_EQ(-1, som_check_zero(p + MiB, 2 * MiB, 8));
	EXPECT_EQ(-1, som_check(p, 3 * MiB, len - MiB, 8, 9));
	EXPECT_EQ(-1, som_check(x, 0, 16 * MiB, 4096, 10));
	EXPECT_EQ(0, munmap(p, len - MiB));
	EXPECT_EQ(0, munmap(x, 16 * MiB));
	close(xfd);
	close(fd);
}

/* fallocate() of a som file past what is free pages out to make room. */
TEST_F_TIMEOUT(oc, fallocate_pages_out_to_make_room, 600)
{
	size_t len = 96 * MiB;
	int fd;
	char *p;

	ASSERT_EQ(0, leave_free(self, 64 * MiB));
	fd = som_file(self->dev, len, 0);
	ASSERT_LE(0, fd);
	p = som_map_shared(fd, 32 * MiB);
	ASSERT_NE(MAP_FAILED, p);
	som_fill(p, 0, 32 * MiB, 8, 6);
	ASSERT_EQ(0, fallocate(fd, 0, 0, len));
	EXPECT_EQ(-1, som_check(p, 0, 32 * MiB, 8, 6));
	EXPECT_EQ(0, munmap(p, 32 * MiB));
	p = som_map_shared(fd, len);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(-1, som_check(p, 0, 32 * MiB, 8, 6));
	EXPECT_EQ(-1, som_check_zero(p + 32 * MiB, len - 32 * MiB, 4096));
	EXPECT_EQ(0, munmap(p, len));
	close(fd);
}

/*
 * A som file nobody maps yet grows by fallocate() while the pool has no
 * free block; while the call waits for a page-out, another process with
 * the same file maps it first and so owns it. The call then fails with
 * EPERM and leaves the file as the new owner found it: before the fix
 * it shrank the file back, zapping and releasing the new owner's
 * mappings under its own mmap_lock only (a lockdep splat, or a BUG with
 * CONFIG_DEBUG_VM, on the debug tier).
 */
TEST_F_TIMEOUT(oc, a_file_that_finds_an_owner_while_fallocate_waits, 600)
{
	int round, fd, xfd, status, err, hit = 0;
	struct stat st;
	pid_t pid;
	char *x;

	ASSERT_EQ(0, leave_free(self, 32 * MiB));
	/* Everything free is used: a page-out must come first. */
	x = map_region(32 * MiB, &xfd);
	ASSERT_NE(MAP_FAILED, x);
	for (round = 0; round < 6; round++) {
		som_fill(x, 0, 32 * MiB, 4096, round);
		fd = som_file(self->dev, 2 * MiB, 0);
		ASSERT_LE(0, fd);
		pid = fork();
		ASSERT_LE(0, pid);
		if (!pid) {
			char *q;
			int i;

			for (i = 0; i < 100000; i++) {
				if (!fstat(fd, &st) && st.st_size > 2 * MiB)
					break;
				usleep(100);
			}
			q = som_map_shared(fd, 2 * MiB);
			if (q == MAP_FAILED)
				_exit(2);
			/* Its memory, whatever the other call did. */
			q[0] = 1;
			_exit(q[0] == 1 ? 0 : 3);
		}
		err = fallocate(fd, 0, 0, 24 * MiB) ? errno : 0;
		EXPECT_TRUE(err == 0 || err == EPERM)
			TH_LOG("fallocate: %s", strerror(err));
		hit += err == EPERM;
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		EXPECT_EQ(0, status);
		close(fd);
	}
	TH_LOG("%d of 6 rounds found the new owner after the wait", hit);
	EXPECT_EQ(-1, som_check(x, 0, 32 * MiB, 4096, round - 1));
	EXPECT_EQ(0, munmap(x, 32 * MiB));
	close(xfd);
}

/*
 * Under the low watermark, the worker pages out ahead of faults: once it
 * has, a mapping promised past the pool is touched whole without a
 * fault waiting.
 */
TEST_F_TIMEOUT(oc, the_low_watermark_pages_out_ahead, 600)
{
	long long waits = swap_stat("pressure_waits");
	long long passes = swap_stat("pressure_passes");
	size_t len = 48 * MiB;
	char *p, *y;
	int i, yfd;

	ASSERT_EQ(0, leave_free(self, 64 * MiB));
	p = som_map_shared(self->dev, len);
	ASSERT_NE(MAP_FAILED, p);
	som_fill(p, 0, len, 4096, 8);
	/* 16 MiB free, 32 promised: 16 of it past the pool. */
	y = map_region(32 * MiB, &yfd);
	ASSERT_NE(MAP_FAILED, y);
	EXPECT_EQ(16 * MiB, swap_stat("overcommitted_bytes"));
	EXPECT_EQ(waits, swap_stat("pressure_waits"));
	ASSERT_EQ(0, som_sysfs_write("free_low_bytes", "33554432"));
	EXPECT_EQ(1, som_stat("free_low"));
	/* 32 MiB of free blocks at hand: 16 paged out to get there. */
	for (i = 0; i < 3000 && (swap_stat("used_bytes") < 32 * MiB ||
				 swap_stat("pressure_passes") == passes); i++)
		usleep(10 * 1000);
	EXPECT_LE(32 * MiB, swap_stat("used_bytes"));
	EXPECT_LT(passes, swap_stat("pressure_passes"));
	som_fill(y, 0, 32 * MiB, 4096, 12);
	EXPECT_EQ(waits, swap_stat("pressure_waits"));
	EXPECT_EQ(0, som_sysfs_write("free_low_bytes", "0"));
	EXPECT_EQ(-1, som_check(y, 0, 32 * MiB, 4096, 12));
	EXPECT_EQ(-1, som_check(p, 0, len, 4096, 8));
	EXPECT_EQ(0, munmap(y, 32 * MiB));
	close(yfd);
	EXPECT_EQ(0, munmap(p, len));
}

/*
 * A child touching twice what is free is killed with SIGKILL while its
 * faults wait for page-outs: it dies, and everything it held comes back.
 */
TEST_F_TIMEOUT(oc, a_task_killed_while_waiting_for_room_dies, 900)
{
	long long waits;
	int round, i, status;
	pid_t pid;

	ASSERT_EQ(0, leave_free(self, 32 * MiB));
	for (round = 0; round < 6; round++) {
		waits = swap_stat("pressure_waits");
		pid = fork();
		ASSERT_LE(0, pid);
		if (!pid) {
			int fd;
			char *q = map_region(64 * MiB, &fd);

			if (q == MAP_FAILED)
				_exit(2);
			for (;;)
				som_fill(q, 0, 64 * MiB, 4096, round);
		}
		for (i = 0; i < 6000 && swap_stat("pressure_waits") == waits;
		     i++)
			usleep(10 * 1000);
		EXPECT_LT(waits, swap_stat("pressure_waits"));
		usleep(round * 37 * 1000);
		kill(pid, SIGKILL);
		for (i = 0; i < 3000; i++) {
			if (waitpid(pid, &status, WNOHANG) == pid)
				break;
			usleep(10 * 1000);
		}
		ASSERT_GT(3000, i)
			TH_LOG("round %d: the killed child is still there after 30 s",
			       round);
		EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
		/*
		 * A pass paging the child out holds its mm: its memory goes
		 * when the pass lets go (mmput()), a batch later at most.
		 */
		for (i = 0; i < 3000 && (swap_stat("used_bytes") ||
					 som_stat("free_bytes") != 32 * MiB);
		     i++)
			usleep(10 * 1000);
		EXPECT_EQ(0, swap_stat("used_bytes"));
		EXPECT_EQ(0, swap_stat("overcommitted_bytes"));
		EXPECT_EQ(32 * MiB, som_stat("free_bytes"));
	}
}

/*
 * Reclaim leaves a process that called mlockall(MCL_FUTURE) alone (its
 * memory is all the pool has in use), and takes its memory once it has
 * called munlockall().
 */
TEST_F(oc, reclaim_leaves_a_process_with_mlockall_alone)
{
	int ready[2], go[2], status;
	char c;
	pid_t pid;

	ASSERT_EQ(0, pipe(ready));
	ASSERT_EQ(0, pipe(go));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		int fd;
		char *q;

		if (mlockall(MCL_CURRENT | MCL_FUTURE))
			_exit(2);
		q = map_region(16 * MiB, &fd);
		if (q == MAP_FAILED)
			_exit(3);
		som_fill(q, 0, 16 * MiB, 4096, 13);
		if (write(ready[1], "r", 1) != 1 || read(go[0], &c, 1) != 1)
			_exit(4);
		munlockall();
		if (write(ready[1], "u", 1) != 1 || read(go[0], &c, 1) != 1)
			_exit(5);
		_exit(som_check(q, 0, 16 * MiB, 4096, 13) == -1 ? 0 : 6);
	}
	ASSERT_EQ(1, read(ready[0], &c, 1));
	EXPECT_EQ(0, som_sysfs_write(SWAP "reclaim", "16777216"));
	EXPECT_EQ(0, swap_stat("used_bytes"));
	ASSERT_EQ(1, write(go[1], "g", 1));
	ASSERT_EQ(1, read(ready[0], &c, 1));
	EXPECT_EQ(0, som_sysfs_write(SWAP "reclaim", "16777216"));
	EXPECT_EQ(16 * MiB, swap_stat("used_bytes"));
	ASSERT_EQ(1, write(go[1], "g", 1));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, status);
	close(ready[0]);
	close(ready[1]);
	close(go[0]);
	close(go[1]);
}

struct oc_thread {
	char *p;
	size_t from, to;
	int seed;
	long long bad;
};

static void *oc_toucher(void *arg)
{
	struct oc_thread *t = arg;
	int round;

	for (round = 0; round < 3 && t->bad < 0; round++) {
		som_fill(t->p, t->from, t->to, 512, t->seed + round);
		t->bad = som_check(t->p, t->from, t->to, 512, t->seed + round);
	}
	return NULL;
}

static void *oc_pager(void *arg)
{
	struct oc_thread *t = arg;
	uint64_t s = 88172645463325252ULL;
	int i, fd;
	char *q;

	for (i = 0; i < 200; i++) {
		size_t off = (som_rand(&s) % (t->to / (2 * MiB))) * 2 * MiB;

		if (i % 10 == 0)
			som_sysfs_write(SWAP "reclaim", "8M");
		else
			pageout(t->seed, off, 2 * MiB);
		/* mmap and munmap of a region of its own. */
		q = map_region(4 * MiB, &fd);
		if (q != MAP_FAILED) {
			som_fill(q, 0, 4 * MiB, 4096, i);
			munmap(q, 4 * MiB);
			close(fd);
		}
	}
	return NULL;
}

/*
 * Four threads write and check their quarters of a mapping twice the
 * size of what is free, while another pages out random blocks of it,
 * asks for reclaim and maps and unmaps more: faults that wait, page-outs
 * of blocks being faulted back and reclaim passes run at once, and no
 * word is lost.
 */
TEST_F_TIMEOUT(oc, threads_faulting_while_others_page_out_lose_nothing, 1800)
{
	size_t len = 128 * MiB, q = len / 4;
	struct oc_thread t[5];
	pthread_t tid[5];
	char *p;
	int i;

	ASSERT_EQ(0, leave_free(self, 64 * MiB));
	p = som_map_shared(self->dev, len);
	ASSERT_NE(MAP_FAILED, p);
	for (i = 0; i < 4; i++) {
		t[i] = (struct oc_thread){ p, i * q, (i + 1) * q, 20 + i * 3,
					   -1 };
		ASSERT_EQ(0, pthread_create(&tid[i], NULL, oc_toucher, &t[i]));
	}
	t[4] = (struct oc_thread){ p, 0, len, self->dev, -1 };
	ASSERT_EQ(0, pthread_create(&tid[4], NULL, oc_pager, &t[4]));
	for (i = 0; i < 5; i++)
		pthread_join(tid[i], NULL);
	for (i = 0; i < 4; i++)
		EXPECT_EQ(-1, t[i].bad)
			TH_LOG("thread %d: word at %lld lost", i, t[i].bad);
	EXPECT_EQ(self->failures, swap_stat("pressure_failures"));
	EXPECT_EQ(0, munmap(p, len));
	EXPECT_EQ(64 * MiB, som_stat("free_bytes"));
}

TEST_HARNESS_MAIN
