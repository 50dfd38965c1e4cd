// SPDX-License-Identifier: GPL-2.0
/*
 * som's tracepoints, read through tracefs as an operator would: enable
 * the "som" events, do something, read the trace and check that each
 * event is there with the fields the action implies (kernel/som_trace.h,
 * Documentation/admin-guide.md, "Tracing").
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <sys/mount.h>

#include "kselftest_harness.h"
#include "som_util.h"
#include "som_pool_util.h"

#define TRACEFS	"/sys/kernel/tracing/"
#define SPARE	"trace-spare"

static int tr_write(const char *file, const char *val)
{
	char path[128];
	int fd, ok;

	snprintf(path, sizeof(path), TRACEFS "%s", file);
	fd = open(path, O_WRONLY | O_TRUNC);
	if (fd < 0)
		return -errno;
	ok = write(fd, val, strlen(val)) == (ssize_t)strlen(val);
	close(fd);
	return ok ? 0 : -EIO;
}

/* The trace so far, as text (a static buffer). */
static const char *tr_read(void)
{
	static char buf[4 << 20];

	if (som_read_text(TRACEFS "trace", buf, sizeof(buf)) < 0)
		return "";
	return buf;
}

/*
 * The number of @event lines of the trace text @t that contain every
 * one of the strings in @ap (each " key=value" as printed).
 */
static int count_lines(const char *t, const char *event, va_list ap)
{
	const char *line, *end, *want;
	char name[64], one[512];
	int n = 0, ok;
	va_list each;

	snprintf(name, sizeof(name), " %s: ", event);
	for (line = t; *line; line = *end ? end + 1 : end) {
		end = strchrnul(line, '\n');
		if ((size_t)(end - line) >= sizeof(one))
			continue;
		memcpy(one, line, end - line);
		one[end - line] = '\0';
		/* Fields end with a space or the line: match "k=v " and "k=v\0". */
		strcat(one, " ");
		if (!strstr(one, name))
			continue;
		ok = 1;
		va_copy(each, ap);
		while (ok && (want = va_arg(each, const char *)))
			ok = strstr(one, want) != NULL;
		va_end(each);
		n += ok;
	}
	return n;
}

/*
 * The number of @event lines of the trace that contain every one of the
 * NULL-terminated strings that follow.
 */
static int tr_count(const char *event, ...)
{
	va_list ap;
	int n;

	va_start(ap, event);
	n = count_lines(tr_read(), event, ap);
	va_end(ap);
	return n;
}

/*
 * The same, counting only the lines after the last line that contains
 * @mark (none if no line does).
 */
static int tr_count_after(const char *mark, const char *event, ...)
{
	const char *t = tr_read(), *last = NULL, *p;
	va_list ap;
	int n;

	for (p = t; (p = strstr(p, mark)); p++)
		last = p;
	if (!last)
		return 0;
	va_start(ap, event);
	n = count_lines(strchrnul(last, '\n'), event, ap);
	va_end(ap);
	return n;
}

/*
 * Wait up to @seconds for the zeroing worker to zero block @bfn after it
 * was last freed; the number of times it did. Earlier zeroings of the
 * same block (the worker catching up on what earlier tests freed, before
 * a fault here took it) do not count.
 */
static int wait_zeroed_after_free(unsigned long bfn, int seconds)
{
	double end = som_seconds() + seconds;
	char freed[64], b[64];
	int n;

	snprintf(freed, sizeof(freed), " som_free: bfn=%#lx ", bfn);
	sprintf(b, " bfn=%#lx ", bfn);
	while (!(n = tr_count_after(freed, "som_zero", b, " bytes=2097152 ",
				    " ahead=1 ", NULL)) &&
	       som_seconds() < end)
		usleep(50 * 1000);
	return n;
}

FIXTURE(trace) {
	int dev;
};

