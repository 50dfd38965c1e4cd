// SPDX-License-Identifier: GPL-2.0
/*
 * som stress tests: concurrent faults, faults racing with munmap, mprotect
 * and hole punching, SIGKILL in the middle of faults and of fallocate, pool
 * exhaustion churn. Each runs for SOM_STRESS_SECONDS (default 8) or until
 * its round limit, prints how many rounds it did, checks the data it can
 * check and, at the end, that the pool's accounting is exact.
 *
 * Needs som.ko loaded with a pool of at least 2 GiB, and root.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/falloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <time.h>

#include "kselftest_harness.h"
#include "som_util.h"

#define SOM_STRESS_THREADS	4

/* Capped below the tests' 600 s harness timeout. */
static int som_stress_seconds(void)
{
	const char *s = getenv("SOM_STRESS_SECONDS");
	int n = s ? atoi(s) : 0;

	return n <= 0 ? 8 : n > 500 ? 500 : n;
}

static double som_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

FIXTURE(stress) {
	int dev;
	long long total;
};

FIXTURE_SETUP(stress)
{
	SOM_OPEN_DEV(self->dev);
	self->total = som_stat("total_bytes");
	ASSERT_LE(2 * (long long)GiB, self->total);
	ASSERT_EQ(self->total, som_stat("free_bytes"));
}

FIXTURE_TEARDOWN(stress)
{
	if (self->dev < 0)
		return;
	close(self->dev);
	EXPECT_EQ(self->total, som_stat("free_bytes"));
	EXPECT_EQ(0, som_stat("reserved_bytes"));
}

/*
 * Threads write their own words all over one mapping (every 64 KiB has a
 * word per thread), in random order, so that faults of every size race on
 * the same entries; each checks its words after every round.
 */
struct som_fault_arg {
	char *p;
	size_t len;
	int tid;
	double end;
	long rounds;
	long bad;
};

static void *som_fault_thread(void *data)
{
	struct som_fault_arg *a = data;
	uint64_t seed = 0x9e3779b97f4a7c15ULL * (a->tid + 1);
	size_t nr = a->len / (64 * KiB), i, w;
	uint64_t *want = calloc(nr, sizeof(*want));

	if (!want) {
		a->bad++;
		return NULL;
	}
	while (som_now() < a->end) {
		for (i = 0; i < nr; i++) {
			w = som_rand(&seed) % nr;
			want[w] = som_rand(&seed) | 1;
			*(volatile uint64_t *)(a->p + w * 64 * KiB + a->tid * 8) =
				want[w];
		}
		for (w = 0; w < nr; w++)
			if (*(volatile uint64_t *)(a->p + w * 64 * KiB +
						   a->tid * 8) != want[w])
				a->bad++;
		a->rounds++;
	}
	free(want);
	return NULL;
}

