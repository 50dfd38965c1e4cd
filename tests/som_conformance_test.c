// SPDX-License-Identifier: GPL-2.0
/*
 * Differential conformance: each test runs one sequence of memory calls on
 * four backings side by side (anonymous memory, a memfd, a som file and
 * /dev/som), each in a fresh process, and compares what a program can
 * observe: return values and errno, data read back, SIGSEGV/SIGBUS and
 * where, what a child sees after fork, what a debugger reads and writes.
 *
 * Wherever the backings do not all agree, Documentation/compat-matrix.md
 * must have a row for that step with exactly the four observed values, and
 * every row must be observed: a difference missing from the matrix, or a
 * row that no longer matches, fails the test. The pool's free bytes must
 * be back at their start value after every backing's run.
 *
 * Needs som.ko with a pool of at least 2 GiB, and root.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/falloc.h>
#include <stdarg.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/uio.h>

#include "kselftest_harness.h"
#include "som_util.h"
#include "conformance.h"

FIXTURE(conformance) {
	long long free_start;
};

FIXTURE_SETUP(conformance)
{
	self->free_start = -1;
	if (access(SOM_DEV, F_OK))
		SKIP(return, "som.ko is not loaded");
	self->free_start = som_stat("free_bytes");
	ASSERT_LE(2 * (long long)GiB, self->free_start)
		TH_LOG("the conformance suite needs a pool of at least 2 GiB");
	ASSERT_EQ(som_stat("total_bytes"), self->free_start)
		TH_LOG("som memory is in use outside the suite");
}

FIXTURE_TEARDOWN(conformance)
{
	if (self->free_start < 0)
		return;
	EXPECT_EQ(self->free_start, som_stat("free_bytes"));
}

/* ---- sequences ---- */

/*
 * Every sequence starts with conf_setup() and leaves the rest to process
 * exit: the runner checks that exit gave everything back. CONF_SETUP_AREA
 * owns more address space than it maps, for a sequence that maps more
 * with MAP_FIXED past the end later.
 */
#define CONF_SETUP_AREA(c, size, area)					\
	do {								\
		if (conf_setup(c, size, area)) {			\
			conf_note(c, "setup", "failed: %s",		\
				  strerrorname_np(errno));		\
			return;						\
		}							\
	} while (0)
#define CONF_SETUP(c, size)	CONF_SETUP_AREA(c, size, size)

static const char *conf_step(const char *a, const char *b)
{
	static char buf[CONF_KEY_LEN];

	snprintf(buf, sizeof(buf), "%s.%s", a, b);
	return buf;
}

/* First touch, prefaulting and the calls that do not change data. */
CONF_TEST(populate, 300)
{
	unsigned char vec[2];
	long flt;
	char *p;

	CONF_SETUP(c, 8 * MiB);
	conf_data(c, "first_read", 0, 4 * MiB, 1);
	conf_fill(c, "fill", 0, 4 * MiB, 1);
	conf_data(c, "read_back", 0, 4 * MiB, 1);

	p = conf_mmap(c, c->base + 4 * MiB, 4 * MiB, PROT_READ | PROT_WRITE,
		      MAP_POPULATE, 4 * MiB);
	conf_ret_addr(c, "map_populate", p, c->base + 4 * MiB);
	flt = som_minflt();
	conf_fill(c, "map_populate.fill", 4 * MiB, 4 * MiB, 2);
	conf_note(c, "map_populate.faults_after", "%s",
		  som_minflt() - flt ? "some" : "none");

	conf_ret(c, "madv_populate_read",
		 madvise(c->base, 4 * MiB, MADV_POPULATE_READ));
	conf_ret(c, "madv_populate_write",
		 madvise(c->base, 4 * MiB, MADV_POPULATE_WRITE));
	conf_data(c, "after_madv_populate", 0, 4 * MiB, 1);

	conf_ret(c, "mlock", mlock(c->base, 8 * MiB));
	conf_data(c, "mlock.data", 0, 4 * MiB, 1);
	conf_ret(c, "munlock", munlock(c->base, 8 * MiB));
	conf_ret(c, "msync_sync", msync(c->base, 8 * MiB, MS_SYNC));
	conf_ret(c, "msync_async", msync(c->base, 8 * MiB, MS_ASYNC));
	conf_ret(c, "msync_invalidate",
		 msync(c->base, 8 * MiB, MS_INVALIDATE));
	conf_ret(c, "mincore", mincore(c->base, 8192, vec));
	conf_note(c, "mincore.resident", "%d", vec[0] & 1);
	conf_data(c, "end", 0, 4 * MiB, 1);
}

