// SPDX-License-Identifier: GPL-2.0
/*
 * Paging som memory out to a swap store and reading it back
 * (Documentation/admin-guide.md, "Swap"): SOM_IOC_SWAP_ADD and
 * SOM_IOC_SWAP_REMOVE, SOM_IOC_PAGEOUT on /dev/som and som files, faults
 * that read blocks back, and what frees a block's place in the store.
 * Every test checks the data byte for byte (or word for word) and the
 * store's and the pool's counters exactly; the store is a file in the
 * guest's root file system.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <linux/dm-ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>

#include "kselftest_harness.h"
#include "som_util.h"
#include "som_swap_util.h"
#include "som_pool_util.h"

static void store_path(char *buf, size_t len)
{
	snprintf(buf, len, "/tmp/som-swap-test.%d", getpid());
}

FIXTURE(swap) {
	int dev;
	int store;
	char path[64];
	long long reserved;	/* the pool's reserved_bytes at the start */
	long long in, out;	/* the store's counters at the start */
};

FIXTURE_SETUP(swap)
{
	SOM_OPEN_DEV(self->dev);
	store_path(self->path, sizeof(self->path));
	self->store = open(self->path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	ASSERT_LE(0, self->store);
	/*
	 * A test that failed an assertion skipped its teardown: its store
	 * is still there (its memory went with its process).
	 */
	if (swap_stat("size_bytes"))
		ASSERT_EQ(0, swap_remove(self->dev));
	ASSERT_EQ(0, swap_add(self->dev, self->store, STORE_SIZE));
	ASSERT_EQ(STORE_SIZE, swap_stat("size_bytes"));
	ASSERT_EQ(0, swap_stat("used_bytes"));
	self->reserved = som_stat("reserved_bytes");
	self->in = swap_stat("in_bytes");
	self->out = swap_stat("out_bytes");
}

FIXTURE_TEARDOWN(swap)
{
	if (self->dev < 0)
		return;
	/* Nothing may be left in the store: every test frees its slots. */
	EXPECT_EQ(0, swap_stat("used_bytes"));
	EXPECT_EQ(0, swap_remove(self->dev));
	EXPECT_EQ(0, swap_stat("size_bytes"));
	EXPECT_EQ(self->reserved, som_stat("reserved_bytes"));
	close(self->store);
	unlink(self->path);
	close(self->dev);
}

/* Bad stores and bad calls are refused, and a refused one takes nothing. */
TEST(add_and_remove_refuse_what_they_must)
{
	int dev, fd, ro, ap, sf;
	struct som_swap_args a;
	char path[64];
	pid_t pid;
	int status;

	SOM_OPEN_DEV(dev);
	store_path(path, sizeof(path));
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	ASSERT_LE(0, fd);
	ro = open(path, O_RDONLY);
	ap = open(path, O_RDWR | O_APPEND);
	sf = som_file(dev, 4 * MiB, 0);
	ASSERT_LE(0, ro);
	ASSERT_LE(0, ap);
	ASSERT_LE(0, sf);

	EXPECT_EQ(-ENOENT, swap_remove(dev));
	EXPECT_EQ(-ENODEV, pageout(dev, 0, 2 * MiB));
	EXPECT_EQ(-ENODEV, som_sysfs_write(SWAP "reclaim", "2M"));
	EXPECT_EQ(-EINVAL, swap_add(dev, fd, 0));
	EXPECT_EQ(-EINVAL, swap_add(dev, fd, 3 * MiB));
	EXPECT_EQ(-EINVAL, swap_add(dev, fd, 1ULL << 62));
	EXPECT_EQ(-EINVAL, swap_add(dev, ro, 4 * MiB));
	EXPECT_EQ(-EINVAL, swap_add(dev, sf, 4 * MiB));
	EXPECT_EQ(-EINVAL, swap_add(dev, dev, 4 * MiB));
	EXPECT_EQ(-EBADF, swap_add(dev, 1000, 4 * MiB));
	memset(&a, 0, sizeof(a));
	a.fd = fd;
	a.size = 4 * MiB;
	a.flags = 1;
	EXPECT_EQ(-1, ioctl(dev, SOM_IOC_SWAP_ADD, &a));
	EXPECT_EQ(EINVAL, errno);
	a.flags = 0;
	a.__reserved[1] = 1;
	EXPECT_EQ(-1, ioctl(dev, SOM_IOC_SWAP_ADD, &a));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(0, swap_stat("size_bytes"));

	/* Without CAP_SYS_ADMIN: EPERM, both ways. */
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		if (setresuid(65534, 65534, 65534))
			_exit(2);
		_exit(swap_add(dev, fd, 4 * MiB) == -EPERM &&
		      swap_remove(dev) == -EPERM ? 0 : 1);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, status);

	ASSERT_EQ(0, swap_add(dev, fd, 4 * MiB));
	EXPECT_EQ(-EBUSY, swap_add(dev, fd, 4 * MiB));
	EXPECT_EQ(4 * MiB, swap_stat("size_bytes"));
	EXPECT_EQ(0, swap_remove(dev));
	EXPECT_EQ(-ENOENT, swap_remove(dev));
	EXPECT_EQ(0, swap_stat("size_bytes"));
	close(sf);
	close(ap);
	close(ro);
	close(fd);
	unlink(path);
	close(dev);
}

/*
 * 64 MiB paged out: the store holds it, the pool holds its reservation
 * and no block; each touch reads a block back, every word as it was.
 */
TEST_F(swap, paged_out_memory_reads_back_every_word)
{
	size_t len = 64 * MiB;
	long long allocated;
	char *p;

	p = som_map_shared(self->dev, len);
	ASSERT_NE(MAP_FAILED, p);
	som_fill(p, 0, len, 8, 1);
	allocated = som_stat("total_bytes") - som_stat("free_bytes") -
		    som_stat("reserved_bytes");

	ASSERT_EQ((long long)len, pageout(self->dev, 0, len));
	EXPECT_EQ((long long)len, swap_stat("used_bytes"));
	EXPECT_EQ(self->out + (long long)len, swap_stat("out_bytes"));
	/* The reservation stays; the blocks are free. */
	EXPECT_EQ(self->reserved + (long long)len, som_stat("reserved_bytes"));
	EXPECT_EQ(allocated - (long long)len,
		  som_stat("total_bytes") - som_stat("free_bytes") -
		  som_stat("reserved_bytes"));
	EXPECT_NE(0, som_stat("metadata/swap_bytes"));
	/* Paging out again finds nothing to page out. */
	EXPECT_EQ(0, pageout(self->dev, 0, len));

	EXPECT_EQ(-1, som_check(p, 0, len, 8, 1));
	EXPECT_EQ(0, swap_stat("used_bytes"));
	EXPECT_EQ(self->in + (long long)len, swap_stat("in_bytes"));
	EXPECT_EQ(self->reserved, som_stat("reserved_bytes"));
	ASSERT_EQ(0, munmap(p, len));
}

/* Part of a range paged out; the rest keeps its blocks and entries. */
TEST_F(swap, a_partial_pageout_leaves_the_rest_alone)
{
	size_t len = 16 * MiB;
	char *p;

	p = som_map_shared(self->dev, len);
	ASSERT_NE(MAP_FAILED, p);
	som_fill(p, 0, len, 64, 2);
	ASSERT_EQ(4 * (long long)MiB, pageout(self->dev, 6 * MiB, 4 * MiB));
	EXPECT_EQ(4 * (long long)MiB, swap_stat("used_bytes"));
	EXPECT_EQ(-1, som_check(p, 0, 6 * MiB, 64, 2));
	EXPECT_EQ(-1, som_check(p, 10 * MiB, len, 64, 2));
	EXPECT_EQ(4 * (long long)MiB, swap_stat("used_bytes"));
	EXPECT_EQ(-1, som_check(p, 0, len, 64, 2));
	EXPECT_EQ(0, swap_stat("used_bytes"));
	ASSERT_EQ(0, munmap(p, len));
}

