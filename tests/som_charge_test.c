// SPDX-License-Identifier: GPL-2.0
/*
 * som memory per cgroup (SOM_IOC_CGROUP, kernel/charge.c) and per user
 * (SOM_IOC_USER, uid_limit_bytes). Charged to the cgroup of the task that
 * makes a region's first reservation, summed up the hierarchy, limited at
 * every level, kept there when the task moves,
 * and uncharged exactly when the memory goes back to the pool: munmap,
 * hole punch, truncate, exit; fork copies no som memory, and compaction
 * moves blocks without changing what is charged. A removed cgroup
 * keeps its charge, counted in its parent, until its memory goes. The
 * same reservation is charged to the task's user, whom the per-user limit
 * holds.
 *
 * Needs som.ko, root and cgroup v2 (mounted at /sys/fs/cgroup if nothing
 * is). Each test makes its hierarchy under /sys/fs/cgroup/som-test and
 * runs its charging tasks as children ("holders") that take orders
 * through a pipe, so that the test itself never moves.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/falloc.h>
#include <pthread.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "som_util.h"

#define CGROUP_FS	"/sys/fs/cgroup"
#define TOP		CGROUP_FS "/som-test"
#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC	0x63677270
#endif

/* What a holder is told to do; it answers with an errno (0: done). */
struct order {
	char op;	/* m map, u unmap, f file, t truncate, w touch,
			 * p punch, g go, k fork, U setuid, x exit
			 */
	int idx;	/* which mapping */
	uint64_t a, b;
	char cgroup[96];
};

struct holder {
	pid_t pid;
	int to, from;	/* pipes: orders, answers */
};

#define MAX_MAPS 8

static int cg_enter(const char *cgroup)
{
	char path[160];

	snprintf(path, sizeof(path), "%s/cgroup.procs", cgroup);
	return som_write_file(path, "0");
}

static int cg_ioctl(int dev, const char *cgroup, uint32_t flags,
		    uint64_t limit, struct som_cgroup *c);

/*
 * A child of the holder, with none of its som mappings (VM_DONTCOPY):
 * 0 if @cgroup's usage is still @usage while the child lives, EPROTO if
 * not.
 */
static int holder_fork(const char *cgroup, uint64_t usage)
{
	struct som_cgroup c;
	int status, dev;
	pid_t pid;

	pid = fork();
	if (pid < 0)
		return errno;
	if (!pid) {
		dev = open(SOM_DEV, O_RDWR);
		_exit(cg_ioctl(dev, cgroup, 0, 0, &c) || c.usage != usage);
	}
	if (waitpid(pid, &status, 0) != pid)
		return errno;
	return WIFEXITED(status) && !WEXITSTATUS(status) ? 0 : EPROTO;
}

/* Write the first byte of @fd's 2 MiB at @off (a fault fills a hole). */
static int holder_touch(int fd, uint64_t off)
{
	char *p = mmap(NULL, 2 * MiB, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		       off);

	if (p == MAP_FAILED)
		return errno;
	if (som_probe(p, 1)) {
		munmap(p, 2 * MiB);
		return EFAULT;
	}
	munmap(p, 2 * MiB);
	return 0;
}

/* The holder's side: obey until told to exit. */
static void holder_run(int in, int out)
{
	struct { char *p; size_t len; int fd; } maps[MAX_MAPS];
	int dev = open(SOM_DEV, O_RDWR), file = -1, err, i;
	struct order o;

	/*
	 * One open /dev/som per mapping, each an empty region until its
	 * mmap() binds it: opened now, while the holder may (root).
	 */
	for (i = 0; i < MAX_MAPS; i++)
		maps[i].fd = open(SOM_DEV, O_RDWR);

	while (read(in, &o, sizeof(o)) == sizeof(o)) {
		err = 0;
		switch (o.op) {
		case 'm':	/* map o.a bytes of a new region as maps[idx] */
			maps[o.idx].p = mmap(NULL, o.a, PROT_READ | PROT_WRITE,
					     MAP_SHARED, maps[o.idx].fd, 0);
			if (maps[o.idx].p == MAP_FAILED)
				err = errno;
			else
				maps[o.idx].p[0] = 1;
			maps[o.idx].len = o.a;
			break;
		case 'u':	/* unmap o.a bytes at offset o.b of maps[idx] */
			if (munmap(maps[o.idx].p + o.b, o.a))
				err = errno;
			break;
		case 'f':	/* a som file of o.a bytes */
			file = som_file(dev, o.a, 0);
			if (file < 0)
				err = -file;
			break;
		case 't':
			if (ftruncate(file, o.a))
				err = errno;
			break;
		case 'w':	/* touch the file's 2 MiB at o.a through a mapping */
			err = holder_touch(file, o.a);
			break;
		case 'p':
			if (fallocate(file, FALLOC_FL_PUNCH_HOLE |
				      FALLOC_FL_KEEP_SIZE, o.b, o.a))
				err = errno;
			break;
		case 'g':
			if (cg_enter(o.cgroup))
				err = errno ?: EIO;
			break;
		case 'k':	/* fork: the child sees o.cgroup's usage o.a */
			err = holder_fork(o.cgroup, o.a);
			break;
		case 'U':	/* become user o.a, for good */
			if (setresuid(o.a, o.a, o.a))
				err = errno;
			break;
		case 'x':
			_exit(0);
		}
		if (write(out, &err, sizeof(err)) != sizeof(err))
			_exit(1);
	}
	_exit(0);
}