/* Every madvise() advice on a filled mapping, and what data survives. */
CONF_TEST(madvise, 300)
{
	static const struct {
		const char *name;
		int advice;
	} advice[] = {
		{ "willneed", MADV_WILLNEED },
		{ "cold", MADV_COLD },
		{ "pageout", MADV_PAGEOUT },
		{ "hugepage", MADV_HUGEPAGE },
		{ "nohugepage", MADV_NOHUGEPAGE },
		{ "dontdump", MADV_DONTDUMP },
		{ "dodump", MADV_DODUMP },
		{ "mergeable", MADV_MERGEABLE },
		{ "unmergeable", MADV_UNMERGEABLE },
		{ "random", MADV_RANDOM },
		{ "sequential", MADV_SEQUENTIAL },
		{ "normal", MADV_NORMAL },
		{ "bogus", 12345 },
	};
	unsigned int i;

	CONF_SETUP(c, 4 * MiB);
	conf_fill(c, "fill", 0, 4 * MiB, 1);
	conf_ret(c, "dontneed", madvise(c->base, 64 * KiB, MADV_DONTNEED));
	conf_data(c, "dontneed.data", 0, 64 * KiB, 1);
	conf_ret(c, "free", madvise(c->base + MiB, 64 * KiB, MADV_FREE));
	conf_data(c, "free.data", MiB, 64 * KiB, 1);
	conf_ret(c, "remove",
		 madvise(c->base + 2 * MiB, 64 * KiB, MADV_REMOVE));
	conf_data(c, "remove.data", 2 * MiB, 64 * KiB, 1);
	for (i = 0; i < sizeof(advice) / sizeof(advice[0]); i++)
		conf_ret(c, advice[i].name,
			 madvise(c->base + 3 * MiB, MiB, advice[i].advice));
	conf_data(c, "end", 3 * MiB, MiB, 1);
}

/*
 * Give [off, off + len) back the backing's way (conf_free()) and look at
 * the hole, 64 KiB on either side of it and the file's st_blocks.
 */
static void conf_punch_case(struct conf *c, const char *name, size_t off,
			    size_t len)
{
	long long blocks;

	int before = off >= 64 * KiB, after = off + len + 64 * KiB <= c->len;

	if (before)
		conf_fill(c, conf_step(name, "fill_before"), off - 64 * KiB,
			  64 * KiB, 1);
	conf_fill(c, conf_step(name, "fill"), off, len, 1);
	if (after)
		conf_fill(c, conf_step(name, "fill_after"), off + len,
			  64 * KiB, 1);
	blocks = conf_blocks(c);
	conf_ret(c, conf_step(name, "free"), conf_free(c, off, len));
	/* Before reading the hole: a read fault fills a file's hole again. */
	conf_blocks_delta(c, conf_step(name, "st_blocks"), blocks);
	conf_data(c, conf_step(name, "hole"), off, len, 1);
	if (before)
		conf_data(c, conf_step(name, "before"), off - 64 * KiB,
			  64 * KiB, 1);
	if (after)
		conf_data(c, conf_step(name, "after"), off + len, 64 * KiB, 1);
	conf_fill(c, conf_step(name, "refill"), off, len, 2);
	conf_data(c, conf_step(name, "refilled"), off, len, 2);
}