/* munmap() and exit free the slots of what they unmap, nothing else. */
TEST_F(swap, munmap_and_exit_free_their_slots)
{
	size_t len = 16 * MiB;
	pid_t pid;
	int status;
	char *p;

	p = som_map_shared(self->dev, len);
	ASSERT_NE(MAP_FAILED, p);
	som_fill(p, 0, len, 64, 3);
	ASSERT_EQ((long long)len, pageout(self->dev, 0, len));
	ASSERT_EQ(0, munmap(p, 8 * MiB));
	EXPECT_EQ(8 * (long long)MiB, swap_stat("used_bytes"));
	EXPECT_EQ(-1, som_check(p, 8 * MiB, len, 64, 3));
	ASSERT_EQ(0, munmap(p + 8 * MiB, 8 * MiB));
	EXPECT_EQ(0, swap_stat("used_bytes"));

	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		int fd = open(SOM_DEV, O_RDWR);
		char *q = fd < 0 ? MAP_FAILED : som_map_shared(fd, len);

		if (q == MAP_FAILED)
			_exit(2);
		som_fill(q, 0, len, 4096, 4);
		_exit(pageout(fd, 0, len) == (long long)len ? 0 : 3);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, status);
	EXPECT_EQ(0, swap_stat("used_bytes"));
	EXPECT_EQ(self->reserved, som_stat("reserved_bytes"));
}

/* A som file: punching and truncating free slots; holes read zeros. */
TEST_F(swap, a_som_file_pages_out_and_punch_and_truncate_free_slots)
{
	size_t len = 32 * MiB;
	int fd;
	char *p;

	fd = som_file(self->dev, len, 0);
	ASSERT_LE(0, fd);
	p = som_map_shared(fd, len);
	ASSERT_NE(MAP_FAILED, p);
	som_fill(p, 0, len, 64, 5);
	ASSERT_EQ((long long)len, pageout(fd, 0, len));
	EXPECT_EQ((long long)len, swap_stat("used_bytes"));
	ASSERT_EQ(0, fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			       8 * MiB, 8 * MiB));
	EXPECT_EQ(24 * (long long)MiB, swap_stat("used_bytes"));
	ASSERT_EQ(0, munmap(p, len));
	ASSERT_EQ(0, ftruncate(fd, 16 * MiB));
	EXPECT_EQ(8 * (long long)MiB, swap_stat("used_bytes"));
	p = som_map_shared(fd, 16 * MiB);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(-1, som_check(p, 0, 8 * MiB, 64, 5));
	/* Reading the hole filled it with zeroed blocks. */
	EXPECT_EQ(-1, som_check_zero(p + 8 * MiB, 8 * MiB, 64));
	EXPECT_EQ(0, swap_stat("used_bytes"));
	/* Paged out again, the file's memory stays with the file. */
	ASSERT_EQ(16 * (long long)MiB, pageout(fd, 0, 16 * MiB));
	ASSERT_EQ(0, munmap(p, 16 * MiB));
	EXPECT_EQ(16 * (long long)MiB, swap_stat("used_bytes"));
	close(fd);
	EXPECT_EQ(0, swap_stat("used_bytes"));
}

/*
 * som writes through a file of its own: the descriptor the store was
 * added with, set to O_APPEND afterwards, changes nothing (before, the
 * writes went to the end of the file and the blocks read back as zeros).
 */
TEST_F(swap, the_adders_descriptor_does_not_steer_the_writes)
{
	size_t len = 8 * MiB;
	struct stat st;
	char *p;

	ASSERT_EQ(0, fcntl(self->store, F_SETFL, O_APPEND));
	p = som_map_shared(self->dev, len);
	ASSERT_NE(MAP_FAILED, p);
	som_fill(p, 0, len, 64, 12);
	ASSERT_EQ((long long)len, pageout(self->dev, 0, len));
	ASSERT_EQ(0, fstat(self->store, &st));
	EXPECT_EQ(STORE_SIZE, st.st_size);
	EXPECT_EQ(-1, som_check(p, 0, len, 64, 12));
	ASSERT_EQ(0, munmap(p, len));
}

/*
 * Zeroing part of a block paged out (a punch inside it, a truncation
 * into it and growing back) reads it back first: the store's copy would
 * bring the old data back (before, it did).
 */
TEST_F(swap, a_partial_punch_or_truncate_of_a_block_paged_out_zeroes_it)
{
	size_t len = 4 * MiB;
	int fd;
	char *p;

	fd = som_file(self->dev, len, 0);
	ASSERT_LE(0, fd);
	p = som_map_shared(fd, len);
	ASSERT_NE(MAP_FAILED, p);
	memset(p, 0xaa, len);
	ASSERT_EQ((long long)len, pageout(fd, 0, len));
	ASSERT_EQ(0, fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			       4096, 8192));
	/* The punched block was read back to be zeroed; the other was not. */
	EXPECT_EQ(2 * (long long)MiB, swap_stat("used_bytes"));
	EXPECT_EQ(-1, som_check_zero(p + 4096, 8192, 8));
	EXPECT_EQ((char)0xaa, p[4095]);
	EXPECT_EQ((char)0xaa, p[12288]);
	ASSERT_EQ(2 * (long long)MiB, pageout(fd, 0, len));
	ASSERT_EQ(0, munmap(p, len));
	ASSERT_EQ(0, ftruncate(fd, MiB));
	EXPECT_EQ(0, swap_stat("used_bytes"));
	ASSERT_EQ(0, ftruncate(fd, len));
	p = som_map_shared(fd, len);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(-1, som_check_zero(p + MiB, len - MiB, 8));
	EXPECT_EQ((char)0xaa, p[MiB - 1]);
	EXPECT_EQ(-1, som_check_zero(p + 4096, 8192, 8));
	ASSERT_EQ(0, munmap(p, len));
	close(fd);
}

/*
 * Compaction leaves a GiB with blocks paged out alone: reading them back
 * to assemble the GiB would undo the page-out (before, it did).
 */
TEST_F(swap, compaction_does_not_read_paged_out_blocks_back)
{
	long long in;
	int fd;
	char *p;

	fd = som_file(self->dev, GiB, 0);
	ASSERT_LE(0, fd);
	p = som_map_shared(fd, 4 * MiB);
	ASSERT_NE(MAP_FAILED, p);
	som_fill(p, 0, 4 * MiB, 4096, 13);
	ASSERT_EQ(0, munmap(p, 4 * MiB));
	ASSERT_EQ(2 * (long long)MiB, pageout(fd, 0, 2 * MiB));
	in = swap_stat("in_bytes");
	ASSERT_EQ(0, som_sysfs_write("migration/compact", "1"));
	EXPECT_EQ(2 * (long long)MiB, swap_stat("used_bytes"));
	EXPECT_EQ(in, swap_stat("in_bytes"));
	p = som_map_shared(fd, 4 * MiB);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(-1, som_check(p, 0, 4 * MiB, 4096, 13));
	ASSERT_EQ(0, munmap(p, 4 * MiB));
	close(fd);
}

#define FEI	"/sys/kernel/debug/fail_function/"

/*
 * A child that maps 32 MiB of /dev/som, fills and pages it out, says so
 * on @ready, then copies it into a memfd with write() for ever, paging
 * it out again after each copy.
 */
