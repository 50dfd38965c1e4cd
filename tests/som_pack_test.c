// SPDX-License-Identifier: GPL-2.0
/*
 * Packing selftests (kernel/pack.c, Documentation/packing.md): a 2 MiB
 * index of a som file that punches have left at most pack_threshold pages
 * of data gives its block back, its pages moved onto pack blocks and
 * mapped by 4 KiB entries; it reads the same through every path (its
 * mapping, a new mapping, /proc/PID/mem), takes new pages, loses punched
 * ones, gets a block again once it fills up, and gives everything back
 * at truncate and close. Pack blocks move with a policy change and take
 * a memory error as any block does, without the pages of the sparse
 * indices that use them reading stale data.
 *
 * Needs som.ko loaded with a pool of at least 1 GiB, and root; the
 * policy and memory-error cases need SOM_SPARE_RANGES (1 GiB on a node
 * other than 0), as som_poison_test does. Every case leaves packing off,
 * as it is by default, and the pool as it found it. With packing on, a
 * background pass may run at any time after a punch: each case reads
 * its baselines before punching, and its figures after a pass of its own
 * (packing/run), which leaves nothing marked before it started undone.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/falloc.h>
#include <pthread.h>
#include <sys/stat.h>

#include "kselftest_harness.h"
#include "som_util.h"
#include "som_pool_util.h"
#include "som_poison_util.h"
#include "som_writers.h"

#define PAGES	512	/* 4 KiB pages in 2 MiB */

static long long pack_stat(const char *name)
{
	char path[64];

	snprintf(path, sizeof(path), "packing/%s", name);
	return som_stat(path);
}

static int pack_run(void)
{
	return som_sysfs_write("packing/run", "1");
}

static int punch(int fd, size_t off, size_t len)
{
	return fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, off,
			 len) ? -errno : 0;
}

static long long st_bytes(int fd)
{
	struct stat st;

	return fstat(fd, &st) ? -errno : (long long)st.st_blocks * 512;
}

/* Punch pages 1, 2 and 3 of every 4 in 2 MiB blocks [@first, @end). */
static int punch_three_of_four(int fd, int first, int end)
{
	size_t off;
	int err;

	for (off = first * 2 * MiB; off < end * 2 * MiB; off += 4 * 4096) {
		err = punch(fd, off + 4096, 3 * 4096);
		if (err)
			return err;
	}
	return 0;
}

/*
 * Does the page at @off of @p read zeros? Read through /proc/self/mem
 * (@mem), the debugger's path: a read fault on a page of a sparse index
 * that reads zeros would take a slot for it, as a read fault on a hole
 * takes a block.
 */
static bool zero_page(int mem, const char *p, size_t off)
{
	char buf[4096];

	return pread(mem, buf, 4096, (uintptr_t)(p + off)) == 4096 &&
	       som_check_zero(buf, 4096, 8) == -1;
}

/*
 * Blocks [@first, @end) of @p, but the page at @skip: every fourth page
 * holds som_fill()'s pattern (seed @seed, every 8 bytes), the others read
 * zeros (through @mem). Returns -1 if so, else the offset of the first
 * page that does not.
 */
static long long check_one_in_four_but(const char *p, int mem, int first,
				       int end, int seed, size_t skip)
{
	size_t off = first * 2 * MiB;

	for (; off < end * 2 * MiB; off += 4096) {
		if (off == skip)
			continue;
		if ((off / 4096) % 4 == 0 ?
		    som_check(p, off, off + 4096, 8, seed) != -1 :
		    !zero_page(mem, p, off))
			return off;
	}
	return -1;
}

static long long check_one_in_four(const char *p, int mem, int first,
				   int end, int seed)
{
	return check_one_in_four_but(p, mem, first, end, seed, SIZE_MAX);
}

/* A som file of @len mapped at a GiB boundary, filled with @seed. */
static char *filled_file(struct __test_metadata *_metadata, int dev,
			 size_t len, int seed, int *fdp)
{
	char *p;

	*fdp = som_file(dev, len, SOM_FILE_CLOEXEC);
	EXPECT_LE(0, *fdp);
	if (*fdp < 0)
		return NULL;
	p = som_map_past(*fdp, len, GiB, 0);
	EXPECT_NE(MAP_FAILED, p);
	if (p == MAP_FAILED)
		return NULL;
	som_fill(p, 0, len, 8, seed);
	return p;
}