/* Holes of 4 KiB and 2 MiB, aligned and not, inside a 1 GiB entry. */
CONF_TEST(punch, 600)
{
	CONF_SETUP(c, GiB);
	conf_fill(c, "fill", 0, GiB, 1);
	conf_punch_case(c, "4k_unaligned", GiB / 2 + 12 * KiB, 4 * KiB);
	conf_punch_case(c, "4k_aligned", 256 * MiB, 4 * KiB);
	conf_punch_case(c, "2m_aligned", 300 * MiB, 2 * MiB);
	conf_punch_case(c, "2m_unaligned", 401 * MiB, 2 * MiB);
	conf_data(c, "rest", 640 * MiB, 384 * MiB, 1);
}

/* A 1 GiB hole across two 1 GiB entries. */
CONF_TEST(punch_gib_unaligned, 900)
{
	CONF_SETUP(c, 2 * GiB);
	conf_fill(c, "fill", 0, 2 * GiB, 1);
	conf_punch_case(c, "gib", GiB / 2, GiB);
	conf_data(c, "rest", 0, GiB / 4, 1);
}

/* A 1 GiB hole that is exactly one 1 GiB entry. */
CONF_TEST(punch_gib_aligned, 900)
{
	CONF_SETUP(c, 2 * GiB);
	conf_fill(c, "fill", 0, 2 * GiB, 1);
	conf_punch_case(c, "gib", GiB, GiB);
	conf_data(c, "rest", 0, GiB - 64 * KiB, 1);
}

/* mprotect() of a 2 MiB and a 4 KiB piece of a 1 GiB entry, and back. */
CONF_TEST(mprotect, 600)
{
	CONF_SETUP(c, GiB);
	conf_fill(c, "fill", 0, GiB, 1);
	conf_fill(c, "fill_4k", 200 * MiB + 4 * KiB, 4 * KiB, 1);
	conf_ret(c, "ro_2m", mprotect(c->base + 100 * MiB, 2 * MiB, PROT_READ));
	conf_touch(c, "ro_2m.write", 100 * MiB + 4 * KiB, 1);
	conf_data(c, "ro_2m.read", 100 * MiB, 2 * MiB, 1);
	conf_ret(c, "none_4k", mprotect(c->base + 200 * MiB + 4 * KiB,
					4 * KiB, PROT_NONE));
	conf_touch(c, "none_4k.read", 200 * MiB + 4 * KiB, 0);
	conf_touch(c, "none_4k.next_page", 200 * MiB + 8 * KiB, 1);
	conf_ret(c, "rw_2m", mprotect(c->base + 100 * MiB, 2 * MiB,
				      PROT_READ | PROT_WRITE));
	conf_touch(c, "rw_2m.write", 100 * MiB + 4 * KiB, 1);
	conf_ret(c, "rw_4k", mprotect(c->base + 200 * MiB + 4 * KiB, 4 * KiB,
				      PROT_READ | PROT_WRITE));
	conf_data(c, "rw_4k.read", 200 * MiB + 4 * KiB, 4 * KiB, 1);
	conf_ret(c, "ro_all", mprotect(c->base, GiB, PROT_READ));
	conf_touch(c, "ro_all.write", 700 * MiB, 1);
	conf_data(c, "ro_all.read", 512 * MiB, 512 * MiB, 1);
}