static int holder_start(struct holder *h, const char *cgroup)
{
	int to[2], from[2], err;

	if (pipe(to) || pipe(from))
		return -1;
	h->pid = fork();
	if (h->pid < 0)
		return -1;
	if (!h->pid) {
		close(to[1]);
		close(from[0]);
		if (cg_enter(cgroup))
			_exit(2);
		holder_run(to[0], from[1]);
	}
	close(to[0]);
	close(from[1]);
	h->to = to[1];
	h->from = from[0];
	/* A first order that does nothing: the holder is in its cgroup. */
	if (write(h->to, &(struct order){ .op = '-' }, sizeof(struct order)) !=
	    sizeof(struct order) ||
	    read(h->from, &err, sizeof(err)) != sizeof(err))
		return -1;
	return 0;
}

/* Give an order; the holder's errno, or -1 if it is gone. */
static int holder_do(struct holder *h, char op, int idx, uint64_t a,
		     uint64_t b, const char *cgroup)
{
	struct order o = { .op = op, .idx = idx, .a = a, .b = b };
	int err;

	if (cgroup)
		snprintf(o.cgroup, sizeof(o.cgroup), "%s", cgroup);
	if (write(h->to, &o, sizeof(o)) != sizeof(o) ||
	    read(h->from, &err, sizeof(err)) != sizeof(err))
		return -1;
	return err;
}

/* Tell it to exit, and reap it: 0 if it exited cleanly. */
static int holder_stop(struct holder *h)
{
	struct order o = { .op = 'x' };
	int status;

	if (h->pid <= 0)
		return 0;
	if (write(h->to, &o, sizeof(o)) != sizeof(o))
		kill(h->pid, SIGKILL);
	close(h->to);
	close(h->from);
	if (waitpid(h->pid, &status, 0) != h->pid)
		return -1;
	h->pid = 0;
	return WIFEXITED(status) && !WEXITSTATUS(status) ? 0 : -1;
}

/* SOM_IOC_CGROUP on @cgroup (a directory); 0 or an errno. */
static int cg_ioctl(int dev, const char *cgroup, uint32_t flags,
		    uint64_t limit, struct som_cgroup *c)
{
	int err = 0;

	memset(c, 0, sizeof(*c));
	c->cgroup_fd = open(cgroup, O_RDONLY | O_DIRECTORY);
	if (c->cgroup_fd < 0)
		return errno;
	c->flags = flags;
	c->limit = limit;
	if (ioctl(dev, SOM_IOC_CGROUP, c))
		err = errno;
	close(c->cgroup_fd);
	return err;
}

static long long cg_usage(int dev, const char *cgroup)
{
	struct som_cgroup c;

	return cg_ioctl(dev, cgroup, 0, 0, &c) ? -1 : (long long)c.usage;
}

/*
 * The usage once it is @want, or what it is after 30 s: a holder's memory
 * goes at its exit_mmap(), which a compaction mover holding the mm for a
 * moment delays past waitpid().
 */
static long long cg_usage_settled(int dev, const char *cgroup, long long want)
{
	long long usage = cg_usage(dev, cgroup);
	int tries;

	for (tries = 0; usage != want && tries < 300; tries++) {
		usleep(100000);
		usage = cg_usage(dev, cgroup);
	}
	return usage;
}

/* The same for metadata/charges_bytes, whose records go with the memory. */
static long long cg_meta_settled(long long want)
{
	long long bytes = som_stat("metadata/charges_bytes");
	int tries;

	for (tries = 0; bytes != want && tries < 300; tries++) {
		usleep(100000);
		bytes = som_stat("metadata/charges_bytes");
	}
	return bytes;
}

static int cg_limit(int dev, const char *cgroup, uint64_t limit)
{
	struct som_cgroup c;

	return cg_ioctl(dev, cgroup, SOM_CGROUP_SET_LIMIT, limit, &c);
}

/* Remove @top and every cgroup below it, deepest first. */
static void cg_remove_tree(const char *top)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd),
		 "find %s -depth -type d -exec rmdir {} + 2>/dev/null", top);
	if (system(cmd))
		rmdir(top);
}

FIXTURE(charge) {
	int dev;
	long long free_start;
	long long root_start;
	long long meta_start;
	struct holder h[3];
};

