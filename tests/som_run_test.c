// SPDX-License-Identifier: GPL-2.0
/*
 * somrun(1) and its preload, from inside a program it runs: large
 * anonymous mappings and malloc()s land on som, the memory calls behave
 * as they do on anonymous memory, fork() gives the child a copy, the pool
 * gets every byte back, and the options do what they say. Also under
 * jemalloc and tcmalloc (Debian's), where their own mmap() calls are what
 * the shim sees.
 *
 * Dynamically linked (a preload needs the dynamic loader). The binary
 * re-executes itself under /som/bin/somrun (or $SOMRUN) when it does not
 * run under it already; "helper" runs one scenario for a test that needs
 * its own somrun options.
 */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "kselftest_harness.h"
#include "som_util.h"

/*
 * Time limits. The harness kills a test after 30 s unless it says
 * otherwise. On the debug tier (KASAN and lockdep under QEMU TCG, 3 to 5
 * times the stock tier here, 20 times at worst) each test that runs in
 * this process took at most 0.5 s; four threads' churn 3 s; the tests
 * that start programs under somrun (each an exec through the dynamic
 * loader) 1 to 6 s, the usage errors (twenty somrun runs) the most. A
 * busy 2-core host slows that a few times more: those get SLOW_TIMEOUT,
 * twenty times the slowest, and the rest keep the harness's default (at
 * least 30 s, 60 times theirs). empty_pool_falls_back_or_fails once ran
 * out of its 30 s there: it faulted 3 GiB of ordinary memory (the
 * fallback of a mapping larger than the whole pool); it now empties the
 * pool with a reservation of its own and falls back with 8 MiB.
 */
#define SLOW_TIMEOUT	120

#if defined(__aarch64__)
#define LIBDIR		"/usr/lib/aarch64-linux-gnu"
#else
#define LIBDIR		"/usr/lib/x86_64-linux-gnu"
#endif
#define JEMALLOC	LIBDIR "/libjemalloc.so.2"
#define TCMALLOC	LIBDIR "/libtcmalloc_minimal.so.4"

static const char *self_exe;

static const char *somrun_path(void)
{
	const char *p = getenv("SOMRUN");

	return p && *p ? p : "/som/bin/somrun";
}

/* Is @p som memory? SOM_IOC_MAPPING answers for any som mapping. */
static int on_som(const void *p, struct som_mapping *out)
{
	struct som_mapping m;
	int fd = open(SOM_DEV, O_RDWR), rc;

	if (fd < 0)
		return 0;
	memset(&m, 0, sizeof(m));
	m.addr = (uintptr_t)p;
	rc = ioctl(fd, SOM_IOC_MAPPING, &m);
	close(fd);
	if (!rc && out)
		*out = m;
	return !rc;
}

static long long pool_used(void)
{
	return som_stat("total_bytes") - som_stat("free_bytes") -
	       som_stat("reserved_bytes");
}