FIXTURE_SETUP(trace)
{
	SOM_OPEN_DEV(self->dev);
	if (access(TRACEFS "events", F_OK) &&
	    mount("nodev", "/sys/kernel/tracing", "tracefs", 0, NULL))
		SKIP(return, "no tracefs: %s", strerror(errno));
	ASSERT_EQ(0, access(TRACEFS "events/som/som_fault", F_OK));
	/* The zeroing events come from the worker. */
	ASSERT_EQ(0, som_sysfs_write("zero_ahead", "1"));
	ASSERT_EQ(0, tr_write("events/enable", "0"));
	ASSERT_EQ(0, tr_write("buffer_size_kb", "4096"));
	ASSERT_EQ(0, tr_write("trace", ""));
	ASSERT_EQ(0, tr_write("events/som/enable", "1"));
	ASSERT_EQ(0, tr_write("tracing_on", "1"));
}

FIXTURE_TEARDOWN(trace)
{
	if (self->dev < 0)
		return;
	tr_write("events/som/enable", "0");
	tr_write("trace", "");
	src_remove(self->dev, SPARE);
	close(self->dev);
}

/*
 * " key=0x... " for @v, as the events print addresses and frame numbers
 * (@v is never 0: the kernel prints that "0x0", the C library "0").
 */
static const char *hexf(char *buf, const char *key, unsigned long v)
{
	sprintf(buf, " %s=%#lx ", key, v);
	return buf;
}

/* The bfn of the @nr-th (from 0) som_free event of the trace, or 0. */
static unsigned long freed_bfn(int nr)
{
	const char *t = tr_read(), *p = t;

	while ((p = strstr(p, " som_free: bfn=")))
		if (!nr--)
			return strtoul(p + strlen(" som_free: bfn="), NULL, 16);
		else
			p++;
	return 0;
}

/*
 * A mapping of 6 MiB: the reservation, two 2 MiB faults and one 4 KiB
 * one (a misaligned mapping), the blocks they took, and at munmap the
 * blocks given back, the untouched one unreserved and the zeroing
 * worker clearing what came back.
 */
TEST_F(trace, faults_reservations_blocks_and_zeroing)
{
	char a[64], b[64], c[64];
	unsigned long bfn;
	char *m, *p;
	int fd, i;

	fd = open(SOM_DEV, O_RDWR);
	ASSERT_LE(0, fd);
	m = som_map_past(fd, 6 * MiB, 2 * MiB, 0);
	ASSERT_NE(MAP_FAILED, m);
	EXPECT_EQ(1, tr_count("som_reserve", " blocks=3 ", " err=0 ", NULL));
	m[0] = 1;
	m[2 * MiB + 5] = 1;
	EXPECT_EQ(1, tr_count("som_fault", hexf(a, "address", (uintptr_t)m),
			      " size=2097152 ", " ret=0x100 ", NULL));
	/* The core passes the address of the page. */
	EXPECT_EQ(1, tr_count("som_fault",
			      hexf(a, "address", (uintptr_t)m + 2 * MiB),
			      hexf(b, "pgoff", 512), " size=2097152 ",
			      " ret=0x100 ", NULL));
	/* Each took a block, one at a time. */
	EXPECT_EQ(2, tr_count("som_alloc", " blocks=1 ", NULL));
	EXPECT_EQ(0, tr_count("som_fault", " pfn=0x0 ", " ret=0x100 ", NULL));
	munmap(m, 6 * MiB);
	EXPECT_EQ(1, tr_count("som_unreserve", " blocks=1 ", NULL));
	EXPECT_EQ(2, tr_count("som_free", " retired=0 ", NULL));
	/* The worker zeroes what came back. */
	for (i = 0; i < 2; i++) {
		bfn = freed_bfn(i);
		EXPECT_NE(0, bfn);
		EXPECT_EQ(1, wait_zeroed_after_free(bfn, 120));
	}

	/* A misaligned mapping: 4 KiB entries. */
	p = som_map_misaligned(fd, 2 * MiB, 64 * KiB);
	ASSERT_NE(MAP_FAILED, p);
	p[3 * 4096] = 1;
	EXPECT_EQ(1, tr_count("som_fault",
			      hexf(c, "address", (uintptr_t)p + 3 * 4096),
			      " size=4096 ", " ret=0x100 ", NULL));
	munmap(p, 2 * MiB);
	close(fd);
}

