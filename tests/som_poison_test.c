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

/* Free memory of @nid (-1: the pool) that is not zeroed yet. */
static long long dirty_bytes(int nid)
{
	if (nid < 0)
		return som_stat("free_bytes") + som_stat("reserved_bytes") -
		       som_stat("zeroed_bytes");
	return node_stat(nid, "free_bytes") + node_stat(nid, "reserved_bytes") -
	       node_stat(nid, "zeroed_bytes");
}

/* Wait until the zeroing worker has zeroed all free memory of @nid. */
static int wait_zeroed(int nid)
{
	double end = som_seconds() + 600;

	while (dirty_bytes(nid)) {
		if (som_seconds() > end)
			return -1;
		usleep(10 * 1000);
	}
	return 0;
}

/*
 * Map all the free memory the spare source has left and touch it: no
 * block of it is the one at @block.
 */
static void fill_avoids(struct __test_metadata *_metadata, int dev, int nid,
			uint64_t block)
{
	size_t len = node_stat(nid, "free_bytes"), off;
	uint64_t phys;
	char *m;
	int fd;

	m = map_spare(_metadata, nid, len, 2 * MiB, &fd);
	ASSERT_NE(NULL, m);
	for (off = 0; off < len; off += 2 * MiB) {
		m[off] = 1;
		phys = phys_of(dev, m + off);
		EXPECT_NE(block, phys);
		if (phys == block)
			break;
	}
	EXPECT_EQ(0, node_stat(nid, "free_bytes"));
	munmap(m, len);
	close(fd);
}

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
	p.__reserved = 1;
	EXPECT_EQ(-1, ioctl(self->dev, SOM_IOC_POISON, &p));
	EXPECT_EQ(EINVAL, errno);
	/* @len is only for SOM_POISON_FORGET. */
	memset(&p, 0, sizeof(p));
	p.len = 4096;
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

TEST_F(poison, zeroed_free_block_is_retired_and_never_handed_out)
{
	long long free0 = node_stat(self->nid, "free_bytes");
	char cmd[64];
	uint64_t bad;

	bad = free_page_phys(_metadata, self->dev, self->nid, 5);
	ASSERT_NE(0, bad);
	/* Free and zeroed: retired at once. As an administrator. */
	ASSERT_EQ(0, wait_zeroed(self->nid));
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
	fill_avoids(_metadata, self->dev, self->nid, bad & ~(2 * MiB - 1));
	/* The source lost exactly one block. */
	EXPECT_EQ(free0 - 2 * (long long)MiB,
		  node_stat(self->nid, "free_bytes"));
}

/*
 * A block freed and not zeroed yet (zero_ahead off holds it so): the
 * error retires it as it is, and it is no longer counted dirty, so that
 * the zeroing worker, started again, never writes it; the source filled
 * afterwards never maps it.
 */
