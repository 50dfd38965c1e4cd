/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the fault-injection tests share: one armed failure, the n-th check
 * of a fault-injection capability, and the life cycles they run with it
 * armed. A cycle returns the number of unclean failures it saw: a step may
 * fail, but only with one of the errors its caller can expect (or SIGBUS
 * for a hole that cannot be filled), and never leave memory the pool
 * misses. Include after som_util.h and som_pool_util.h.
 *
 * Two ways to count to n:
 * - this thread's checks (/proc/thread-self/fail-nth, the mechanism
 *   syzkaller uses), for failslab and fail_page_alloc;
 * - fail_function's calls of its function, anywhere: its "space" lets the
 *   first n - 1 calls pass and "times" = 1 fails one. fail-nth cannot
 *   count those: on x86 a kprobe's handler runs from the int3 trap in NMI
 *   context, where fail-nth and the task filter do not apply.
 */
#ifndef SOM_FAIL_CYCLES_H
#define SOM_FAIL_CYCLES_H

#include <linux/falloc.h>

#define SOM_FEI		"/sys/kernel/debug/fail_function/"

/* The armed failure: set up by som_fail_open(), som_fail_arm(). */
struct som_fail {
	int fd;		/* /proc/thread-self/fail-nth, or -1 */
	int fei;	/* counting fail_function's calls instead */
	long left;	/* checks still to pass before the failure */
	int fired;	/* the failure was injected */
	int paused;	/* disarmed by som_fail_pause() */
};

static struct som_fail som_fail = { .fd = -1 };

/* Let the next @nth - 1 checks pass and fail the @nth; 0 disarms. */
static inline int som_fail_write(long nth)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%ld", nth);
	if (som_fail.fei) {
		if (!nth)
			return som_write_file(SOM_FEI "times", "0");
		return som_write_file(SOM_FEI "space", buf) ||
		       som_write_file(SOM_FEI "times", "1") ? -1 : 0;
	}
	return pwrite(som_fail.fd, buf, strlen(buf), 0) ==
	       (ssize_t)strlen(buf) ? 0 : -1;
}

/* The checks still to pass; 0 once the failure was injected. */
static inline long som_fail_left(void)
{
	char buf[32] = "";

	if (som_fail.fei)
		return som_read_ll(SOM_FEI "times") ?
		       som_read_ll(SOM_FEI "space") : 0;
	if (pread(som_fail.fd, buf, sizeof(buf) - 1, 0) <= 0)
		return -1;
	return atol(buf);
}

/* Count this thread's checks: 0 or -1. */
static inline int som_fail_open(void)
{
	som_fail.fei = 0;
	som_fail.fd = open("/proc/thread-self/fail-nth", O_RDWR);
	return som_fail.fd < 0 ? -1 : 0;
}

/* Count fail_function's calls of the function it injects: 0 or -1. */
static inline int som_fail_open_fei(void)
{
	som_fail.fei = 1;
	return som_write_file(SOM_FEI "times", "0") ||
	       som_write_file(SOM_FEI "interval", "1") ||
	       som_write_file(SOM_FEI "verbose", "0") ||
	       som_write_file(SOM_FEI "probability", "100") ? -1 : 0;
}

/* Disarm, and put fail_function's attributes back to their defaults. */
static inline void som_fail_close(void)
{
	if (som_fail.fei) {
		som_write_file(SOM_FEI "probability", "0");
		som_write_file(SOM_FEI "space", "0");
		som_write_file(SOM_FEI "times", "1");
		som_fail.fei = 0;
		return;
	}
	if (som_fail.fd < 0)
		return;
	som_fail_write(0);
	close(som_fail.fd);
	som_fail.fd = -1;
}

/* Arm: the @nth check fails. */
static inline int som_fail_arm(long nth)
{
	som_fail.fired = 0;
	som_fail.paused = 0;
	som_fail.left = nth;
	return som_fail_write(nth);
}

/*
 * Disarm for steps that set up or check and must not fail (a test's own
 * writes to its memory); som_fail_resume() arms again with what was left.
 */
