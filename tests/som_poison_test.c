// SPDX-License-Identifier: GPL-2.0
/*
 * Memory-error selftests: a poisoned 4 KiB page of som memory costs its
 * owner that page and the pool its 2 MiB block, and nobody maps it again.
 *
 * Errors are declared with SOM_IOC_POISON, the way a machine check that
 * reports one is handled (kernel/poison.c); som_mce_test.c injects real
 * machine checks. Every test works in the spare
 * reserved range (SOM_SPARE_RANGES, 1 GiB on node 1), added as its own
 * source and bound to by the test's mappings, so that the retired blocks
 * leave with the source at the end and the boot pool is left as it was.
 * Each case checks the owner's other data byte for byte, the signal and
 * its fields, the source's counters (one block retired per poisoned
 * block), that a pool filled afterwards never maps the poisoned block,
 * and that the source, retired blocks and all, can be removed.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "som_util.h"
#include "som_pool_util.h"
#include "som_poison_util.h"

TEST_F(poison, bad_arguments_are_refused)
{
	struct som_poison p;
	char *m;
	int fd;
	pid_t pid;
	int status;

	memset(&p, 0, sizeof(p));
	p.flags = 1U << 7;
	EXPECT_EQ(-1, ioctl(self->dev, SOM_IOC_POISON, &p));
	EXPECT_EQ(EINVAL, errno);
	memset(&p, 0, sizeof(p));
	p.__reserved[1] = 1;
	EXPECT_EQ(-1, ioctl(self->dev, SOM_IOC_POISON, &p));
	EXPECT_EQ(EINVAL, errno);
	/* Not pool memory: physical page 0. */
	EXPECT_EQ(-EINVAL, poison(self->dev, NULL, 0, 0, NULL));
	/* Not a som mapping. */
	EXPECT_EQ(-EINVAL, poison(self->dev, &p, 0, 0, NULL));
	m = map_spare(_metadata, self->nid, 2 * MiB, 0, &fd);
	ASSERT_NE(NULL, m);
	/* Nothing behind it yet. */
	EXPECT_EQ(-ENODATA, poison(self->dev, m, 0, 0, NULL));
	m[0] = 1;
	EXPECT_NE(0, phys_of(self->dev, m));
	/* Only CAP_SYS_ADMIN may. */
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		if (setuid(65534))
			_exit(2);
		_exit(poison(self->dev, m, 0, SOM_POISON_LOOKUP, NULL) ==
		      -EPERM ? 0 : 1);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, WEXITSTATUS(status));
	/* somctl: not pool memory (1), not an address (2). */
	EXPECT_EQ(1, WEXITSTATUS(system("somctl poison 0 2>/dev/null")));
	EXPECT_EQ(2, WEXITSTATUS(system("somctl poison 4k 2>/dev/null")));
	EXPECT_EQ(0, spare_stat("poison_events"));
	munmap(m, 2 * MiB);
	close(fd);
}

TEST_F(poison, free_block_is_retired_and_never_handed_out)
{
	size_t len = GiB - 2 * MiB, off;
	uint64_t bad, block, phys;
	long long free0 = node_stat(self->nid, "free_bytes");
	char *m, cmd[64];
	int fd;

	bad = free_page_phys(_metadata, self->dev, self->nid, 5);
	ASSERT_NE(0, bad);
	/* Free now (zeroed or not): retired at once. As an administrator. */
	snprintf(cmd, sizeof(cmd), "somctl poison %#llx >/dev/null",
		 (unsigned long long)bad);
	ASSERT_EQ(0, system(cmd));
	EXPECT_EQ(1, spare_stat("poison_events"));
	EXPECT_EQ(1, spare_stat("poisoned_pages"));
	EXPECT_EQ(2 * MiB, spare_stat("retired_bytes"));
	EXPECT_EQ(2 * MiB, node_stat(self->nid, "retired_bytes"));
	EXPECT_LE(2 * MiB, som_stat("retired_bytes"));
	EXPECT_EQ(free0 - 2 * (long long)MiB,
		  node_stat(self->nid, "free_bytes"));

	/* The rest of the source fills up; the bad block is not in it. */
	m = map_spare(_metadata, self->nid, len, 2 * MiB, &fd);
	ASSERT_NE(NULL, m);
	block = bad & ~(2 * MiB - 1);
	for (off = 0; off < len; off += 2 * MiB) {
		m[off] = 1;
		phys = phys_of(self->dev, m + off);
		EXPECT_NE(block, phys);
		if (phys == block)
			break;
	}
	/* The source lost exactly one block. */
	EXPECT_EQ(0, node_stat(self->nid, "free_bytes"));
	munmap(m, len);
	close(fd);
	EXPECT_EQ(free0 - 2 * (long long)MiB,
		  node_stat(self->nid, "free_bytes"));
}