static void killed_child(int ready, int seed)
{
	size_t len = 32 * MiB;
	int fd = open(SOM_DEV, O_RDWR), out = memfd_create("sink", 0);
	char *q = fd < 0 ? MAP_FAILED : som_map_shared(fd, len);

	if (q == MAP_FAILED || out < 0)
		_exit(2);
	som_fill(q, 0, len, 4096, seed);
	if (pageout(fd, 0, len) != (long long)len)
		_exit(3);
	if (write(ready, "r", 1) != 1)
		_exit(4);
	for (;;) {
		if (write(out, q, len) < 0 && errno != EFAULT)
			_exit(5);
		pageout(fd, 0, len);
		lseek(out, 0, SEEK_SET);
	}
}

/* Start killed_child(), SIGKILL it @us after it is ready: reaped in 10 s? */
static int kill_reaps(int seed, int us)
{
	int ready[2], i;
	pid_t pid;
	char c;

	if (pipe(ready))
		return 0;
	pid = fork();
	if (pid < 0)
		return 0;
	if (!pid)
		killed_child(ready[1], seed);
	close(ready[1]);
	if (read(ready[0], &c, 1) != 1)
		c = 0;
	close(ready[0]);
	usleep(us);
	kill(pid, SIGKILL);
	for (i = 0; i < 1000; i++) {
		if (waitpid(pid, NULL, WNOHANG) == pid)
			return c == 'r';
		usleep(10 * 1000);
	}
	return 0;
}

/*
 * SIGKILL while a write() copies from memory paged out: the copy's fault
 * is stopped, and the task dies. Before the fix the fault returned
 * without an entry on -EINTR, the copy faulted again, and each new read
 * was refused at once for the pending signal: the task looped in the
 * kernel for ever. A store on tmpfs finishes its reads whatever the
 * signals, so on the debug tier fail_function makes every read of the
 * store return -EINTR, as a file system's read does with a fatal signal
 * pending, for a last child.
 */
TEST_F_TIMEOUT(swap, a_task_killed_while_reading_back_dies, 600)
{
	char val[32];
	int round;

	for (round = 0; round < 30; round++)
		ASSERT_TRUE(kill_reaps(round, round * 100))
			TH_LOG("round %d: the killed child is still there after 10 s",
			       round);
	EXPECT_EQ(0, swap_stat("used_bytes"));
	if (access(FEI "inject", W_OK))
		return;
	ASSERT_EQ(0, som_write_file(FEI "inject", "som_swap_read"));
	snprintf(val, sizeof(val), "%#lx", (unsigned long)-EINTR);
	ASSERT_EQ(0, som_write_file(FEI "som_swap_read/retval", val));
	ASSERT_EQ(0, som_write_file(FEI "probability", "100"));
	ASSERT_EQ(0, som_write_file(FEI "interval", "1"));
	ASSERT_EQ(0, som_write_file(FEI "times", "-1"));
	EXPECT_TRUE(kill_reaps(99, 200 * 1000))
		TH_LOG("with every read -EINTR, the killed child is still there after 10 s");
	som_write_file(FEI "inject", "\n");
	EXPECT_EQ(0, swap_stat("used_bytes"));
}

/*
 * A growing fallocate() that fails once the size has grown (fail_function
 * makes som_region_allocate() fail, debug tier) leaves the size as it
 * was, with a block paged out at the old end and every read of the store
 * failing: before the fix its undo read back the block at the old end,
 * failed, and the file stayed grown.
 */
TEST_F(swap, a_failed_growing_fallocate_keeps_the_size)
{
	size_t len = 3 * MiB;
	struct stat st;
	char val[32];
	int fd, err;
	char *p;

	if (access(FEI "inject", W_OK))
		SKIP(return, "no fail_function in this kernel (the debug tier has it)");
	fd = som_file(self->dev, len, 0);
	ASSERT_LE(0, fd);
	p = som_map_shared(fd, len);
	ASSERT_NE(MAP_FAILED, p);
	som_fill(p, 0, len, 64, 15);
	ASSERT_EQ(0, munmap(p, len));
	ASSERT_EQ(4 * (long long)MiB, pageout(fd, 0, 4 * MiB));

	ASSERT_EQ(0, som_write_file(FEI "inject", "som_swap_read"));
	snprintf(val, sizeof(val), "%#lx", (unsigned long)-EIO);
	ASSERT_EQ(0, som_write_file(FEI "som_swap_read/retval", val));
	ASSERT_EQ(0, som_write_file(FEI "inject", "som_region_allocate"));
	snprintf(val, sizeof(val), "%#lx", (unsigned long)-ENOMEM);
	ASSERT_EQ(0, som_write_file(FEI "som_region_allocate/retval", val));
	ASSERT_EQ(0, som_write_file(FEI "probability", "100"));
	ASSERT_EQ(0, som_write_file(FEI "interval", "1"));
	ASSERT_EQ(0, som_write_file(FEI "times", "-1"));
	err = fallocate(fd, 0, 0, 64 * MiB) ? errno : 0;
	som_write_file(FEI "inject", "\n");
	EXPECT_EQ(ENOSPC, err);
	ASSERT_EQ(0, fstat(fd, &st));
	EXPECT_EQ((long long)len, (long long)st.st_size);
	p = som_map_shared(fd, len);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(-1, som_check(p, 0, len, 64, 15));
	ASSERT_EQ(0, munmap(p, len));
	close(fd);
}

#define BRD	"/som/test-modules/brd.ko"

/*
 * A block device as the store: a RAM disk (Debian's brd.ko, staged for
 * the stock kernel). som holds it exclusively while it is the store; the
 * data goes there and comes back.
 */
TEST_F(swap, a_block_device_holds_the_store_exclusively)
{
	size_t len = 16 * MiB;
	int mod, bd, busy;
	char *p;

	mod = open(BRD, O_RDONLY | O_CLOEXEC);
	if (mod < 0)
		SKIP(return, "no RAM disk module for this kernel (" BRD ")");
	ASSERT_EQ(0, syscall(SYS_finit_module, mod, "rd_nr=1 rd_size=65536", 0))
		TH_LOG("brd: %s", strerror(errno));
	close(mod);
	ASSERT_EQ(0, swap_remove(self->dev));
	/* devtmpfs makes the node from a thread of its own. */
	for (busy = 0; busy < 200 && access("/dev/ram0", F_OK); busy++)
		usleep(10 * 1000);
	bd = open("/dev/ram0", O_RDWR);
	ASSERT_LE(0, bd);
	EXPECT_EQ(-EINVAL, swap_add(self->dev, bd, 128 * MiB));
	ASSERT_EQ(0, swap_add(self->dev, bd, 64 * MiB));
	busy = open("/dev/ram0", O_RDWR | O_EXCL);
	EXPECT_GT(0, busy);
	EXPECT_EQ(EBUSY, errno);

	p = som_map_shared(self->dev, len);
	ASSERT_NE(MAP_FAILED, p);
	som_fill(p, 0, len, 8, 14);
	ASSERT_EQ((long long)len, pageout(self->dev, 0, len));
	EXPECT_EQ((long long)len, swap_stat("used_bytes"));
	EXPECT_EQ(-1, som_check(p, 0, len, 8, 14));
	ASSERT_EQ((long long)len, pageout(self->dev, 0, len));
	ASSERT_EQ(0, swap_remove(self->dev));
	EXPECT_EQ(-1, som_check(p, 0, len, 8, 14));
	ASSERT_EQ(0, munmap(p, len));

	busy = open("/dev/ram0", O_RDWR | O_EXCL);
	EXPECT_LE(0, busy);
	close(busy);
	close(bd);
	EXPECT_EQ(0, syscall(SYS_delete_module, "brd", O_NONBLOCK));
	/* The teardown removes a store: put the file back. */
	ASSERT_EQ(0, swap_add(self->dev, self->store, STORE_SIZE));
}

#define DM_MOD		"/som/test-modules/dm-mod.ko"
#define DM_NAME		"som-swap-test"
#define DM_NODE		"/tmp/som-swap-test.dm"
#define DM_CONTROL	"/tmp/som-swap-test.dm-control"