FIXTURE(pack) {
	int dev;
	long long free_start;
	long long sparse, blocks, pages;
};

FIXTURE_SETUP(pack)
{
	SOM_OPEN_DEV(self->dev);
	self->free_start = som_stat("free_bytes");
	ASSERT_LE((long long)GiB, self->free_start)
		TH_LOG("these tests need a pool of at least 1 GiB");
	/* Off, even after a case that died with it on. */
	ASSERT_EQ(0, som_sysfs_write("packing/threshold", "0"));
	self->sparse = pack_stat("sparse_indices");
	self->blocks = pack_stat("pack_blocks");
	self->pages = pack_stat("pack_pages");
	ASSERT_EQ(0, som_sysfs_write("packing/threshold", "256"));
}

FIXTURE_TEARDOWN(pack)
{
	if (self->dev < 0)
		return;
	EXPECT_EQ(0, som_sysfs_write("packing/threshold", "0"));
	close(self->dev);
	EXPECT_EQ(self->sparse, pack_stat("sparse_indices"));
	EXPECT_EQ(self->blocks, pack_stat("pack_blocks"));
	EXPECT_EQ(self->pages, pack_stat("pack_pages"));
	EXPECT_EQ(self->free_start, som_stat("free_bytes"));
	EXPECT_EQ(0, som_stat("reserved_bytes"));
}

/*
 * Three blocks punched to a quarter give back two blocks net (one pack
 * block holds their 384 pages); the untouched fourth keeps its 2 MiB
 * entry. The data reads the same, new pages take slots, punched pages
 * give them back, and truncation frees the rest.
 */