TEST_F(poison, mapped_2m_block_moves_and_leaves_a_4k_hole)
{
	size_t len = 4 * MiB;
	uint64_t before, after;
	char *m, *page;
	int fd;

	m = map_spare(_metadata, self->nid, len, 2 * MiB, &fd);
	ASSERT_NE(NULL, m);
	som_fill(m, 0, len, 8, 7);
	EXPECT_EQ(2 * MiB, som_page_size(self->dev, m));
	page = m + 2 * MiB + 37 * 4096;
	before = phys_of(self->dev, m + 2 * MiB);
	ASSERT_EQ(0, poison(self->dev, page, 0, 0, NULL));
	check_hole(_metadata, self->dev, m, len, page);
	/* The other pages moved off the bad block, which is retired. */
	after = phys_of(self->dev, m + 2 * MiB);
	EXPECT_NE(before, after);
	EXPECT_EQ(2 * MiB, spare_stat("retired_bytes"));
	EXPECT_EQ(1, spare_stat("poisoned_pages"));
	/* The first block kept its 2 MiB entry. */
	EXPECT_EQ(2 * MiB, som_page_size(self->dev, m));
	/* A write next to the hole works; the hole still signals. */
	page[4096] = 3;
	EXPECT_EQ(SIGBUS, touch(page));
	munmap(m, len);
	close(fd);
	EXPECT_EQ(2 * MiB, spare_stat("retired_bytes"));
	EXPECT_EQ(GiB - 2 * MiB, node_stat(self->nid, "free_bytes"));
}

TEST_F(poison, whole_gib_without_room_keeps_its_block_in_place)
{
	size_t len = GiB;
	uint64_t before;
	char *m, *page;
	int fd;

	/* The whole source: no spare block to move to. */
	m = map_spare(_metadata, self->nid, len, 0, &fd);
	ASSERT_NE(NULL, m);
	som_fill(m, 0, len, 4096, 7);
	EXPECT_EQ(som_largest_entry(), som_page_size(self->dev, m));
	page = m + 300 * MiB + 5 * 4096;
	before = phys_of(self->dev, page);
	ASSERT_EQ(0, poison(self->dev, page, 0, 0, NULL));
	EXPECT_EQ(-1, som_check(m, 0, page - m, 4096, 7));
	EXPECT_EQ(-1, som_check(m, page - m + 4096, len, 4096, 7));
	EXPECT_EQ(SIGBUS, touch(page));
	EXPECT_EQ(BUS_MCEERR_AR, touch_code);
	EXPECT_EQ(page, (char *)touch_addr);
	EXPECT_EQ(12, touch_lsb);
	/* In place: the neighbour is still on the bad block. */
	EXPECT_EQ(before + 4096, phys_of(self->dev, page + 4096));
	EXPECT_EQ(4096, som_page_size(self->dev, page + 4096));
	/* The GiB is on 2 MiB entries now, wherever there is no hole. */
	EXPECT_EQ(2 * MiB, som_page_size(self->dev, m));
	/* Retired when the mapping lets go of it. */
	EXPECT_EQ(0, spare_stat("retired_bytes"));
	munmap(m, len);
	close(fd);
	EXPECT_EQ(2 * MiB, spare_stat("retired_bytes"));
	EXPECT_EQ(GiB - 2 * MiB, node_stat(self->nid, "free_bytes"));
}

TEST_F(poison, pte_mapped_page_becomes_a_hole)
{
	size_t len = 2 * MiB;
	char *m, *page;
	int fd = open(SOM_DEV, O_RDWR);

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, set_policy(fd, SOM_POLICY_BIND, 1ULL << self->nid, 0));
	m = som_map_misaligned(fd, len, 64 * KiB);
	ASSERT_NE(MAP_FAILED, m);
	som_fill(m, 0, len, 8, 7);
	EXPECT_EQ(4096, som_page_size(self->dev, m));
	page = m + 100 * 4096;
	ASSERT_EQ(0, poison(self->dev, page, 0, 0, NULL));
	check_hole(_metadata, self->dev, m, len, page);
	munmap(m, len);
	close(fd);
	EXPECT_EQ(spare_stat("retired_bytes"), 2 * MiB);
}