/* A device-mapper ioctl on @name, with one target if @type is not NULL. */
static int dm_ioctl_one(int ctl, unsigned long cmd, uint32_t flags,
			const char *type, uint64_t sectors,
			const char *params, uint64_t *dev)
{
	union {
		struct dm_ioctl io;
		char buf[16384];
	} u;
	struct dm_target_spec *spec;

	memset(&u, 0, sizeof(u));
	u.io.version[0] = DM_VERSION_MAJOR;
	u.io.data_size = sizeof(u);
	u.io.data_start = sizeof(u.io);
	u.io.flags = flags;
	snprintf(u.io.name, sizeof(u.io.name), "%s", DM_NAME);
	if (type) {
		spec = (struct dm_target_spec *)(u.buf + sizeof(u.io));
		spec->length = sectors;
		snprintf(spec->target_type, sizeof(spec->target_type), "%s",
			 type);
		snprintf((char *)(spec + 1), 256, "%s", params);
		u.io.target_count = 1;
	}
	if (ioctl(ctl, cmd, &u.io))
		return -errno;
	if (dev)
		*dev = u.io.dev;
	return 0;
}

/* Load a table of one target of @type and make it the live one. */
static int dm_switch(int ctl, const char *type, uint64_t sectors,
		     const char *params)
{
	int err;

	err = dm_ioctl_one(ctl, DM_TABLE_LOAD, 0, type, sectors, params,
			   NULL);
	if (!err)
		err = dm_ioctl_one(ctl, DM_DEV_SUSPEND, DM_SUSPEND_FLAG, NULL,
				   0, NULL, NULL);
	if (!err)
		err = dm_ioctl_one(ctl, DM_DEV_SUSPEND, 0, NULL, 0, NULL,
				   NULL);
	return err;
}

/*
 * A store whose device starts failing every I/O (device-mapper's error
 * target swapped in under a linear one over a RAM disk, stock tier): a
 * touch of a block paged out before is SIGBUS at its address and the
 * block stays in the store (read_errors); a page-out fails with EIO and
 * the block stays in the pool, its data intact (write_errors); once the
 * device works again, every block reads back as it was, and the store
 * goes.
 */
TEST_F(swap, a_store_device_that_fails_is_sigbus_and_eio_and_nothing_lost)
{
	uint64_t sectors = (64 * MiB) >> 9, dev;
	long long rerr, werr;
	char params[64], line[32];
	unsigned int maj, min;
	int mod, ctl, bd, i;
	struct stat st;
	size_t len = 8 * MiB;
	char *p;

	mod = open(BRD, O_RDONLY | O_CLOEXEC);
	if (mod < 0)
		SKIP(return, "no RAM disk module for this kernel (" BRD ")");
	ASSERT_EQ(0, syscall(SYS_finit_module, mod, "rd_nr=1 rd_size=65536", 0))
		TH_LOG("brd: %s", strerror(errno));
	close(mod);
	mod = open(DM_MOD, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, mod) TH_LOG("no device-mapper module (" DM_MOD ")");
	ASSERT_EQ(0, syscall(SYS_finit_module, mod, "", 0))
		TH_LOG("dm-mod: %s", strerror(errno));
	close(mod);
	for (i = 0; i < 200 && access("/dev/ram0", F_OK); i++)
		usleep(10 * 1000);
	ASSERT_EQ(0, stat("/dev/ram0", &st));
	ASSERT_LT(0, som_read_text("/sys/class/misc/device-mapper/dev", line,
				   sizeof(line)));
	ASSERT_EQ(2, sscanf(line, "%u:%u", &maj, &min));
	unlink(DM_CONTROL);
	ASSERT_EQ(0, mknod(DM_CONTROL, S_IFCHR | 0600, makedev(maj, min)));
	ctl = open(DM_CONTROL, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, ctl);
	ASSERT_EQ(0, dm_ioctl_one(ctl, DM_DEV_CREATE, 0, NULL, 0, NULL, &dev));
	snprintf(params, sizeof(params), "%u:%u 0", major(st.st_rdev),
		 minor(st.st_rdev));
	ASSERT_EQ(0, dm_switch(ctl, "linear", sectors, params));
	unlink(DM_NODE);
	ASSERT_EQ(0, mknod(DM_NODE, S_IFBLK | 0600, (dev_t)dev));
	bd = open(DM_NODE, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, bd);
	ASSERT_EQ(0, swap_remove(self->dev));
	ASSERT_EQ(0, swap_add(self->dev, bd, 64 * MiB));

	p = som_map_shared(self->dev, len);
	ASSERT_NE(MAP_FAILED, p);
	som_fill(p, 0, len, 8, 16);
	ASSERT_EQ(4 * MiB, pageout(self->dev, 0, 4 * MiB));

	ASSERT_EQ(0, dm_switch(ctl, "error", sectors, ""));
	rerr = swap_stat("read_errors");
	werr = swap_stat("write_errors");
	EXPECT_EQ(SIGBUS, som_probe(p + 2 * MiB + 8, 0));
	EXPECT_EQ(p + 2 * MiB + 8, som_probe_addr);
	EXPECT_LT(rerr, swap_stat("read_errors"));
	EXPECT_EQ(4 * MiB, swap_stat("used_bytes"));
	EXPECT_EQ(-EIO, pageout(self->dev, 4 * MiB, 2 * MiB));
	EXPECT_LT(werr, swap_stat("write_errors"));
	EXPECT_EQ(4 * MiB, swap_stat("used_bytes"));
	EXPECT_EQ(-1, som_check(p, 4 * MiB, len, 8, 16));
	EXPECT_EQ(-EIO, swap_remove(self->dev));

	ASSERT_EQ(0, dm_switch(ctl, "linear", sectors, params));
	EXPECT_EQ(-1, som_check(p, 0, len, 8, 16));
	EXPECT_EQ(0, swap_stat("used_bytes"));
	ASSERT_EQ(0, munmap(p, len));
	ASSERT_EQ(0, swap_remove(self->dev));
	close(bd);
	EXPECT_EQ(0, dm_ioctl_one(ctl, DM_DEV_REMOVE, 0, NULL, 0, NULL, NULL));
	close(ctl);
	unlink(DM_NODE);
	unlink(DM_CONTROL);
	EXPECT_EQ(0, syscall(SYS_delete_module, "dm_mod", O_NONBLOCK));
	EXPECT_EQ(0, syscall(SYS_delete_module, "brd", O_NONBLOCK));
	/* The teardown removes a store: put the file back. */
	ASSERT_EQ(0, swap_add(self->dev, self->store, STORE_SIZE));
}

/* Only the owner pages out; bad ranges and flags are refused. */
TEST_F(swap, pageout_refuses_bad_calls_and_other_processes)
{
	struct som_pageout po;
	size_t len = 4 * MiB;
	pid_t pid;
	int status;
	char *p;

	p = som_map_shared(self->dev, len);
	ASSERT_NE(MAP_FAILED, p);
	som_fill(p, 0, len, 4096, 6);
	EXPECT_EQ(-EINVAL, pageout(self->dev, 4096, 2 * MiB));
	EXPECT_EQ(-EINVAL, pageout(self->dev, 0, 4096));
	EXPECT_EQ(-EINVAL, pageout(self->dev, -2 * MiB, 4 * MiB));
	EXPECT_EQ(0, pageout(self->dev, 0, 0));
	EXPECT_EQ(0, pageout(self->dev, 64 * MiB, 2 * MiB));
	memset(&po, 0, sizeof(po));
	po.length = 2 * MiB;
	po.flags = 1;
	EXPECT_EQ(-1, ioctl(self->dev, SOM_IOC_PAGEOUT, &po));
	EXPECT_EQ(EINVAL, errno);

	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(pageout(self->dev, 0, len) == -EPERM ? 0 : 1);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, status);
	EXPECT_EQ(0, swap_stat("used_bytes"));
	EXPECT_EQ(-1, som_check(p, 0, len, 4096, 6));
	ASSERT_EQ(0, munmap(p, len));
}

