/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The differential conformance runner: one sequence of memory calls, run
 * in a fresh process on each backing (anonymous memory, a memfd, a som
 * file, /dev/som), writes what a program can observe as key = value
 * lines; the runner compares the four transcripts against the
 * compatibility matrix in Documentation/compat-matrix.md. Included once,
 * by som_conformance_test.c, after the kselftest harness.
 */
#ifndef SOM_CONFORMANCE_H
#define SOM_CONFORMANCE_H

#include <stdarg.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/utsname.h>

#include "kselftest_harness.h"
#include "som_util.h"

enum conf_backing {
	CONF_ANON,
	CONF_MEMFD,
	CONF_SOMFILE,
	CONF_SOMDEV,
	CONF_NR_BACKINGS,
};

#define CONF_MAX_NOTES	256
#define CONF_KEY_LEN	64
#define CONF_VAL_LEN	48

/* One transcript, in memory shared with the process that writes it. */
struct conf_log {
	int nr;
	int done;
	struct {
		char key[CONF_KEY_LEN];
		char val[CONF_VAL_LEN];
	} note[CONF_MAX_NOTES];
};

/* What a sequence works with. */
struct conf {
	enum conf_backing b;
	const char *seq;	/* key prefix */
	struct conf_log *log;
	int dev;		/* /dev/som, for som files */
	int fd;			/* the backing's fd, -1 for anonymous memory */
	char *base;		/* the sequence's main mapping */
	size_t len;
};

/* Generated from Documentation/compat-matrix.md: const char conf_matrix_md[] */
#include "compat_matrix.h"

static const char *const conf_backing_name[CONF_NR_BACKINGS] = {
	[CONF_ANON] = "anon",
	[CONF_MEMFD] = "memfd",
	[CONF_SOMFILE] = "som file",
	[CONF_SOMDEV] = "/dev/som",
};

/* ---- transcript ---- */

static void conf_note(struct conf *c, const char *step, const char *fmt, ...)
{
	struct conf_log *log = c->log;
	va_list ap;

	if (log->nr >= CONF_MAX_NOTES)
		return;
	snprintf(log->note[log->nr].key, CONF_KEY_LEN, "%s.%s", c->seq, step);
	va_start(ap, fmt);
	vsnprintf(log->note[log->nr].val, CONF_VAL_LEN, fmt, ap);
	va_end(ap);
	log->nr++;
}

/* A call's result: "0" (or the value), or the errno's name. */
static void conf_ret(struct conf *c, const char *step, long ret)
{
	if (ret == -1)
		conf_note(c, step, "%s", strerrorname_np(errno) ?: "E?");
	else
		conf_note(c, step, "%ld", ret);
}

/* An address-returning call's result: "ok" or the errno's name. */
static void conf_ret_addr(struct conf *c, const char *step, void *ret,
			  void *want)
{
	if (ret == MAP_FAILED)
		conf_ret(c, step, -1);
	else
		conf_note(c, step, ret == want || !want ? "ok" : "moved");
}

/* ---- memory access with signals caught ---- */

/* "ok", or the signal and where it hit relative to @addr. */
static void conf_signal(struct conf *c, const char *step, char *addr)
{
	const char *sig = som_probe_sig == SIGSEGV ? "SIGSEGV" :
			  som_probe_sig == SIGBUS ? "SIGBUS" : "signal";

	if ((char *)som_probe_addr == addr)
		conf_note(c, step, "%s", sig);
	else
		conf_note(c, step, "%s@%+ld", sig,
			  (long)((char *)som_probe_addr - addr));
}

static void conf_touch(struct conf *c, const char *step, size_t off,
		       int write)
{
	if (som_probe(c->base + off, write))
		conf_signal(c, step, c->base + off);
	else
		conf_note(c, step, "ok");
}

/*
 * Data is written and checked at the first and last word of one page every
 * 64 KiB, counted from the start of the range: touching every page would
 * make anonymous and memfd runs slow under TCG without observing more.
 */
#define CONF_STRIDE	(64 * KiB)
static void conf_catch(struct sigaction *old)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = som_probe_handler;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	sigaction(SIGSEGV, &sa, &old[0]);
	sigaction(SIGBUS, &sa, &old[1]);
	som_probe_sig = 0;
	som_probe_addr = NULL;
}