/* munmap() of pieces, then mapping the same offsets there again. */
CONF_TEST(munmap, 600)
{
	char *p;

	CONF_SETUP(c, GiB);
	conf_fill(c, "fill", 0, GiB, 1);
	conf_fill(c, "fill_4k", 12 * KiB, 4 * KiB, 1);
	conf_fill(c, "fill_next", 16 * KiB, 4 * KiB, 1);
	conf_ret(c, "4k", munmap(c->base + 12 * KiB, 4 * KiB));
	conf_touch(c, "4k.read", 12 * KiB, 0);
	conf_data(c, "4k.next", 16 * KiB, 4 * KiB, 1);
	conf_ret(c, "2m", munmap(c->base + 300 * MiB, 2 * MiB));
	conf_touch(c, "2m.read", 300 * MiB, 0);
	conf_data(c, "2m.before", 300 * MiB - 64 * KiB, 64 * KiB, 1);
	conf_data(c, "2m.after", 302 * MiB, 64 * KiB, 1);

	/* The holes are no longer the sequence's own: no MAP_FIXED there. */
	p = conf_mmap(c, c->base + 300 * MiB, 2 * MiB, PROT_READ | PROT_WRITE,
		      MAP_FIXED_NOREPLACE, 300 * MiB);
	conf_ret_addr(c, "2m.remap", p, c->base + 300 * MiB);
	conf_data(c, "2m.remap.data", 300 * MiB, 2 * MiB, 1);
	p = conf_mmap(c, c->base + 12 * KiB, 4 * KiB, PROT_READ | PROT_WRITE,
		      MAP_FIXED_NOREPLACE, 12 * KiB);
	conf_ret_addr(c, "4k.remap", p, c->base + 12 * KiB);
	conf_data(c, "4k.remap.data", 12 * KiB, 4 * KiB, 1);
	conf_fill(c, "4k.remap.write", 12 * KiB, 4 * KiB, 3);
	conf_data(c, "rest", 512 * MiB, 512 * MiB, 1);
	conf_ret(c, "all", munmap(c->base, GiB));
	conf_touch(c, "all.read", 512 * MiB, 0);
}

/* mremap(): move, shrink, grow, duplicate, MREMAP_DONTUNMAP. */
CONF_TEST(mremap, 600)
{
	char *q, *p;

	CONF_SETUP(c, GiB);
	q = conf_area(2 * GiB);		/* not where the mapping is */
	if (!q) {
		conf_note(c, "area", "failed: %s", strerrorname_np(errno));
		return;
	}
	q += GiB;
	conf_fill(c, "fill", 0, GiB, 1);
	p = mremap(c->base, GiB, GiB, MREMAP_MAYMOVE | MREMAP_FIXED, q);
	conf_ret_addr(c, "move", p, q);
	conf_touch(c, "move.old", 0, 0);
	c->base = q;
	conf_data(c, "move.data", 0, GiB, 1);
	p = mremap(q, GiB, GiB / 2, 0);
	conf_ret_addr(c, "shrink", p, q);
	conf_touch(c, "shrink.tail", GiB / 2, 0);
	conf_data(c, "shrink.data", 0, GiB / 2, 1);
	p = mremap(q, GiB / 2, GiB, 0);
	conf_ret_addr(c, "grow", p, q);
	conf_data(c, "grow.tail", GiB / 2, 64 * MiB, 1);
	p = mremap(q, 2 * MiB, 2 * MiB, MREMAP_MAYMOVE | MREMAP_DONTUNMAP);
	conf_ret_addr(c, "dontunmap", p, NULL);
	p = mremap(q, 0, 2 * MiB, MREMAP_MAYMOVE);
	conf_ret_addr(c, "duplicate", p, NULL);
	if (p != MAP_FAILED)
		conf_data_at(c, "duplicate.data", p, 0, 2 * MiB, 1);
	else
		conf_note(c, "duplicate.data", "none");
}

/*
 * fork() after @advice (none if 0, MADV_DOFORK after MADV_DONTFORK if
 * @dofork): what the child reads, whether its write lands, and whether
 * the parent sees it.
 */
static void conf_fork_case(struct conf *c, const char *name, int advice,
			   int dofork)
{
	uint64_t *word = (uint64_t *)c->base;
	pid_t pid;

	conf_fill(c, conf_step(name, "fill"), 0, 4 * MiB, 1);
	if (dofork)
		madvise(c->base, 4 * MiB, MADV_DONTFORK);
	if (advice)
		conf_ret(c, conf_step(name, "advice"),
			 madvise(c->base, 4 * MiB, advice));
	pid = fork();
	if (pid == 0) {
		conf_data(c, conf_step(name, "child_read"), 0, 4 * MiB, 1);
		conf_touch(c, conf_step(name, "child_write"), 0, 1);
		_exit(0);
	}
	waitpid(pid, NULL, 0);
	conf_note(c, conf_step(name, "parent_sees_child_write"), "%s",
		  *word != som_pattern(1, 0) ? "yes" : "no");
	madvise(c->base, 4 * MiB, MADV_DOFORK);
	madvise(c->base, 4 * MiB, MADV_KEEPONFORK);
}