FIXTURE_SETUP(charge)
{
	struct statfs fs;

	memset(self->h, 0, sizeof(self->h));
	SOM_OPEN_DEV(self->dev);
	if (statfs(CGROUP_FS, &fs) || fs.f_type != CGROUP2_SUPER_MAGIC)
		ASSERT_EQ(0, mount("none", CGROUP_FS, "cgroup2", 0, NULL))
			TH_LOG("cannot mount cgroup2: %s", strerror(errno));
	cg_remove_tree(TOP);
	ASSERT_EQ(0, mkdir(TOP, 0755));
	self->free_start = som_stat("free_bytes");
	self->root_start = cg_usage(self->dev, CGROUP_FS);
	ASSERT_LE(0, self->root_start);
	self->meta_start = som_stat("metadata/charges_bytes");
}

FIXTURE_TEARDOWN(charge)
{
	int i;

	if (self->dev < 0)
		return;
	for (i = 0; i < 3; i++)
		EXPECT_EQ(0, holder_stop(&self->h[i]));
	som_sysfs_write("uid_limit_bytes", "max");
	cg_remove_tree(TOP);
	/* Every charge went with its memory; removed cgroups' records too. */
	EXPECT_EQ(self->root_start,
		  cg_usage_settled(self->dev, CGROUP_FS, self->root_start));
	EXPECT_EQ(self->free_start, som_stat("free_bytes"));
	/* A limit of a removed cgroup goes at the next SOM_IOC_CGROUP. */
	EXPECT_EQ(self->meta_start, cg_meta_settled(self->meta_start));
	close(self->dev);
}

/*
 * A limit on a parent holds for its children together; a child's own
 * limit holds below it; a refused reservation takes nothing and counts
 * one failure, at the cgroup whose limit it hit.
 */
TEST_F(charge, limits_hold_at_every_level)
{
	struct som_cgroup a, b;

	ASSERT_EQ(0, mkdir(TOP "/a", 0755));
	ASSERT_EQ(0, mkdir(TOP "/a/b", 0755));
	ASSERT_EQ(0, mkdir(TOP "/a/c", 0755));
	/* Rounded down to 2 MiB. */
	ASSERT_EQ(0, cg_limit(self->dev, TOP "/a", 8 * MiB + 4096));
	ASSERT_EQ(0, cg_ioctl(self->dev, TOP "/a", 0, 0, &a));
	EXPECT_EQ(8 * MiB, a.limit);
	ASSERT_EQ(0, holder_start(&self->h[0], TOP "/a/b"));
	ASSERT_EQ(0, holder_start(&self->h[1], TOP "/a/c"));

	EXPECT_EQ(0, holder_do(&self->h[0], 'm', 0, 6 * MiB, 0, NULL));
	/* c has no limit of its own: a's applies to b and c together. */
	EXPECT_EQ(ENOMEM, holder_do(&self->h[1], 'm', 0, 4 * MiB, 0, NULL));
	EXPECT_EQ(0, holder_do(&self->h[1], 'm', 0, 2 * MiB, 0, NULL));
	EXPECT_EQ(ENOMEM, holder_do(&self->h[1], 'm', 1, 2 * MiB, 0, NULL));
	/* A som file's growth past it: ENOSPC, the file's own error. */
	EXPECT_EQ(ENOSPC, holder_do(&self->h[1], 'f', 0, 2 * MiB, 0, NULL));
	ASSERT_EQ(0, cg_ioctl(self->dev, TOP "/a", 0, 0, &a));
	EXPECT_EQ(8 * MiB, a.usage);
	EXPECT_EQ(8 * MiB, a.peak);
	EXPECT_EQ(3, a.failures);
	EXPECT_EQ(6 * MiB, cg_usage(self->dev, TOP "/a/b"));
	EXPECT_EQ(2 * MiB, cg_usage(self->dev, TOP "/a/c"));
	EXPECT_EQ(self->root_start + 8 * (long long)MiB,
		  cg_usage(self->dev, CGROUP_FS));
	EXPECT_EQ(self->free_start - 8 * (long long)MiB,
		  som_stat("free_bytes"));

	/* b's own limit, under its usage: nothing taken, nothing new. */
	ASSERT_EQ(0, cg_limit(self->dev, TOP "/a/b", 4 * MiB));
	EXPECT_EQ(0, holder_do(&self->h[1], 'u', 0, 2 * MiB, 0, NULL));
	EXPECT_EQ(ENOMEM, holder_do(&self->h[0], 'm', 1, 2 * MiB, 0, NULL));
	ASSERT_EQ(0, cg_ioctl(self->dev, TOP "/a/b", 0, 0, &b));
	EXPECT_EQ(6 * MiB, b.usage);
	EXPECT_EQ(1, b.failures);
	ASSERT_EQ(0, cg_ioctl(self->dev, TOP "/a", 0, 0, &a));
	EXPECT_EQ(3, a.failures);
	/* c may take what b left under a's limit. */
	EXPECT_EQ(0, holder_do(&self->h[1], 'm', 1, 2 * MiB, 0, NULL));
	/* Limits removed: anything the pool has. */
	ASSERT_EQ(0, cg_limit(self->dev, TOP "/a/b", SOM_CGROUP_NO_LIMIT));
	ASSERT_EQ(0, cg_limit(self->dev, TOP "/a", SOM_CGROUP_NO_LIMIT));
	EXPECT_EQ(0, holder_do(&self->h[0], 'm', 1, 32 * MiB, 0, NULL));
	EXPECT_EQ(40 * MiB, cg_usage(self->dev, TOP "/a"));
	ASSERT_EQ(0, cg_ioctl(self->dev, TOP "/a", 0, 0, &a));
	EXPECT_EQ(SOM_CGROUP_NO_LIMIT, a.limit);
	EXPECT_EQ(40 * MiB, a.peak);
}