static void conf_uncatch(struct sigaction *old)
{
	sigaction(SIGSEGV, &old[0], NULL);
	sigaction(SIGBUS, &old[1], NULL);
}

/*
 * Write the pattern of @seed to the first and last word of each sampled
 * page of [off, off + len) of the mapping at @p.
 */
static void conf_fill_at(struct conf *c, const char *step, char *p,
			 size_t off, size_t len, uint64_t seed)
{
	size_t o;
	struct sigaction old[2];
	volatile size_t at = off;

	conf_catch(old);
	if (!sigsetjmp(som_probe_env, 1)) {
		for (o = off; o < off + len; o += CONF_STRIDE) {
			at = o;
			*(volatile uint64_t *)(p + o) = som_pattern(seed, o);
			at = o + 4088;
			*(volatile uint64_t *)(p + o + 4088) =
				som_pattern(seed, o + 4088);
		}
	}
	conf_uncatch(old);
	if (som_probe_sig)
		conf_signal(c, step, p + at);
	else
		conf_note(c, step, "ok");
}

static void conf_fill(struct conf *c, const char *step, size_t off,
		      size_t len, uint64_t seed)
{
	conf_fill_at(c, step, c->base, off, len, seed);
}

/*
 * What the sampled words of [off, off + len) at @p hold: "data" (the
 * pattern of @seed), "zero", "mixed", or the signal reading them raised.
 */
static void conf_data_at(struct conf *c, const char *step, char *p,
			 size_t off, size_t len, uint64_t seed)
{
	size_t o, i, nr_data = 0, nr_zero = 0, nr = 0;
	struct sigaction old[2];
	volatile size_t at = off;
	uint64_t v;

	conf_catch(old);
	if (!sigsetjmp(som_probe_env, 1)) {
		for (o = off; o < off + len; o += CONF_STRIDE) {
			for (i = 0; i < 2; i++) {
				at = o + i * 4088;
				v = *(volatile uint64_t *)(p + at);
				nr++;
				nr_data += v == som_pattern(seed, at);
				nr_zero += !v;
			}
		}
	}
	conf_uncatch(old);
	if (som_probe_sig)
		conf_signal(c, step, p + at);
	else if (nr_data == nr)
		conf_note(c, step, "data");
	else if (nr_zero == nr)
		conf_note(c, step, "zero");
	else
		conf_note(c, step, "mixed");
}

static void conf_data(struct conf *c, const char *step, size_t off,
		      size_t len, uint64_t seed)
{
	conf_data_at(c, step, c->base, off, len, seed);
}

/* ---- backings ---- */

static int conf_open(struct conf *c, size_t size)
{
	switch (c->b) {
	case CONF_ANON:
		c->fd = -1;
		return 0;
	case CONF_MEMFD:
		c->fd = memfd_create("conformance", 0);
		if (c->fd < 0 || ftruncate(c->fd, size))
			return -1;
		return 0;
	case CONF_SOMFILE:
		c->fd = som_file(c->dev, size, 0);
		return c->fd < 0 ? -1 : 0;
	case CONF_SOMDEV:
		c->fd = open(SOM_DEV, O_RDWR);
		return c->fd < 0 ? -1 : 0;
	default:
		return -1;
	}
}

/*
 * mmap() as this backing does it. @addr, if given, must lie in an area the
 * sequence owns (conf_area()) and is mapped with MAP_FIXED, unless @flags
 * say MAP_FIXED_NOREPLACE: that is for mapping a hole the sequence made
 * itself with munmap(), which is no longer its own.
 */
static char *conf_mmap(struct conf *c, char *addr, size_t len, int prot,
		       int flags, off_t off)
{
	if (addr && !(flags & MAP_FIXED_NOREPLACE))
		flags |= MAP_FIXED;
	if (c->b == CONF_ANON)
		return mmap(addr, len, prot, flags | MAP_PRIVATE | MAP_ANONYMOUS,
			    -1, 0);
	return mmap(addr, len, prot, flags | MAP_SHARED, c->fd, off);
}

/*
 * @len bytes of address space, 1 GiB aligned, that the sequence owns: a
 * PROT_NONE reservation, for its MAP_FIXED and MREMAP_FIXED calls to land
 * in without clobbering what the process mapped elsewhere. It lasts until
 * the sequence's process exits, which is its teardown.
 */