/* Removing the store reads every block back first. */
TEST_F(swap, remove_reads_every_block_back)
{
	size_t len = 32 * MiB;
	char *p, *q;
	int fd;

	p = som_map_shared(self->dev, len);
	ASSERT_NE(MAP_FAILED, p);
	som_fill(p, 0, len, 8, 7);
	fd = som_file(self->dev, 8 * MiB, 0);
	ASSERT_LE(0, fd);
	q = som_map_shared(fd, 8 * MiB);
	ASSERT_NE(MAP_FAILED, q);
	som_fill(q, 0, 8 * MiB, 8, 9);
	ASSERT_EQ(0, munmap(q, 8 * MiB));
	ASSERT_EQ((long long)len, pageout(self->dev, 0, len));
	ASSERT_EQ(8 * (long long)MiB, pageout(fd, 0, 8 * MiB));
	EXPECT_EQ(40 * (long long)MiB, swap_stat("used_bytes"));

	ASSERT_EQ(0, swap_remove(self->dev));
	EXPECT_EQ(0, swap_stat("size_bytes"));
	EXPECT_EQ(self->in + 40 * (long long)MiB, swap_stat("in_bytes"));
	EXPECT_EQ(self->reserved, som_stat("reserved_bytes"));
	EXPECT_EQ(-1, som_check(p, 0, len, 8, 7));
	ASSERT_EQ(0, munmap(p, len));
	q = som_map_shared(fd, 8 * MiB);
	ASSERT_NE(MAP_FAILED, q);
	EXPECT_EQ(-1, som_check(q, 0, 8 * MiB, 8, 9));
	ASSERT_EQ(0, munmap(q, 8 * MiB));
	close(fd);
	/* The teardown removes a store: put one back. */
	ASSERT_EQ(0, swap_add(self->dev, self->store, STORE_SIZE));
}

/*
 * A store that cannot give a block back (cut short behind som's back):
 * the owner gets SIGBUS there and nowhere else, removing the store fails
 * with EIO and keeps it, and unmapping the block frees its slot.
 */
TEST_F(swap, a_block_the_store_lost_is_sigbus_and_remove_fails)
{
	size_t len = 8 * MiB;
	char *p;

	p = som_map_shared(self->dev, len);
	ASSERT_NE(MAP_FAILED, p);
	som_fill(p, 0, len, 64, 8);
	ASSERT_EQ(2 * (long long)MiB, pageout(self->dev, 2 * MiB, 2 * MiB));
	ASSERT_EQ(0, ftruncate(self->store, 0));
	EXPECT_EQ(SIGBUS, som_probe(p + 2 * MiB + 4096, 0));
	EXPECT_EQ(p + 2 * MiB + 4096, som_probe_addr);
	EXPECT_EQ(SIGBUS, som_probe(p + 3 * MiB, 1));
	EXPECT_LE(2, swap_stat("read_errors"));
	EXPECT_EQ(-1, som_check(p, 0, 2 * MiB, 64, 8));
	EXPECT_EQ(-1, som_check(p, 4 * MiB, len, 64, 8));
	EXPECT_EQ(-EIO, swap_remove(self->dev));
	EXPECT_EQ(STORE_SIZE, swap_stat("size_bytes"));
	EXPECT_EQ(2 * (long long)MiB, swap_stat("used_bytes"));
	/* A new page-out goes to the store again and reads back. */
	ASSERT_EQ(2 * (long long)MiB, pageout(self->dev, 4 * MiB, 2 * MiB));
	EXPECT_EQ(-1, som_check(p, 4 * MiB, 6 * MiB, 64, 8));
	ASSERT_EQ(0, munmap(p + 2 * MiB, 2 * MiB));
	EXPECT_EQ(0, swap_stat("used_bytes"));
	ASSERT_EQ(0, munmap(p, len));
}

static int reclaim(long long bytes)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%lld", bytes);
	return som_sysfs_write(SWAP "reclaim", buf);
}

/*
 * The administrator's reclaim pages out the coldest memory first: of a
 * mapping whose first half two aging scans found idle and whose second
 * half was used, reclaiming half pages out exactly the idle half; more
 * than there is pages out everything, and everything reads back.
 */
TEST_F(swap, reclaim_pages_out_the_coldest_first)
{
	size_t len = 64 * MiB, half = len / 2;
	long long before, in;
	int i;
	char *p;

	p = som_map_shared(self->dev, len);
	ASSERT_NE(MAP_FAILED, p);
	som_fill(p, 0, len, 64, 10);
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(0, som_sysfs_write("aging/scan", "1"));
		EXPECT_EQ(-1, som_check(p, half, len, 4096, 10));
	}
	before = swap_stat("reclaimed_bytes");
	ASSERT_EQ(0, reclaim(half));
	EXPECT_EQ((long long)half, swap_stat("reclaimed_bytes") - before);
	EXPECT_EQ((long long)half, swap_stat("used_bytes"));
	/* The used half is where it was; the idle half comes back. */
	in = swap_stat("in_bytes");
	EXPECT_EQ(-1, som_check(p, half, len, 64, 10));
	EXPECT_EQ(in, swap_stat("in_bytes"));
	EXPECT_EQ(-1, som_check(p, 0, half, 64, 10));
	EXPECT_EQ(in + (long long)half, swap_stat("in_bytes"));
	EXPECT_EQ(0, swap_stat("used_bytes"));

	/* More than there is: everything, used or not. */
	before = swap_stat("reclaimed_bytes");
	ASSERT_EQ(0, reclaim(GiB));
	EXPECT_EQ((long long)len, swap_stat("reclaimed_bytes") - before);
	EXPECT_EQ(-1, som_check(p, 0, len, 64, 10));
	EXPECT_EQ(0, swap_stat("used_bytes"));
	EXPECT_EQ(-EINVAL, som_sysfs_write(SWAP "reclaim", "lots"));
	ASSERT_EQ(0, munmap(p, len));
}

/*
 * Threads write and check their own blocks while the main thread pages
 * the whole range out again and again: no write is ever lost, whether
 * it lands before the block is unmapped, while it is written to the
 * store (the fault waits) or after (the fault reads it back).
 */
#define RACE_THREADS	4
#define RACE_BLOCKS	3

struct racer {
	char *base;
	int stop;
	long long rounds;
	long long bad;
};

static void *race_writer(void *arg)
{
	struct racer *r = arg;
	size_t len = RACE_BLOCKS * 2 * MiB, off;
	uint64_t round;

	for (round = 1; !__atomic_load_n(&r->stop, __ATOMIC_RELAXED); round++) {
		for (off = 0; off < len; off += 4096)
			*(volatile uint64_t *)(r->base + off) = round ^ off;
		for (off = 0; off < len; off += 4096)
			if (*(volatile uint64_t *)(r->base + off) != (round ^ off))
				r->bad++;
		r->rounds++;
	}
	return NULL;
}