/*
 * Usage follows the memory exactly: reserved at mmap() and at a file's
 * growth, given back by munmap(), a hole punch, a truncate and exit. A
 * fork's child has no som memory of its own; compaction moves blocks.
 */
TEST_F(charge, usage_follows_munmap_punch_truncate_fork_and_exit)
{
	const char *cg = TOP "/u";

	ASSERT_EQ(0, mkdir(cg, 0755));
	ASSERT_EQ(0, holder_start(&self->h[0], cg));
	EXPECT_EQ(0, cg_usage(self->dev, cg));
	EXPECT_EQ(0, holder_do(&self->h[0], 'm', 0, 16 * MiB, 0, NULL));
	EXPECT_EQ(16 * MiB, cg_usage(self->dev, cg));
	EXPECT_EQ(0, holder_do(&self->h[0], 'u', 0, 4 * MiB, 4 * MiB, NULL));
	EXPECT_EQ(12 * MiB, cg_usage(self->dev, cg));
	/* Part of a block unmapped: the rest of the block still holds it. */
	EXPECT_EQ(0, holder_do(&self->h[0], 'u', 0, 1 * MiB, 0, NULL));
	EXPECT_EQ(12 * MiB, cg_usage(self->dev, cg));
	EXPECT_EQ(0, holder_do(&self->h[0], 'f', 0, 8 * MiB, 0, NULL));
	EXPECT_EQ(20 * MiB, cg_usage(self->dev, cg));
	EXPECT_EQ(0, holder_do(&self->h[0], 'p', 0, 2 * MiB, 2 * MiB, NULL));
	EXPECT_EQ(18 * MiB, cg_usage(self->dev, cg));
	EXPECT_EQ(0, holder_do(&self->h[0], 't', 0, 4 * MiB, 0, NULL));
	EXPECT_EQ(14 * MiB, cg_usage(self->dev, cg));
	/* Growth reserves the new part; the punched hole stays a hole. */
	EXPECT_EQ(0, holder_do(&self->h[0], 't', 0, 10 * MiB, 0, NULL));
	EXPECT_EQ(20 * MiB, cg_usage(self->dev, cg));
	/* Filling the hole (a write) charges it again. */
	EXPECT_EQ(0, holder_do(&self->h[0], 'w', 0, 2 * MiB, 0, NULL));
	EXPECT_EQ(22 * MiB, cg_usage(self->dev, cg));

	/* A forked child, in the same cgroup, adds nothing. */
	EXPECT_EQ(0, holder_do(&self->h[0], 'k', 0, 22 * MiB, 0, cg));
	EXPECT_EQ(22 * MiB, cg_usage(self->dev, cg));
	/* Compaction moves blocks; the indices, and the charge, stay. */
	EXPECT_EQ(0, som_sysfs_write("migration/compact", "1"));
	EXPECT_EQ(22 * MiB, cg_usage(self->dev, cg));

	ASSERT_EQ(0, holder_stop(&self->h[0]));
	EXPECT_EQ(0, cg_usage_settled(self->dev, cg, 0));
	EXPECT_EQ(self->free_start, som_stat("free_bytes"));
}

/*
 * The charge stays where the memory was reserved when its task moves;
 * what the task reserves afterwards in a new region goes to its new
 * cgroup.
 */
TEST_F(charge, charge_stays_when_the_task_moves)
{
	ASSERT_EQ(0, mkdir(TOP "/from", 0755));
	ASSERT_EQ(0, mkdir(TOP "/to", 0755));
	ASSERT_EQ(0, cg_limit(self->dev, TOP "/to", 4 * MiB));
	ASSERT_EQ(0, holder_start(&self->h[0], TOP "/from"));
	EXPECT_EQ(0, holder_do(&self->h[0], 'm', 0, 8 * MiB, 0, NULL));
	EXPECT_EQ(0, holder_do(&self->h[0], 'g', 0, 0, 0, TOP "/to"));
	EXPECT_EQ(8 * MiB, cg_usage(self->dev, TOP "/from"));
	EXPECT_EQ(0, cg_usage(self->dev, TOP "/to"));
	/* The region charged to "from" still is, past "to"'s limit. */
	EXPECT_EQ(0, holder_do(&self->h[0], 'u', 0, 2 * MiB, 0, NULL));
	EXPECT_EQ(6 * MiB, cg_usage(self->dev, TOP "/from"));
	EXPECT_EQ(ENOMEM, holder_do(&self->h[0], 'm', 1, 6 * MiB, 0, NULL));
	EXPECT_EQ(0, holder_do(&self->h[0], 'm', 1, 4 * MiB, 0, NULL));
	EXPECT_EQ(4 * MiB, cg_usage(self->dev, TOP "/to"));
	EXPECT_EQ(10 * MiB, cg_usage(self->dev, TOP));
	ASSERT_EQ(0, holder_stop(&self->h[0]));
	EXPECT_EQ(0, cg_usage_settled(self->dev, TOP, 0));
}