static char *conf_area(size_t len)
{
	char *p = mmap(NULL, len + GiB, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	char *want;

	if (p == MAP_FAILED)
		return NULL;
	want = (char *)(((uintptr_t)p + GiB - 1) & ~(GiB - 1));
	if (want > p)
		munmap(p, want - p);
	munmap(want + len, p + GiB - want);
	return want;
}

/*
 * Open the backing with @size bytes and map all of it at the start of an
 * area of @area bytes (at least @size) that the sequence owns.
 */
static int conf_setup(struct conf *c, size_t size, size_t area)
{
	char *want = conf_area(area);

	if (!want || conf_open(c, size))
		return -1;
	c->base = conf_mmap(c, want, size, PROT_READ | PROT_WRITE, 0, 0);
	c->len = size;
	return c->base == MAP_FAILED ? -1 : 0;
}

/*
 * The backing's own way to give memory back: MADV_DONTNEED for anonymous
 * memory, a punched hole for files, MADV_DONTNEED for /dev/som (which
 * has no other).
 */
static long conf_free(struct conf *c, size_t off, size_t len)
{
	switch (c->b) {
	case CONF_MEMFD:
	case CONF_SOMFILE:
		return fallocate(c->fd, FALLOC_FL_PUNCH_HOLE |
				 FALLOC_FL_KEEP_SIZE, off, len);
	default:
		return madvise(c->base + off, len, MADV_DONTNEED);
	}
}

/* st_blocks in bytes, or -1 without an fd or for a device. */
static long long conf_blocks(struct conf *c)
{
	struct stat st;

	if (c->fd < 0 || fstat(c->fd, &st) || !S_ISREG(st.st_mode))
		return -1;
	return (long long)st.st_blocks * 512;
}

static void conf_blocks_delta(struct conf *c, const char *step,
			      long long before)
{
	long long now = conf_blocks(c);

	if (before < 0 || now < 0)
		conf_note(c, step, "n/a");
	else
		conf_note(c, step, "%+lld", now - before);
}

/* ---- the matrix ---- */

struct conf_row {
	char key[CONF_KEY_LEN];
	char val[CONF_NR_BACKINGS][CONF_VAL_LEN];
	int used;
};

static struct conf_row *conf_rows;
static int conf_nr_rows;

static char *conf_trim(char *s)
{
	char *e;

	while (*s == ' ' || *s == '`')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '`'))
		*--e = 0;
	return s;
}

#define CONF_MATRIX_SECTION	"## Differences the suite checks"

/* The running kernel's series, "major.minor" of uname's release: 6.12. */
static const char *conf_kernel_series(void)
{
	static char series[32];
	int major, minor;
	struct utsname u;

	if (!series[0] && !uname(&u) &&
	    sscanf(u.release, "%d.%d", &major, &minor) == 2)
		snprintf(series, sizeof(series), "%d.%d", major, minor);
	return series;
}

/*
 * Rows are the table lines of that section whose first cell is a `key`;
 * a `key` (6.12) holds only on kernels of that series.
 */
static void conf_parse_matrix(void)
{
	char *text = strdup(conf_matrix_md), *line, *save, *cell, *csave;
	struct conf_row *row;
	char *series;
	size_t len;
	int i, in_section = 0;

	conf_rows = calloc(1024, sizeof(*conf_rows));
	for (line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		if (!strncmp(line, "## ", 3))
			in_section = !strcmp(line, CONF_MATRIX_SECTION);
		if (!in_section || strncmp(line, "| `", 3) ||
		    conf_nr_rows >= 1024)
			continue;
		cell = strtok_r(line, "|", &csave);
		series = strstr(cell, "` (");
		if (series) {
			len = strlen(conf_kernel_series());
			if (strncmp(series + 3, conf_kernel_series(), len) ||
			    series[3 + len] != ')')
				continue;
			series[1] = 0;
		}
		row = &conf_rows[conf_nr_rows++];
		snprintf(row->key, CONF_KEY_LEN, "%s", conf_trim(cell));
		for (i = 0; i < CONF_NR_BACKINGS; i++) {
			cell = strtok_r(NULL, "|", &csave);
			snprintf(row->val[i], CONF_VAL_LEN, "%s",
				 cell ? conf_trim(cell) : "?");
		}
	}
	free(text);
}

static struct conf_row *conf_find_row(const char *key)
{
	int i;