static inline void som_fail_pause(void)
{
	if (som_fail.fired || som_fail.paused || !som_fail.left)
		return;
	som_fail.left = som_fail_left();
	som_fail.fired = som_fail.left == 0;
	som_fail.paused = 1;
	som_fail_write(0);
}

static inline void som_fail_resume(void)
{
	if (!som_fail.paused)
		return;
	som_fail.paused = 0;
	if (!som_fail.fired && som_fail.left)
		som_fail_write(som_fail.left);
}

/* Was the armed failure injected? Disarms either way. */
static inline int som_fail_fired(void)
{
	som_fail_pause();
	som_fail.left = 0;
	return som_fail.fired;
}

static inline int som_errno_ok(void)
{
	return errno == ENOMEM || errno == ENOSPC || errno == EINTR ||
	       errno == EAGAIN;
}

/* 1 if @err (0 or -errno) of a call that moves memory is unclean. */
static inline int som_move_unclean(int err)
{
	errno = -err;
	return err && !som_errno_ok() && err != -EBUSY;
}

/* One /dev/som life cycle. */
static inline int som_dev_cycle(void)
{
	int fd, bad = 0;
	char *p;

	fd = open(SOM_DEV, O_RDWR);
	if (fd < 0)
		return !som_errno_ok();
	p = mmap(NULL, 64 * MiB, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		bad += !som_errno_ok();
	} else {
		som_probe(p, 1);
		som_probe(p + 33 * MiB, 1);
		bad += munmap(p, 64 * MiB) != 0;
	}
	close(fd);
	return bad;
}

/* One som file life cycle, with a 1 GiB piece backed at once. */
static inline int som_file_cycle(void)
{
	int dev, fd, bad = 0;
	char *p;

	dev = open(SOM_DEV, O_RDWR);
	if (dev < 0)
		return !som_errno_ok();
	fd = som_file(dev, 4 * MiB, 0);
	close(dev);
	if (fd < 0) {
		errno = -fd;
		return !som_errno_ok();
	}
	p = mmap(NULL, 8 * MiB, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (fallocate(fd, 0, 0, 8 * MiB))
		bad += !som_errno_ok();
	if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 2 * MiB,
		      2 * MiB))
		bad += !som_errno_ok();
	if (p != MAP_FAILED) {
		/* A hole that cannot be filled again is SIGBUS, nothing else. */
		bad += som_probe(p + 2 * MiB, 1) == SIGSEGV;
		bad += som_probe(p, 0) == SIGSEGV;
		if (ftruncate(fd, 2 * MiB))
			bad += !som_errno_ok();
		bad += munmap(p, 8 * MiB) != 0;
	} else {
		bad += !som_errno_ok();
	}
	/* A whole GiB of nothing yet: one chunk, no 2 MiB blocks. */
	if (ftruncate(fd, 0) || ftruncate(fd, GiB))
		bad += !som_errno_ok();
	else if (fallocate(fd, 0, 0, GiB))
		bad += !som_errno_ok();
	close(fd);
	return bad;
}

#define SOM_FAIL_SPARE	"fail-spare"

/* Add the spare reserved range as SOM_FAIL_SPARE: 0 or -errno. */
static inline int som_fail_spare_add(int dev)
{
	struct som_source_args a;
	uint64_t size, start;

	if (!parse_range(getenv("SOM_SPARE_RANGES"), &size, &start))
		return -ENOENT;
	args_init(&a, SOM_SOURCE_RESERVED);
	a.start = start;
	a.size = size;
	strcpy(a.name, SOM_FAIL_SPARE);
	return src_add(dev, &a);
}

static inline uint64_t som_fail_spare_nodes(void)
{
	return 1ULL << atoi(src_attr(SOM_FAIL_SPARE, "nodes"));
}

/*
 * 64 MiB of /dev/som placed by @mode over @nodes, written with @seed, not
 * armed; the descriptor in *@fd (or -1). MAP_FAILED if that failed.
 */