/*
 * A cgroup removed while it holds som memory: its charge stays counted in
 * its parent until the memory goes; its limit goes with it, and so does
 * its record once nothing is charged to it.
 */
TEST_F(charge, removed_cgroup_keeps_its_charge_until_the_memory_goes)
{
	ASSERT_EQ(0, mkdir(TOP "/p", 0755));
	ASSERT_EQ(0, mkdir(TOP "/p/gone", 0755));
	ASSERT_EQ(0, cg_limit(self->dev, TOP "/p/gone", 64 * MiB));
	ASSERT_EQ(0, holder_start(&self->h[0], TOP "/p/gone"));
	EXPECT_EQ(0, holder_do(&self->h[0], 'm', 0, 6 * MiB, 0, NULL));
	EXPECT_EQ(0, holder_do(&self->h[0], 'g', 0, 0, 0, TOP "/p"));
	ASSERT_EQ(0, rmdir(TOP "/p/gone"));
	EXPECT_EQ(6 * MiB, cg_usage(self->dev, TOP "/p"));
	EXPECT_LT(self->meta_start, som_stat("metadata/charges_bytes"));
	/* Half of it back, then the rest at exit. */
	EXPECT_EQ(0, holder_do(&self->h[0], 'u', 0, 4 * MiB, 0, NULL));
	EXPECT_EQ(2 * MiB, cg_usage(self->dev, TOP "/p"));
	ASSERT_EQ(0, holder_stop(&self->h[0]));
	EXPECT_EQ(0, cg_usage_settled(self->dev, TOP "/p", 0));
}

/* Bad arguments, fds that are no cgroup v2 directory, no privilege. */
TEST_F(charge, bad_requests_are_refused)
{
	struct som_cgroup c;
	pid_t pid;
	int status, fd;

	ASSERT_EQ(0, mkdir(TOP "/r", 0755));
	EXPECT_EQ(EINVAL, cg_ioctl(self->dev, TOP "/r", 2, 0, &c));
	/* Without SOM_CGROUP_SET_LIMIT, @limit is only an out field. */
	EXPECT_EQ(0, cg_ioctl(self->dev, TOP "/r", 0, 4 * MiB, &c));
	EXPECT_EQ(SOM_CGROUP_NO_LIMIT, c.limit);
	memset(&c, 0, sizeof(c));
	c.cgroup_fd = open(TOP "/r", O_RDONLY | O_DIRECTORY);
	ASSERT_LE(0, c.cgroup_fd);
	c.__reserved[1] = 1;
	EXPECT_EQ(-1, ioctl(self->dev, SOM_IOC_CGROUP, &c));
	EXPECT_EQ(EINVAL, errno);
	close(c.cgroup_fd);
	EXPECT_EQ(EBADF, cg_ioctl(self->dev, "/tmp", 0, 0, &c));
	EXPECT_EQ(EBADF, cg_ioctl(self->dev, SOM_SYSFS, 0, 0, &c));
	memset(&c, 0, sizeof(c));
	c.cgroup_fd = -1;
	EXPECT_EQ(-1, ioctl(self->dev, SOM_IOC_CGROUP, &c));
	EXPECT_EQ(EBADF, errno);
	EXPECT_EQ(-1, ioctl(self->dev, SOM_IOC_CGROUP, NULL));
	EXPECT_EQ(EFAULT, errno);

	/* Anyone may read; setting a limit needs CAP_SYS_ADMIN. */
	fd = open(TOP "/r", O_RDONLY | O_DIRECTORY);
	ASSERT_LE(0, fd);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct som_cgroup k = { .cgroup_fd = fd };

		if (setuid(65534))
			_exit(1);
		if (ioctl(self->dev, SOM_IOC_CGROUP, &k))
			_exit(2);
		k.flags = SOM_CGROUP_SET_LIMIT;
		k.limit = 2 * MiB;
		_exit(ioctl(self->dev, SOM_IOC_CGROUP, &k) == -1 &&
		      errno == EPERM ? 0 : 3);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, WEXITSTATUS(status));
	close(fd);
	ASSERT_EQ(0, cg_ioctl(self->dev, TOP "/r", 0, 0, &c));
	EXPECT_EQ(SOM_CGROUP_NO_LIMIT, c.limit);
}