TEST_F(poison, dirty_free_block_is_retired_and_never_zeroed)
{
	long long free0, worker0;
	uint64_t bad;

	ASSERT_EQ(0, wait_zeroed(-1));
	ASSERT_EQ(0, som_sysfs_write("zero_ahead", "0"));
	free0 = node_stat(self->nid, "free_bytes");
	worker0 = som_stat("zero_worker_bytes");
	bad = free_page_phys(_metadata, self->dev, self->nid, 5);
	ASSERT_NE(0, bad);
	EXPECT_EQ(2 * MiB, dirty_bytes(-1));
	ASSERT_EQ(0, poison(self->dev, NULL, bad, 0, NULL));
	EXPECT_EQ(2 * MiB, spare_stat("retired_bytes"));
	EXPECT_EQ(free0 - 2 * (long long)MiB,
		  node_stat(self->nid, "free_bytes"));
	EXPECT_EQ(0, dirty_bytes(-1));
	/* The worker stopped meanwhile: nothing it zeroed. */
	EXPECT_EQ(worker0, som_stat("zero_worker_bytes"));
	ASSERT_EQ(0, som_sysfs_write("zero_ahead", "1"));
	fill_avoids(_metadata, self->dev, self->nid, bad & ~(2 * MiB - 1));
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

/*
 * A GiB on one 1 GiB entry with room elsewhere (node 0, which the
 * preferred policy allows): the block's other 511 pages move, the rest of
 * the GiB stays where it is, on 2 MiB entries.
 */
TEST_F(poison, gib_entry_moves_the_bad_block_and_keeps_the_rest)
{
	long long free0 = node_stat(0, "free_bytes");
	uint64_t first, before, after;
	size_t len = GiB;
	char *m, *page;
	int fd;

	m = map_spare_mode(_metadata, self->nid, SOM_POLICY_PREFERRED, len,
			   0, &fd);
	ASSERT_NE(NULL, m);
	som_fill(m, 0, len, 4096, 7);
	EXPECT_EQ(som_largest_entry(), som_page_size(self->dev, m));
	EXPECT_EQ(0, node_stat(self->nid, "free_bytes"));
	page = m + 700 * MiB + 9 * 4096;
	first = phys_of(self->dev, m);
	before = phys_of(self->dev, page + 4096);
	EXPECT_TRUE(before >= self->start && before < self->start + GiB);
	ASSERT_EQ(0, poison(self->dev, page, 0, 0, NULL));
	EXPECT_EQ(-1, som_check(m, 0, page - m, 4096, 7));
	EXPECT_EQ(-1, som_check(m, page - m + 4096, len, 4096, 7));
	EXPECT_EQ(SIGBUS, touch(page + 8));
	EXPECT_EQ(BUS_MCEERR_AR, touch_code);
	EXPECT_EQ(page + 8, (char *)touch_addr);
	EXPECT_EQ(12, touch_lsb);
	/* The neighbours went to node 0; the bad block was retired. */
	after = phys_of(self->dev, page + 4096);
	EXPECT_TRUE(after < self->start || after >= self->start + GiB);
	EXPECT_EQ(free0 - 2 * (long long)MiB, node_stat(0, "free_bytes"));
	EXPECT_EQ(2 * MiB, spare_stat("retired_bytes"));
	EXPECT_EQ(0, node_stat(0, "retired_bytes"));
	/* The rest of the GiB did not move. */
	EXPECT_EQ(first, phys_of(self->dev, m));
	EXPECT_EQ(2 * MiB, som_page_size(self->dev, m));
	EXPECT_EQ(4096, som_page_size(self->dev, page + 4096));
	munmap(m, len);
	close(fd);
	EXPECT_EQ(free0, node_stat(0, "free_bytes"));
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

/* The page at @off of two mappings of one file is a hole in both. */
static void file_hole(struct __test_metadata *_metadata, char *a, char *b,
		      size_t off)
{
	char *p[2] = { a + off, b + off };
	int i;

	for (i = 0; i < 2; i++) {
		EXPECT_EQ(SIGBUS, touch(p[i]));
		EXPECT_EQ(BUS_MCEERR_AR, touch_code);
		EXPECT_EQ(p[i], (char *)touch_addr);
		EXPECT_EQ(12, touch_lsb);
	}
}

/*
 * A som file of 1 GiB mapped twice: by a 1 GiB entry, and misaligned, by
 * 4 KiB entries. An error through either is a hole in both; the data
 * around it stays; a punch clears the hole it covers and no other.
 */
TEST_F(poison, som_file_gib_and_4k_entries_get_the_same_holes)
{
	long long free0 = node_stat(0, "free_bytes");
	size_t len = GiB, x = 100 * MiB + 3 * 4096, y = 900 * MiB + 511 * 4096;
	char *a, *b;
	int fd;

	fd = som_file(self->dev, 0, SOM_FILE_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, set_policy(fd, SOM_POLICY_PREFERRED, 1ULL << self->nid,
				0));
	ASSERT_EQ(0, ftruncate(fd, len));
	a = som_map_past(fd, len, GiB, 0);
	ASSERT_NE(MAP_FAILED, a);
	b = som_map_misaligned(fd, len, 12 * 4096);
	ASSERT_NE(MAP_FAILED, b);
	som_fill(a, 0, len, 4096, 7);
	EXPECT_EQ(som_largest_entry(), som_page_size(self->dev, a));
	EXPECT_EQ(-1, som_check(b, 0, len, 4096, 7));
	EXPECT_EQ(4096, som_page_size(self->dev, b));
	/* Through the 1 GiB entry, then through a 4 KiB one. */
	ASSERT_EQ(0, poison(self->dev, a + x, 0, 0, NULL));
	ASSERT_EQ(0, poison(self->dev, b + y, 0, 0, NULL));
	file_hole(_metadata, a, b, x);
	file_hole(_metadata, a, b, y);
	EXPECT_EQ(-1, som_check(a, 0, x, 4096, 7));
	EXPECT_EQ(-1, som_check(b, x + 4096, y, 4096, 7));
	EXPECT_EQ(-1, som_check(a, y + 4096, len, 4096, 7));
	EXPECT_EQ(4 * MiB, spare_stat("retired_bytes"));
	/* A punch over one hole: zeros there, the other still signals. */
	ASSERT_EQ(0, fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			       x, 4096));
	EXPECT_EQ(0, touch(b + x));
	EXPECT_EQ(-1, som_check_zero(a + x, 4096, 8));
	file_hole(_metadata, a, b, y);
	EXPECT_EQ(-1, som_check(b, x + 4096, y, 4096, 7));
	munmap(a, len);
	munmap(b, len);
	close(fd);
	EXPECT_EQ(free0, node_stat(0, "free_bytes"));
	EXPECT_EQ(GiB - 4 * MiB, node_stat(self->nid, "free_bytes"));
	EXPECT_EQ(4 * MiB, spare_stat("retired_bytes"));
}

TEST_F(poison, hole_survives_evacuation_of_its_source)
{
	long long free0 = node_stat(0, "free_bytes");
	size_t len = 8 * MiB;
	char *m, *page;
	int fd;

	/* Preferred, not bound: evacuation may move it to node 0. */
	m = map_spare_mode(_metadata, self->nid, SOM_POLICY_PREFERRED, len,
			   2 * MiB, &fd);
	ASSERT_NE(NULL, m);
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

/*
 * Errors racing with evacuation: the spare source leaves the pool while
 * pages of a mapping on it are declared poisoned. A page whose error came
 * before its block moved is a hole (the mover copies no page the pool has
 * an error recorded for); one whose error came after is intact (its old
 * block took the error, and left with the source). Every other byte is
 * intact either way, and node 0 takes no poisoned block.
 */
struct remover {
	int dev;
	int err;
};

static void *remover_run(void *arg)
{
	struct remover *r = arg;

	r->err = src_remove(r->dev, SPARE);
	return NULL;
}

/*
 * Pages @off[0..@nr) (ascending) of a mapping filled with som_fill(seed
 * @seed, every 64 bytes) each signal as a hole or hold their data; every
 * other page holds its data. Returns how many are holes.
 */
static int holes_or_data(struct __test_metadata *_metadata, char *m,
			 size_t len, const size_t *off, int nr, int seed)
{
	size_t prev = 0;
	int i, holes = 0;

	for (i = 0; i < nr; i++) {
		EXPECT_EQ(-1, som_check(m, prev, off[i], 64, seed));
		if (touch(m + off[i])) {
			EXPECT_EQ(BUS_MCEERR_AR, touch_code);
			EXPECT_EQ(12, touch_lsb);
			holes++;
		} else {
			EXPECT_EQ(-1, som_check(m, off[i], off[i] + 4096, 64,
						seed));
		}
		prev = off[i] + 4096;
	}
	EXPECT_EQ(-1, som_check(m, prev, len, 64, seed));
	return holes;
}

TEST_F(poison, errors_race_with_evacuation)
{
	long long free0 = node_stat(0, "free_bytes");
	long long retired0 = node_stat(0, "retired_bytes");
	struct remover r = { .dev = self->dev };
	size_t len = 256 * MiB, off[16];
	uint64_t phys[16];
	int fd, i, err;
	pthread_t t;
	char *m;

	m = map_spare_mode(_metadata, self->nid, SOM_POLICY_PREFERRED, len,
			   2 * MiB, &fd);
	ASSERT_NE(NULL, m);
	som_fill(m, 0, len, 64, 7);
	for (i = 0; i < 16; i++) {
		off[i] = i * 16 * MiB + (i * 37 % 512) * 4096;
		phys[i] = phys_of(self->dev, m + off[i]);
		ASSERT_NE(0, phys[i]);
	}
	ASSERT_EQ(0, pthread_create(&t, NULL, remover_run, &r));
	for (i = 0; i < 16; i++) {
		err = poison(self->dev, NULL, phys[i], 0, NULL);
		/* -EINVAL: the source had left the pool. */
		EXPECT_TRUE(!err || err == -EINVAL);
	}
	pthread_join(t, NULL);
	ASSERT_EQ(0, r.err);
	self->nid = -1;
	TH_LOG("%d of 16 poisoned pages became holes",
	       holes_or_data(_metadata, m, len, off, 16, 7));
	EXPECT_EQ(retired0, node_stat(0, "retired_bytes"));
	EXPECT_EQ(free0 - (long long)len, node_stat(0, "free_bytes"));
	munmap(m, len);
	close(fd);
	EXPECT_EQ(free0, node_stat(0, "free_bytes"));
	EXPECT_EQ(retired0, node_stat(0, "retired_bytes"));
}

/*
 * The same memory added again is the same memory, errors and all: a range
 * that left the pool with a poisoned page comes back with that page's
 * block retired before anyone can take it, until an administrator says
 * the memory was replaced (SOM_POISON_FORGET).
 */
TEST_F(poison, poison_is_remembered_when_the_range_comes_back)
{
	long long outside0 = som_stat("poisoned_pages_outside");
	uint64_t phys = free_page_phys(_metadata, self->dev, self->nid, 9);
	char cmd[128];

	ASSERT_NE(0, phys);
	ASSERT_EQ(0, poison(self->dev, NULL, phys, 0, NULL));
	EXPECT_EQ(2 * MiB, spare_stat("retired_bytes"));
	/* Only for memory outside the pool. */
	EXPECT_EQ(-EBUSY, poison_range(self->dev, self->start, GiB,
				       SOM_POISON_FORGET));
	snprintf(cmd, sizeof(cmd), "somctl poison --forget 1G@%#llx 2>/dev/null",
		 (unsigned long long)self->start);
	EXPECT_EQ(1, WEXITSTATUS(system(cmd)));
	ASSERT_EQ(0, src_remove(self->dev, SPARE));
	self->nid = -1;
	EXPECT_EQ(outside0 + 1, som_stat("poisoned_pages_outside"));

	/* Back: retired at once, with its count, and never handed out. */
	ASSERT_EQ(0, add_spare_gib(self->dev, SPARE));
	self->nid = atoi(src_attr(SPARE, "nodes"));
	ASSERT_LT(0, self->nid);
	EXPECT_EQ(outside0, som_stat("poisoned_pages_outside"));
	EXPECT_EQ(1, spare_stat("poison_events"));
	EXPECT_EQ(1, spare_stat("poisoned_pages"));
	EXPECT_EQ(2 * MiB, spare_stat("retired_bytes"));
	EXPECT_EQ(GiB - 2 * MiB, node_stat(self->nid, "free_bytes"));
	EXPECT_EQ(0, wait_zeroed(self->nid));
	fill_avoids(_metadata, self->dev, self->nid, phys & ~(2 * MiB - 1));

	/* Forgotten: the next time it comes back whole. */
	ASSERT_EQ(0, src_remove(self->dev, SPARE));
	self->nid = -1;
	EXPECT_EQ(-EINVAL, poison_range(self->dev, self->start, 0,
					SOM_POISON_FORGET));
	EXPECT_EQ(-EINVAL, poison_range(self->dev, self->start + 1, GiB,
					SOM_POISON_FORGET));
	EXPECT_EQ(-EINVAL, poison_range(self->dev, self->start, GiB,
					SOM_POISON_FORGET |
					SOM_POISON_LOOKUP));
	EXPECT_EQ(-EINVAL, poison_range(self->dev, -4096ULL, 8192,
					SOM_POISON_FORGET));
	/* somctl: not SIZE@START (2); done (0). */
	EXPECT_EQ(2, WEXITSTATUS(system("somctl poison --forget 1G 2>/dev/null")));
	snprintf(cmd, sizeof(cmd), "somctl poison --forget 1G@%#llx >/dev/null",
		 (unsigned long long)self->start);
	EXPECT_EQ(0, WEXITSTATUS(system(cmd)));
	EXPECT_EQ(outside0, som_stat("poisoned_pages_outside"));
	ASSERT_EQ(0, add_spare_gib(self->dev, SPARE));
	self->nid = atoi(src_attr(SPARE, "nodes"));
	EXPECT_EQ(0, spare_stat("poison_events"));
	EXPECT_EQ(0, spare_stat("retired_bytes"));
	EXPECT_EQ(GiB, node_stat(self->nid, "free_bytes"));
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

/*
 * Errors racing with compaction: a GiB of a som file that faults had to
 * map in 2 MiB pieces (node 0 fragmented, one block of the spare source
 * held) is put in one chunk while random pages of the spare source (the
 * file's blocks, blocks compaction copies into) are declared poisoned.
 * Three rounds, each with a new file. An error in a block of the chunk
 * being assembled costs at most two pages: the one whose data was on the
 * bad page when it was recorded (not copied: a hole), and the one whose
 * data the assembly put there after (a hole too, som_mover_poison_chunk()).
 * So at most twice as many pages as errors signal, everything else is
 * intact, each poisoned block is retired exactly once, and node 0 takes
 * none.
 */
static void *compact_run(void *arg)
{
	*(int *)arg = som_sysfs_write("migration/compact", "1");
	return NULL;
}

TEST_F(poison, errors_race_with_compaction)
{
	long long free0 = node_stat(0, "free_bytes");
	long long retired0 = node_stat(0, "retired_bytes");
	long long rate = som_stat("migration/compact_rate");
	long long assembled = som_stat("migration/gib_assembled");
	uint64_t seed = 7, phys, block, blocks[12];
	int round, frag, hold, fd, i, err, nr = 0, holes, errors;
	char *m, *h, buf[32];
	size_t off;
	pthread_t t;

	ASSERT_EQ(0, som_sysfs_write("migration/compact_rate", "0"));
	for (round = 0; round < 3; round++) {
		/* Again each round: compaction may have freed a chunk whole. */
		frag = fragment_node0(self->dev);
		ASSERT_LE(0, frag);
		h = map_spare(_metadata, self->nid, 2 * MiB, 0, &hold);
		ASSERT_NE(NULL, h);
		h[0] = 1;
		fd = som_file(self->dev, 0, SOM_FILE_CLOEXEC);
		ASSERT_LE(0, fd);
		ASSERT_EQ(0, set_policy(fd, SOM_POLICY_PREFERRED,
					1ULL << self->nid, 0));
		ASSERT_EQ(0, ftruncate(fd, GiB));
		m = som_map_past(fd, GiB, GiB, 0);
		ASSERT_NE(MAP_FAILED, m);
		som_fill(m, 0, GiB, 64, 11 + round);
		EXPECT_EQ(2 * MiB, som_page_size(self->dev, m));
		munmap(h, 2 * MiB);
		close(hold);

		ASSERT_EQ(0, pthread_create(&t, NULL, compact_run, &err));
		for (errors = 0; errors < 4; errors++) {
			phys = self->start +
			       (som_rand(&seed) % (GiB / 4096)) * 4096;
			EXPECT_EQ(0, poison(self->dev, NULL, phys, 0, NULL));
			block = phys & ~(2 * MiB - 1);
			for (i = 0; i < nr && blocks[i] != block; i++)
				;
			if (i == nr)
				blocks[nr++] = block;
		}
		pthread_join(t, NULL);
		EXPECT_EQ(0, err);

		holes = 0;
		for (off = 0; off < GiB; off += 4096) {
			if (touch(m + off)) {
				EXPECT_EQ(BUS_MCEERR_AR, touch_code);
				holes++;
				continue;
			}
			EXPECT_EQ(-1, som_check(m, off, off + 4096, 64,
						11 + round));
		}
		TH_LOG("round %d: %d holes", round, holes);
		EXPECT_GE(2 * errors, holes);
		munmap(m, GiB);
		close(fd);
		close(frag);
	}
	TH_LOG("%lld GiB assembled in three rounds; %d blocks poisoned",
	       som_stat("migration/gib_assembled") - assembled, nr);
	snprintf(buf, sizeof(buf), "%lld", rate);
	EXPECT_EQ(0, som_sysfs_write("migration/compact_rate", buf));
	EXPECT_EQ(nr * 2 * (long long)MiB, spare_stat("retired_bytes"));
	EXPECT_EQ(GiB - nr * 2 * (long long)MiB,
		  node_stat(self->nid, "free_bytes"));
	EXPECT_EQ(free0, node_stat(0, "free_bytes"));
	EXPECT_EQ(retired0, node_stat(0, "retired_bytes"));
}

TEST_HARNESS_MAIN
