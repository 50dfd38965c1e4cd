// SPDX-License-Identifier: GPL-2.0
/*
 * Migration selftests: som memory moves while its owner uses it.
 *
 * - compaction puts a GiB that a fragmented pool left on 2 MiB entries
 *   back into one chunk, by an administrator's request and by the
 *   background worker, while writer threads check their own data;
 * - a source whose memory is in use is evacuated and removed, or refused
 *   cleanly when the rest of the pool has no room;
 * - a policy change moves a region's blocks to the nodes it names;
 * - moves race with faults, munmap(), mprotect(), hole punching, fork()
 *   and exits without losing a byte or a block.
 *
 * Needs som.ko loaded with its boot range on node 0 (and nothing else of
 * node 0 in use), root, and SOM_SPARE_RANGES (a reserved range on node 1)
 * for the tests that need a second node; see vm/lib/qemu.sh. Every test
 * ends with the pool's accounting back where it started, and leaves the
 * background compaction rate as it found it (the tests set it to 0 so
 * that nothing moves but what they ask for).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sys/wait.h>
#include <time.h>

#include "kselftest_harness.h"
#include "som_util.h"
#include "som_pool_util.h"
#include "som_writers.h"

#define SPARE	"migrate-spare"

static long long mig_stat(const char *name)
{
	char path[128];

	snprintf(path, sizeof(path), "migration/%s", name);
	return som_stat(path);
}

static long long faults_total(void)
{
	return som_stat("faults_pud") + som_stat("faults_pmd") +
	       som_stat("faults_pte");
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * Add the spare reserved range as SPARE and return its node; -1 when the
 * machine has no such range (SOM_SPARE_RANGES: 1 GiB on a node other
 * than 0), for the test to skip. Failing to add it fails the test.
 */
static int spare_add(struct __test_metadata *_metadata, int dev)
{
	struct som_source_args a;
	uint64_t size, start;
	int nid;

	if (!parse_range(getenv("SOM_SPARE_RANGES"), &size, &start) ||
	    size != GiB)
		return -1;
	args_init(&a, SOM_SOURCE_RESERVED);
	a.start = start;
	a.size = size;
	strcpy(a.name, SPARE);
	ASSERT_EQ(0, src_add(dev, &a))
		TH_LOG("adding SOM_SPARE_RANGES=%s", getenv("SOM_SPARE_RANGES"));
	nid = atoi(src_attr(SPARE, "nodes"));
	return nid > 0 ? nid : -1;
}

/* How many of the 2 MiB pieces of [@p, @p + @len) each entry size maps. */
static void entry_sizes(int fd, const char *p, size_t len, int sizes[3])
{
	struct som_mapping m;
	size_t off;

	sizes[0] = sizes[1] = sizes[2] = 0;
	for (off = 0; off < len; off += 2 * MiB) {
		if (placement(fd, p + off, &m))
			continue;
		sizes[m.page_size == GiB ? 2 : m.page_size == 2 * MiB]++;
	}
}

FIXTURE(migrate) {
	int dev;
	long long total, free, rate;
	int sources;
};

FIXTURE_SETUP(migrate)
{
	SOM_OPEN_DEV(self->dev);
	if (node_stat(0, "total_bytes") < 2 * (long long)GiB)
		SKIP(return, "node 0 needs at least 2 GiB of pool");
	ASSERT_EQ(node_stat(0, "total_bytes"), node_stat(0, "free_bytes"))
		TH_LOG("node 0's pool is not all free: something before this test kept memory");
	self->total = som_stat("total_bytes");
	self->free = som_stat("free_bytes");
	self->sources = nr_sources();
	self->rate = mig_stat("compact_rate");
	ASSERT_EQ(0, som_sysfs_write("migration/compact_rate", "0"));
}

FIXTURE_TEARDOWN(migrate)
{
	char rate[32];

	if (self->dev < 0)
		return;
	src_remove(self->dev, SPARE);
	snprintf(rate, sizeof(rate), "%lld", self->rate);
	EXPECT_EQ(0, som_sysfs_write("migration/compact_rate", rate));
	close(self->dev);
	EXPECT_EQ(self->total, som_stat("total_bytes"));
	EXPECT_EQ(self->free, som_stat("free_bytes"));
	EXPECT_EQ(0, som_stat("reserved_bytes"));
	EXPECT_EQ(self->sources, nr_sources());
}