/*
 * Does somctl's table @out have the row "@cgroup @usage @limit @peak
 * @failures" (somctl cgroups; somctl users's "UID USER USAGE PEAK
 * FAILURES" fits the same five columns), whatever the spacing? A size is
 * a number and its unit ("48 MiB"), or "max", or "0": the words are
 * joined back up.
 */
static int has_row(const char *out, const char *cgroup, const char *usage,
		   const char *limit, const char *peak, int failures)
{
	char want[256], got[256], line[256], *tok, *save;
	const char *at = out;
	size_t len;

	snprintf(want, sizeof(want), "%s|%s|%s|%s|%d|", cgroup, usage, limit,
		 peak, failures);
	while (*at) {
		len = strcspn(at, "\n");
		snprintf(line, sizeof(line), "%.*s", (int)len, at);
		at += len + !!at[len];
		got[0] = '\0';
		for (tok = strtok_r(line, " ", &save); tok;
		     tok = strtok_r(NULL, " ", &save)) {
			if (!strcmp(tok, "MiB") || !strcmp(tok, "GiB"))
				got[strlen(got) - 1] = ' ';
			strncat(got, tok, sizeof(got) - strlen(got) - 2);
			strcat(got, "|");
		}
		if (!strncmp(got, cgroup, strlen(cgroup)) &&
		    got[strlen(cgroup)] == '|')
			return !strcmp(got, want);
	}
	return 0;
}

/*
 * What an operator does: somctl limit for two containers, and somctl
 * cgroups (text and JSON) and status --prometheus show their usage.
 */
TEST_F(charge, somctl_limits_two_containers_and_shows_them)
{
	static char out[1 << 16];

	ASSERT_EQ(0, mkdir(TOP "/web", 0755));
	ASSERT_EQ(0, mkdir(TOP "/db", 0755));
	ASSERT_EQ(0, som_capture("somctl limit /som-test/web 64M", out,
				 sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "som limit 64 MiB"));
	ASSERT_EQ(0, som_capture("somctl limit " TOP "/db 1G", out,
				 sizeof(out)));
	ASSERT_EQ(0, holder_start(&self->h[0], TOP "/web"));
	ASSERT_EQ(0, holder_start(&self->h[1], TOP "/db"));
	EXPECT_EQ(0, holder_do(&self->h[0], 'm', 0, 48 * MiB, 0, NULL));
	EXPECT_EQ(ENOMEM, holder_do(&self->h[0], 'm', 1, 32 * MiB, 0, NULL));
	EXPECT_EQ(0, holder_do(&self->h[1], 'm', 0, 96 * MiB, 0, NULL));
	ASSERT_EQ(0, som_capture("somctl cgroups", out, sizeof(out)));
	TH_LOG("%s", out);
	EXPECT_TRUE(has_row(out, "/som-test/web", "48 MiB", "64 MiB", "48 MiB", 1));
	EXPECT_TRUE(has_row(out, "/som-test/db", "96 MiB", "1 GiB", "96 MiB", 0));
	EXPECT_TRUE(has_row(out, "/som-test", "144 MiB", "max", "144 MiB", 0));
	ASSERT_EQ(0, som_capture("somctl cgroups --json", out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "{\"cgroup\": \"/som-test/web\", \"usage_bytes\": 50331648, \"peak_bytes\": 50331648, \"limit_bytes\": 67108864, \"failures\": 1}"));
	ASSERT_EQ(0, som_capture("somctl status --prometheus", out,
				 sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "som_cgroup_usage_bytes{cgroup=\"/som-test/db\"} 100663296\n"));
	EXPECT_NE(NULL, strstr(out, "som_cgroup_limit_bytes{cgroup=\"/som-test/web\"} 67108864\n"));
	EXPECT_NE(NULL, strstr(out, "som_cgroup_failures_total{cgroup=\"/som-test/web\"} 1\n"));
	ASSERT_EQ(0, som_capture("somctl limit som-test/web max", out,
				 sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "som limit max (in use: 48 MiB)"));
	EXPECT_NE(0, som_capture("somctl limit /som-test/none 1G", out,
				 sizeof(out)));
}

/* The race below: what its threads share. */
struct refuse_race {
	int dev, file;
	volatile int stop;
	long refused, mapped;
};

/* Grow a som file by exabytes: the charge is taken, the pool refuses. */
static void *refuse_grow(void *arg)
{
	struct refuse_race *r = arg;

	while (!r->stop)
		if (ftruncate(r->file, 1LL << 62) && errno == ENOSPC)
			r->refused++;
	return NULL;
}

/* Map, touch and unmap 4 MiB: charges that go through, and commit. */
static void *refuse_map(void *arg)
{
	struct refuse_race *r = arg;
	char *p;

	while (!r->stop) {
		p = mmap(NULL, 4 * MiB, PROT_READ | PROT_WRITE, MAP_SHARED,
			 r->dev, 0);
		if (p == MAP_FAILED)
			continue;
		p[0] = 1;
		munmap(p, 4 * MiB);
		r->mapped++;
	}
	return NULL;
}