TEST_F(pack, punched_blocks_are_packed_and_read_the_same)
{
	long long packed, free, meta, slots;
	size_t len = 8 * MiB;
	char buf[4096];
	int fd, mem;
	char *p, *q;

	mem = open("/proc/self/mem", O_RDWR);
	ASSERT_LE(0, mem);
	p = filled_file(_metadata, self->dev, len, 3, &fd);
	ASSERT_NE(NULL, p);
	EXPECT_EQ(2 * MiB, som_page_size(self->dev, p));
	/* Before the punches: the background pass may pack after them. */
	packed = pack_stat("packed");
	free = som_stat("free_bytes");
	meta = som_stat("metadata/pack_bytes");
	ASSERT_EQ(0, punch_three_of_four(fd, 0, 3));
	EXPECT_EQ(-1, check_one_in_four(p, mem, 0, 3, 3));
	ASSERT_EQ(0, pack_run());
	slots = self->pages + 3 * PAGES / 4;
	EXPECT_EQ(3, pack_stat("packed") - packed);
	EXPECT_EQ(self->sparse + 3, pack_stat("sparse_indices"));
	EXPECT_EQ(self->blocks + 1, pack_stat("pack_blocks"));
	EXPECT_EQ(slots, pack_stat("pack_pages"));
	EXPECT_EQ(free + 4 * (long long)MiB, som_stat("free_bytes"));
	EXPECT_EQ(4 * (long long)MiB, st_bytes(fd));
	/* Three maps of 2 KiB and a reverse map of 4 KiB, at least. */
	EXPECT_LE(meta + 3 * 2048 + 4096, som_stat("metadata/pack_bytes"));

	EXPECT_EQ(-1, check_one_in_four(p, mem, 0, 3, 3));
	EXPECT_EQ(-1, som_check(p, 6 * MiB, len, 8, 3));
	EXPECT_EQ(slots, pack_stat("pack_pages"));
	EXPECT_EQ(4096, som_page_size(self->dev, p));
	EXPECT_EQ(4096, som_page_size(self->dev, p + 2 * MiB + 4 * 4096));
	EXPECT_EQ(2 * MiB, som_page_size(self->dev, p + 6 * MiB));

	/* A page that read zeros takes a slot when written, or read. */
	p[4096 + 5] = 42;
	EXPECT_EQ(42, p[4096 + 5]);
	EXPECT_EQ(++slots, pack_stat("pack_pages"));
	EXPECT_EQ(-1, som_check_zero(p + 2 * 4096, 4096, 8));
	EXPECT_EQ(++slots, pack_stat("pack_pages"));

	/* A debugger reads and writes the same pages. */
	EXPECT_EQ(4096, pread(mem, buf, 4096, (uintptr_t)(p + 2 * MiB)));
	EXPECT_EQ(0, memcmp(buf, p + 2 * MiB, 4096));
	EXPECT_TRUE(zero_page(mem, p, 6 * 4096));
	EXPECT_EQ(slots, pack_stat("pack_pages"));
	EXPECT_EQ(1, pwrite(mem, "x", 1, (uintptr_t)(p + 3 * 4096 + 9)));
	EXPECT_EQ('x', p[3 * 4096 + 9]);
	EXPECT_EQ(++slots, pack_stat("pack_pages"));

	/* A new mapping sees what the old one wrote. */
	q = som_map_past(fd, len, GiB, 0);
	ASSERT_NE(MAP_FAILED, q);
	EXPECT_EQ(42, q[4096 + 5]);
	EXPECT_EQ('x', q[3 * 4096 + 9]);
	EXPECT_EQ(-1, check_one_in_four(q, mem, 1, 3, 3));
	munmap(q, len);

	/* Punching a whole sparse index frees its slots. */
	ASSERT_EQ(0, punch(fd, 2 * MiB, 2 * MiB));
	slots -= PAGES / 4;
	EXPECT_EQ(self->sparse + 2, pack_stat("sparse_indices"));
	EXPECT_EQ(slots, pack_stat("pack_pages"));
	EXPECT_TRUE(zero_page(mem, p, 2 * MiB));
	/* And a punched page its slot. */
	ASSERT_EQ(0, punch(fd, 0, 4096));
	EXPECT_EQ(--slots, pack_stat("pack_pages"));
	EXPECT_TRUE(zero_page(mem, p, 0));
	EXPECT_EQ(42, p[4096 + 5]);
	EXPECT_EQ(-1, check_one_in_four(p, mem, 2, 3, 3));
	/* Part of a page is zeroed in its slot, which it keeps. */
	ASSERT_EQ(0, punch(fd, 4 * MiB + 4 * 4096 + 104, 192));
	EXPECT_EQ(slots, pack_stat("pack_pages"));
	EXPECT_EQ(-1, som_check_zero(p + 4 * MiB + 4 * 4096 + 104, 192, 8));
	EXPECT_EQ(-1, som_check(p, 4 * MiB + 4 * 4096,
				4 * MiB + 4 * 4096 + 104, 8, 3));
	EXPECT_EQ(-1, som_check(p, 4 * MiB + 4 * 4096 + 296,
				4 * MiB + 5 * 4096, 8, 3));

	/* Truncation gives back every slot and pack block. */
	ASSERT_EQ(0, ftruncate(fd, 0));
	EXPECT_EQ(self->sparse, pack_stat("sparse_indices"));
	EXPECT_EQ(self->blocks, pack_stat("pack_blocks"));
	EXPECT_EQ(self->pages, pack_stat("pack_pages"));
	EXPECT_EQ(0, st_bytes(fd));
	munmap(p, len);
	close(fd);
	close(mem);
}

/*
 * Zeros that were never punched (memory set up ahead, a fresh heap) are
 * not packed: such an index keeps its 2 MiB entry. Nor is an index with
 * more data than the threshold, or any index while packing is off.
 */
TEST_F(pack, only_punched_and_sparse_indices_are_packed)
{
	size_t len = 6 * MiB, off;
	long long packed;
	char *p;
	int fd;

	fd = som_file(self->dev, len, SOM_FILE_CLOEXEC);
	ASSERT_LE(0, fd);
	p = som_map_past(fd, len, GiB, 0);
	ASSERT_NE(MAP_FAILED, p);
	for (off = 0; off < len; off += 2 * MiB)
		p[off] = 1;
	/* Block 1: half its pages punched, one page more kept. */
	for (off = 2 * MiB; off < 4 * MiB; off += 4096)
		p[off] = 2;
	for (off = 2 * MiB + 4096; off < 4 * MiB - 8 * 4096; off += 2 * 4096)
		ASSERT_EQ(0, punch(fd, off, 4096));
	packed = pack_stat("packed");
	ASSERT_EQ(0, pack_run());
	EXPECT_EQ(packed, pack_stat("packed"));
	for (off = 0; off < len; off += 2 * MiB)
		EXPECT_EQ(2 * MiB, som_page_size(self->dev, p + off));

	/* Off: block 2 punched to one page stays whole. */
	ASSERT_EQ(0, som_sysfs_write("packing/threshold", "0"));
	ASSERT_EQ(0, punch(fd, 4 * MiB + 4096, 2 * MiB - 4096));
	ASSERT_EQ(0, pack_run());
	EXPECT_EQ(packed, pack_stat("packed"));
	EXPECT_EQ(1, p[4 * MiB]);
	EXPECT_EQ(-EINVAL, som_sysfs_write("packing/threshold", "385"));
	EXPECT_EQ(0, pack_stat("threshold"));
	munmap(p, len);
	close(fd);
}