TEST_F(poison, som_file_hole_signals_until_punched)
{
	size_t len = 4 * MiB;
	char *m, *page;
	int fd;

	fd = som_file(self->dev, 0, SOM_FILE_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, set_policy(fd, SOM_POLICY_BIND, 1ULL << self->nid, 0));
	ASSERT_EQ(0, ftruncate(fd, len));
	m = som_map_past(fd, len, GiB, 0);
	ASSERT_NE(MAP_FAILED, m);
	som_fill(m, 0, len, 8, 7);
	page = m + 3 * MiB + 7 * 4096;
	ASSERT_EQ(0, poison(self->dev, page, 0, 0, NULL));
	check_hole(_metadata, self->dev, m, len, page);
	/* A punch over the page clears the error for the owner. */
	ASSERT_EQ(0, fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			       page - m, 4096));
	EXPECT_EQ(0, touch(page));
	EXPECT_EQ(-1, som_check_zero(page, 4096, 8));
	page[0] = 9;
	EXPECT_EQ(9, page[0]);
	EXPECT_EQ(-1, som_check(m, 0, page - m, 8, 7));
	EXPECT_EQ(-1, som_check(m, page - m + 4096, len, 8, 7));
	/* The pool keeps the block retired. */
	EXPECT_EQ(2 * MiB, spare_stat("retired_bytes"));
	/*
	 * The block is whole again: mapped anew it is one 2 MiB entry (in
	 * the old mapping the 4 KiB entries' page table stays: 6.12 frees
	 * no emptied page table but at munmap).
	 */
	munmap(m, len);
	m = som_map_past(fd, len, GiB, 0);
	ASSERT_NE(MAP_FAILED, m);
	EXPECT_EQ(9, m[3 * MiB + 7 * 4096]);
	EXPECT_EQ(2 * MiB, som_page_size(self->dev, m + 3 * MiB));
	munmap(m, len);
	close(fd);
	EXPECT_EQ(GiB - 2 * MiB, node_stat(self->nid, "free_bytes"));
}

TEST_F(poison, hole_survives_evacuation_of_its_source)
{
	long long free0 = node_stat(0, "free_bytes");
	size_t len = 8 * MiB;
	char *m, *page;
	int fd;

	/* Preferred, not bound: evacuation may move it to node 0. */
	fd = open(SOM_DEV, O_RDWR);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, set_policy(fd, SOM_POLICY_PREFERRED, 1ULL << self->nid,
				0));
	m = som_map_past(fd, len, GiB, 2 * MiB);
	ASSERT_NE(MAP_FAILED, m);
	som_fill(m, 0, len, 8, 7);
	page = m + 5 * MiB + 3 * 4096;
	ASSERT_EQ(0, poison(self->dev, page, 0, 0, NULL));
	/* The source leaves with its retired block; the data moves. */
	ASSERT_EQ(0, src_remove(self->dev, SPARE));
	self->nid = -1;
	check_hole(_metadata, self->dev, m, len, page);
	EXPECT_EQ(free0 - (long long)len, node_stat(0, "free_bytes"));
	munmap(m, len);
	close(fd);
	EXPECT_EQ(free0, node_stat(0, "free_bytes"));
}

TEST_F(poison, two_errors_in_one_block)
{
	size_t len = 2 * MiB;
	uint64_t first = 0, second = 0;
	char *m;
	int fd;

	m = map_spare(_metadata, self->nid, len, 2 * MiB, &fd);
	ASSERT_NE(NULL, m);
	som_fill(m, 0, len, 8, 7);
	ASSERT_EQ(0, poison(self->dev, m + 4096, 0, 0, &first));
	/* A second error in the block the data moved to. */
	ASSERT_EQ(0, poison(self->dev, m + 9 * 4096, 0, 0, &second));
	EXPECT_NE(first & ~(2 * MiB - 1), second & ~(2 * MiB - 1));
	EXPECT_EQ(-1, som_check(m, 0, 4096, 8, 7));
	EXPECT_EQ(-1, som_check(m, 2 * 4096, 9 * 4096, 8, 7));
	EXPECT_EQ(-1, som_check(m, 10 * 4096, len, 8, 7));
	EXPECT_EQ(SIGBUS, touch(m + 4096));
	EXPECT_EQ(SIGBUS, touch(m + 9 * 4096));
	EXPECT_EQ(4 * MiB, spare_stat("retired_bytes"));
	/* Two more in the first, retired block: one new page, one again. */
	EXPECT_EQ(0, poison(self->dev, NULL, first + 100 * 4096, 0, NULL));
	EXPECT_EQ(0, poison(self->dev, NULL, first, 0, NULL));
	EXPECT_EQ(4, spare_stat("poison_events"));
	EXPECT_EQ(3, spare_stat("poisoned_pages"));
	EXPECT_EQ(4 * MiB, spare_stat("retired_bytes"));
	munmap(m, len);
	close(fd);
	EXPECT_EQ(GiB - 4 * MiB, node_stat(self->nid, "free_bytes"));
}