static void *map_anon(size_t len)
{
	return mmap(NULL, len, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
}

/*
 * Write one byte in every 4 KiB page: every page faulted, at a fraction
 * of memset()'s cost under TCG.
 */
static void touch_pages(char *p, size_t len)
{
	size_t i;

	for (i = 0; i < len; i += 4096)
		p[i] = 1;
}

/* Run a command line with sh, return its exit status; output in @out. */
static int run(const char *cmd, char *out, size_t size)
{
	FILE *f = popen(cmd, "r");
	char *line, *next;
	size_t n = 0;
	int st;

	if (!f)
		return -1;
	if (out) {
		n = fread(out, 1, size - 1, f);
		out[n] = 0;
	} else {
		char buf[4096];

		while (fread(buf, 1, sizeof(buf), f) > 0)
			;
	}
	st = pclose(f);
	/* The output as TAP comments, each line. */
	for (line = out; out && n && *line; line = next) {
		next = line + strcspn(line, "\n");
		fprintf(stderr, "# %.*s\n", (int)(next - line), line);
		next += *next == '\n';
	}
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

FIXTURE(somrun) {
	int dev;
	long long free_start;
};

FIXTURE_SETUP(somrun)
{
	SOM_OPEN_DEV(self->dev);
	if (!getenv("LD_PRELOAD") || !strstr(getenv("LD_PRELOAD"), "libsomrun"))
		SKIP(return, "not running under somrun");
	self->free_start = som_stat("free_bytes");
}

FIXTURE_TEARDOWN(somrun)
{
	if (self->dev < 0)
		return;
	/* Freed malloc() blocks the shim keeps, back to the pool. */
	malloc_trim(0);
	EXPECT_EQ(self->free_start, som_stat("free_bytes"));
	EXPECT_EQ(0, som_stat("reserved_bytes"));
	close(self->dev);
}

TEST_F(somrun, large_anonymous_mappings_are_som_small_ones_are_not)
{
	struct som_mapping m;
	char *p = map_anon(4 * MiB), *q = map_anon(1 * MiB), *r, *s;

	ASSERT_NE(MAP_FAILED, p);
	ASSERT_NE(MAP_FAILED, q);
	memset(p, 0x5a, 4 * MiB);
	EXPECT_TRUE(on_som(p + 3 * MiB, &m));
	EXPECT_EQ(2 * MiB, m.page_size);
	EXPECT_EQ(4 * MiB, som_stat("total_bytes") - som_stat("free_bytes"));
	EXPECT_FALSE(on_som(q, NULL));

	/* Reservations, stacks and shared memory stay ordinary. */
	r = mmap(NULL, 4 * MiB, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	s = mmap(NULL, 4 * MiB, PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, r);
	ASSERT_NE(MAP_FAILED, s);
	EXPECT_FALSE(on_som(r, NULL));
	s[0] = 1;
	EXPECT_FALSE(on_som(s, NULL));
	EXPECT_EQ(0, munmap(r, 4 * MiB));
	EXPECT_EQ(0, munmap(s, 4 * MiB));

	EXPECT_EQ(0x5a, p[4 * MiB - 1]);
	EXPECT_EQ(0, munmap(p, 4 * MiB));
	EXPECT_EQ(0, munmap(q, 1 * MiB));
}

TEST_F(somrun, one_gib_mapping_gets_one_entry)
{
	struct som_mapping m;
	long long pud = som_stat("faults_pud");
	char *p = map_anon(GiB);

	ASSERT_NE(MAP_FAILED, p);
	ASSERT_EQ(0, (uintptr_t)p % GiB);
	touch_pages(p, GiB);
	ASSERT_TRUE(on_som(p + GiB / 2, &m));
	if (som_cpu_has_gbpages()) {
		EXPECT_EQ(GiB, m.page_size);
		EXPECT_EQ(1, som_stat("faults_pud") - pud);
	}
	EXPECT_EQ((long long)GiB, pool_used());
	EXPECT_EQ(0, munmap(p, GiB));
	EXPECT_EQ(0, pool_used());
}

#ifndef PR_THP_DISABLE_EXCEPT_ADVISED
#define PR_THP_DISABLE_EXCEPT_ADVISED	(1 << 1)
#endif

/*
 * prctl(PR_SET_THP_DISABLE), as redis sets it: where the kernel has the
 * milder form that spares MADV_HUGEPAGE VMAs (7.3), the shim asks for it
 * and a som GiB keeps its 1 GiB entry; elsewhere (6.12) the call goes
 * through and som maps 2 MiB from ->fault(). The program reads back what
 * it set either way.
 */
TEST_F(somrun, thp_disable_leaves_som_its_large_entries)
{
	struct som_mapping m;
	bool milder;
	char *p;

	/* The kernel's own answer, past the shim. */
	milder = !syscall(SYS_prctl, PR_SET_THP_DISABLE, 1UL,
			  (unsigned long)PR_THP_DISABLE_EXCEPT_ADVISED, 0UL, 0UL);
	ASSERT_EQ(0, syscall(SYS_prctl, PR_SET_THP_DISABLE, 0UL, 0UL, 0UL, 0UL));
	TH_LOG("the kernel %s PR_THP_DISABLE_EXCEPT_ADVISED",
	       milder ? "has" : "does not have");

	ASSERT_EQ(0, prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0));
	EXPECT_EQ(1, prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0));
	EXPECT_EQ(milder ? 1 | PR_THP_DISABLE_EXCEPT_ADVISED : 1,
		  syscall(SYS_prctl, PR_GET_THP_DISABLE, 0UL, 0UL, 0UL, 0UL));
	p = map_anon(GiB);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_EQ(0, (uintptr_t)p % GiB);
	touch_pages(p, GiB);
	ASSERT_TRUE(on_som(p + GiB / 2, &m));
	EXPECT_EQ(milder && som_cpu_has_gbpages() ? GiB : 2 * MiB,
		  m.page_size);
	EXPECT_EQ(0, munmap(p, GiB));

	EXPECT_EQ(0, prctl(PR_SET_THP_DISABLE, 0, 0, 0, 0));
	EXPECT_EQ(0, prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0));
}

TEST_F(somrun, munmap_of_a_piece_frees_its_memory)
{
	char *p = map_anon(8 * MiB);
	size_t i;

	ASSERT_NE(MAP_FAILED, p);
	ASSERT_EQ(0, (uintptr_t)p % (2 * MiB));
	for (i = 0; i < 8 * MiB; i += 4096)
		p[i] = (char)(i >> 12);
	EXPECT_EQ((long long)(8 * MiB), pool_used());
	/* The middle block goes back now, not when the rest goes. */
	ASSERT_EQ(0, munmap(p + 2 * MiB, 2 * MiB));
	EXPECT_EQ((long long)(6 * MiB), pool_used());
	for (i = 0; i < 8 * MiB; i += 4096) {
		if (i >= 2 * MiB && i < 4 * MiB)
			continue;
		if (p[i] != (char)(i >> 12))
			break;
	}
	EXPECT_EQ(8 * MiB, i);
	/* The head and then the tail; the file goes with its last piece. */
	ASSERT_EQ(0, munmap(p, 2 * MiB));
	EXPECT_EQ((long long)(4 * MiB), pool_used());
	ASSERT_EQ(0, munmap(p + 4 * MiB, 4 * MiB));
	EXPECT_EQ(0, pool_used());
}