	for (i = 0; i < conf_nr_rows; i++)
		if (!strcmp(conf_rows[i].key, key))
			return &conf_rows[i];
	return NULL;
}

/* ---- the runner ---- */

typedef void (*conf_body)(struct conf *c);

static struct conf_log *conf_run_one(enum conf_backing b, const char *seq,
				     conf_body body)
{
	struct conf_log *log = mmap(NULL, sizeof(*log), PROT_READ | PROT_WRITE,
				    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	pid_t pid;

	if (log == MAP_FAILED)
		return NULL;
	pid = fork();
	if (pid == 0) {
		struct conf c = { .b = b, .seq = seq, .log = log, .fd = -1 };

		c.dev = open(SOM_DEV, O_RDWR);
		body(&c);
		log->done = 1;
		_exit(0);
	}
	if (pid > 0)
		waitpid(pid, NULL, 0);
	return log;
}

static void conf_run(struct __test_metadata *_metadata, const char *seq,
		     conf_body body)
{
	struct conf_log *log[CONF_NR_BACKINGS];
	long long free_start = som_stat("free_bytes");
	char prefix[CONF_KEY_LEN];
	struct conf_row *row;
	int b, i, same, bad = 0;

	if (!conf_rows)
		conf_parse_matrix();
	for (b = 0; b < CONF_NR_BACKINGS; b++) {
		const char *name = conf_backing_name[b];

		log[b] = conf_run_one(b, seq, body);
		ASSERT_NE(NULL, log[b]);
		if (!log[b]->done) {
			bad++;
			TH_LOG("%s: the %s run died after %d steps", seq, name,
			       log[b]->nr);
		}
		if (som_stat("free_bytes") != free_start ||
		    som_stat("reserved_bytes")) {
			bad++;
			TH_LOG("%s: after the %s run the pool has %lld bytes free, %lld reserved, not %lld and 0",
			       seq, name, som_stat("free_bytes"),
			       som_stat("reserved_bytes"), free_start);
		}
		if (log[b]->nr != log[0]->nr) {
			bad++;
			TH_LOG("%s: %s took %d steps, anon %d", seq, name,
			       log[b]->nr, log[0]->nr);
		}
	}
	if (bad)
		goto out;
	for (i = 0; i < log[0]->nr; i++) {
		const char *key = log[0]->note[i].key;

		same = 1;
		for (b = 1; b < CONF_NR_BACKINGS; b++) {
			if (strcmp(key, log[b]->note[i].key)) {
				bad++;
				TH_LOG("%s: step %d is %s for anon, %s for %s",
				       seq, i, key, log[b]->note[i].key,
				       conf_backing_name[b]);
				goto out;
			}
			same &= !strcmp(log[0]->note[i].val,
					log[b]->note[i].val);
		}
		row = conf_find_row(key);
		if (row)
			row->used = 1;
		if (same && !row)
			continue;
		for (b = 0; b < CONF_NR_BACKINGS && row; b++)
			if (strcmp(row->val[b], log[b]->note[i].val))
				break;
		if (row && b == CONF_NR_BACKINGS && !same)
			continue;
		bad++;
		TH_LOG("%s: | `%s` | %s | %s | %s | %s |",
		       row ? (same ? "no difference, stale row" : "row differs")
			   : "difference not in the matrix",
		       key, log[0]->note[i].val, log[1]->note[i].val,
		       log[2]->note[i].val, log[3]->note[i].val);
	}
	snprintf(prefix, sizeof(prefix), "%s.", seq);
	for (i = 0; i < conf_nr_rows; i++) {
		if (strncmp(conf_rows[i].key, prefix, strlen(prefix)) ||
		    conf_rows[i].used)
			continue;
		bad++;
		TH_LOG("matrix row `%s` was not observed", conf_rows[i].key);
	}
out:
	EXPECT_EQ(0, bad);
	for (b = 0; b < CONF_NR_BACKINGS; b++)
		munmap(log[b], sizeof(*log[b]));
}

#define CONF_TEST(name, timeout)					\
	static void conf_seq_##name(struct conf *c);			\
	TEST_F_TIMEOUT(conformance, name, timeout)			\
	{								\
		conf_run(_metadata, #name, conf_seq_##name);		\
	}								\
	static void conf_seq_##name(struct conf *c)

#endif /* SOM_CONFORMANCE_H */
