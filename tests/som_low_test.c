// SPDX-License-Identifier: GPL-2.0
/*
 * The pool's low watermark of free memory, as an agent uses it: it sets
 * free_low_bytes, reads free_low and blocks in poll() on it; free_low
 * turns 1 when the pool's free bytes drop under the watermark and 0 when
 * they are back, and each change wakes the poller
 * (Documentation/admin-guide.md, "Free memory running low").
 */
#define _GNU_SOURCE
#include <poll.h>
#include <pthread.h>

#include "kselftest_harness.h"
#include "som_util.h"
#include "som_pool_util.h"

#define SPARE	"low-spare"

FIXTURE(low) {
	int dev;
	int fd;		/* free_low, open for reading */
};

FIXTURE_SETUP(low)
{
	int i;

	SOM_OPEN_DEV(self->dev);
	self->fd = open(SOM_SYSFS "free_low", O_RDONLY);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, som_sysfs_write("free_low_bytes", "0"));
	/* A compaction sets chunks aside, which changes what is free. */
	for (i = 0; i < 600 && som_stat("migration/compact_running"); i++)
		usleep(100 * 1000);
	ASSERT_EQ(0, som_stat("migration/compact_running"));
}

FIXTURE_TEARDOWN(low)
{
	if (self->dev < 0)
		return;
	som_sysfs_write("free_low_bytes", "0");
	src_remove(self->dev, SPARE);
	close(self->fd);
	close(self->dev);
}

/* free_low read from its start, which also arms the next poll(). */
static int low_now(int fd)
{
	char c[4] = "";

	if (lseek(fd, 0, SEEK_SET) || read(fd, c, sizeof(c) - 1) < 2)
		return -1;
	return c[0] - '0';
}

/* Whether free_low changed since it was last read, waiting up to @ms. */
static int woken(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLPRI };

	return poll(&p, 1, ms) == 1 && (p.revents & POLLPRI);
}

static int set_watermark(long long bytes)
{
	char val[32];

	snprintf(val, sizeof(val), "%lld", bytes);
	return som_sysfs_write("free_low_bytes", val);
}

struct poller {
	int fd;
	int woken;
};

static void *poll_thread(void *arg)
{
	struct poller *p = arg;

	p->woken = woken(p->fd, 60 * 1000);
	return NULL;
}

/*
 * A watermark 2 MiB under what is free: a 4 MiB reservation takes the
 * pool under it and wakes a poller already blocked; faults that use the
 * reservation change nothing free; munmap brings it back over and wakes
 * it again.
 */
TEST_F(low, reservations_cross_the_watermark_and_wake_poll)
{
	long long free = som_stat("free_bytes");
	long long events = som_stat("free_low_events");
	struct poller p = { .fd = self->fd };
	pthread_t t;
	char *m;

	ASSERT_LE(8 * MiB, free);
	ASSERT_EQ(0, set_watermark(free - 2 * MiB));
	EXPECT_EQ(free - 2 * MiB, som_stat("free_low_bytes"));
	EXPECT_EQ(0, low_now(self->fd));
	EXPECT_EQ(0, woken(self->fd, 0));

	ASSERT_EQ(0, pthread_create(&t, NULL, poll_thread, &p));
	usleep(200 * 1000);
	m = mmap(NULL, 4 * MiB, PROT_READ | PROT_WRITE, MAP_SHARED,
		 self->dev, 0);
	ASSERT_NE(MAP_FAILED, m);
	ASSERT_EQ(0, pthread_join(t, NULL));
	EXPECT_EQ(1, p.woken);
	EXPECT_EQ(1, low_now(self->fd));
	EXPECT_EQ(events + 1, som_stat("free_low_events"));

	/* Faults take what was reserved: free memory does not move. */
	m[0] = 1;
	m[2 * MiB] = 1;
	EXPECT_EQ(free - 4 * MiB, som_stat("free_bytes"));
	EXPECT_EQ(0, woken(self->fd, 0));

	EXPECT_EQ(0, munmap(m, 4 * MiB));
	EXPECT_EQ(1, woken(self->fd, 10 * 1000));
	EXPECT_EQ(0, low_now(self->fd));
	EXPECT_EQ(events + 1, som_stat("free_low_events"));
}

/*
 * A watermark over what is free makes the pool low at once, and 0 turns
 * the watermark off: each wakes the poller.
 */
TEST_F(low, setting_the_watermark_takes_effect_at_once)
{
	long long free = som_stat("free_bytes");

	EXPECT_EQ(0, low_now(self->fd));
	ASSERT_EQ(0, set_watermark(free + 2 * MiB));
	EXPECT_EQ(1, woken(self->fd, 10 * 1000));
	EXPECT_EQ(1, low_now(self->fd));
	/* Another value under which it stays low: nothing new. */
	ASSERT_EQ(0, set_watermark(free + 4 * MiB));
	EXPECT_EQ(0, woken(self->fd, 0));
	ASSERT_EQ(0, set_watermark(0));
	EXPECT_EQ(1, woken(self->fd, 10 * 1000));
	EXPECT_EQ(0, low_now(self->fd));
	/* Off, an empty pool would not be low either. */
	EXPECT_EQ(0, som_stat("free_low_bytes"));
}

/*
 * A source leaving takes its free GiB along: one crossing, counted once
 * (the removal's trial of whether the rest covers the reservations is not
 * a change of free memory), and one wakeup at least.
 */
TEST_F(low, a_source_leaving_crosses_once)
{
	long long free, events;
	int err = add_spare_gib(self->dev, SPARE);

	if (err == -ENODEV)
		SKIP(return, "no spare 1 GiB range (SOM_SPARE_RANGES)");
	ASSERT_EQ(0, err);
	free = som_stat("free_bytes");
	events = som_stat("free_low_events");
	ASSERT_EQ(0, set_watermark(free - 512 * MiB));
	EXPECT_EQ(0, low_now(self->fd));
	EXPECT_EQ(0, src_remove(self->dev, SPARE));
	EXPECT_EQ(free - (long long)GiB, som_stat("free_bytes"));
	EXPECT_EQ(1, woken(self->fd, 10 * 1000));
	EXPECT_EQ(1, low_now(self->fd));
	EXPECT_EQ(events + 1, som_stat("free_low_events"));
}

TEST_F(low, bad_values_and_unprivileged_writers_are_refused)
{
	int status, fd;
	pid_t pid;

	EXPECT_EQ(-EINVAL, som_sysfs_write("free_low_bytes", "lots"));
	EXPECT_EQ(-EINVAL, som_sysfs_write("free_low_bytes", "-1"));
	EXPECT_EQ(-ERANGE, som_sysfs_write("free_low_bytes",
					   "18446744073709551616"));
	EXPECT_EQ(0, som_stat("free_low_bytes"));
	/* free_low and free_low_events are read-only, even for root. */
	EXPECT_EQ(-EACCES, som_sysfs_write("free_low", "1"));
	EXPECT_EQ(-EACCES, som_sysfs_write("free_low_events", "0"));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		if (setuid(65534))
			_exit(2);
		fd = open(SOM_SYSFS "free_low_bytes", O_WRONLY);
		_exit(fd < 0 && errno == EACCES ? 0 : 1);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, WEXITSTATUS(status));
	EXPECT_EQ(0, som_stat("free_low_bytes"));
}

TEST_HARNESS_MAIN