CONF_TEST(fork, 300)
{
	CONF_SETUP(c, 4 * MiB);
	conf_fork_case(c, "plain", 0, 0);
	conf_fork_case(c, "dontfork", MADV_DONTFORK, 0);
	conf_fork_case(c, "dofork", MADV_DOFORK, 1);
	conf_fork_case(c, "wipeonfork", MADV_WIPEONFORK, 0);
	conf_fork_case(c, "keeponfork", MADV_KEEPONFORK, 0);
}

/* Read and write the word at @off (and @off + 16) through /proc/self/mem. */
static void conf_proc_mem(struct conf *c, int mem, const char *name,
			  size_t off)
{
	uint64_t v = 0, w = 0x0123456789abcdefULL;
	ssize_t n;

	n = pread(mem, &v, sizeof(v), (off_t)(uintptr_t)(c->base + off));
	if (n == sizeof(v))
		conf_note(c, conf_step(name, "mem_read"), "%s",
			  v == som_pattern(1, off) ? "data" : v ? "other" : "zero");
	else
		conf_ret(c, conf_step(name, "mem_read"), n);
	n = pwrite(mem, &w, sizeof(w),
		   (off_t)(uintptr_t)(c->base + off + 16));
	conf_ret(c, conf_step(name, "mem_write"), n);
	conf_note(c, conf_step(name, "mem_written"), "%s",
		  *(volatile uint64_t *)(c->base + off + 16) == w ? "yes" : "no");
}

/* PTRACE_PEEKDATA and POKEDATA of @off and @off + 24 from a tracer child. */
static void conf_ptrace(struct conf *c, const char *name, size_t off)
{
	uint64_t w = 0xfedcba9876543210ULL;
	pid_t self = getpid(), pid;
	int st;

	prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
	pid = fork();
	if (pid == 0) {
		long v;

		if (ptrace(PTRACE_ATTACH, self, 0, 0)) {
			conf_ret(c, conf_step(name, "peek"), -1);
			conf_ret(c, conf_step(name, "poke"), -1);
			_exit(0);
		}
		waitpid(self, &st, __WALL);
		errno = 0;
		v = ptrace(PTRACE_PEEKDATA, self, c->base + off, 0);
		if (errno)
			conf_ret(c, conf_step(name, "peek"), -1);
		else
			conf_note(c, conf_step(name, "peek"), "%s",
				  (uint64_t)v == som_pattern(1, off) ? "data" :
				  v ? "other" : "zero");
		conf_ret(c, conf_step(name, "poke"),
			 ptrace(PTRACE_POKEDATA, self, c->base + off + 24, w));
		ptrace(PTRACE_DETACH, self, 0, 0);
		_exit(0);
	}
	waitpid(pid, NULL, 0);
	conf_note(c, conf_step(name, "poked"), "%s",
		  *(volatile uint64_t *)(c->base + off + 24) == w ? "yes" : "no");
}