TEST_F_TIMEOUT(swap, writers_lose_nothing_to_pageouts, 1200)
{
	size_t len = RACE_THREADS * RACE_BLOCKS * 2 * MiB;
	struct racer r[RACE_THREADS];
	pthread_t t[RACE_THREADS];
	long long total = 0, n;
	int i, pass;
	char *p;

	p = som_map_shared(self->dev, len);
	ASSERT_NE(MAP_FAILED, p);
	memset(p, 0, len);
	for (i = 0; i < RACE_THREADS; i++) {
		r[i] = (struct racer){ .base = p + i * RACE_BLOCKS * 2 * MiB };
		ASSERT_EQ(0, pthread_create(&t[i], NULL, race_writer, &r[i]));
	}
	for (pass = 0; pass < 40; pass++) {
		n = pageout(self->dev, 0, len);
		ASSERT_LE(0, n);
		total += n;
		usleep(20 * 1000);
	}
	for (i = 0; i < RACE_THREADS; i++) {
		__atomic_store_n(&r[i].stop, 1, __ATOMIC_RELAXED);
		pthread_join(t[i], NULL);
		EXPECT_EQ(0, r[i].bad);
		EXPECT_LT(0, r[i].rounds);
	}
	TH_LOG("%lld MiB paged out in 40 passes beside the writers",
	       total >> 20);
	EXPECT_LT(0, total);
	ASSERT_EQ(0, munmap(p, len));
	EXPECT_EQ(0, swap_stat("used_bytes"));
}

/*
 * Everything that changes a region, beside page-outs. A pager thread
 * pages out random 2 MiB pieces of three regions (SOM_IOC_PAGEOUT) and
 * now and then reclaims 8 MiB of every process's memory (swap/reclaim),
 * while:
 *
 *  - four threads fill and check their own blocks of a /dev/som mapping,
 *    with a new pattern each round;
 *  - a thread unmaps pieces of a second /dev/som mapping and maps them
 *    again (munmap() and mmap() into the hole, or MAP_FIXED over them):
 *    a new piece reads zeros, the others keep their data;
 *  - a thread punches whole blocks and parts of blocks out of a som file,
 *    and truncates it and grows it back: what it cut reads zeros, the
 *    rest keeps its data;
 *  - a thread moves the three regions' blocks between node 0 and another
 *    node (SOM_IOC_POLICY; the spare range is added for it when the pool
 *    has one node, and without one the flips move nothing) and runs
 *    compaction passes (no region here is a GiB for it to assemble: it
 *    takes the regions' locks, as page-outs and moves do);
 *  - each round the main thread forks a child, which has none of the
 *    parent's som mappings and may not page out its regions, and starts
 *    another that maps som memory of its own, pages some of it out, and
 *    exits or is SIGKILLed while it reads it back and pages it out again.
 *
 * Each checker only checks what no other thread changes, and notes the
 * first bad offset. No write is lost, every child ends in time with the
 * status it should, and once everything is unmapped and closed the store
 * is empty and the pool's reservations are back.
 */
#define MIX_ROUNDS		24
#define MIX_WRITERS		4
#define MIX_WRITER_LEN		(3 * 2 * MiB)
#define MIX_PIECES		8	/* of the munmap()ped mapping */
#define MIX_BLOCKS		16	/* of the som file */
#define MIX_CHILD_LEN		(16 * MiB)
#define MIX_CHILD_FILE		(4 * MiB)
#define MIX_SPARE		"swap-spare"

struct mix {
	int stop;
	int wfd, cfd, ffd;		/* writers', unmapper's, som file */
	char *w, *c, *f;
	int nid;			/* the other node, or -1 */

	/* the pager */
	long long paged, pageouts, busy, reclaims;
	long perrors;
	int first_perror;

	/* the unmapper: each piece's pattern; 0 once it is gone for good */
	uint64_t cseed[MIX_PIECES];
	long long cbad;
	long cops, cerrors;

	/* the som file's thread: each block's pattern, 0 for zeros */
	uint64_t fseed[MIX_BLOCKS];
	long long fbad;
	long fops, ferrors;
	int first_ferror;

	/* the mover */
	long flips, compactions, merrors;
	int first_merror;
};

struct mix_writer {
	struct mix *m;
	char *base;
	unsigned int id;
	uint64_t seed;			/* the pattern of the last round */
	long rounds;
	long long bad;			/* the first bad offset, or -1 */
	long bad_round;
};

static int mix_stopped(struct mix *m)
{
	return __atomic_load_n(&m->stop, __ATOMIC_RELAXED);
}

static void mix_error(long *count, int *first, int err)
{
	if (!(*count)++)
		*first = err;
}

static void mix_bad(long long *first, long long off)
{
	if (off >= 0 && *first < 0)
		*first = off;
}

/* First offset of [from, to) of @p that is not @seed's pattern (0: zeros). */
static long long mix_check(const char *p, size_t from, size_t to,
			   uint64_t seed)
{
	long long off;

	if (seed)
		return som_check(p, from, to, 512, seed);
	off = som_check_zero(p + from, to - from, 512);
	return off < 0 ? -1 : (long long)from + off;
}

static void *mix_write(void *arg)
{
	struct mix_writer *w = arg;
	long long bad;

	while (!mix_stopped(w->m)) {
		w->seed = (uint64_t)(w->id + 1) << 32 | ++w->rounds;
		som_fill(w->base, 0, MIX_WRITER_LEN, 256, w->seed);
		usleep(500);
		bad = som_check(w->base, 0, MIX_WRITER_LEN, 256, w->seed);
		if (bad >= 0 && w->bad < 0) {
			w->bad = bad;
			w->bad_round = w->rounds;
		}
	}
	return NULL;
}

static void *mix_page(void *arg)
{
	struct mix *m = arg;
	const struct { int fd; size_t len; } t[] = {
		{ m->wfd, MIX_WRITERS * MIX_WRITER_LEN },
		{ m->cfd, MIX_PIECES * 2 * MiB },
		{ m->ffd, MIX_BLOCKS * 2 * MiB },
	};
	uint64_t rnd = 3;
	long long n;
	int i, err;

	while (!mix_stopped(m)) {
		i = som_rand(&rnd) % 3;
		n = pageout(t[i].fd, som_rand(&rnd) % (t[i].len / (2 * MiB)) *
				     2 * MiB, 2 * MiB);
		if (n >= 0)
			m->paged += n;
		else if (n == -EBUSY)	/* the unmapper half way through */
			m->busy++;
		else
			mix_error(&m->perrors, &m->first_perror, n);
		if (++m->pageouts % 8 == 0) {
			err = reclaim(8 * MiB);
			if (err)
				mix_error(&m->perrors, &m->first_perror, err);
			else
				m->reclaims++;
		}
		usleep(2000);
	}
	return NULL;
}

/* Unmap and map again pieces of m->c; check each before and after. */
static void *mix_unmap(void *arg)
{
	struct mix *m = arg;
	uint64_t rnd = 5, seed = 1000;
	size_t off;
	char *want, *q;
	int k;

	while (!mix_stopped(m)) {
		k = som_rand(&rnd) % MIX_PIECES;
		off = k * 2 * MiB;
		want = m->c + off;
		mix_bad(&m->cbad, som_check(m->c, off, off + 2 * MiB, 512,
					    m->cseed[k]));
		switch (som_rand(&rnd) % 3) {
		case 0:
			/* Nothing else of this process maps: the hole stays. */
			if (munmap(want, 2 * MiB)) {
				m->cerrors++;
				return NULL;
			}
			q = mmap(want, 2 * MiB, PROT_READ | PROT_WRITE,
				 MAP_SHARED | MAP_FIXED_NOREPLACE, m->cfd, off);
			break;
		case 1:
			q = mmap(want, 2 * MiB, PROT_READ | PROT_WRITE,
				 MAP_SHARED | MAP_FIXED, m->cfd, off);
			break;
		default:
			q = NULL;
			break;
		}
		if (q == MAP_FAILED || (q && q != want)) {
			/* A hole, or something not ours: leave it alone. */
			if (q != MAP_FAILED)
				munmap(q, 2 * MiB);
			m->cseed[k] = 0;
			m->cerrors++;
			return NULL;
		}
		if (q)
			mix_bad(&m->cbad, mix_check(m->c, off, off + 2 * MiB, 0));
		m->cseed[k] = ++seed;
		som_fill(m->c, off, off + 2 * MiB, 512, seed);
		m->cops++;
		usleep(1000);
	}
	return NULL;
}