TEST_F_TIMEOUT(stress, threads_fault_one_mapping_at_every_size, 600)
{
	struct som_fault_arg arg[SOM_STRESS_THREADS];
	pthread_t th[SOM_STRESS_THREADS];
	int fd = som_file(self->dev, GiB, 0), i;
	long rounds = 0, bad = 0;
	double end;
	char *p;

	ASSERT_LE(0, fd);
	p = mmap(NULL, GiB, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	end = som_now() + som_stress_seconds();
	while (som_now() < end) {
		for (i = 0; i < SOM_STRESS_THREADS; i++) {
			arg[i] = (struct som_fault_arg){ p, GiB, i,
				som_now() + 0.5, 0, 0 };
			ASSERT_EQ(0, pthread_create(&th[i], NULL,
						    som_fault_thread, &arg[i]));
		}
		for (i = 0; i < SOM_STRESS_THREADS; i++) {
			pthread_join(th[i], NULL);
			bad += arg[i].bad;
		}
		/* Drop it all and start again from holes. */
		ASSERT_EQ(0, fallocate(fd, FALLOC_FL_PUNCH_HOLE |
				       FALLOC_FL_KEEP_SIZE, 0, GiB));
		EXPECT_EQ(-1, som_check_zero(p, GiB, 64 * KiB));
		rounds++;
	}
	TH_LOG("%ld rounds of %d threads faulting 1 GiB in %d s",
	       rounds, SOM_STRESS_THREADS, som_stress_seconds());
	EXPECT_EQ(0, bad);
	EXPECT_LT(0, rounds);
	EXPECT_EQ(0, munmap(p, GiB));
	EXPECT_EQ(0, close(fd));
}

/*
 * Writers store the round number in their words and read it back; the
 * punch thread punches random 4 KiB to 2 MiB holes meanwhile, the remap
 * thread maps, touches and unmaps other offsets of the same /dev/som
 * region. A word may read back as the value or as zero (punched), never
 * as anything else.
 */
struct som_race {
	char *p;
	size_t len;
	int fd;
	int dev;
	double end;
	atomic_long punches;
	atomic_long remaps;
	atomic_long bad;
	atomic_long writes;
};

struct som_race_writer_arg {
	struct som_race *r;
	int tid;
};

/* Words with index = tid (mod threads) are this writer's alone. */
static void *som_race_writer(void *data)
{
	struct som_race_writer_arg *a = data;
	struct som_race *r = a->r;
	size_t nr = r->len / 8 / SOM_STRESS_THREADS;
	uint64_t seed = 0x5eed + a->tid, v, got;
	volatile uint64_t *word;

	do {
		word = (volatile uint64_t *)r->p +
		       (som_rand(&seed) % nr) * SOM_STRESS_THREADS + a->tid;
		v = som_rand(&seed) | 1;
		*word = v;
		got = *word;
		if (got != v && got != 0)
			atomic_fetch_add(&r->bad, 1);
		atomic_fetch_add(&r->writes, 1);
	} while (som_now() < r->end);
	return NULL;
}

static void *som_race_puncher(void *data)
{
	struct som_race *r = data;
	uint64_t seed = 12345, off, len;

	do {
		len = (1 + som_rand(&seed) % 512) * 4096;
		off = (som_rand(&seed) % (r->len / 4096)) * 4096;
		if (off + len > r->len)
			len = r->len - off;
		if (som_rand(&seed) & 1)
			fallocate(r->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				  off, len);
		else
			madvise(r->p + off, len, MADV_REMOVE);
		atomic_fetch_add(&r->punches, 1);
	} while (som_now() < r->end);
	return NULL;
}

static void *som_race_remapper(void *data)
{
	struct som_race *r = data;
	uint64_t seed = 777;
	char *q;
	size_t len;

	do {
		len = (1 + som_rand(&seed) % 8) * 2 * MiB;
		q = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, r->dev,
			 (som_rand(&seed) % 16) * 2 * MiB);
		if (q == MAP_FAILED) {
			atomic_fetch_add(&r->bad, 1);
			break;
		}
		som_fill(q, 0, len, 4096, 1);
		mprotect(q, 2 * MiB, PROT_READ);
		if (som_check(q, 0, len, 4096, 1) != -1)
			atomic_fetch_add(&r->bad, 1);
		munmap(q + len / 2, len - len / 2);
		munmap(q, len / 2);
		atomic_fetch_add(&r->remaps, 1);
	} while (som_now() < r->end);
	return NULL;
}

TEST_F_TIMEOUT(stress, punch_and_munmap_race_with_faults, 600)
{
	struct som_race r = { .len = 64 * MiB, .dev = self->dev };
	struct som_race_writer_arg w[SOM_STRESS_THREADS];
	pthread_t th[SOM_STRESS_THREADS + 2];
	int i;

	r.fd = som_file(self->dev, r.len, 0);
	ASSERT_LE(0, r.fd);
	r.p = mmap(NULL, r.len, PROT_READ | PROT_WRITE, MAP_SHARED, r.fd, 0);
	ASSERT_NE(MAP_FAILED, r.p);
	r.end = som_now() + som_stress_seconds();
	for (i = 0; i < SOM_STRESS_THREADS; i++) {
		w[i] = (struct som_race_writer_arg){ &r, i };
		ASSERT_EQ(0, pthread_create(&th[i], NULL, som_race_writer,
					    &w[i]));
	}
	ASSERT_EQ(0, pthread_create(&th[i++], NULL, som_race_puncher, &r));
	ASSERT_EQ(0, pthread_create(&th[i++], NULL, som_race_remapper, &r));
	while (i--)
		pthread_join(th[i], NULL);
	TH_LOG("%ld writes, %ld punches, %ld map/unmap cycles in %d s",
	       (long)r.writes, (long)r.punches, (long)r.remaps,
	       som_stress_seconds());
	EXPECT_EQ(0, (long)r.bad);
	EXPECT_LT(0, (long)r.punches);
	EXPECT_LT(0, (long)r.remaps);
	EXPECT_EQ(0, munmap(r.p, r.len));
	EXPECT_EQ(0, close(r.fd));
}