TEST_F(poison, promised_free_block_costs_one_reservation)
{
	size_t len = GiB, off;
	int fd, bus = 0;
	uint64_t bad;
	char *m;

	/* Every free block of the source is promised to this mapping. */
	m = map_spare(_metadata, self->nid, len, 2 * MiB, &fd);
	ASSERT_NE(NULL, m);
	m[0] = 1;
	EXPECT_EQ(0, node_stat(self->nid, "free_bytes"));
	/* The source's last block: free, promised. */
	bad = self->start + GiB - 2 * MiB + 4096;
	if (phys_of(self->dev, m) == (bad & ~(2 * MiB - 1)))
		bad = self->start + 4096;
	ASSERT_EQ(0, poison(self->dev, NULL, bad, 0, NULL));
	EXPECT_EQ(2 * MiB, spare_stat("retired_bytes"));
	/* The node has nothing else: the mapping's last block is lost. */
	for (off = 0; off < len; off += 2 * MiB) {
		if (touch(m + off) != SIGBUS)
			continue;
		bus++;
		EXPECT_EQ(BUS_ADRERR, touch_code);
	}
	EXPECT_EQ(1, bus);
	munmap(m, len);
	close(fd);
	EXPECT_EQ(GiB - 2 * MiB, node_stat(self->nid, "free_bytes"));
	EXPECT_EQ(0, node_stat(self->nid, "reserved_bytes"));
}

/*
 * Errors racing with the owner: one thread maps what the source has
 * left, touches it block by block and unmaps it, again and again, while
 * another declares random pages of the source poisoned (free blocks,
 * promised ones, blocks in use, blocks being freed, retired ones). At the
 * end nothing is mapped: every block that got an error must be retired
 * (a count or a retired mark lost to a race shows here), the rest free,
 * and the source must leave the pool (the teardown).
 */
struct churn {
	int nid;
	volatile int stop;
	long rounds;
	long errors;
};

static void *churn_run(void *arg)
{
	struct churn *c = arg;
	long long left;
	size_t off;
	char *m;
	int fd;

	while (!c->stop) {
		left = node_stat(c->nid, "free_bytes") & ~(2 * MiB - 1);
		fd = open(SOM_DEV, O_RDWR);
		if (fd < 0 || set_policy(fd, SOM_POLICY_BIND, 1ULL << c->nid, 0)) {
			c->errors++;
			break;
		}
		m = left > 0 ? som_map_past(fd, left, GiB, 2 * MiB) : MAP_FAILED;
		for (off = 0; m != MAP_FAILED && off < (size_t)left && !c->stop;
		     off += 2 * MiB)
			/* A block an error took while promised: SIGBUS. */
			touch(m + off);
		if (m != MAP_FAILED)
			munmap(m, left);
		close(fd);
		c->rounds++;
	}
	return NULL;
}

TEST_F(poison, errors_race_with_faults_and_munmap)
{
	int seconds = som_env_seconds("SOM_POISON_SECONDS", 5, 600);
	static uint64_t blocks[4096];
	struct churn c = { .nid = self->nid };
	uint64_t seed = 42, phys, block;
	unsigned int nr = 0, i;
	double end;
	pthread_t t;

	ASSERT_EQ(0, pthread_create(&t, NULL, churn_run, &c));
	end = som_seconds() + seconds;
	while (som_seconds() < end && nr < 4096) {
		phys = self->start + (som_rand(&seed) % (GiB / 4096)) * 4096;
		EXPECT_EQ(0, poison(self->dev, NULL, phys, 0, NULL));
		block = phys & ~(2 * MiB - 1);
		for (i = 0; i < nr && blocks[i] != block; i++)
			;
		if (i == nr)
			blocks[nr++] = block;
		usleep(20 * 1000);
	}
	c.stop = 1;
	pthread_join(t, NULL);
	TH_LOG("%u blocks poisoned while the owner went %ld rounds", nr,
	       c.rounds);
	EXPECT_EQ(0, c.errors);
	EXPECT_LT(0, c.rounds);
	EXPECT_EQ(nr * 2 * (long long)MiB, spare_stat("retired_bytes"));
	EXPECT_EQ(GiB - nr * 2 * (long long)MiB,
		  node_stat(self->nid, "free_bytes"));
	EXPECT_EQ(0, node_stat(self->nid, "reserved_bytes"));
}

TEST_HARNESS_MAIN