/* Punch, truncate and grow back the som file; check what it keeps. */
static void *mix_cut(void *arg)
{
	struct mix *m = arg;
	uint64_t rnd = 9, seed = 2000;
	size_t len = MIX_BLOCKS * 2 * MiB, from, start, end, size;
	int b, i, n;

	while (!mix_stopped(m)) {
		b = som_rand(&rnd) % MIX_BLOCKS;
		from = b * 2 * MiB;
		switch (som_rand(&rnd) % 4) {
		case 0:	/* whole blocks: holes until they are written again */
			n = b + 1 < MIX_BLOCKS && som_rand(&rnd) % 2 ? 2 : 1;
			if (fallocate(m->ffd, FALLOC_FL_PUNCH_HOLE |
				      FALLOC_FL_KEEP_SIZE, from, n * 2 * MiB)) {
				mix_error(&m->ferrors, &m->first_ferror, -errno);
				break;
			}
			for (i = b; i < b + n; i++)
				m->fseed[i] = 0;
			mix_bad(&m->fbad, mix_check(m->f, from,
						    from + n * 2 * MiB, 0));
			break;
		case 1:	/* part of a block: zeros there, the rest kept */
			start = from + som_rand(&rnd) % 512 * 4 * KiB;
			end = start + (1 + som_rand(&rnd) % 64) * 4 * KiB;
			if (end > from + 2 * MiB)
				end = from + 2 * MiB;
			if (fallocate(m->ffd, FALLOC_FL_PUNCH_HOLE |
				      FALLOC_FL_KEEP_SIZE, start, end - start)) {
				mix_error(&m->ferrors, &m->first_ferror, -errno);
				break;
			}
			mix_bad(&m->fbad, mix_check(m->f, from, start,
						    m->fseed[b]));
			mix_bad(&m->fbad, mix_check(m->f, start, end, 0));
			mix_bad(&m->fbad, mix_check(m->f, end, from + 2 * MiB,
						    m->fseed[b]));
			m->fseed[b] = ++seed;
			som_fill(m->f, from, from + 2 * MiB, 512, seed);
			break;
		case 2:	/* truncate anywhere, grow back: the cut reads zeros */
			size = som_rand(&rnd) % (len / (4 * KiB)) * 4 * KiB;
			if (ftruncate(m->ffd, size)) {
				mix_error(&m->ferrors, &m->first_ferror, -errno);
				break;
			}
			usleep(1000);
			if (ftruncate(m->ffd, len)) {
				/* Past the size is SIGBUS: touch nothing more. */
				mix_error(&m->ferrors, &m->first_ferror, -errno);
				return NULL;
			}
			for (i = 0; i < MIX_BLOCKS; i++) {
				from = i * 2 * MiB;
				if (from >= size) {
					m->fseed[i] = 0;
				} else if (size < from + 2 * MiB) {
					mix_bad(&m->fbad, mix_check(m->f, from, size,
								    m->fseed[i]));
					mix_bad(&m->fbad, mix_check(m->f, size,
								    from + 2 * MiB, 0));
					m->fseed[i] = ++seed;
					som_fill(m->f, from, from + 2 * MiB, 512,
						 seed);
				}
			}
			break;
		default: /* check a block and write it anew */
			mix_bad(&m->fbad, mix_check(m->f, from, from + 2 * MiB,
						    m->fseed[b]));
			m->fseed[b] = ++seed;
			som_fill(m->f, from, from + 2 * MiB, 512, seed);
			break;
		}
		m->fops++;
		usleep(1000);
	}
	return NULL;
}

/* Policy flips between node 0 and m->nid, and compaction passes. */
static void *mix_move(void *arg)
{
	struct mix *m = arg;
	int fds[] = { m->wfd, m->cfd, m->ffd };
	int i, j, err;

	for (i = 0; !mix_stopped(m); i++) {
		for (j = 0; j < 3; j++) {
			if (m->nid > 0)
				err = set_policy(fds[j], SOM_POLICY_PREFERRED,
						 1ULL << (i & 1 ? m->nid : 0), 0);
			else if (i & 1)
				err = set_policy(fds[j], SOM_POLICY_PREFERRED,
						 1, 0);
			else
				err = set_policy(fds[j], SOM_POLICY_LOCAL, 0, 0);
			/* Half way through munmap(), or no room there. */
			if (err && err != -EAGAIN && err != -ENOMEM)
				mix_error(&m->merrors, &m->first_merror, err);
		}
		m->flips++;
		if (i % 4 == 3) {
			err = som_sysfs_write("migration/compact", "1");
			if (err)
				mix_error(&m->merrors, &m->first_merror, err);
			else
				m->compactions++;
		}
		usleep(20 * 1000);
	}
	return NULL;
}

/*
 * A child of fork(): som gives it none of the parent's mappings (their
 * addresses are unmapped: SIGSEGV), and the parent's regions are not its
 * own to page out. Half the children exit at once.
 */
static int mix_forked(struct mix *m, int round)
{
	int err = 0;

	if (round / 2 % 2)
		return 0;
	if (som_probe(m->w, 0) != SIGSEGV)
		err |= 1;
	if (som_probe(m->f + 4096, 0) != SIGSEGV)
		err |= 2;
	if (pageout(m->wfd, 0, 2 * MiB) != -EPERM)
		err |= 4;
	if (pageout(m->ffd, 0, 2 * MiB) != -EPERM)
		err |= 8;
	return err ? 10 + err : 0;
}

/*
 * A child with som memory of its own, a /dev/som mapping and a som file:
 * it fills them, pages some out, says so on @ready, then checks them
 * (reading back) and pages some out again, 3 times or until it is killed.
 */
static void mix_child(int ready, uint64_t seed, int forever)
{
	int fd = open(SOM_DEV, O_RDWR), sf = fd < 0 ? -1 :
		 som_file(fd, MIX_CHILD_FILE, 0), i;
	char *q = fd < 0 ? MAP_FAILED : som_map_shared(fd, MIX_CHILD_LEN);
	char *g = sf < 0 ? MAP_FAILED : som_map_shared(sf, MIX_CHILD_FILE);

	if (q == MAP_FAILED || g == MAP_FAILED)
		_exit(2);
	som_fill(q, 0, MIX_CHILD_LEN, 4096, seed);
	som_fill(g, 0, MIX_CHILD_FILE, 4096, seed + 1);
	if (pageout(fd, 0, MIX_CHILD_LEN / 2) < 0 ||
	    pageout(sf, 0, MIX_CHILD_FILE) < 0)
		_exit(3);
	if (write(ready, "r", 1) != 1)
		_exit(4);
	for (i = 0; forever || i < 3; i++) {
		if (som_check(q, 0, MIX_CHILD_LEN, 4096, seed) >= 0 ||
		    som_check(g, 0, MIX_CHILD_FILE, 4096, seed + 1) >= 0)
			_exit(5);
		if (pageout(fd, i % 2 * MIX_CHILD_LEN / 2,
			    MIX_CHILD_LEN / 2) < 0 ||
		    pageout(sf, 0, MIX_CHILD_FILE) < 0)
			_exit(6);
	}
	_exit(0);
}

/* Wait up to 10 s for @pid; whether it was reaped. */
static int mix_reap(pid_t pid, int *status)
{
	int i;

	for (i = 0; i < 1000; i++) {
		if (waitpid(pid, status, WNOHANG) == pid)
			return 1;
		usleep(10 * 1000);
	}
	return 0;
}