/*
 * A sparse index written whole again gets a block of its own at the next
 * pass; mapped anew, it is one 2 MiB entry.
 */
TEST_F(pack, sparse_index_that_fills_up_gets_a_block_again)
{
	long long densified, free;
	size_t len = 2 * MiB;
	char *p;
	int fd;

	p = filled_file(_metadata, self->dev, len, 5, &fd);
	ASSERT_NE(NULL, p);
	ASSERT_EQ(0, punch_three_of_four(fd, 0, 1));
	ASSERT_EQ(0, pack_run());
	ASSERT_EQ(self->sparse + 1, pack_stat("sparse_indices"));
	free = som_stat("free_bytes");
	densified = pack_stat("densified");
	/* 384 slots more: one pack block, full (the background may densify). */
	som_fill(p, 0, len, 8, 6);
	ASSERT_EQ(0, pack_run());
	EXPECT_EQ(1, pack_stat("densified") - densified);
	EXPECT_EQ(self->sparse, pack_stat("sparse_indices"));
	EXPECT_EQ(self->blocks, pack_stat("pack_blocks"));
	EXPECT_EQ(free, som_stat("free_bytes"));
	EXPECT_EQ(-1, som_check(p, 0, len, 8, 6));
	munmap(p, len);
	p = som_map_past(fd, len, GiB, 0);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(-1, som_check(p, 0, len, 8, 6));
	EXPECT_EQ(2 * MiB, som_page_size(self->dev, p));
	munmap(p, len);
	close(fd);
}

/*
 * Even pages of blocks [@first, @end) of @p but those in [@zero,
 * @zero_end) hold som_fill()'s pattern (seed @seed), the others read
 * zeros (through @mem): -1, or the offset of the first page that does
 * not.
 */
static long long check_one_in_two(const char *p, int mem, int first,
				  int end, int seed, size_t zero,
				  size_t zero_end)
{
	size_t off = first * 2 * MiB;

	for (; off < end * 2 * MiB; off += 4096)
		if ((off / 4096) % 2 == 0 && (off < zero || off >= zero_end) ?
		    som_check(p, off, off + 4096, 8, seed) != -1 :
		    !zero_page(mem, p, off))
			return off;
	return -1;
}

/*
 * Three blocks punched to every other page take a pack block and a half
 * (256 pages each). Once the first of them is punched whole and the
 * third's first quarter too, the third's 192 pages move into the first
 * pack block's 256 free slots, and the emptied pack block goes back to
 * the pool. The moved pages read the same through the old mapping (its
 * 4 KiB entries were zapped), a new one and /proc/self/mem, and a write
 * through the old mapping afterwards shows in a new one.
 */