/*
 * A source added and removed with a mapping on it: the source events, a
 * memory error with the move it causes (within the source, which the
 * mapping prefers) and the retired block, then both blocks' moves to
 * node 0 when the source leaves.
 */
TEST_F(trace, sources_moves_and_memory_errors)
{
	struct som_poison poison;
	int fd, nid, err;
	char a[64];
	char *m;

	err = add_spare_gib(self->dev, SPARE);
	if (err == -ENODEV)
		SKIP(return, "no spare 1 GiB range (SOM_SPARE_RANGES)");
	ASSERT_EQ(0, err);
	EXPECT_EQ(1, tr_count("som_source", " name=" SPARE " ", " add ",
			      " gib=1 ", " err=0 ", NULL));
	nid = atoi(src_attr(SPARE, "nodes"));
	ASSERT_LT(0, nid);

	fd = open(SOM_DEV, O_RDWR);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, set_policy(fd, SOM_POLICY_PREFERRED, 1ULL << nid, 0));
	m = som_map_past(fd, 4 * MiB, 2 * MiB, 0);
	ASSERT_NE(MAP_FAILED, m);
	som_fill(m, 0, 4 * MiB, 4096, 3);

	/* An error in the second block: its other pages move. */
	memset(&poison, 0, sizeof(poison));
	poison.addr = (uintptr_t)m + 2 * MiB + 7 * 4096;
	poison.flags = SOM_POISON_ADDR;
	ASSERT_EQ(0, ioctl(self->dev, SOM_IOC_POISON, &poison));
	EXPECT_EQ(1, tr_count("som_poison", hexf(a, "pfn", poison.phys >> 12),
			      " err=0 ", NULL));
	EXPECT_EQ(1, tr_count("som_move", " idx=0x1 ", NULL));
	EXPECT_EQ(1, tr_count("som_free", " retired=1 ", NULL));

	/* Removed: both blocks move to node 0 with their data. */
	ASSERT_EQ(0, src_remove(self->dev, SPARE));
	EXPECT_EQ(1, tr_count("som_source", " name=" SPARE " ", " remove ",
			      " gib=1 ", " err=0 ", NULL));
	/* The pool remembers the poisoned page: the next test gets it whole. */
	EXPECT_EQ(0, forget_spare_poison(self->dev));
	EXPECT_EQ(1, tr_count("som_move", " idx=0x0 ", NULL));
	EXPECT_EQ(2, tr_count("som_move", " idx=0x1 ", NULL));
	EXPECT_EQ(-1, som_check(m, 0, 2 * MiB, 4096, 3));
	munmap(m, 4 * MiB);
	close(fd);
}

/*
 * An aging scan (aging/scan) with one region holding memory, 4 MiB in
 * one GiB: one event, one GiB, no error (the fixture's open /dev/som is a
 * region too, with nothing to age); the worker is off, so the scan is
 * this test's alone.
 */
TEST_F(trace, aging_scans)
{
	char *m;
	int fd;

	ASSERT_EQ(0, som_sysfs_write("aging/interval_ms", "0"));
	fd = open(SOM_DEV, O_RDWR);
	ASSERT_LE(0, fd);
	m = som_map_shared(fd, 4 * MiB);
	ASSERT_NE(MAP_FAILED, m);
	m[0] = 1;
	m[2 * MiB] = 1;
	ASSERT_EQ(0, tr_write("trace", ""));
	ASSERT_EQ(0, som_sysfs_write("aging/scan", "1"));
	EXPECT_EQ(1, tr_count("som_age_scan", NULL));
	EXPECT_EQ(1, tr_count("som_age_scan", " regions=2 ", " gibs=1 ",
			      " err=0 ", NULL));
	EXPECT_EQ(0, tr_count("som_age_scan", " ns=0 ", NULL));
	munmap(m, 4 * MiB);
	close(fd);
}

TEST_HARNESS_MAIN