TEST_F(somrun, dontneed_and_free_read_back_zeros)
{
	char *p = map_anon(6 * MiB);
	size_t i;

	ASSERT_NE(MAP_FAILED, p);
	memset(p, 0xab, 6 * MiB);
	ASSERT_EQ(0, madvise(p + 4096, 8192, MADV_DONTNEED));
	ASSERT_EQ(0, madvise(p + 2 * MiB, 2 * MiB, MADV_FREE));
	EXPECT_EQ((long long)(4 * MiB), pool_used());
	for (i = 0; i < 6 * MiB; i += 512) {
		char want = (i >= 4096 && i < 3 * 4096) ||
			    (i >= 2 * MiB && i < 4 * MiB) ? 0 : (char)0xab;

		if (p[i] != want)
			break;
	}
	EXPECT_EQ(6 * MiB, i);
	/* Hints succeed; a range with som and ordinary parts works too. */
	EXPECT_EQ(0, madvise(p, 6 * MiB, MADV_HUGEPAGE));
	EXPECT_EQ(0, madvise(p, 6 * MiB, MADV_WILLNEED));
	EXPECT_EQ(-1, madvise(p, 6 * MiB, 12345));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(0, munmap(p, 6 * MiB));
}

/* A 2 MiB aligned som block at @p, and ordinary memory right after it? */
static int one_block_then_ordinary(const char *p)
{
	return !((uintptr_t)p % (2 * MiB)) && on_som(p, NULL) &&
	       on_som(p + 2 * MiB - 1, NULL) && !on_som(p + 2 * MiB, NULL);
}

/*
 * A mapping that does not end on a 2 MiB boundary: its whole blocks are
 * som memory, the rest ordinary memory right after them, and the memory
 * calls treat the two as the one anonymous mapping they stand for.
 */
TEST_F(somrun, odd_length_mapping_has_an_ordinary_tail)
{
	size_t len = 3 * MiB + 12 * KiB;
	char *p = map_anon(len), *q;
	int status;
	pid_t pid;

	ASSERT_NE(MAP_FAILED, p);
	EXPECT_TRUE(one_block_then_ordinary(p));
	touch_pages(p, len);
	EXPECT_EQ((long long)(2 * MiB), pool_used());

	EXPECT_EQ(0, mprotect(p, len, PROT_READ));
	EXPECT_EQ(SIGSEGV, som_probe(p + len - 1, 1));
	EXPECT_EQ(0, mprotect(p, len, PROT_READ | PROT_WRITE));
	som_fill(p, 0, len, 4096, 31);
	EXPECT_EQ(0, madvise(p, len, MADV_DONTNEED));
	EXPECT_EQ(-1, som_check_zero(p, len, 4096));
	som_fill(p, 0, len, 4096, 32);
	/* Two protections are two VMAs to the kernel: mremap() refuses. */
	EXPECT_EQ(0, mprotect(p + 2 * MiB, len - 2 * MiB, PROT_READ));
	EXPECT_EQ(MAP_FAILED, mremap(p, len, 6 * MiB, MREMAP_MAYMOVE));
	EXPECT_EQ(EFAULT, errno);
	EXPECT_EQ(0, mprotect(p, len, PROT_READ | PROT_WRITE));
	/* MADV_REMOVE: EINVAL on private anonymous memory, nothing done. */
	EXPECT_EQ(-1, madvise(p, len, MADV_REMOVE));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, som_check(p, 0, len, 4096, 32));

	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0)
		_exit(som_check(p, 0, len, 4096, 32) != -1);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, status);

	q = mremap(p, len, 6 * MiB, MREMAP_MAYMOVE);
	ASSERT_NE(MAP_FAILED, q);
	EXPECT_EQ(-1, som_check(q, 0, len, 4096, 32));
	EXPECT_TRUE(on_som(q + 5 * MiB, NULL));
	EXPECT_EQ(0, munmap(q, 6 * MiB));
	EXPECT_EQ(0, pool_used());
}

TEST_F(somrun, mprotect_protects_and_keeps_data)
{
	char *p = map_anon(4 * MiB);

	ASSERT_NE(MAP_FAILED, p);
	memset(p, 7, 4 * MiB);
	ASSERT_EQ(0, mprotect(p + 2 * MiB, 2 * MiB, PROT_READ));
	EXPECT_EQ(SIGSEGV, som_probe(p + 3 * MiB, 1));
	EXPECT_EQ(0, som_probe(p + 3 * MiB, 0));
	EXPECT_EQ(0, som_probe(p + 1 * MiB, 1));
	ASSERT_EQ(0, mprotect(p, 4 * MiB, PROT_NONE));
	EXPECT_EQ(SIGSEGV, som_probe(p, 0));
	ASSERT_EQ(0, mprotect(p, 4 * MiB, PROT_READ | PROT_WRITE));
	EXPECT_EQ(7, p[3 * MiB]);
	EXPECT_EQ(1, p[1 * MiB]);
	EXPECT_EQ(0, munmap(p, 4 * MiB));
}