TEST_F_TIMEOUT(swap, pageouts_race_munmap_punch_fork_migration_compaction_and_exit,
	       1800)
{
	struct mix_writer wr[MIX_WRITERS];
	pthread_t wt[MIX_WRITERS], pager, unmapper, cutter, mover;
	int round, i, err, status, ready[2], spare = 0;
	int exited = 0, killed = 0;
	uint64_t rnd = 11;
	struct mix m;
	pid_t pid, child;
	char c;

	memset(&m, 0, sizeof(m));
	m.nid = -1;
	m.cbad = m.fbad = -1;
	m.wfd = open(SOM_DEV, O_RDWR);
	m.cfd = open(SOM_DEV, O_RDWR);
	m.ffd = som_file(self->dev, MIX_BLOCKS * 2 * MiB, 0);
	ASSERT_LE(0, m.wfd);
	ASSERT_LE(0, m.cfd);
	ASSERT_LE(0, m.ffd);
	m.w = som_map_shared(m.wfd, MIX_WRITERS * MIX_WRITER_LEN);
	m.c = som_map_shared(m.cfd, MIX_PIECES * 2 * MiB);
	m.f = som_map_shared(m.ffd, MIX_BLOCKS * 2 * MiB);
	ASSERT_NE(MAP_FAILED, m.w);
	ASSERT_NE(MAP_FAILED, m.c);
	ASSERT_NE(MAP_FAILED, m.f);
	for (i = 0; i < MIX_PIECES; i++) {
		m.cseed[i] = 100 + i;
		som_fill(m.c, i * 2 * MiB, (i + 1) * 2 * MiB, 512, m.cseed[i]);
	}
	for (i = 0; i < MIX_BLOCKS; i++) {
		m.fseed[i] = 200 + i;
		som_fill(m.f, i * 2 * MiB, (i + 1) * 2 * MiB, 512, m.fseed[i]);
	}

	/* A second node of the pool: one there already, or the spare range. */
	for (i = 1; i < 64 && m.nid < 0; i++)
		if (node_stat(i, "total_bytes") > 0)
			m.nid = i;
	if (m.nid < 0) {
		err = add_spare_gib(self->dev, MIX_SPARE);
		if (err != -ENODEV)
			EXPECT_EQ(0, err);
		if (!err) {
			spare = 1;
			m.nid = atoi(src_attr(MIX_SPARE, "nodes"));
		}
	}
	if (m.nid <= 0)
		TH_LOG("the pool has one node: the policy flips move nothing");

	for (i = 0; i < MIX_WRITERS; i++) {
		wr[i] = (struct mix_writer){ .m = &m, .id = i, .bad = -1,
			.base = m.w + i * MIX_WRITER_LEN };
		ASSERT_EQ(0, pthread_create(&wt[i], NULL, mix_write, &wr[i]));
	}
	ASSERT_EQ(0, pthread_create(&pager, NULL, mix_page, &m));
	ASSERT_EQ(0, pthread_create(&unmapper, NULL, mix_unmap, &m));
	ASSERT_EQ(0, pthread_create(&cutter, NULL, mix_cut, &m));
	ASSERT_EQ(0, pthread_create(&mover, NULL, mix_move, &m));

	for (round = 0; round < MIX_ROUNDS; round++) {
		/* A child with memory of its own: killed every other round. */
		ASSERT_EQ(0, pipe(ready));
		child = fork();
		ASSERT_LE(0, child);
		if (!child) {
			close(ready[0]);
			mix_child(ready[1], 300 + round, round % 2);
		}
		close(ready[1]);
		if (read(ready[0], &c, 1) != 1)
			c = 0;
		close(ready[0]);
		EXPECT_EQ('r', c) TH_LOG("round %d: the child did not start", round);

		/* And one that inherits what it can of the parent. */
		pid = fork();
		ASSERT_LE(0, pid);
		if (!pid)
			_exit(mix_forked(&m, round));
		ASSERT_TRUE(mix_reap(pid, &status))
			TH_LOG("round %d: the forked child is still there after 10 s",
			       round);
		EXPECT_EQ(0, status) TH_LOG("round %d", round);

		if (round % 2) {
			usleep(som_rand(&rnd) % (20 * 1000));
			kill(child, SIGKILL);
		}
		ASSERT_TRUE(mix_reap(child, &status))
			TH_LOG("round %d: the child is still there after 10 s",
			       round);
		if (round % 2) {
			EXPECT_TRUE(WIFSIGNALED(status) &&
				    WTERMSIG(status) == SIGKILL)
				TH_LOG("round %d: status %#x", round, status);
			killed++;
		} else {
			EXPECT_EQ(0, status) TH_LOG("round %d", round);
			exited++;
		}
		usleep(20 * 1000);
	}

	__atomic_store_n(&m.stop, 1, __ATOMIC_RELAXED);
	for (i = 0; i < MIX_WRITERS; i++)
		pthread_join(wt[i], NULL);
	pthread_join(pager, NULL);
	pthread_join(unmapper, NULL);
	pthread_join(cutter, NULL);
	pthread_join(mover, NULL);
	TH_LOG("%d rounds: %lld MiB paged out by %lld page-outs (%lld busy) and %lld reclaims",
	       round, m.paged >> 20, m.pageouts, m.busy, m.reclaims);
	TH_LOG("writers %ld rounds, %ld unmaps, %ld file cuts, %ld policy flips, %ld compactions, %d children exited, %d killed",
	       wr[0].rounds, m.cops, m.fops, m.flips, m.compactions, exited,
	       killed);

	for (i = 0; i < MIX_WRITERS; i++) {
		EXPECT_EQ(-1, wr[i].bad)
			TH_LOG("writer %d: first bad word at %lld, round %ld",
			       i, wr[i].bad, wr[i].bad_round);
		EXPECT_LT(0, wr[i].rounds);
		EXPECT_EQ(-1, som_check(wr[i].base, 0, MIX_WRITER_LEN, 256,
					wr[i].seed));
	}
	EXPECT_EQ(-1, m.cbad) TH_LOG("unmapper: first bad word at %lld", m.cbad);
	EXPECT_EQ(0, m.cerrors);
	EXPECT_LT(0, m.cops);
	for (i = 0; i < MIX_PIECES; i++)
		if (m.cseed[i])
			EXPECT_EQ(-1, som_check(m.c, i * 2 * MiB,
						(i + 1) * 2 * MiB, 512,
						m.cseed[i]));
	EXPECT_EQ(-1, m.fbad) TH_LOG("som file: first bad byte at %lld", m.fbad);
	EXPECT_EQ(0, m.ferrors) TH_LOG("som file: %d", m.first_ferror);
	EXPECT_LT(0, m.fops);
	for (i = 0; i < MIX_BLOCKS; i++)
		EXPECT_EQ(-1, mix_check(m.f, i * 2 * MiB, (i + 1) * 2 * MiB,
					m.fseed[i]));
	EXPECT_EQ(0, m.perrors) TH_LOG("pager: %d", m.first_perror);
	EXPECT_LT(0, m.paged);
	EXPECT_EQ(0, m.merrors) TH_LOG("mover: %d", m.first_merror);
	EXPECT_LT(0, m.flips);

	EXPECT_EQ(0, munmap(m.w, MIX_WRITERS * MIX_WRITER_LEN));
	EXPECT_EQ(0, munmap(m.c, MIX_PIECES * 2 * MiB));
	EXPECT_EQ(0, munmap(m.f, MIX_BLOCKS * 2 * MiB));
	close(m.wfd);
	close(m.cfd);
	close(m.ffd);
	/* A page-out may hold a dead child's mm for a while. */
	for (i = 0; i < 1000 && (swap_stat("used_bytes") ||
				 som_stat("reserved_bytes") != self->reserved);
	     i++)
		usleep(10 * 1000);
	EXPECT_EQ(0, swap_stat("used_bytes"));
	if (spare)
		EXPECT_EQ(0, src_remove(self->dev, MIX_SPARE));
}

TEST_HARNESS_MAIN