/* What a debugger reads and writes in each kind of piece. */
CONF_TEST(debugger, 600)
{
	uint64_t v = 0;
	struct iovec local = { &v, sizeof(v) }, remote;
	int mem = open("/proc/self/mem", O_RDWR);
	char *extra;

	CONF_SETUP(c, GiB + 2 * MiB);
	conf_fill(c, "fill", 0, GiB, 1);
	conf_fill(c, "fill_4k", 640 * MiB + 4 * KiB, 4 * KiB, 1);
	conf_proc_mem(c, mem, "gib", 64 * KiB);
	conf_ptrace(c, "gib", 128 * KiB);
	remote.iov_base = c->base;
	remote.iov_len = sizeof(v);
	conf_ret(c, "process_vm_readv",
		 process_vm_readv(getpid(), &local, 1, &remote, 1, 0));
	conf_ret(c, "ro_2m", mprotect(c->base + 512 * MiB, 2 * MiB, PROT_READ));
	conf_proc_mem(c, mem, "ro_2m", 512 * MiB);
	conf_ptrace(c, "ro_2m", 512 * MiB + 64 * KiB);
	conf_ret(c, "ro_4k", mprotect(c->base + 640 * MiB + 4 * KiB, 4 * KiB,
				      PROT_READ));
	conf_proc_mem(c, mem, "ro_4k", 640 * MiB + 4 * KiB);
	conf_ptrace(c, "rw_2m", 700 * MiB);
	extra = c->base + GiB;
	conf_proc_mem(c, mem, "untouched", GiB);
	conf_data_at(c, "untouched.after", extra, 64 * KiB, 64 * KiB, 1);
	close(mem);
}

/* ftruncate() below and above what is mapped. */
CONF_TEST(truncate, 300)
{
	char *p;

	/* Owns 16 MiB: the second 8 MiB are mapped once the file grows. */
	CONF_SETUP_AREA(c, 8 * MiB, 16 * MiB);
	conf_fill(c, "fill", 0, 8 * MiB, 1);
	conf_ret(c, "shrink", ftruncate(c->fd, 3 * MiB + 100));
	conf_touch(c, "shrink.eof_page", 3 * MiB + 4095, 0);
	conf_touch(c, "shrink.past_eof", 3 * MiB + 4 * KiB, 0);
	conf_touch(c, "shrink.far", 7 * MiB, 0);
	conf_data(c, "shrink.data", 0, 3 * MiB, 1);
	conf_ret(c, "grow", ftruncate(c->fd, 8 * MiB));
	conf_data(c, "grow.data", 4 * MiB, 4 * MiB, 1);
	conf_ret(c, "grow_past_mapping", ftruncate(c->fd, 16 * MiB));
	p = conf_mmap(c, c->base + 8 * MiB, 8 * MiB, PROT_READ | PROT_WRITE,
		      0, 8 * MiB);
	conf_ret_addr(c, "map_past_old_end", p, c->base + 8 * MiB);
	conf_data(c, "map_past_old_end.data", 8 * MiB, 8 * MiB, 1);
	conf_fill(c, "map_past_old_end.fill", 8 * MiB, 8 * MiB, 1);
	conf_ret(c, "to_zero", ftruncate(c->fd, 0));
	conf_touch(c, "to_zero.read", 0, 0);
	conf_touch(c, "to_zero.read_high", 12 * MiB, 0);
}

/* Repeated map, fill, free, unmap of the same backing. */
CONF_TEST(cycles, 600)
{
	char *want = conf_area(64 * MiB);
	int i;

	if (!want || conf_open(c, 64 * MiB)) {
		conf_note(c, "setup", "failed");
		return;
	}
	for (i = 0; i < 8; i++) {
		/* After the first round's munmap the area is no longer ours. */
		c->base = conf_mmap(c, want, 64 * MiB, PROT_READ | PROT_WRITE,
				    i ? MAP_FIXED_NOREPLACE : 0, 0);
		conf_ret_addr(c, "map", c->base, want);
		conf_data(c, i ? "read_again" : "first_read", 0, 64 * MiB, 1);
		conf_fill(c, "fill", 0, 64 * MiB, 1);
		conf_ret(c, "free", conf_free(c, 10 * MiB, 2 * MiB));
		conf_data(c, "hole", 10 * MiB, 2 * MiB, 1);
		conf_data(c, "rest", 12 * MiB, 52 * MiB, 1);
		conf_ret(c, "unmap", munmap(c->base, 64 * MiB));
	}
	conf_ret(c, "close", c->fd < 0 ? 0 : close(c->fd));
}

TEST_HARNESS_MAIN