TEST_F(somrun, mremap_grows_shrinks_and_moves)
{
	char *p = map_anon(4 * MiB), *q, *r, *t;
	size_t i;

	ASSERT_NE(MAP_FAILED, p);
	for (i = 0; i < 4 * MiB; i += 8)
		*(uint64_t *)(p + i) = som_pattern(1, i);
	/* Growing in place is impossible for som; moving works. */
	EXPECT_EQ(MAP_FAILED, mremap(p, 4 * MiB, 8 * MiB, 0));
	EXPECT_EQ(ENOMEM, errno);
	q = mremap(p, 4 * MiB, 8 * MiB, MREMAP_MAYMOVE);
	ASSERT_NE(MAP_FAILED, q);
	EXPECT_TRUE(on_som(q + 7 * MiB, NULL));
	EXPECT_EQ(-1, som_check(q, 0, 4 * MiB, 8, 1));
	/* Copied, not more: reading the new part allocates it (som). */
	EXPECT_EQ((long long)(4 * MiB), pool_used());
	EXPECT_EQ(-1, som_check_zero(q + 4 * MiB, 4 * MiB, 4096));
	EXPECT_EQ((long long)(8 * MiB), pool_used());

	/* Shrinking gives the tail's memory back. */
	r = mremap(q, 8 * MiB, 2 * MiB, 0);
	ASSERT_EQ(q, r);
	EXPECT_EQ((long long)(2 * MiB), pool_used());

	/* Moving to a fixed place keeps the data and the som mapping. */
	t = mmap(NULL, 4 * MiB, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, t);
	r = mremap(q, 2 * MiB, 2 * MiB, MREMAP_MAYMOVE | MREMAP_FIXED,
		   t + 2 * MiB);
	ASSERT_EQ(t + 2 * MiB, r);
	EXPECT_TRUE(on_som(r, NULL));
	EXPECT_EQ(-1, som_check(r, 0, 2 * MiB, 8, 1));
	EXPECT_EQ(0, munmap(t, 4 * MiB));
	EXPECT_EQ(0, pool_used());
}

/*
 * MAP_FIXED only inside address space this test reserved (PROT_NONE, which
 * stays ordinary memory) and so owns: first a som mapping over part of
 * the reservation, then mappings over pieces of that.
 */