TEST_F(pack, part_used_pack_blocks_are_compacted)
{
	long long compacted, free;
	size_t off, len = 6 * MiB;
	int fd, mem;
	char *p, *q;

	mem = open("/proc/self/mem", O_RDWR);
	ASSERT_LE(0, mem);
	p = filled_file(_metadata, self->dev, len, 7, &fd);
	ASSERT_NE(NULL, p);
	compacted = pack_stat("compacted");
	for (off = 0; off < len; off += 2 * 4096)
		ASSERT_EQ(0, punch(fd, off + 4096, 4096));
	ASSERT_EQ(0, pack_run());
	EXPECT_EQ(self->sparse + 3, pack_stat("sparse_indices"));
	EXPECT_EQ(self->blocks + 2, pack_stat("pack_blocks"));
	EXPECT_EQ(self->pages + 3 * PAGES / 2, pack_stat("pack_pages"));
	/* The third block's pages mapped by 4 KiB entries. */
	EXPECT_EQ(-1, check_one_in_two(p, mem, 0, 3, 7, 0, 0));
	EXPECT_EQ(4096, som_page_size(self->dev, p + 5 * MiB));
	free = som_stat("free_bytes");

	ASSERT_EQ(0, punch(fd, 0, 2 * MiB));
	ASSERT_EQ(0, punch(fd, 4 * MiB, MiB / 2));
	ASSERT_EQ(0, pack_run());
	EXPECT_EQ(1, pack_stat("compacted") - compacted);
	EXPECT_EQ(self->sparse + 2, pack_stat("sparse_indices"));
	EXPECT_EQ(self->blocks + 1, pack_stat("pack_blocks"));
	EXPECT_EQ(self->pages + PAGES / 2 + PAGES * 3 / 8,
		  pack_stat("pack_pages"));
	EXPECT_EQ(free + 2 * (long long)MiB, som_stat("free_bytes"));
	EXPECT_TRUE(zero_page(mem, p, 0));
	EXPECT_EQ(-1, check_one_in_two(p, mem, 1, 3, 7, 4 * MiB,
				       4 * MiB + MiB / 2));

	q = som_map_past(fd, len, GiB, 0);
	ASSERT_NE(MAP_FAILED, q);
	EXPECT_EQ(-1, check_one_in_two(q, mem, 1, 3, 7, 4 * MiB,
				       4 * MiB + MiB / 2));
	/* A stale entry to the emptied block would hide this write. */
	p[5 * MiB + 9] = 'y';
	EXPECT_EQ('y', q[5 * MiB + 9]);
	munmap(q, len);

	/* One pack block cannot be emptied into none. */
	ASSERT_EQ(0, pack_run());
	EXPECT_EQ(1, pack_stat("compacted") - compacted);
	munmap(p, len);
	close(fd);
	close(mem);
}

struct churn {
	char *p;
	int fd;
	size_t len;
	volatile int *stop;
	long errors, rounds, passes, pass_errors;
};

/* Passes, one after another, beside the rest. */
static void *churn_packer(void *arg)
{
	struct churn *c = arg;

	while (!*c->stop) {
		if (pack_run())
			c->pass_errors++;
		c->passes++;
	}
	return NULL;
}

/*
 * Writers of the kept pages (every fourth): check the word written last
 * round, write the next.
 */
static void *churn_writer(void *arg)
{
	struct churn *c = arg;
	volatile uint64_t *w;
	size_t off;

	while (!*c->stop) {
		for (off = 0; off < c->len; off += 4 * 4096) {
			w = (volatile uint64_t *)(c->p + off + 16);
			if (c->rounds && *w != writer_word(1, off, c->rounds - 1))
				c->errors++;
			*w = writer_word(1, off, c->rounds);
		}
		c->rounds++;
	}
	return NULL;
}

/*
 * Packing and densifying, in a thread of their own, race with a writer
 * of the kept pages, with faults that take slots, punches that free them
 * (whole pages and parts) and debugger reads: no write is lost, and
 * everything comes back at close.
 */
TEST_F(pack, packing_races_with_writers_faults_and_punches)
{
	int seconds = som_env_seconds("SOM_RACE_SECONDS", 10, 600);
	size_t len = 16 * MiB, off, blk;
	struct churn c = { .len = len };
	pthread_t thread, packer;
	volatile int stop = 0;
	uint64_t seed = 77;
	char buf[4096];
	double end;
	int mem;

	c.p = filled_file(_metadata, self->dev, len, 9, &c.fd);
	ASSERT_NE(NULL, c.p);
	c.stop = &stop;
	ASSERT_EQ(0, punch_three_of_four(c.fd, 0, len / (2 * MiB)));
	mem = open("/proc/self/mem", O_RDONLY);
	ASSERT_LE(0, mem);
	ASSERT_EQ(0, pthread_create(&thread, NULL, churn_writer, &c));
	ASSERT_EQ(0, pthread_create(&packer, NULL, churn_packer, &c));
	end = som_seconds() + seconds;
	while (som_seconds() < end) {
		blk = som_rand(&seed) % (len / (2 * MiB));
		switch (som_rand(&seed) % 5) {
		case 0:	/* fill the punched pages of a block: slots */
			for (off = 4096; off < 2 * MiB; off += 4 * 4096)
				c.p[blk * 2 * MiB + off] = 1;
			break;
		case 1:	/* punch them again */
			EXPECT_EQ(0, punch_three_of_four(c.fd, blk, blk + 1));
			break;
		case 2:	/* part of a punched page, through its slot if any */
			EXPECT_EQ(0, punch(c.fd, blk * 2 * MiB + 2 * 4096 + 64,
					   256));
			break;
		case 3:	/* a debugger reads a kept page and a punched one */
			EXPECT_EQ(4096, pread(mem, buf, 4096,
					      (uintptr_t)(c.p + blk * 2 * MiB)));
			EXPECT_EQ(4096, pread(mem, buf, 4096,
					      (uintptr_t)(c.p + blk * 2 * MiB +
							  4096)));
			break;
		default:
			for (off = 4096; off < 2 * MiB; off += 4096)
				if ((off / 4096) % 4)
					c.p[blk * 2 * MiB + off] = 2;
			break;
		}
	}
	stop = 1;
	pthread_join(thread, NULL);
	pthread_join(packer, NULL);
	close(mem);
	EXPECT_EQ(0, c.errors);
	EXPECT_EQ(0, c.pass_errors);
	EXPECT_LT(0, c.rounds);
	EXPECT_LT(0, c.passes);
	for (off = 0; c.rounds && off < len; off += 4 * 4096)
		EXPECT_EQ(writer_word(1, off, c.rounds - 1),
			  *(uint64_t *)(c.p + off + 16));
	TH_LOG("%ld passes, %ld writer rounds, %lld packed, %lld densified",
	       c.passes, c.rounds, pack_stat("packed"), pack_stat("densified"));
	munmap(c.p, len);
	close(c.fd);
}