/*
 * A som file of 1 GiB, bound to node 0, faulted in while node 0's pool is
 * in pieces: it lies on 512 2 MiB entries. The pieces' own blocks are
 * given back before it returns, so that compaction has room. Returns the
 * mapping; the file in *@fd.
 */
static char *scattered_gib(struct __test_metadata *_metadata, int dev,
			   int seed, int *fd)
{
	int frag, sizes[3];
	long long pud;
	char *p;

	frag = fragment_node0(dev);
	EXPECT_LE(0, frag);
	*fd = som_file(dev, 0, SOM_FILE_CLOEXEC);
	EXPECT_LE(0, *fd);
	EXPECT_EQ(0, set_policy(*fd, SOM_POLICY_BIND, 1, 0));
	EXPECT_EQ(0, ftruncate(*fd, GiB));
	p = mmap(NULL, GiB, PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0);
	EXPECT_NE(MAP_FAILED, p);
	if (p == MAP_FAILED)
		return p;
	EXPECT_EQ(0, (uintptr_t)p % GiB);
	pud = som_stat("faults_pud");
	som_fill(p, 0, GiB, 4096, seed);
	EXPECT_EQ(pud, som_stat("faults_pud"));
	entry_sizes(*fd, p, GiB, sizes);
	EXPECT_EQ(512, sizes[1]);
	close(frag);
	return p;
}

/*
 * The file of scattered_gib(), mapped again after compaction: one fault
 * maps the whole GiB with one 1 GiB entry, and every byte is still there.
 */