/*
 * A reservation the pool refuses is charged while it is under way (so
 * that two cannot pass a limit together) but never shows: not in the
 * usage a reader sees, nor in a peak that a reservation going through
 * meanwhile records (review of the per-user change: an unprivileged
 * ftruncate() to 2^62 bytes made the root cgroup's peak 4 EiB for
 * good). A child grows a som file by exabytes in one thread and maps
 * 4 MiB again and again in another, in cgroup r; the test reads r's
 * figures all along.
 */
TEST_F_TIMEOUT(charge, refused_reservations_never_show, 120)
{
	int seconds = som_env_seconds("SOM_CHARGE_RACE_SECONDS", 10, 600);
	long long max_usage = 0;
	struct som_cgroup c;
	double end;
	int status;
	pid_t pid;

	ASSERT_EQ(0, mkdir(TOP "/r", 0755));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct refuse_race r = { 0 };
		pthread_t a, b;

		if (cg_enter(TOP "/r"))
			_exit(1);
		r.dev = open(SOM_DEV, O_RDWR);
		r.file = som_file(r.dev, 2 * MiB, 0);
		if (r.dev < 0 || r.file < 0 ||
		    pthread_create(&a, NULL, refuse_grow, &r) ||
		    pthread_create(&b, NULL, refuse_map, &r))
			_exit(2);
		sleep(seconds);
		r.stop = 1;
		pthread_join(a, NULL);
		pthread_join(b, NULL);
		/* Both sides ran: refusals and reservations that went through. */
		_exit(r.refused && r.mapped ? 0 : 3);
	}
	end = som_seconds() + seconds;
	while (som_seconds() < end) {
		ASSERT_EQ(0, cg_ioctl(self->dev, TOP "/r", 0, 0, &c));
		if ((long long)c.usage > max_usage)
			max_usage = c.usage;
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, WEXITSTATUS(status));
	ASSERT_EQ(0, cg_ioctl(self->dev, TOP "/r", 0, 0, &c));
	/* The file's 2 MiB and one 4 MiB mapping at most, ever. */
	EXPECT_GE(6 * (long long)MiB, max_usage);
	EXPECT_GE(6 * MiB, c.peak);
	EXPECT_EQ(0, c.failures);	/* no limit: the pool refused */
}

/* SOM_IOC_USER for @uid (with @flags); 0 or an errno. */
static int user_ioctl(int dev, uint32_t uid, uint32_t flags,
		      struct som_user *u)
{
	memset(u, 0, sizeof(*u));
	u->uid = uid;
	u->flags = flags;
	return ioctl(dev, SOM_IOC_USER, u) ? errno : 0;
}

#define USER_A	4242
#define USER_B	4343

/*
 * The per-user limit holds for each user apart, root included; it is off
 * by default; what a user holds goes with the memory, and the user's
 * record with the last of it (SOM_USER_NEXT then skips the user).
 */
TEST_F(charge, uid_limit_holds_for_each_user)
{
	struct som_user u;
	char buf[64];

	ASSERT_LE(0, som_read_text(SOM_SYSFS "uid_limit_bytes", buf,
				   sizeof(buf)));
	EXPECT_STREQ("max\n", buf);
	ASSERT_EQ(0, som_sysfs_write("uid_limit_bytes", "8388609"));
	EXPECT_EQ(8 * MiB, som_stat("uid_limit_bytes"));
	ASSERT_EQ(0, holder_start(&self->h[0], TOP));
	ASSERT_EQ(0, holder_start(&self->h[1], TOP));
	ASSERT_EQ(0, holder_do(&self->h[0], 'U', 0, USER_A, 0, NULL));
	ASSERT_EQ(0, holder_do(&self->h[1], 'U', 0, USER_B, 0, NULL));
	EXPECT_EQ(0, holder_do(&self->h[0], 'm', 0, 6 * MiB, 0, NULL));
	EXPECT_EQ(ENOMEM, holder_do(&self->h[0], 'm', 1, 4 * MiB, 0, NULL));
	EXPECT_EQ(ENOSPC, holder_do(&self->h[0], 'f', 0, 4 * MiB, 0, NULL));
	/* Each user has the whole limit. */
	EXPECT_EQ(0, holder_do(&self->h[1], 'm', 0, 8 * MiB, 0, NULL));
	ASSERT_EQ(0, user_ioctl(self->dev, USER_A, 0, &u));
	EXPECT_EQ(6 * MiB, u.usage);
	EXPECT_EQ(6 * MiB, u.peak);
	EXPECT_EQ(2, u.failures);
	EXPECT_EQ(8 * MiB, u.limit);
	/* The users in uid order, from USER_A on: A, B, then no more. */
	ASSERT_EQ(0, user_ioctl(self->dev, USER_A, SOM_USER_NEXT, &u));
	EXPECT_EQ(USER_A, u.uid);
	ASSERT_EQ(0, user_ioctl(self->dev, USER_A + 1, SOM_USER_NEXT, &u));
	EXPECT_EQ(USER_B, u.uid);
	EXPECT_EQ(8 * MiB, u.usage);
	EXPECT_EQ(ENOENT, user_ioctl(self->dev, USER_B + 1, SOM_USER_NEXT, &u));
	/* Both count in their cgroup too. */
	EXPECT_EQ(14 * MiB, cg_usage(self->dev, TOP));
	/* Off again: the pool's memory is the only bound. */
	ASSERT_EQ(0, som_sysfs_write("uid_limit_bytes", "max"));
	EXPECT_EQ(0, holder_do(&self->h[0], 'm', 1, 32 * MiB, 0, NULL));
	ASSERT_EQ(0, holder_stop(&self->h[0]));
	ASSERT_EQ(0, holder_stop(&self->h[1]));
	EXPECT_EQ(0, cg_usage_settled(self->dev, TOP, 0));
	/* The records go with the regions' files, maybe a moment later. */
	EXPECT_EQ(self->meta_start, cg_meta_settled(self->meta_start));
	EXPECT_EQ(ENOENT, user_ioctl(self->dev, USER_A, SOM_USER_NEXT, &u));
	ASSERT_EQ(0, user_ioctl(self->dev, USER_A, 0, &u));
	EXPECT_EQ(0, u.usage);
	EXPECT_EQ(0, u.peak);
	EXPECT_EQ(SOM_CGROUP_NO_LIMIT, u.limit);
}

