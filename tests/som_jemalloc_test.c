// SPDX-License-Identifier: GPL-2.0
/*
 * libsom's jemalloc arena: its extents are som memory, jemalloc's purging
 * gives memory back to the pool, and destroying the arena gives back all
 * of it. Linked with Debian's jemalloc (dynamically: jemalloc is then the
 * process's malloc, as in a program built with -ljemalloc).
 */
#define _GNU_SOURCE
#include <jemalloc/jemalloc.h>

#include "kselftest_harness.h"
#include "som_util.h"
#include "libsom.h"

static long long pool_used(void)
{
	return som_stat("total_bytes") - som_stat("free_bytes") -
	       som_stat("reserved_bytes");
}

FIXTURE(arena) {
	int dev;
	long long free_start;
	struct som *som;
	unsigned int arena;
	int flags;
};

FIXTURE_SETUP(arena)
{
	SOM_OPEN_DEV(self->dev);
	self->free_start = som_stat("free_bytes");
	ASSERT_EQ(0, som_open(&self->som));
	ASSERT_EQ(0, som_jemalloc_arena_create(self->som, &self->arena));
	self->flags = MALLOCX_ARENA(self->arena) | MALLOCX_TCACHE_NONE;
}

FIXTURE_TEARDOWN(arena)
{
	if (self->dev < 0)
		return;
	EXPECT_EQ(0, som_jemalloc_arena_destroy(self->som, self->arena));
	EXPECT_EQ(0, som_close(self->som));
	EXPECT_EQ(self->free_start, som_stat("free_bytes"));
	EXPECT_EQ(0, som_stat("reserved_bytes"));
	close(self->dev);
}

TEST_F(arena, allocations_are_som_and_purging_returns_memory)
{
	struct som_where w;
	char *big, *small[1000];
	char name[64];
	int i;

	big = mallocx(64 * MiB, self->flags);
	ASSERT_NE(NULL, big);
	som_fill(big, 0, 64 * MiB, 4096, 7);
	ASSERT_EQ(0, som_where(self->som, big + 32 * MiB, &w));
	EXPECT_NE(0, w.page_size);
	for (i = 0; i < 1000; i++) {
		small[i] = mallocx(100 + i, self->flags);
		ASSERT_NE(NULL, small[i]);
		memset(small[i], i, 100 + i);
	}
	EXPECT_EQ(0, som_where(self->som, small[500], &w));
	EXPECT_GE(pool_used(), (long long)(64 * MiB));
	EXPECT_EQ(-1, som_check(big, 0, 64 * MiB, 4096, 7));
	for (i = 0; i < 1000; i++) {
		EXPECT_EQ((char)i, small[i][99 + i]);
		dallocx(small[i], self->flags);
	}
	dallocx(big, self->flags);

	/* jemalloc's purge punches what it no longer uses. */
	snprintf(name, sizeof(name), "arena.%u.purge", self->arena);
	ASSERT_EQ(0, mallctl(name, NULL, NULL, NULL, 0));
	EXPECT_LT(pool_used(), (long long)(64 * MiB));

	/* Ordinary malloc() stays ordinary. */
	big = malloc(64 * MiB);
	ASSERT_NE(NULL, big);
	EXPECT_EQ(-EINVAL, som_where(self->som, big, &w));
	free(big);
}

TEST_F(arena, grown_blocks_keep_their_data)
{
	char *p[64];
	int i;

	for (i = 0; i < 64; i++) {
		p[i] = mallocx((i + 1) * 256 * KiB, self->flags);
		ASSERT_NE(NULL, p[i]);
		som_fill(p[i], 0, (i + 1) * 256 * KiB, 4096, i);
	}
	for (i = 0; i < 64; i++) {
		p[i] = rallocx(p[i], (i + 1) * 512 * KiB, self->flags);
		ASSERT_NE(NULL, p[i]);
		EXPECT_EQ(-1, som_check(p[i], 0, (i + 1) * 256 * KiB, 4096, i));
		dallocx(p[i], self->flags);
	}
}

TEST_F(arena, fork_child_lives_without_the_arena)
{
	char *p = mallocx(8 * MiB, self->flags), *q;
	int status;
	pid_t pid;

	ASSERT_NE(NULL, p);
	memset(p, 5, 8 * MiB);
	/* jemalloc's own records of the arena are ordinary memory. */
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		q = malloc(1 * MiB);
		if (q)
			memset(q, 1, 1 * MiB);
		free(q);
		_exit(q ? 0 : 1);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, status);
	EXPECT_EQ(5, p[8 * MiB - 1]);
	dallocx(p, self->flags);
}

TEST_HARNESS_MAIN