static void remapped_on_one_entry(struct __test_metadata *_metadata, int fd,
				  int seed)
{
	long long faults, pud;
	char *p;

	p = mmap(NULL, GiB, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	EXPECT_NE(MAP_FAILED, p);
	if (p == MAP_FAILED)
		return;
	faults = faults_total();
	pud = som_stat("faults_pud");
	EXPECT_EQ(-1, som_check(p, 0, GiB, 4096, seed));
	if (som_cpu_has_gbpages()) {
		EXPECT_EQ(1, faults_total() - faults);
		EXPECT_EQ(1, som_stat("faults_pud") - pud);
		EXPECT_EQ(GiB, som_page_size(fd, p));
	}
	munmap(p, GiB);
}

/*
 * A GiB of a som file faulted in a fragmented pool sits on 2 MiB entries;
 * compaction, asked for while two threads write and check it, puts it in
 * one chunk: mapped again, one fault maps the whole GiB with one entry.
 */
TEST_F(migrate, compaction_reassembles_a_gib_under_writers)
{
	long long moved, copied, gained;
	struct writer w[2];
	volatile int stop;
	double t;
	char *p;
	int fd;

	if (!som_cpu_has_gbpages())
		SKIP(return, "som maps no 1 GiB entries here: compaction, which gives them back, leaves mapped GiBs alone");
	p = scattered_gib(_metadata, self->dev, 11, &fd);
	ASSERT_NE(MAP_FAILED, p);
	moved = mig_stat("blocks_moved");
	copied = mig_stat("bytes_copied");
	gained = mig_stat("gib_assembled");
	writers_start(w, 2, p, GiB, &stop);
	t = now();
	EXPECT_EQ(0, som_sysfs_write("migration/compact", "1"));
	t = now() - t;
	usleep(200000);
	EXPECT_EQ(0, writers_stop(w, 2, &stop));
	moved = mig_stat("blocks_moved") - moved;
	copied = mig_stat("bytes_copied") - copied;
	EXPECT_EQ(1, mig_stat("gib_assembled") - gained);
	EXPECT_LT(0, moved);
	EXPECT_LE(moved * 2 * (long long)MiB, copied);
	TH_LOG("compaction: %lld blocks moved, %lld MiB copied in %.2f s: %.0f blocks/s; writers %ld+%ld rounds",
	       moved, copied >> 20, t, moved / t, w[0].rounds, w[1].rounds);
	EXPECT_EQ(-1, som_check(p, 0, GiB, 4096, 11));
	munmap(p, GiB);
	remapped_on_one_entry(_metadata, fd, 11);
	close(fd);
}

/*
 * The background worker does the same on its own, at its rate, once a
 * 1 GiB fault has fallen back (here: when the rate is turned on).
 */
TEST_F(migrate, background_compaction_follows_a_fallback)
{
	long long gained, start;
	struct writer w[2];
	volatile int stop;
	char *p;
	int fd;

	if (!som_cpu_has_gbpages())
		SKIP(return, "som maps no 1 GiB entries here: compaction, which gives them back, leaves mapped GiBs alone");
	p = scattered_gib(_metadata, self->dev, 12, &fd);
	ASSERT_NE(MAP_FAILED, p);
	gained = mig_stat("gib_assembled");
	writers_start(w, 2, p, GiB, &stop);
	ASSERT_EQ(0, som_sysfs_write("migration/compact_rate", "4096"));
	for (start = time(NULL); time(NULL) - start < 120 &&
	     mig_stat("gib_assembled") == gained;)
		usleep(100000);
	ASSERT_EQ(0, som_sysfs_write("migration/compact_rate", "0"));
	while (mig_stat("compact_running"))
		usleep(100000);
	EXPECT_EQ(0, writers_stop(w, 2, &stop));
	EXPECT_EQ(1, mig_stat("gib_assembled") - gained);
	EXPECT_EQ(-1, som_check(p, 0, GiB, 4096, 12));
	munmap(p, GiB);
	remapped_on_one_entry(_metadata, fd, 12);
	close(fd);
}

/*
 * /dev/som: a GiB whose blocks moved one by one (here, away to node 1
 * and back in another order) has no page table under it until the next
 * touch; compaction puts it in one chunk first, and that touch maps it
 * with one 1 GiB entry, without a new mapping.
 */
TEST_F(migrate, moved_gib_gets_its_1g_entry_back)
{
	long long gained, faults, pud;
	struct som_mapping m;
	int nid, fd, xfd;
	char *p, *x;

	nid = spare_add(_metadata, self->dev);
	if (nid <= 0)
		SKIP(return, "needs SOM_SPARE_RANGES: 1 GiB on a node other than 0");
	if (!som_cpu_has_gbpages())
		SKIP(return, "som maps no 1 GiB entries here (x86 without pdpe1gb, or arm64)");
	fd = open(SOM_DEV, O_RDWR);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, set_policy(fd, SOM_POLICY_PREFERRED, 1, 0));
	p = mmap(NULL, GiB, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	som_fill(p, 0, GiB, 4096, 17);
	EXPECT_EQ(GiB, som_page_size(fd, p));

	/* Every other block to node 1; then wait for the pool to zero. */
	EXPECT_EQ(0, set_policy(fd, SOM_POLICY_INTERLEAVE, 1 | 1ULL << nid,
				0));
	EXPECT_EQ(0, som_page_size(fd, p));
	som_wait_all_zeroed(60);
	/* Another region takes the lowest free block of the GiB's chunk... */
	xfd = open(SOM_DEV, O_RDWR);
	ASSERT_LE(0, xfd);
	ASSERT_EQ(0, set_policy(xfd, SOM_POLICY_PREFERRED, 1, 0));
	x = mmap(NULL, 2 * MiB, PROT_READ | PROT_WRITE, MAP_SHARED, xfd, 0);
	ASSERT_NE(MAP_FAILED, x);
	x[0] = 1;
	/* ...so that the blocks come back one place off, the last outside. */
	EXPECT_EQ(0, set_policy(fd, SOM_POLICY_PREFERRED, 1, 0));
	munmap(x, 2 * MiB);
	close(xfd);
	ASSERT_EQ(0, placement(fd, p + GiB - 1, &m));
	EXPECT_EQ(0, m.node);
	EXPECT_EQ(0, m.page_size);

	gained = mig_stat("gib_assembled");
	EXPECT_EQ(0, system("somctl compact | sed 's/^/# /'"));
	EXPECT_EQ(1, mig_stat("gib_assembled") - gained);
	faults = faults_total();
	pud = som_stat("faults_pud");
	EXPECT_EQ(-1, som_check(p, 0, GiB, 4096, 17));
	EXPECT_EQ(1, faults_total() - faults);
	EXPECT_EQ(1, som_stat("faults_pud") - pud);
	EXPECT_EQ(GiB, som_page_size(fd, p));
	munmap(p, GiB);
	close(fd);
}

/*
 * A source whose GiB a process is writing is removed: the GiB moves to a
 * free chunk on node 0 as a whole (and keeps its 1 GiB entry), the bytes
 * stay, the source goes.
 */
TEST_F(migrate, source_in_use_is_evacuated_and_removed)
{
	long long evacuated, total;
	struct som_mapping m;
	struct writer w[2];
	volatile int stop;
	int nid, fd;
	char *p;

	nid = spare_add(_metadata, self->dev);
	if (nid <= 0)
		SKIP(return, "needs SOM_SPARE_RANGES: 1 GiB on a node other than 0");
	total = som_stat("total_bytes");
	fd = open(SOM_DEV, O_RDWR);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, set_policy(fd, SOM_POLICY_PREFERRED, 1ULL << nid, 0));
	p = mmap(NULL, GiB, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	som_fill(p, 0, GiB, 4096, 13);
	ASSERT_EQ(0, placement(fd, p, &m));
	EXPECT_EQ(nid, m.node);
	EXPECT_EQ((long long)GiB, atoll(src_attr(SPARE, "used_bytes")));

	evacuated = mig_stat("blocks_evacuated");
	writers_start(w, 2, p, GiB, &stop);
	EXPECT_EQ(0, src_remove(self->dev, SPARE));
	usleep(200000);
	EXPECT_EQ(0, writers_stop(w, 2, &stop));
	EXPECT_EQ(512, mig_stat("blocks_evacuated") - evacuated);
	EXPECT_EQ(total - (long long)GiB, som_stat("total_bytes"));
	EXPECT_EQ(-ENOENT, src_remove(self->dev, SPARE));
	EXPECT_EQ(-1, som_check(p, 0, GiB, 4096, 13));
	ASSERT_EQ(0, placement(fd, p, &m));
	EXPECT_EQ(0, m.node);
	if (som_cpu_has_gbpages())
		EXPECT_EQ(GiB, m.page_size);
	munmap(p, GiB);
	close(fd);
}

/* 64 MiB of /dev/som bound to @nodes, written with @seed; the fd in *@fd. */
static char *bound_64m(struct __test_metadata *_metadata, int dev,
		       unsigned long long nodes, int seed, int *fd)
{
	char *p;

	*fd = open(SOM_DEV, O_RDWR);
	EXPECT_LE(0, *fd);
	EXPECT_EQ(0, set_policy(*fd, SOM_POLICY_BIND, nodes, 0));
	p = mmap(NULL, 64 * MiB, PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0);
	EXPECT_NE(MAP_FAILED, p);
	if (p != MAP_FAILED)
		som_fill(p, 0, 64 * MiB, 4096, seed);
	return p;
}

/*
 * Bound to the source's node, the memory has nowhere to go: removal fails
 * with ENOSPC and changes nothing; once the memory is freed it succeeds.
 */
TEST_F(migrate, evacuation_without_room_fails_cleanly)
{
	long long total, free, used;
	int nid, fd;
	char *p;

	nid = spare_add(_metadata, self->dev);
	if (nid <= 0)
		SKIP(return, "needs SOM_SPARE_RANGES: 1 GiB on a node other than 0");
	p = bound_64m(_metadata, self->dev, 1ULL << nid, 14, &fd);
	ASSERT_NE(MAP_FAILED, p);
	total = som_stat("total_bytes");
	free = som_stat("free_bytes");
	used = atoll(src_attr(SPARE, "used_bytes"));
	EXPECT_EQ(64 * (long long)MiB, used);

	EXPECT_EQ(-ENOSPC, src_remove(self->dev, SPARE));
	EXPECT_EQ(total, som_stat("total_bytes"));
	EXPECT_EQ(free, som_stat("free_bytes"));
	EXPECT_EQ(used, atoll(src_attr(SPARE, "used_bytes")));
	EXPECT_EQ(-1, som_check(p, 0, 64 * MiB, 4096, 14));
	/* The pool still hands out the source's memory. */
	p[64 * MiB - 1] = 1;

	munmap(p, 64 * MiB);
	close(fd);
	EXPECT_EQ(0, src_remove(self->dev, SPARE));
}

/*
 * A new policy moves what the region holds: bound to node 1, every block
 * goes there; preferring node 0, back; a chunk-backed GiB moves as a
 * whole and keeps its 1 GiB entry.
 */
TEST_F(migrate, policy_change_moves_blocks)
{
	long long placed;
	struct som_mapping m;
	int nid, fd, on[2];
	size_t off;
	char *p;

	nid = spare_add(_metadata, self->dev);
	if (nid <= 0)
		SKIP(return, "needs SOM_SPARE_RANGES: 1 GiB on a node other than 0");
	p = bound_64m(_metadata, self->dev, 1, 15, &fd);
	ASSERT_NE(MAP_FAILED, p);

	placed = mig_stat("blocks_placed");
	EXPECT_EQ(0, set_policy(fd, SOM_POLICY_BIND, 1ULL << nid, 0));
	EXPECT_EQ(32, mig_stat("blocks_placed") - placed);
	EXPECT_EQ(-1, som_check(p, 0, 64 * MiB, 4096, 15));
	for (off = 0; off < 64 * MiB; off += 2 * MiB) {
		ASSERT_EQ(0, placement(fd, p + off, &m));
		EXPECT_EQ(nid, m.node);
	}
	/* Interleaved: every other block moves back. */
	EXPECT_EQ(0, set_policy(fd, SOM_POLICY_INTERLEAVE,
				1 | 1ULL << nid, 0));
	on[0] = on[1] = 0;
	for (off = 0; off < 64 * MiB; off += 2 * MiB) {
		ASSERT_EQ(0, placement(fd, p + off, &m));
		on[m.node == nid]++;
	}
	EXPECT_EQ(16, on[0]);
	EXPECT_EQ(16, on[1]);
	EXPECT_EQ(-1, som_check(p, 0, 64 * MiB, 4096, 15));
	munmap(p, 64 * MiB);
	close(fd);

	/* A whole GiB: from a chunk on node 0 to the spare chunk. */
	fd = open(SOM_DEV, O_RDWR);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, set_policy(fd, SOM_POLICY_PREFERRED, 1, 0));
	p = mmap(NULL, GiB, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	som_fill(p, 0, GiB, 4096, 16);
	ASSERT_EQ(0, placement(fd, p, &m));
	EXPECT_EQ(0, m.node);
	EXPECT_EQ(0, set_policy(fd, SOM_POLICY_PREFERRED, 1ULL << nid, 0));
	EXPECT_EQ(-1, som_check(p, 0, GiB, 4096, 16));
	ASSERT_EQ(0, placement(fd, p + GiB - 1, &m));
	EXPECT_EQ(nid, m.node);
	if (som_cpu_has_gbpages())
		EXPECT_EQ(GiB, m.page_size);
	/* The kind is fixed once the region holds memory. */
	EXPECT_EQ(-EBUSY, set_policy(fd, SOM_POLICY_PREFERRED, 1ULL << nid,
				     SOM_POLICY_UNMOVABLE));
	munmap(p, GiB);
	close(fd);
}

/* The racing side of migration_races_with_memory_calls. */
struct churn {
	char *p;		/* /dev/som mapping, second half churned */
	int fd;
	char *f;		/* som file mapping, holes punched */
	int ffd;
	size_t len;
	volatile int *stop;
	long errors;
	long ops;
};

static void *churn_run(void *arg)
{
	struct churn *c = arg;
	uint64_t seed = 42;
	size_t half = c->len / 2, off;
	char *q;
	pid_t pid;

	while (!*c->stop) {
		off = half + (som_rand(&seed) % (half / (2 * MiB))) * 2 * MiB;
		switch (som_rand(&seed) % 5) {
		case 0:	/* mprotect: read-only and back */
			mprotect(c->p + off, 2 * MiB, PROT_READ);
			(void)*(volatile char *)(c->p + off + 100);
			mprotect(c->p + off, 2 * MiB, PROT_READ | PROT_WRITE);
			break;
		case 1:	/* a new mapping in its place: zeros */
			/*
			 * MAP_FIXED unmaps the old piece (the munmap() path)
			 * in the same call: a munmap() first would leave a
			 * hole that another thread's mmap() may take.
			 */
			q = mmap(c->p + off, 2 * MiB, PROT_READ | PROT_WRITE,
				 MAP_SHARED | MAP_FIXED, c->fd, off);
			if (q == MAP_FAILED) {
				/* A hole now, not ours: stop churning. */
				c->errors++;
				return NULL;
			}
			c->errors += som_check_zero(q, 2 * MiB, 4096) != -1;
			memset(q, 0x5a, 4096);
			break;
		case 2:	/* a hole in the file: zeros */
			fallocate(c->ffd, FALLOC_FL_PUNCH_HOLE |
				  FALLOC_FL_KEEP_SIZE, off, 2 * MiB);
			c->errors += som_check_zero(c->f + off, 2 * MiB,
						    4096) != -1;
			c->f[off] = 1;
			break;
		case 3:	/* fork: the child has none of it */
			pid = fork();
			if (!pid)
				_exit(0);
			waitpid(pid, NULL, 0);
			break;
		case 4:	/* another owner comes and goes */
			pid = fork();
			if (!pid) {
				int d = open(SOM_DEV, O_RDWR);
				char *r = mmap(NULL, 8 * MiB,
					       PROT_READ | PROT_WRITE,
					       MAP_SHARED, d, 0);

				if (r != MAP_FAILED)
					memset(r, 1, 8 * MiB);
				_exit(0);
			}
			waitpid(pid, NULL, 0);
			break;
		}
		c->ops++;
	}
	return NULL;
}

/*
 * Blocks move back and forth between nodes (and compaction runs) for a
 * while, as fast as they can, while writers check the first half of a
 * region and another thread munmaps, remaps, mprotects, punches holes and
 * forks over the rest. Nothing is lost, nothing leaks.
 */
TEST_F(migrate, migration_races_with_memory_calls)
{
	long long placed, seconds;
	struct writer w[2];
	volatile int stop, cstop = 0;
	struct churn c;
	pthread_t ct;
	int nid, i;
	double end;
	size_t len = 64 * MiB;

	nid = spare_add(_metadata, self->dev);
	if (nid <= 0)
		SKIP(return, "needs SOM_SPARE_RANGES: 1 GiB on a node other than 0");
	seconds = getenv("SOM_MIGRATE_SECONDS") ?
		  atoll(getenv("SOM_MIGRATE_SECONDS")) : 20;
	memset(&c, 0, sizeof(c));
	c.len = len;
	c.stop = &cstop;
	c.fd = open(SOM_DEV, O_RDWR);
	ASSERT_LE(0, c.fd);
	c.p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, c.fd, 0);
	ASSERT_NE(MAP_FAILED, c.p);
	c.ffd = som_file(self->dev, len, SOM_FILE_CLOEXEC);
	ASSERT_LE(0, c.ffd);
	c.f = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, c.ffd, 0);
	ASSERT_NE(MAP_FAILED, c.f);
	memset(c.p, 3, len);
	memset(c.f, 3, len);

	placed = mig_stat("blocks_placed");
	writers_start(w, 2, c.p, len / 2, &stop);
	pthread_create(&ct, NULL, churn_run, &c);
	end = now() + seconds;
	for (i = 0; now() < end; i++) {
		int node = i & 1 ? nid : 0;
		int err;

		err = set_policy(c.fd, SOM_POLICY_PREFERRED, 1ULL << node, 0);
		EXPECT_TRUE(!err || err == -EAGAIN || err == -ENOMEM)
			TH_LOG("policy on /dev/som: %d", err);
		err = set_policy(c.ffd, SOM_POLICY_PREFERRED, 1ULL << node, 0);
		EXPECT_TRUE(!err || err == -EAGAIN || err == -ENOMEM)
			TH_LOG("policy on the som file: %d", err);
		if (i % 4 == 3)
			EXPECT_EQ(0, som_sysfs_write("migration/compact", "1"));
	}
	cstop = 1;
	pthread_join(ct, NULL);
	EXPECT_EQ(0, writers_stop(w, 2, &stop));
	EXPECT_EQ(0, c.errors);
	TH_LOG("%d policy flips, %lld blocks placed, %ld racing calls",
	       i, mig_stat("blocks_placed") - placed, c.ops);
	EXPECT_LT(0, mig_stat("blocks_placed") - placed);
	system("grep -s . " SOM_SYSFS "migration/* | sed 's/^/# /'");
	munmap(c.p, len);
	munmap(c.f, len);
	close(c.fd);
	close(c.ffd);
	EXPECT_EQ(0, src_remove(self->dev, SPARE));
}

TEST_HARNESS_MAIN