/* What the per-user interface refuses, and who may set the limit. */
TEST_F(charge, user_requests_are_checked)
{
	struct som_user u;
	char out[64];
	pid_t pid;
	int status;

	EXPECT_EQ(EINVAL, user_ioctl(self->dev, 0, 2, &u));
	memset(&u, 0, sizeof(u));
	u.__reserved[0] = 1;
	EXPECT_EQ(-1, ioctl(self->dev, SOM_IOC_USER, &u));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, ioctl(self->dev, SOM_IOC_USER, NULL));
	EXPECT_EQ(EFAULT, errno);
	EXPECT_EQ(EINVAL, user_ioctl(self->dev, (uint32_t)-1, 0, &u));
	EXPECT_NE(0, som_sysfs_write("uid_limit_bytes", "lots"));
	EXPECT_NE(0, som_sysfs_write("uid_limit_bytes", "-1"));
	EXPECT_NE(0, som_sysfs_write("uid_limit_bytes",
				     "18446744073709551615"));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		int fd = open(SOM_SYSFS "uid_limit_bytes", O_WRONLY);

		if (fd < 0 || setuid(65534))
			_exit(1);
		/* Anyone may read another user's figures; nobody else set. */
		_exit(ioctl(self->dev, SOM_IOC_USER, &(struct som_user){ 0 }) ||
		      write(fd, "2097152", 7) != -1 || errno != EPERM ? 2 : 0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, WEXITSTATUS(status));
	ASSERT_LE(0, som_read_text(SOM_SYSFS "uid_limit_bytes", out,
				   sizeof(out)));
	EXPECT_STREQ("max\n", out);
}

/* somctl user-limit, users (text and JSON), status --prometheus. */
TEST_F(charge, somctl_limits_users_and_shows_them)
{
	static char out[1 << 16];

	ASSERT_EQ(0, som_capture("somctl user-limit 64M", out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "limited to 64 MiB"));
	ASSERT_EQ(0, holder_start(&self->h[0], TOP));
	ASSERT_EQ(0, holder_do(&self->h[0], 'U', 0, USER_A, 0, NULL));
	EXPECT_EQ(0, holder_do(&self->h[0], 'm', 0, 48 * MiB, 0, NULL));
	EXPECT_EQ(ENOMEM, holder_do(&self->h[0], 'm', 1, 32 * MiB, 0, NULL));
	ASSERT_EQ(0, som_capture("somctl users", out, sizeof(out)));
	TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "limit of each user's som memory: 64 MiB"));
	EXPECT_TRUE(has_row(out, "4242", "-", "48 MiB", "48 MiB", 1));
	ASSERT_EQ(0, som_capture("somctl users --json", out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "\"limit_bytes\": 67108864"));
	EXPECT_NE(NULL, strstr(out, "{\"uid\": 4242, \"user\": null, \"usage_bytes\": 50331648, \"peak_bytes\": 50331648, \"failures\": 1}"));
	ASSERT_EQ(0, som_capture("somctl status --prometheus", out,
				 sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "som_uid_limit_bytes 67108864\n"));
	EXPECT_NE(NULL, strstr(out, "som_user_usage_bytes{uid=\"4242\"} 50331648\n"));
	EXPECT_NE(NULL, strstr(out, "som_user_failures_total{uid=\"4242\"} 1\n"));
	ASSERT_EQ(0, som_capture("somctl user-limit max", out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "limited to max"));
	EXPECT_EQ(2 << 8, som_capture("somctl user-limit 5X 2>&1", out,
				      sizeof(out)));
}

TEST_HARNESS_MAIN