/*
 * In the memory-error fixture (som_poison_util.h: a spare source bound
 * to, removed at the end with the blocks an error retired), packing on:
 * a som file of @len there, mapped and filled with @seed.
 */
static char *spare_file(struct __test_metadata *_metadata, int dev, int nid,
			size_t len, int seed, int *fdp)
{
	char *p;

	EXPECT_EQ(0, som_sysfs_write("packing/threshold", "256"));
	*fdp = som_file(dev, 0, SOM_FILE_CLOEXEC);
	EXPECT_LE(0, *fdp);
	EXPECT_EQ(0, set_policy(*fdp, SOM_POLICY_BIND, 1ULL << nid, 0));
	EXPECT_EQ(0, ftruncate(*fdp, len));
	p = som_map_past(*fdp, len, GiB, 0);
	EXPECT_NE(MAP_FAILED, p);
	if (p == MAP_FAILED)
		return NULL;
	som_fill(p, 0, len, 8, seed);
	return p;
}

/* A spare_file() of 4 MiB, both blocks punched to one page in four, packed. */
static char *packed_spare_file(struct __test_metadata *_metadata, int dev,
			       int nid, int seed, int *fdp)
{
	char *p = spare_file(_metadata, dev, nid, 4 * MiB, seed, fdp);

	if (!p)
		return NULL;
	EXPECT_EQ(0, punch_three_of_four(*fdp, 0, 2));
	EXPECT_EQ(0, pack_run());
	return p;
}

/*
 * A policy change moves pack blocks too. The sparse pages' entries must
 * go with the old blocks: a write through the old mapping afterwards
 * shows in a new mapping and through /proc/PID/mem.
 */
TEST_F(poison, pack_blocks_move_with_a_policy_change)
{
	struct som_mapping m;
	size_t len = 4 * MiB;
	char *p, *q;
	int fd, mem;

	mem = open("/proc/self/mem", O_RDONLY);
	ASSERT_LE(0, mem);
	p = packed_spare_file(_metadata, self->dev, self->nid, 11, &fd);
	ASSERT_NE(NULL, p);
	EXPECT_EQ(-1, som_check(p, 0, 4096, 8, 11));
	EXPECT_EQ(4096, som_page_size(self->dev, p));
	ASSERT_EQ(0, placement(fd, p, &m));
	EXPECT_EQ(self->nid, m.node);
	/* Every kept page mapped from the old pack block. */
	EXPECT_EQ(-1, check_one_in_four(p, mem, 0, 2, 11));

	ASSERT_EQ(0, set_policy(fd, SOM_POLICY_BIND, 1, 0));
	ASSERT_EQ(0, placement(fd, p, &m));
	EXPECT_EQ(0, m.node);
	ASSERT_EQ(0, placement(fd, p + 2 * MiB + 4 * 4096, &m));
	EXPECT_EQ(0, m.node);
	EXPECT_EQ(-1, check_one_in_four(p, mem, 0, 2, 11));
	p[8 * 4096 + 1] = 77;
	q = som_map_past(fd, len, GiB, 0);
	ASSERT_NE(MAP_FAILED, q);
	EXPECT_EQ(77, q[8 * 4096 + 1]);
	q[12 * 4096 + 1] = 78;
	EXPECT_EQ(78, p[12 * 4096 + 1]);
	munmap(q, len);
	munmap(p, len);
	close(fd);
	close(mem);
	EXPECT_EQ(0, som_sysfs_write("packing/threshold", "0"));
}

