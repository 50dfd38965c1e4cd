// SPDX-License-Identifier: GPL-2.0
/*
 * libsom selftests: allocation and alignment, hole punching, prefaulting,
 * placement options, where an address is backed, usage and pool counters,
 * bad arguments, threads, and som_close() giving everything back.
 *
 * Needs som.ko loaded with a pool of at least 2 GiB, and root. Linked
 * with the static libsom.
 */
#define _GNU_SOURCE
#include <pthread.h>

#include "kselftest_harness.h"
#include "som_util.h"
#include "libsom.h"

FIXTURE(lib) {
	struct som *som;
	long long free_start;
};

FIXTURE_SETUP(lib)
{
	self->som = NULL;
	if (access(SOM_DEV, F_OK))
		SKIP(return, "som.ko is not loaded");
	self->free_start = som_stat("free_bytes");
	ASSERT_LE(2 * (long long)GiB, self->free_start);
	ASSERT_EQ(0, som_open(&self->som));
}

FIXTURE_TEARDOWN(lib)
{
	if (!self->som)
		return;
	EXPECT_EQ(0, som_close(self->som));
	EXPECT_EQ(self->free_start, som_stat("free_bytes"));
	EXPECT_EQ(0, som_stat("reserved_bytes"));
}

TEST_F(lib, a_gib_is_aligned_and_mapped_by_one_entry)
{
	struct som_where w;
	struct som_usage u;
	char *p;

	ASSERT_EQ(0, som_alloc(self->som, GiB, NULL, (void **)&p));
	EXPECT_EQ(0, (uintptr_t)p % GiB);
	EXPECT_EQ(self->free_start - (long long)GiB, som_stat("free_bytes"));
	ASSERT_EQ(0, som_where(self->som, p, &w));
	EXPECT_EQ(0, w.page_size);
	EXPECT_EQ(-1, w.node);
	som_fill(p, 0, GiB, 4096, 3);
	EXPECT_EQ(-1, som_check(p, 0, GiB, 4096, 3));
	ASSERT_EQ(0, som_where(self->som, p + GiB - 1, &w));
	if (som_cpu_has_gbpages())
		EXPECT_EQ(GiB, w.page_size);
	EXPECT_LE(0, w.node);
	EXPECT_EQ(0, w.unmovable);
	ASSERT_EQ(0, som_usage(self->som, &u));
	EXPECT_EQ(1, u.allocations);
	EXPECT_EQ(GiB, u.mapped_bytes);
	EXPECT_EQ(GiB, u.allocated_bytes);
	EXPECT_EQ(0, som_free(self->som, p));
	EXPECT_EQ(self->free_start, som_stat("free_bytes"));
}

TEST_F(lib, punched_memory_goes_back_and_reads_zeros)
{
	struct som_usage u;
	char *p;

	ASSERT_EQ(0, som_alloc(self->som, 64 * MiB, NULL, (void **)&p));
	som_fill(p, 0, 64 * MiB, 4096, 4);
	EXPECT_EQ(0, som_punch(self->som, p + 8 * MiB, 4 * MiB));
	ASSERT_EQ(0, som_usage(self->som, &u));
	EXPECT_EQ(60 * MiB, u.allocated_bytes);
	EXPECT_EQ(-1, som_check_zero(p + 8 * MiB, 4 * MiB, 4096));
	EXPECT_EQ(-1, som_check(p, 0, 8 * MiB, 4096, 4));
	EXPECT_EQ(-1, som_check(p, 12 * MiB, 64 * MiB, 4096, 4));
	/* 4 KiB inside a block: zeroed in place. */
	EXPECT_EQ(0, som_punch(self->som, p + 4096, 4096));
	EXPECT_EQ(-1, som_check_zero(p + 4096, 4096, 8));
	EXPECT_EQ(0, som_free(self->som, p));
}

TEST_F(lib, prefault_maps_everything_up_front)
{
	struct som_alloc_opts o = { .flags = SOM_ALLOC_PREFAULT };
	long long pmd = som_stat("faults_pmd");
	struct som_where w;
	struct som_usage u;
	char *p;

	ASSERT_EQ(0, som_alloc(self->som, 64 * MiB, &o, (void **)&p));
	EXPECT_EQ(32, som_stat("faults_pmd") - pmd);
	ASSERT_EQ(0, som_where(self->som, p + 63 * MiB, &w));
	EXPECT_EQ(2 * MiB, w.page_size);
	ASSERT_EQ(0, som_usage(self->som, &u));
	EXPECT_EQ(64 * MiB, u.allocated_bytes);
	EXPECT_EQ(-1, som_check_zero(p, 64 * MiB, 4096));
	EXPECT_EQ(0, som_free(self->som, p));
}

TEST_F(lib, placement_options_reach_the_kernel)
{
	struct som_alloc_opts bind0 = { .policy = SOM_POLICY_BIND };
	struct som_alloc_opts unmov = { .policy_flags = SOM_POLICY_UNMOVABLE };
	struct som_alloc_opts far = { .policy = SOM_POLICY_BIND };
	struct som_where w;
	void *p;

	som_alloc_opts_set_node(&bind0, 0);
	ASSERT_EQ(0, som_alloc(self->som, 4 * MiB, &bind0, &p));
	*(volatile char *)p = 1;
	ASSERT_EQ(0, som_where(self->som, p, &w));
	EXPECT_EQ(0, w.node);
	EXPECT_EQ(0, som_free(self->som, p));
	/*
	 * The whole mask reaches the kernel: node 1000 is past the first
	 * word, and this machine has no such node.
	 */
	som_alloc_opts_set_node(&far, 1000);
	EXPECT_EQ(1ULL << (1000 % 64), far.nodes[1000 / 64]);
	EXPECT_EQ(-EINVAL, som_alloc(self->som, 2 * MiB, &far, &p));
	/* The boot range is movable: nothing for an unmovable request. */
	if (som_stat("unmovable_free_bytes") == 0)
		EXPECT_EQ(-ENOMEM, som_alloc(self->som, 2 * MiB, &unmov, &p));
	/* More than the pool has. */
	EXPECT_EQ(-ENOMEM, som_alloc(self->som, 1ULL << 50, NULL, &p));
}