TEST_F(somrun, map_fixed_over_som_frees_it)
{
	char *area, *p, *q;

	area = mmap(NULL, 8 * MiB, PROT_NONE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	ASSERT_NE(MAP_FAILED, area);
	EXPECT_FALSE(on_som(area, NULL));
	p = (char *)(((uintptr_t)area + 2 * MiB - 1) & ~(2 * MiB - 1));
	q = mmap(p, 6 * MiB, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	ASSERT_EQ(p, q);
	ASSERT_TRUE(on_som(p, NULL));
	memset(p, 3, 6 * MiB);
	EXPECT_EQ((long long)(6 * MiB), pool_used());
	/* An ordinary mapping (read-only) over the first block. */
	q = mmap(p, 2 * MiB, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
		 -1, 0);
	ASSERT_EQ(p, q);
	EXPECT_FALSE(on_som(p, NULL));
	EXPECT_EQ(0, p[0]);
	EXPECT_EQ((long long)(4 * MiB), pool_used());
	/* A new som mapping over the second: zeros, its own memory. */
	q = mmap(p + 2 * MiB, 2 * MiB, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	ASSERT_EQ(p + 2 * MiB, q);
	EXPECT_TRUE(on_som(q, NULL));
	EXPECT_EQ(2 * MiB, pool_used());
	EXPECT_EQ(0, q[0]);
	EXPECT_EQ(3, p[5 * MiB]);
	EXPECT_EQ((long long)(4 * MiB), pool_used());
	EXPECT_EQ(0, munmap(area, 8 * MiB));
	EXPECT_EQ(0, pool_used());
}

TEST_F(somrun, fork_gives_the_child_a_copy)
{
	char *p = map_anon(8 * MiB), *w = map_anon(2 * MiB);
	int status;
	pid_t pid;

	ASSERT_NE(MAP_FAILED, p);
	ASSERT_NE(MAP_FAILED, w);
	som_fill(p, 0, 4 * MiB, 8, 2);		/* the rest is never touched */
	memset(w, 9, 2 * MiB);
	ASSERT_EQ(0, madvise(w, 2 * MiB, MADV_WIPEONFORK));
	ASSERT_EQ(0, mprotect(p + 6 * MiB, 2 * MiB, PROT_READ));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int bad = 0;

		bad |= som_check(p, 0, 4 * MiB, 8, 2) != -1;
		bad |= som_check_zero(p + 4 * MiB, 4 * MiB, 4096) != -1;
		bad |= som_check_zero(w, 2 * MiB, 4096) != -1;
		bad |= on_som(p, NULL);			/* ordinary memory */
		bad |= som_probe(p + 7 * MiB, 1) != SIGSEGV;
		memset(p, 0, 4 * MiB);			/* the parent's stays */
		_exit(bad);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	EXPECT_EQ(-1, som_check(p, 0, 4 * MiB, 8, 2));
	EXPECT_EQ(9, w[0]);
	/* The untouched blocks were not allocated by the copy. */
	EXPECT_EQ((long long)(6 * MiB), pool_used());
	EXPECT_EQ(0, munmap(p, 8 * MiB));
	EXPECT_EQ(0, munmap(w, 2 * MiB));
}

TEST_F(somrun, large_malloc_is_som)
{
	char *p = malloc(8 * MiB), *q, *small = malloc(1000);
	size_t i;

	ASSERT_NE(NULL, p);
	ASSERT_NE(NULL, small);
	/*
	 * This program runs on glibc's malloc, which somrun answers: an
	 * 8 MiB block that is not som memory is somrun failing.
	 */
	ASSERT_TRUE(on_som(p, NULL))
		TH_LOG("an 8 MiB malloc() under somrun is not som memory");
	EXPECT_GE(malloc_usable_size(p), 8 * MiB);
	EXPECT_FALSE(on_som(small, NULL));
	for (i = 0; i < 8 * MiB; i += 8)
		*(uint64_t *)(p + i) = som_pattern(3, i);
	q = realloc(p, 20 * MiB);
	ASSERT_NE(NULL, q);
	EXPECT_TRUE(on_som(q + 19 * MiB, NULL));
	EXPECT_EQ(-1, som_check(q, 0, 8 * MiB, 8, 3));
	p = realloc(q, 3 * MiB);	/* shrinks in place */
	EXPECT_EQ(q, p);
	EXPECT_EQ(1, malloc_trim(0));	/* the 8 MiB block realloc() freed */
	EXPECT_EQ((long long)(4 * MiB), pool_used());
	q = realloc(p, 4000);		/* back to the allocator */
	ASSERT_NE(NULL, q);
	EXPECT_FALSE(on_som(q, NULL));
	EXPECT_EQ(-1, som_check(q, 0, 4000, 8, 3));
	malloc_trim(0);
	EXPECT_EQ(0, pool_used());
	free(q);

	p = calloc(3, 2 * MiB);
	ASSERT_NE(NULL, p);
	EXPECT_TRUE(on_som(p, NULL));
	EXPECT_EQ(-1, som_check_zero(p, 6 * MiB, 4096));
	free(p);
	ASSERT_EQ(0, posix_memalign((void **)&p, 1 * MiB, 5 * MiB));
	EXPECT_EQ(0, (uintptr_t)p % MiB);
	EXPECT_TRUE(on_som(p, NULL));
	free(p);
	p = aligned_alloc(4096, 2 * MiB);
	EXPECT_TRUE(on_som(p, NULL));
	free(p);
	malloc_trim(0);
	EXPECT_EQ(0, pool_used());
	free(small);
}

/*
 * A block's whole 2 MiB blocks are som memory and the rest of it is
 * ordinary memory right after them: a touched 3 MiB block holds one som
 * block, not two. A freed block is kept and taken again by the next
 * malloc() that fits, calloc() zeroes what it takes, a child of fork()
 * gets zeros in its som part (nothing copied) and can use it, and
 * malloc_trim() gives it back to the pool.
 */
TEST_F(somrun, tails_are_ordinary_and_freed_blocks_are_reused)
{
	char *p = malloc(3 * MiB), *q;
	int status;
	pid_t pid;

	ASSERT_NE(NULL, p);
	EXPECT_TRUE(one_block_then_ordinary(p));
	EXPECT_EQ(3 * MiB, malloc_usable_size(p));
	som_fill(p, 0, 3 * MiB, 4096, 21);
	EXPECT_EQ(-1, som_check(p, 0, 3 * MiB, 4096, 21));
	EXPECT_EQ((long long)(2 * MiB), pool_used());
	free(p);
	EXPECT_EQ((long long)(2 * MiB), pool_used());	/* kept */

	q = malloc(3 * MiB - 8192);	/* fits: the same block */
	EXPECT_EQ(p, q);
	EXPECT_EQ((long long)(2 * MiB), pool_used());
	free(q);
	q = calloc(1, 3 * MiB - 4096);
	EXPECT_EQ(p, q);
	EXPECT_EQ(-1, som_check_zero(q, 3 * MiB - 4096, 512));
	memset(q, 0x5a, 3 * MiB - 4096);
	free(q);

	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		char *c = malloc(3 * MiB);
		/* The tail is ordinary memory: the kernel copied it. */
		int bad = c != p || som_check_zero(c, 2 * MiB, 4096) != -1;

		memset(c, 1, 3 * MiB);
		free(c);
		_exit(bad);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, status);

	q = malloc(5 * MiB);		/* two som blocks: not this one */
	ASSERT_NE(NULL, q);
	EXPECT_NE(p, q);
	free(q);
	EXPECT_EQ(1, malloc_trim(0));
	EXPECT_EQ(0, pool_used());
}

TEST_F(somrun, malloc_blocks_survive_fork_as_ordinary_memory)
{
	char *p = malloc(4 * MiB);
	int status;
	pid_t pid;

	ASSERT_NE(NULL, p);
	memset(p, 0x11, 4 * MiB);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int bad = p[4 * MiB - 1] != 0x11;
		char *q = realloc(p, 6 * MiB);

		bad |= !q || q[0] != 0x11;
		free(q);
		_exit(bad);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, status);
	free(p);
}

static void *thread_churn(void *arg)
{
	uint64_t seed = (uintptr_t)arg;
	long bad = 0;
	int i;

	for (i = 0; i < 40; i++) {
		size_t len = (2 + som_rand(&seed) % 6) * MiB;
		char *p = i & 1 ? map_anon(len) : malloc(len);

		if (!p || p == MAP_FAILED)
			return (void *)1L;
		som_fill(p, 0, len, 4096, seed);
		if (som_check(p, 0, len, 4096, seed) != -1)
			bad++;
		if (i & 1)
			munmap(p, len);
		else
			free(p);
	}
	return (void *)bad;
}

TEST_F_TIMEOUT(somrun, threads_map_and_free_concurrently, SLOW_TIMEOUT)
{
	pthread_t th[4];
	void *ret;
	int i;

	for (i = 0; i < 4; i++)
		ASSERT_EQ(0, pthread_create(&th[i], NULL, thread_churn,
					    (void *)(uintptr_t)(i + 1)));
	for (i = 0; i < 4; i++) {
		ASSERT_EQ(0, pthread_join(th[i], &ret));
		EXPECT_EQ(NULL, ret);
	}
	malloc_trim(0);
	EXPECT_EQ(0, pool_used());
}

/* The helper's scenarios, each run by its own somrun command line. */
static int helper(int argc, char **argv)
{
	const char *what = argv[2];

	if (!strcmp(what, "map") && argc == 4) {
		size_t len = strtoull(argv[3], NULL, 0);
		char *p = map_anon(len);

		/* 3: not 2, which is somrun's own usage error. */
		if (p == MAP_FAILED) {
			printf("map failed: %s\n", strerror(errno));
			return 3;
		}
		touch_pages(p, len);
		printf("som=%d\n", on_som(p, NULL));
		return 0;	/* the summary sees it still mapped */
	}
	if (!strcmp(what, "retitle")) {
		/*
		 * What setproctitle() emulations (redis, nginx, postgres) do:
		 * the environment's strings are written over.
		 */
		char **e;

		for (e = environ; *e; e++)
			memset(*e, 'x', strlen(*e));
		return 0;
	}
	if (!strcmp(what, "reuse")) {
		/* Twenty blocks of 3 MiB, one at a time. */
		int i;

		for (i = 0; i < 20; i++) {
			char *p = malloc(3 * MiB);

			if (!p)
				return 3;
			touch_pages(p, 3 * MiB);
			free(p);
		}
		return 0;
	}
	if (!strcmp(what, "forkzero")) {
		char *p = map_anon(4 * MiB);
		int status;
		pid_t pid;

		memset(p, 5, 4 * MiB);
		pid = fork();
		if (pid == 0)
			_exit(som_check_zero(p, 4 * MiB, 4096) != -1);
		waitpid(pid, &status, 0);
		return status != 0 || p[0] != 5;
	}
	if (!strcmp(what, "alloc")) {
		/* Whatever the allocator: data right, big blocks on som. */
		size_t sizes[] = { 100, 5000, 300 * KiB, 3 * MiB, 17 * MiB,
				   64 * MiB };
		char *blocks[6];
		int on = 0, bad = 0, status;
		size_t i;
		pid_t pid;

		for (i = 0; i < 6; i++) {
			blocks[i] = malloc(sizes[i]);
			if (!blocks[i])
				return 3;
			som_fill(blocks[i], 0, sizes[i] & ~7UL, 8, i);
		}
		on = on_som(blocks[5], NULL) && on_som(blocks[4], NULL);
		/*
		 * A child gets copies, and its allocator (whose own
		 * metadata may be som memory) keeps working in it.
		 */
		pid = fork();
		if (pid == 0) {
			char *q = malloc(5 * MiB);

			if (!q || som_check(blocks[5], 0, sizes[5] & ~7UL, 8,
					    5) != -1)
				_exit(1);
			memset(q, 1, 5 * MiB);
			free(q);
			free(blocks[3]);
			_exit(0);
		}
		if (pid < 0 || waitpid(pid, &status, 0) != pid || status)
			bad |= 4;
		blocks[4] = realloc(blocks[4], 40 * MiB);
		for (i = 0; i < 6; i++) {
			bad |= som_check(blocks[i], 0, sizes[i] & ~7UL, 8, i) != -1;
			free(blocks[i]);
		}
		printf("som=%d bad=%d\n", on, bad);
		return bad || !on;
	}
	return 127;
}

FIXTURE(somrun_cmd) {
	int dev;
	long long free_start;
	char out[4096];
};

FIXTURE_SETUP(somrun_cmd)
{
	SOM_OPEN_DEV(self->dev);
	if (access(somrun_path(), X_OK))
		SKIP(return, "no %s", somrun_path());
	self->free_start = som_stat("free_bytes");
}

FIXTURE_TEARDOWN(somrun_cmd)
{
	if (self->dev < 0)
		return;
	EXPECT_EQ(self->free_start, som_stat("free_bytes"));
	close(self->dev);
}

static char *cmd(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *cmd(const char *fmt, ...)
{
	static char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return buf;
}

TEST_F_TIMEOUT(somrun_cmd, threshold_is_honoured, SLOW_TIMEOUT)
{
	EXPECT_EQ(0, run(cmd("%s -t 8M -- %s helper map 4194304 2>&1",
			     somrun_path(), self_exe), self->out,
			 sizeof(self->out)));
	EXPECT_NE(NULL, strstr(self->out, "som=0"));
	EXPECT_EQ(0, run(cmd("%s --threshold=64K -- %s helper map 131072 2>&1",
			     somrun_path(), self_exe), self->out,
			 sizeof(self->out)));
	EXPECT_NE(NULL, strstr(self->out, "som=1"));
}

/*
 * The pool made (nearly) empty by a reservation of this process, so that
 * the helper's 8 MiB cannot fit. (Asking for more than the whole pool
 * instead makes the fallback touch gigabytes of ordinary memory, which
 * took longer than the harness's 30 s on the debug tier.)
 */
TEST_F_TIMEOUT(somrun_cmd, empty_pool_falls_back_or_fails, SLOW_TIMEOUT)
{
	long long left = 2 * MiB, hold = som_stat("free_bytes") - left;
	char *r;

	ASSERT_LE(2 * MiB, hold);
	r = mmap(NULL, hold, PROT_READ | PROT_WRITE, MAP_SHARED, self->dev, 0);
	ASSERT_NE(MAP_FAILED, r);
	ASSERT_EQ(left, som_stat("free_bytes"));

	/* The default: ordinary memory, one line of warning. */
	EXPECT_EQ(0, run(cmd("%s -- %s helper map %lu 2>&1", somrun_path(),
			     self_exe, 8 * MiB), self->out, sizeof(self->out)));
	EXPECT_NE(NULL, strstr(self->out, "som=0"));
	EXPECT_NE(NULL, strstr(self->out, "somrun: the som pool cannot hold"));
	/* --fail: mmap() fails with ENOMEM. */
	EXPECT_EQ(3, run(cmd("%s --fail -- %s helper map %lu 2>&1",
			     somrun_path(), self_exe, 8 * MiB), self->out,
			 sizeof(self->out)));
	EXPECT_NE(NULL, strstr(self->out, "Cannot allocate memory"));
	EXPECT_EQ(0, munmap(r, hold));
}

/* The summary counts maps and reuses; --malloc-cache=0 keeps nothing. */
TEST_F_TIMEOUT(somrun_cmd, malloc_cache_reuses_freed_blocks, SLOW_TIMEOUT)
{
	EXPECT_EQ(0, run(cmd("%s -s -- %s helper reuse 2>&1", somrun_path(),
			     self_exe), self->out, sizeof(self->out)));
	EXPECT_NE(NULL, strstr(self->out, " malloc_maps=1 malloc_reused=19 "));
	EXPECT_EQ(0, run(cmd("%s -s --malloc-cache=0 -- %s helper reuse 2>&1",
			     somrun_path(), self_exe), self->out,
			 sizeof(self->out)));
	EXPECT_NE(NULL, strstr(self->out, " malloc_maps=20 malloc_reused=0 "));
}

TEST_F_TIMEOUT(somrun_cmd, fork_zero_gives_zeros, SLOW_TIMEOUT)
{
	EXPECT_EQ(0, run(cmd("%s --fork=zero -- %s helper forkzero 2>&1",
			     somrun_path(), self_exe), self->out,
			 sizeof(self->out)));
}

TEST_F_TIMEOUT(somrun_cmd, summary_reports_entries, SLOW_TIMEOUT)
{
	EXPECT_EQ(0, run(cmd("%s -s -- %s helper map %lu 2>&1", somrun_path(),
			     self_exe, GiB + 4 * MiB), self->out,
			 sizeof(self->out)));
	EXPECT_NE(NULL, strstr(self->out, "som=1"));
	if (som_cpu_has_gbpages())
		EXPECT_NE(NULL, strstr(self->out, "entries_1g=1 entries_2m=2 entries_4k=0"));
	EXPECT_NE(NULL, strstr(self->out, "som_bytes=1077936128"));
}

/*
 * The summary goes where it was asked to, whatever the program did to its
 * environment.
 */
TEST_F_TIMEOUT(somrun_cmd, summary_survives_a_rewritten_environment,
	       SLOW_TIMEOUT)
{
	const char *path = "/tmp/som_run_test.summary";
	int fd;

	unlink(path);
	EXPECT_EQ(0, run(cmd("%s --summary=%s -- %s helper retitle 2>&1",
			     somrun_path(), path, self_exe), self->out,
			 sizeof(self->out)));
	fd = open(path, O_RDONLY);
	ASSERT_LE(0, fd);
	memset(self->out, 0, sizeof(self->out));
	EXPECT_LT(0, read(fd, self->out, sizeof(self->out) - 1));
	close(fd);
	EXPECT_NE(NULL, strstr(self->out, "somrun: summary pid="));
	unlink(path);
}

/*
 * Every bad option is refused before the program runs (a marker file the
 * program would create stays absent), with exit status 2; a missing
 * program is 127, as in a shell.
 */
TEST_F_TIMEOUT(somrun_cmd, bad_usage_and_missing_program, SLOW_TIMEOUT)
{
	static const char *const bad[] = {
		"", "--", "-t 8X --", "-t 0 --", "--threshold= --",
		"-p bogus --", "--policy=preferred:0-1 --",
		"--policy=interleave: --", "--policy=bind:1024 --",
		"--policy=local:0 --", "--fork=maybe --", "--malloc=sometimes --",
		"--summary= --", "--no-such-option --", "-x --",
		"--malloc-cache=lots --", "-t",
	};
	const char *mark = "/tmp/som_run_test.ran";
	unsigned int i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		unlink(mark);
		EXPECT_EQ(2, run(cmd("%s %s%s 2>&1", somrun_path(), bad[i],
				     strlen(bad[i]) > 2 ? " touch /tmp/som_run_test.ran" : ""),
				 self->out, sizeof(self->out)))
			TH_LOG("somrun %s", bad[i]);
		EXPECT_NE(0, access(mark, F_OK))
			TH_LOG("somrun %s ran the program", bad[i]);
	}
	EXPECT_NE(NULL, strstr(self->out, "somrun: -t: needs a value"));
	EXPECT_EQ(2, run(cmd("%s -p bogus -- true 2>&1", somrun_path()),
			 self->out, sizeof(self->out)));
	EXPECT_NE(NULL, strstr(self->out, "--policy=bogus: "));

	/* Good values of the same options run the program. */
	EXPECT_EQ(0, run(cmd("%s -t 0x200000 -p interleave:0 --fork=zero --malloc=off --malloc-cache=0 -s/dev/null -- touch %s 2>&1",
			     somrun_path(), mark), self->out,
			 sizeof(self->out)));
	EXPECT_EQ(0, access(mark, F_OK));
	unlink(mark);

	/* --help and --version: standard output, exit 0. */
	EXPECT_EQ(0, run(cmd("%s --help 2>/dev/null", somrun_path()),
			 self->out, sizeof(self->out)));
	EXPECT_NE(NULL, strstr(self->out, "usage: somrun"));
	EXPECT_EQ(0, run(cmd("%s --version 2>/dev/null", somrun_path()),
			 self->out, sizeof(self->out)));
	EXPECT_EQ(0, strncmp(self->out, "somrun (som) ", 13));

	EXPECT_EQ(127, run(cmd("%s -- /no/such/program 2>&1", somrun_path()),
			   self->out, sizeof(self->out)));
	EXPECT_NE(NULL, strstr(self->out, "No such file"));
	EXPECT_EQ(126, run(cmd("%s -- /tmp 2>&1", somrun_path()),
			   self->out, sizeof(self->out)));
}

FIXTURE(allocator) {
	int dev;
	long long free_start;
	char out[4096];
};

FIXTURE_VARIANT(allocator) {
	const char *preload;
};

FIXTURE_VARIANT_ADD(allocator, glibc) { .preload = "" };
FIXTURE_VARIANT_ADD(allocator, jemalloc) { .preload = JEMALLOC };
FIXTURE_VARIANT_ADD(allocator, tcmalloc) { .preload = TCMALLOC };

FIXTURE_SETUP(allocator)
{
	SOM_OPEN_DEV(self->dev);
	if (access(somrun_path(), X_OK))
		SKIP(return, "no %s", somrun_path());
	if (*variant->preload && access(variant->preload, R_OK))
		SKIP(return, "no %s", variant->preload);
	self->free_start = som_stat("free_bytes");
}

FIXTURE_TEARDOWN(allocator)
{
	if (self->dev < 0)
		return;
	EXPECT_EQ(self->free_start, som_stat("free_bytes"));
	close(self->dev);
}

TEST_F_TIMEOUT(allocator, big_blocks_land_on_som, SLOW_TIMEOUT)
{
	EXPECT_EQ(0, run(cmd("LD_PRELOAD=%s %s -s -- %s helper alloc 2>&1",
			     variant->preload, somrun_path(), self_exe),
			 self->out, sizeof(self->out)));
	EXPECT_NE(NULL, strstr(self->out, "som=1 bad=0"));
	/*
	 * jemalloc, and tcmalloc with the TCMALLOC_SKIP_SBRK=1 somrun sets,
	 * map their heaps with mmap(), which the shim answers: it serves no
	 * malloc() itself. Under glibc it serves the large ones.
	 */
	if (*variant->preload) {
		EXPECT_NE(NULL, strstr(self->out, " malloc_maps=0 "));
	} else {
		EXPECT_EQ(NULL, strstr(self->out, " malloc_maps=0 "));
	}
}

int main(int argc, char **argv)
{
	const char *pre = getenv("LD_PRELOAD");
	static char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	self_exe = n > 0 ? (exe[n] = 0, exe) : argv[0];
	if (argc >= 3 && !strcmp(argv[1], "helper"))
		return helper(argc, argv);
	/* Under somrun, unless it is missing (the tests then skip). */
	if ((!pre || !strstr(pre, "libsomrun")) && !access(somrun_path(), X_OK) &&
	    !access(SOM_DEV, F_OK)) {
		char **args = calloc(argc + 3, sizeof(*args));

		args[0] = (char *)somrun_path();
		args[1] = "--";
		args[2] = (char *)self_exe;
		memcpy(args + 3, argv + 1, (argc - 1) * sizeof(*args));
		execv(args[0], args);
		perror("somrun");
		return 1;
	}
	return test_harness_run(argc, argv);
}