/*
 * An error in a pack block costs the sparse page that uses the slot, and
 * only it: the other pages of the pack block move to a healthy block
 * (their entries zapped through the reverse map) and read the same. A
 * punch over the page clears it.
 */
TEST_F(poison, error_in_a_pack_block_is_a_hole_of_its_page_only)
{
	size_t len = 4 * MiB;
	char *p, *page;
	int fd, mem;

	mem = open("/proc/self/mem", O_RDONLY);
	ASSERT_LE(0, mem);
	p = packed_spare_file(_metadata, self->dev, self->nid, 12, &fd);
	ASSERT_NE(NULL, p);
	page = p + 2 * MiB + 16 * 4096;
	EXPECT_EQ(-1, check_one_in_four(p, mem, 0, 2, 12));
	EXPECT_EQ(4096, som_page_size(self->dev, page));
	ASSERT_EQ(0, poison(self->dev, page, 0, 0, NULL));
	EXPECT_EQ(SIGBUS, touch(page + 100));
	EXPECT_EQ(BUS_MCEERR_AR, touch_code);
	EXPECT_EQ(page + 100, (char *)touch_addr);
	EXPECT_EQ(-EHWPOISON, poison(self->dev, page, 0, SOM_POISON_LOOKUP,
				     NULL));
	EXPECT_EQ(-1, check_one_in_four(p, mem, 0, 1, 12));
	EXPECT_EQ(-1, check_one_in_four_but(p, mem, 1, 2, 12, page - p));
	EXPECT_EQ(2 * MiB, spare_stat("retired_bytes"));

	ASSERT_EQ(0, punch(fd, page - p, 4096));
	EXPECT_EQ(0, touch(page));
	EXPECT_EQ(-1, som_check_zero(page, 4096, 8));
	page[0] = 5;
	EXPECT_EQ(5, page[0]);
	munmap(p, len);
	close(fd);
	close(mem);
	EXPECT_EQ(0, som_sysfs_write("packing/threshold", "0"));
}

#define FEI	"/sys/kernel/debug/fail_function/"

/* fail_function: the @space-th call of @func fails with -@err. */
static int fei_arm(const char *func, int err, int space)
{
	char path[128], val[32];

	snprintf(path, sizeof(path), FEI "%s/retval", func);
	snprintf(val, sizeof(val), "%#lx", (unsigned long)-err);
	if (som_write_file(FEI "inject", "\n") ||
	    som_write_file(FEI "inject", func) ||
	    som_write_file(path, val) ||
	    som_write_file(FEI "interval", "1") ||
	    som_write_file(FEI "verbose", "0") ||
	    som_write_file(FEI "probability", "100"))
		return -1;
	snprintf(val, sizeof(val), "%d", space);
	return som_write_file(FEI "space", val) ||
	       som_write_file(FEI "times", "1") ? -1 : 0;
}

static void fei_disarm(void)
{
	som_write_file(FEI "inject", "\n");
	som_write_file(FEI "probability", "0");
	som_write_file(FEI "space", "0");
	som_write_file(FEI "times", "1");
}

/*
 * A compaction whose copy meets a memory error (injected: QEMU cannot
 * make a kernel read consume poison) stops there: that page is a hole of
 * its pack block, every other page reads the same, and the block it was
 * emptying keeps its free slots for the pages that take one next. Before
 * the fix the block's free slots stayed hidden: faults took new pack
 * blocks, and each pass after it moved the other, fuller pack block into
 * a new one, 16 times over, for ever.
 */