TEST_F(lib, bad_arguments_are_refused)
{
	struct som_alloc_opts bad = { .flags = 1U << 9 };
	struct som_alloc_opts resv0 = { .reserved0 = 1 };
	struct som_alloc_opts resv = { .reserved[3] = 1 };
	struct som_where w;
	char x, *p;

	EXPECT_EQ(-EINVAL, som_alloc(self->som, 0, NULL, (void **)&p));
	EXPECT_EQ(-EINVAL, som_alloc(self->som, 2 * MiB, &bad, (void **)&p));
	/* Reserved fields must be zero, so that a later libsom can use them. */
	EXPECT_EQ(-EINVAL, som_alloc(self->som, 2 * MiB, &resv0, (void **)&p));
	EXPECT_EQ(-EINVAL, som_alloc(self->som, 2 * MiB, &resv, (void **)&p));
	EXPECT_EQ(-EINVAL, som_free(self->som, &x));
	EXPECT_EQ(-EINVAL, som_where(self->som, &x, &w));
	ASSERT_EQ(0, som_alloc(self->som, 4 * MiB, NULL, (void **)&p));
	EXPECT_EQ(-EINVAL, som_free(self->som, p + 4096));
	EXPECT_EQ(-EINVAL, som_punch(self->som, p + 1, 4096));
	EXPECT_EQ(-EINVAL, som_punch(self->som, p, 4095));
	EXPECT_EQ(-EINVAL, som_punch(self->som, p + 2 * MiB, 4 * MiB));
	EXPECT_EQ(-EINVAL, som_prefault(self->som, p, 0));
	EXPECT_EQ(0, som_free(self->som, p));
	EXPECT_EQ(-EINVAL, som_free(self->som, p));
	EXPECT_EQ(-EINVAL, som_pool_info(NULL));
}

TEST_F(lib, pool_info_matches_sysfs)
{
	struct som_pool_info i;

	ASSERT_EQ(0, som_pool_info(&i));
	EXPECT_EQ(som_stat("total_bytes"), (long long)i.total_bytes);
	EXPECT_EQ(som_stat("free_bytes"), (long long)i.free_bytes);
	EXPECT_EQ(som_stat("metadata_bytes"), (long long)i.metadata_bytes);
	EXPECT_EQ(som_stat("faults_pud"), (long long)i.faults_pud);
}

static void *som_lib_worker(void *arg)
{
	struct som *som = arg;
	long bad = 0;
	char *p;
	int i;

	for (i = 0; i < 40; i++) {
		if (som_alloc(som, 8 * MiB, NULL, (void **)&p)) {
			bad++;
			continue;
		}
		memset(p, i, 8 * MiB);
		bad += som_punch(som, p + 2 * MiB, 2 * MiB) != 0;
		bad += p[0] != (char)i || p[2 * MiB] != 0;
		bad += som_free(som, p) != 0;
	}
	return (void *)bad;
}

TEST_F(lib, threads_share_one_handle)
{
	pthread_t t[4];
	void *bad;
	int i;

	for (i = 0; i < 4; i++)
		ASSERT_EQ(0, pthread_create(&t[i], NULL, som_lib_worker,
					    self->som));
	for (i = 0; i < 4; i++) {
		ASSERT_EQ(0, pthread_join(t[i], &bad));
		EXPECT_EQ(0, (long)bad);
	}
}

/*
 * A child has none of the memory: its handle starts empty, and it closes
 * the parent's files as it starts (fork copies the descriptors; the child
 * lets go of them in libsom's fork handler), so the parent's som_free()
 * gives the memory back while the child still runs.
 */
TEST_F(lib, fork_leaves_the_memory_to_the_parent)
{
	int to_child[2], to_parent[2];
	struct som_usage u;
	pid_t pid;
	int status;
	char c = 0;
	void *p;

	ASSERT_EQ(0, som_alloc(self->som, 64 * MiB, NULL, &p));
	ASSERT_EQ(0, pipe(to_child));
	ASSERT_EQ(0, pipe(to_parent));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		int bad = som_usage(self->som, &u) || u.allocations;

		bad |= write(to_parent[1], &c, 1) != 1;
		bad |= read(to_child[0], &c, 1) != 1;
		_exit(bad);
	}
	ASSERT_EQ(1, read(to_parent[0], &c, 1));
	EXPECT_EQ(0, som_free(self->som, p));
	EXPECT_EQ(self->free_start, som_stat("free_bytes"));
	EXPECT_EQ(1, write(to_child[1], &c, 1));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, status);
	close(to_child[0]);
	close(to_child[1]);
	close(to_parent[0]);
	close(to_parent[1]);
}

TEST_F(lib, close_gives_everything_back)
{
	void *p;
	int i;

	for (i = 0; i < 5; i++)
		ASSERT_EQ(0, som_alloc(self->som, 16 * MiB, NULL, &p));
	EXPECT_EQ(self->free_start - 80 * (long long)MiB,
		  som_stat("free_bytes"));
	EXPECT_EQ(0, som_close(self->som));
	EXPECT_EQ(self->free_start, som_stat("free_bytes"));
	ASSERT_EQ(0, som_open(&self->som));
}

TEST_HARNESS_MAIN