static inline char *som_fail_placed_64m(uint32_t mode, uint64_t nodes,
					int seed, int *fd)
{
	char *p = MAP_FAILED;

	som_fail_pause();
	*fd = open(SOM_DEV, O_RDWR);
	if (*fd >= 0 && !set_policy(*fd, mode, nodes, 0))
		p = mmap(NULL, 64 * MiB, PROT_READ | PROT_WRITE, MAP_SHARED,
			 *fd, 0);
	if (p != MAP_FAILED)
		som_fill(p, 0, 64 * MiB, 4096, seed);
	som_fail_resume();
	return p;
}

/*
 * After the armed step: disarm, and the memory of som_fail_placed_64m()
 * still holds its data; unmapped and closed. Returns the unclean count.
 */
static inline int som_fail_placed_done(char *p, int fd, int seed)
{
	int bad = 0;

	som_fail_pause();
	if (p != MAP_FAILED) {
		bad += som_check(p, 0, 64 * MiB, 4096, seed) != -1;
		bad += munmap(p, 64 * MiB) != 0;
	}
	if (fd >= 0)
		close(fd);
	return bad;
}

/*
 * One source life cycle: the spare reserved range (SOM_SPARE_RANGES, on a
 * node of its own) added, 64 MiB of a process placed on it, the source
 * removed while the memory is in use (its blocks move to node 0), the
 * memory checked, freed, and the source removed if it is still there.
 */
static inline int som_source_cycle(void)
{
	int dev, fd, err, bad = 0;
	char *p;

	dev = open(SOM_DEV, O_RDWR);
	if (dev < 0)
		return !som_errno_ok();
	err = som_fail_spare_add(dev);
	if (err) {
		close(dev);
		errno = -err;
		return !som_errno_ok();
	}
	p = som_fail_placed_64m(SOM_POLICY_PREFERRED, som_fail_spare_nodes(),
				7, &fd);
	bad += p == MAP_FAILED;
	err = src_remove(dev, SOM_FAIL_SPARE);
	bad += som_fail_placed_done(p, fd, 7);
	bad += som_move_unclean(err);
	if (err)
		bad += src_remove(dev, SOM_FAIL_SPARE) != 0;
	close(dev);
	return bad;
}

/*
 * One policy change that moves memory: the spare reserved range added,
 * 64 MiB of a process on node 0 bound to the spare's node (its blocks
 * move), the memory checked, freed, the source removed.
 */
static inline int som_policy_cycle(void)
{
	int dev, fd, err = 0, bad;
	char *p;

	som_fail_pause();
	dev = open(SOM_DEV, O_RDWR);
	bad = som_fail_spare_add(dev) != 0;
	som_fail_resume();
	p = som_fail_placed_64m(SOM_POLICY_BIND, 1, 9, &fd);
	bad += p == MAP_FAILED;
	if (!bad)
		err = set_policy(fd, SOM_POLICY_BIND, som_fail_spare_nodes(), 0);
	bad += som_fail_placed_done(p, fd, 9);
	bad += som_move_unclean(err);
	bad += src_remove(dev, SOM_FAIL_SPARE) != 0;
	close(dev);
	return bad;
}

/*
 * A som file of 1 GiB on node 0 faulted while node 0's pool is in pieces,
 * so that it lies on 512 2 MiB blocks; those pieces are given back, then
 * a compaction pass assembles the GiB in one chunk. Node 0 needs at least
 * 2 GiB of pool, all free.
 */