TEST_F(poison, compaction_that_meets_an_error_stops_and_keeps_its_room)
{
	long long blocks, compacted, pages;
	size_t off, len = 6 * MiB;
	int fd, mem, holes = 0, bad = 0;
	char buf[4096];
	char *p;

	if (access(FEI "inject", W_OK))
		SKIP(return, "no fail_function in this kernel (the debug tier has it)");
	mem = open("/proc/self/mem", O_RDONLY);
	ASSERT_LE(0, mem);
	blocks = pack_stat("pack_blocks");
	p = spare_file(_metadata, self->dev, self->nid, len, 13, &fd);
	ASSERT_NE(NULL, p);
	for (off = 0; off < len; off += 2 * 4096)
		ASSERT_EQ(0, punch(fd, off + 4096, 4096));
	ASSERT_EQ(0, pack_run());
	ASSERT_EQ(blocks + 2, pack_stat("pack_blocks"));
	/*
	 * No background pass from here on, only this thread's: with packing
	 * off none is queued or runs, and the write returns once a pass the
	 * punches queued has ended.
	 */
	ASSERT_EQ(0, som_sysfs_write("packing/threshold", "0"));
	ASSERT_EQ(0, punch(fd, 0, 2 * MiB));
	ASSERT_EQ(0, punch(fd, 4 * MiB, MiB / 2));
	compacted = pack_stat("compacted");

	/*
	 * The first pack block has 256 pages, the second 192: those go to
	 * the first's free slots, and the 100th copy fails.
	 */
	ASSERT_EQ(0, fei_arm("som_pack_copy", EIO, 100));
	EXPECT_EQ(0, pack_run());
	fei_disarm();
	EXPECT_EQ(compacted, pack_stat("compacted"));
	EXPECT_EQ(blocks + 2, pack_stat("pack_blocks"));
	for (off = 2 * MiB; off < len; off += 4096) {
		if (pread(mem, buf, 4096, (uintptr_t)(p + off)) != 4096)
			holes++;
		else if ((off / 4096) % 2 == 0 &&
			 (off < 4 * MiB || off >= 4 * MiB + MiB / 2) ?
			 som_check(p, off, off + 4096, 8, 13) != -1 :
			 som_check_zero(buf, 4096, 8) != -1)
			bad++;
	}
	EXPECT_EQ(1, holes);
	EXPECT_EQ(0, bad);

	/* Passes after it leave both pack blocks as they are. */
	ASSERT_EQ(0, pack_run());
	ASSERT_EQ(0, pack_run());
	EXPECT_EQ(compacted, pack_stat("compacted"));
	EXPECT_EQ(blocks + 2, pack_stat("pack_blocks"));

	/*
	 * 200 pages that read zeros take slots: the fuller block has 157
	 * free, the one compaction stopped on the rest.
	 */
	pages = pack_stat("pack_pages");
	for (off = 0; off < 200; off++)
		p[2 * MiB + (off % 100) * 2 * 4096 + 4096 +
		  (off / 100) * 2 * MiB] = 1;
	EXPECT_EQ(pages + 200, pack_stat("pack_pages"));
	EXPECT_EQ(blocks + 2, pack_stat("pack_blocks"));
	munmap(p, len);
	close(fd);
	close(mem);
}

/*
 * An error reported in a free slot (its page punched just before) is
 * not handed to the next page that takes a slot: that page reads zeros
 * and takes writes. Before the fix the fault took the free slot with the
 * hole and the page was SIGBUS (BUS_MCEERR_AR) for good.
 */
TEST_F(poison, error_in_a_free_pack_slot_is_not_handed_out)
{
	uint64_t phys = 0;
	char *p, *page;
	int fd;

	p = packed_spare_file(_metadata, self->dev, self->nid, 13, &fd);
	ASSERT_NE(NULL, p);
	page = p + 4 * 4096;
	EXPECT_EQ(-1, som_check(p, 4 * 4096, 5 * 4096, 8, 13));
	ASSERT_EQ(0, poison(self->dev, page, 0, SOM_POISON_LOOKUP, &phys));
	ASSERT_EQ(0, punch(fd, page - p, 4096));
	ASSERT_EQ(0, poison(self->dev, NULL, phys, 0, NULL));
	EXPECT_EQ(2 * MiB, spare_stat("retired_bytes"));
	/* The freed slot is the first free one: the next fault's pick. */
	EXPECT_EQ(0, touch(page));
	EXPECT_EQ(-1, som_check_zero(page, 4096, 8));
	page[8] = 3;
	EXPECT_EQ(3, page[8]);
	EXPECT_EQ(0, touch(p + 4096));
	EXPECT_EQ(-1, som_check(p, 8 * 4096, 9 * 4096, 8, 13));
	munmap(p, 4 * MiB);
	close(fd);
	EXPECT_EQ(0, som_sysfs_write("packing/threshold", "0"));
}

TEST_HARNESS_MAIN