/* A child that faults in 1 GiB with threads or fallocates and punches it. */
static void som_victim(int dev, int mode)
{
	struct som_fault_arg arg[SOM_STRESS_THREADS];
	pthread_t th[SOM_STRESS_THREADS];
	int fd = som_file(dev, GiB, 0), i;
	char *p;

	if (fd < 0)
		_exit(2);
	p = mmap(NULL, GiB, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		_exit(3);
	for (;;) {
		if (mode) {
			fallocate(fd, 0, 0, GiB);
			fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				  0, GiB);
			continue;
		}
		for (i = 0; i < SOM_STRESS_THREADS; i++) {
			arg[i] = (struct som_fault_arg){ p, GiB, i,
				som_now() + 60, 0, 0 };
			pthread_create(&th[i], NULL, som_fault_thread, &arg[i]);
		}
		for (i = 0; i < SOM_STRESS_THREADS; i++)
			pthread_join(th[i], NULL);
	}
}

TEST_F_TIMEOUT(stress, sigkill_in_faults_and_fallocate_loses_nothing, 600)
{
	uint64_t seed = 99;
	double end = som_now() + som_stress_seconds();
	long kills = 0;
	int status;
	pid_t pid;

	while (som_now() < end) {
		pid = fork();
		ASSERT_LE(0, pid);
		if (pid == 0)
			som_victim(self->dev, kills & 1);
		usleep(som_rand(&seed) % 200000);
		kill(pid, SIGKILL);
		EXPECT_EQ(pid, waitpid(pid, &status, 0));
		EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
			TH_LOG("victim exited with status %#x", status);
		ASSERT_EQ(self->total, som_stat("free_bytes"));
		ASSERT_EQ(0, som_stat("reserved_bytes"));
		kills++;
	}
	TH_LOG("%ld children killed while faulting or in fallocate in %d s",
	       kills, som_stress_seconds());
	EXPECT_LT(0, kills);
}

/* Map until the pool says ENOMEM, touch, unmap everything; again. */
TEST_F_TIMEOUT(stress, exhaustion_churn_keeps_exact_accounting, 600)
{
	double end = som_now() + som_stress_seconds();
	struct { char *p; size_t len; } maps[1100];
	uint64_t seed = 4242;
	long rounds = 0, enomem = 0;
	int nr, i, fd;
	off_t off;

	while (som_now() < end) {
		/* Each mapping a new piece of the region, till the pool is dry. */
		for (nr = 0, off = 0; nr < 1100; nr++) {
			size_t len = (1 + som_rand(&seed) % 64) * 2 * MiB;

			maps[nr].p = mmap(NULL, len, PROT_READ | PROT_WRITE,
					  MAP_SHARED, self->dev, off);
			off += len;
			if (maps[nr].p == MAP_FAILED) {
				ASSERT_EQ(ENOMEM, errno);
				enomem++;
				break;
			}
			maps[nr].len = len;
			maps[nr].p[0] = 1;
			maps[nr].p[len - 1] = 1;
		}
		fd = som_file(self->dev, 2 * MiB, 0);
		EXPECT_TRUE(fd == -ENOSPC || fd >= 0);
		if (fd >= 0)
			close(fd);
		for (i = 0; i < nr; i++)
			ASSERT_EQ(0, munmap(maps[i].p, maps[i].len));
		ASSERT_EQ(self->total, som_stat("free_bytes"));
		rounds++;
	}
	TH_LOG("%ld rounds of mapping the pool full (%ld ENOMEM) in %d s",
	       rounds, enomem, som_stress_seconds());
	EXPECT_EQ(rounds, enomem);
}

TEST_HARNESS_MAIN