static inline int som_compact_cycle(void)
{
	long long total = node_stat(0, "total_bytes");
	int dev, frag, fd = -1, err = 0, bad;
	char *p = MAP_FAILED;
	off_t off;

	som_fail_pause();
	dev = open(SOM_DEV, O_RDWR);
	frag = som_file(dev, 0, SOM_FILE_CLOEXEC);
	bad = frag < 0 || set_policy(frag, SOM_POLICY_BIND, 1, 0) ||
	       ftruncate(frag, total) || fallocate(frag, 0, 0, total);
	for (off = 0; !bad && off < total; off += GiB)
		bad += fallocate(frag, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				 off, 10 * MiB) ||
		       fallocate(frag, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				 off + 12 * MiB, GiB - 12 * MiB);
	if (!bad) {
		fd = som_file(dev, GiB, SOM_FILE_CLOEXEC);
		if (fd >= 0 && !set_policy(fd, SOM_POLICY_BIND, 1, 0))
			p = mmap(NULL, GiB, PROT_READ | PROT_WRITE, MAP_SHARED,
				 fd, 0);
		bad += p == MAP_FAILED;
	}
	if (p != MAP_FAILED)
		som_fill(p, 0, GiB, 64 * 1024, 11);
	if (frag >= 0)
		close(frag);
	close(dev);
	som_fail_resume();
	if (!bad)
		err = som_sysfs_write("migration/compact", "1");
	som_fail_pause();
	bad += som_move_unclean(err);
	if (p != MAP_FAILED) {
		bad += som_check(p, 0, GiB, 64 * 1024, 11) != -1;
		bad += munmap(p, GiB) != 0;
	}
	if (fd >= 0)
		close(fd);
	return bad;
}

/*
 * Touch each 2 MiB block of @p (@len bytes) until it reads: a block the
 * swap store failed to give back is SIGBUS and stays in the store, so a
 * second touch reads it. Returns the blocks that never read.
 */
static inline int som_fail_touch_back(char *p, size_t len)
{
	size_t off;
	int tries, bad = 0;

	for (off = 0; off < len; off += 2 * MiB) {
		for (tries = 0; tries < 3 && som_probe(p + off, 0); tries++)
			;
		bad += tries == 3;
	}
	return bad;
}

/*
 * One swap life cycle: a store in /tmp, 8 MiB of /dev/som written, paged
 * out (a write that fails keeps its block), read back by touch, paged out
 * again and read back by the store's removal (a removal that fails keeps
 * the store: it is tried again, unarmed); the data checked, the store
 * empty and gone.
 */
static inline int som_swap_cycle(void)
{
	const char *path = "/tmp/som-fail-swap";
	struct som_swap_args a;
	struct som_pageout po;
	int dev, st, bad = 0;
	char *p;

	som_fail_pause();
	dev = open(SOM_DEV, O_RDWR);
	st = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	memset(&a, 0, sizeof(a));
	a.fd = st;
	a.size = 64 * MiB;
	if (dev < 0 || st < 0 || ioctl(dev, SOM_IOC_SWAP_ADD, &a))
		return 1;
	p = mmap(NULL, 8 * MiB, PROT_READ | PROT_WRITE, MAP_SHARED, dev, 0);
	if (p == MAP_FAILED)
		return 1;
	som_fill(p, 0, 8 * MiB, 4096, 11);
	som_fail_resume();

	memset(&po, 0, sizeof(po));
	po.length = 8 * MiB;
	if (ioctl(dev, SOM_IOC_PAGEOUT, &po) && errno != EIO &&
	    errno != ENOSPC && !som_errno_ok())
		bad++;
	bad += som_fail_touch_back(p, 8 * MiB);
	if (ioctl(dev, SOM_IOC_PAGEOUT, &po) && errno != EIO &&
	    errno != ENOSPC && !som_errno_ok())
		bad++;
	if (ioctl(dev, SOM_IOC_SWAP_REMOVE) && errno != EIO)
		bad++;

	som_fail_pause();
	if (som_stat("swap/size_bytes") && ioctl(dev, SOM_IOC_SWAP_REMOVE))
		bad++;
	bad += som_check(p, 0, 8 * MiB, 4096, 11) != -1;
	bad += munmap(p, 8 * MiB) != 0;
	bad += som_stat("swap/size_bytes") != 0;
	close(st);
	unlink(path);
	close(dev);
	som_fail_resume();
	return bad;
}

#endif /* SOM_FAIL_CYCLES_H */
