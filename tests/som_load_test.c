// SPDX-License-Identifier: GPL-2.0
/*
 * som.ko loading: the ranges= parameter refuses bad ranges cleanly (the
 * load fails with an error, nothing is left behind), and ranges can be
 * added at run time through /sys/kernel/mm/som/add_range. A reserved
 * range in the pool is claimed in /proc/iomem, so /dev/mem refuses it; a
 * range that the firmware does not call RAM is refused. Unloading right
 * after a process whose memory compaction is moving was killed leaves
 * every source whole. som.ko and VFIO's type1 backend, which maps
 * PFN-mapped memory for devices without pinning it, exclude each other.
 *
 * Runs with som.ko NOT loaded; the module file is $SOM_KO (default
 * /som/som.ko). The guest reserves 2 GiB at 4 GiB (memmap=2G$4G).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/falloc.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

#include "kselftest_harness.h"
#include "som_util.h"

static const char *som_ko(void)
{
	const char *path = getenv("SOM_KO");

	return path ? path : "/som/som.ko";
}

/* Load som.ko with @params; 0 or -errno. */
static int som_load(const char *params)
{
	int fd = open(som_ko(), O_RDONLY | O_CLOEXEC), err = 0;

	if (fd < 0)
		return -errno;
	if (syscall(SYS_finit_module, fd, params, 0))
		err = -errno;
	close(fd);
	return err;
}

static int som_unload(void)
{
	return syscall(SYS_delete_module, "som", O_NONBLOCK) ? -errno : 0;
}

/* Load the module file @path with no parameters; 0 or -errno. */
static int mod_load(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), err = 0;

	if (fd < 0)
		return -errno;
	if (syscall(SYS_finit_module, fd, "", 0))
		err = -errno;
	close(fd);
	return err;
}

static int mod_unload(const char *name)
{
	return syscall(SYS_delete_module, name, O_NONBLOCK) ? -errno : 0;
}

FIXTURE(load) {
	int unused;
};

FIXTURE_SETUP(load)
{
	if (access(som_ko(), R_OK))
		SKIP(return, "%s not found (set SOM_KO)", som_ko());
	/* Loaded by someone else, or left loaded by a test before this. */
	ASSERT_NE(0, access(SOM_DEV, F_OK))
		TH_LOG("som.ko is already loaded: these tests load it themselves");
}

FIXTURE_TEARDOWN(load)
{
	if (!access(SOM_DEV, F_OK))
		som_unload();
}

TEST_F(load, bad_ranges_refused)
{
	static const struct { const char *params; int err; } bad[] = {
		{ "ranges=garbage", -EINVAL },
		{ "ranges=1G", -EINVAL },
		{ "ranges=1G@4G,", -EINVAL },
		{ "ranges=1G@4G,x", -EINVAL },
		{ "ranges=1M@4G", -EINVAL },	/* not 1 GiB aligned */
		{ "ranges=1G@4M", -EINVAL },
		{ "ranges=0@4G", -EINVAL },
		{ "ranges=1G@0", -EINVAL },	/* System RAM */
		{ "ranges=4G@4G", -EINVAL },	/* runs into System RAM */
		{ "ranges=1G@3G", -EINVAL },	/* not reserved memory */
		{ "ranges=1G@4G,1G@4G", -EBUSY },	/* overlap each other */
		{ "ranges=2G@4G,1G@5G", -EBUSY },
	};
	unsigned int i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		printf("# %s\n", bad[i].params);
		EXPECT_EQ(bad[i].err, som_load(bad[i].params));
		EXPECT_NE(0, access(SOM_DEV, F_OK));
		EXPECT_NE(0, access(SOM_SYSFS, F_OK));
		if (!access(SOM_DEV, F_OK))
			som_unload();
	}
}

TEST_F(load, ranges_at_load_and_at_run_time)
{
	long long meta;

	ASSERT_EQ(0, som_load("ranges=1G@4G"));
	EXPECT_EQ((long long)GiB, som_stat("total_bytes"));
	EXPECT_EQ((long long)GiB, som_stat("free_bytes"));
	meta = som_stat("metadata_bytes");
	EXPECT_EQ(0, som_sysfs_write("add_range", "1G@5G\n"));
	EXPECT_EQ(2 * (long long)GiB, som_stat("total_bytes"));
	EXPECT_EQ(2 * (long long)GiB, som_stat("free_bytes"));
	EXPECT_EQ(-EBUSY, som_sysfs_write("add_range", "1G@5G"));
	/*
	 * A GiB more costs at most 1 KiB of metadata, even as a source of
	 * its own (its chunk, and the source's description and table).
	 */
	printf("# metadata: %lld bytes for 1 GiB, %lld for 2 GiB\n", meta,
	       som_stat("metadata_bytes"));
	EXPECT_GE(1024, som_stat("metadata_bytes") - meta);
	EXPECT_LT(meta, som_stat("metadata_bytes"));
	EXPECT_EQ(0, som_unload());
}

TEST_F(load, empty_pool_then_run_time_ranges)
{
	ASSERT_EQ(0, som_load(""));
	EXPECT_EQ(0, som_stat("total_bytes"));
	EXPECT_EQ(0, som_sysfs_write("add_range", "1G@4G,1G@5G"));
	EXPECT_EQ(2 * (long long)GiB, som_stat("total_bytes"));
	EXPECT_EQ(0, som_unload());
}

TEST_F(load, mmap_of_empty_pool_gets_enomem)
{
	int fd;

	ASSERT_EQ(0, som_load(""));
	fd = open(SOM_DEV, O_RDWR);
	ASSERT_LE(0, fd);
	EXPECT_EQ(MAP_FAILED, mmap(NULL, 2 * MiB, PROT_READ | PROT_WRITE,
				   MAP_SHARED, fd, 0));
	EXPECT_EQ(ENOMEM, errno);
	close(fd);
	EXPECT_EQ(0, som_unload());
}

/* Run "somctl ARGS"; its exit status, its stdout and stderr in @out, @err. */
static int somctl(const char *args, char *out, char *err, size_t size)
{
	char cmd[512], *line, *save;
	int st, fd;
	ssize_t n;

	snprintf(cmd, sizeof(cmd),
		 "somctl %s >/tmp/somctl.out 2>/tmp/somctl.err", args);
	st = system(cmd);
	fd = open("/tmp/somctl.out", O_RDONLY);
	n = fd < 0 ? 0 : read(fd, out, size - 1);
	out[n > 0 ? n : 0] = '\0';
	if (fd >= 0)
		close(fd);
	fd = open("/tmp/somctl.err", O_RDONLY);
	n = fd < 0 ? 0 : read(fd, err, size - 1);
	err[n > 0 ? n : 0] = '\0';
	if (fd >= 0)
		close(fd);
	/* Its stderr as TAP comments. */
	for (line = strtok_r(err, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save))
		printf("# somctl %s: %s\n", args, line);
	fd = open("/tmp/somctl.err", O_RDONLY);
	n = fd < 0 ? 0 : read(fd, err, size - 1);
	err[n > 0 ? n : 0] = '\0';
	if (fd >= 0)
		close(fd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/*
 * somctl without the module: every command says the module is not
 * loaded (exit 1); help and version work (stdout, exit 0); and a bad
 * command line is a usage error (stderr, exit 2), found before anything
 * is opened, so without the module too.
 */
TEST_F(load, somctl_without_the_module)
{
	static const char *const commands[] = {
		"status", "status --json", "--json status", "ps", "ps 1 --json",
		"ages", "add reserved 1G@4G", "add hugetlb 1 --node 0", "add buddy 1",
		"add dax dax0.0", "remove reserved@0x100000000", "compact",
		"status --prometheus",
	};
	static const char *const bad[] = {
		"", "frobnicate", "--bogus status", "-x ps", "status extra",
		"status --watch=0", "status --count=2", "status --node 1",
		"ps x", "ps 0", "ps 1 --unmovable", "ages x", "ages --node 1",
		"add", "add reserved", "add floppy 1", "add reserved 2G", "add reserved 1M@4G",
		"add reserved 1G@4G --node 1", "add hugetlb 0",
		"add buddy 1 --node 1024", "add buddy 1 --name bad/name",
		"add dax dax0.0 --name x", "add dax ../dax0.0", "remove",
		"remove a b", "remove bad/name", "compact now", "--count",
		"status --prometheus --json", "status --prometheus --watch",
		"ps --prometheus",
	};
	static char out[4096], err[4096];
	unsigned int i;

	if (system("command -v somctl >/dev/null"))
		SKIP(return, "no somctl in PATH");
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		EXPECT_EQ(1, somctl(commands[i], out, err, sizeof(out)))
			TH_LOG("somctl %s", commands[i]);
		EXPECT_NE(NULL, strstr(err, "is the som module loaded?"))
			TH_LOG("somctl %s: %s", commands[i], err);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		EXPECT_EQ(2, somctl(bad[i], out, err, sizeof(out)))
			TH_LOG("somctl %s", bad[i]);
		EXPECT_STREQ("", out);
		EXPECT_NE('\0', err[0]);
		EXPECT_EQ(NULL, strstr(err, "is the som module loaded?"))
			TH_LOG("somctl %s: %s", bad[i], err);
	}
	EXPECT_EQ(0, somctl("--help", out, err, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "usage: somctl status"));
	EXPECT_STREQ("", err);
	EXPECT_EQ(0, somctl("-h", out, err, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "somctl compact"));
	EXPECT_EQ(0, somctl("ps --help", out, err, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "usage: somctl"));
	EXPECT_EQ(0, somctl("--version", out, err, sizeof(out)));
	EXPECT_EQ(0, strncmp(out, "somctl (som) ", 13));
	EXPECT_STREQ("", err);
	EXPECT_NE(0, access(SOM_SYSFS, F_OK));
}

/*
 * Load and unload, again and again, with memory in use in between: each
 * load starts a zeroing worker over 2 GiB, each unload must wait for it
 * and find everything free. Users hold the module: unloading fails with
 * EBUSY until the last /dev/som file, som file and mapping are gone.
 */
TEST_F_TIMEOUT(load, load_unload_cycles_with_and_without_users, 900)
{
	int cycle, dev, sfd, ret;
	char *p;

	for (cycle = 0; cycle < 8; cycle++) {
		ASSERT_EQ(0, som_load("ranges=2G@4G"));
		if (cycle % 2) {
			EXPECT_EQ(0, som_unload());
			continue;
		}
		dev = open(SOM_DEV, O_RDWR);
		ASSERT_LE(0, dev);
		sfd = som_file(dev, 4 * MiB, 0);
		ASSERT_LE(0, sfd);
		p = mmap(NULL, 4 * MiB, PROT_READ | PROT_WRITE, MAP_SHARED,
			 sfd, 0);
		ASSERT_NE(MAP_FAILED, p);
		p[0] = 1;
		close(dev);
		close(sfd);
		ret = som_unload();
		EXPECT_TRUE(ret == -EBUSY || ret == -EWOULDBLOCK)
			TH_LOG("unload with a user: %d", ret);
		EXPECT_EQ(0, munmap(p, 4 * MiB));
		EXPECT_EQ(0, som_unload());
	}
	TH_LOG("%d load/unload cycles, every other one with users", cycle);
}

/* Is [@start, @end] a "som" line nested in a "Reserved" one of /proc/iomem? */
static int som_iomem_claimed(unsigned long long start, unsigned long long end)
{
	char line[256], want[64];
	int reserved_depth = -1, depth, found = 0;
	FILE *f = fopen("/proc/iomem", "r");

	if (!f)
		return -errno;
	snprintf(want, sizeof(want), "%llx-%llx : som", start, end);
	while (fgets(line, sizeof(line), f)) {
		depth = strspn(line, " ");
		/* x86 says Reserved, arm64 reserved (no-map memory). */
		if (strstr(line, " : Reserved") || strstr(line, " : reserved"))
			reserved_depth = depth;
		else if (depth <= reserved_depth)
			reserved_depth = -1;
		if (!strncmp(line + depth, want, strlen(want)) &&
		    reserved_depth >= 0 && depth > reserved_depth)
			found = 1;
	}
	fclose(f);
	return found;
}

/* pread() of /dev/mem at @phys: 0, or -errno. */
static int som_devmem_read(int fd, unsigned long long phys)
{
	char buf[64];

	return pread(fd, buf, sizeof(buf), phys) < 0 ? -errno : 0;
}

TEST_F(load, reserved_range_is_claimed)
{
	unsigned long long start = 4ULL << 30, end = (5ULL << 30) - 1;
	int mem, err;

	ASSERT_EQ(0, som_iomem_claimed(start, end));
	ASSERT_EQ(0, som_load("ranges=1G@4G"));
	EXPECT_EQ(1, som_iomem_claimed(start, end));
	/* Nobody else can claim it: not even som a second time. */
	EXPECT_EQ(-EBUSY, som_sysfs_write("add_range", "1G@4G"));
	mem = open("/dev/mem", O_RDONLY);
	if (mem >= 0 && som_devmem_read(mem, 1ULL << 30) == -EPERM) {
		/*
		 * STRICT_DEVMEM refuses System RAM: som memory too. arm64
		 * refuses memory outside its linear map first (EFAULT:
		 * valid_phys_addr_range()), which no-map memory is.
		 */
		err = som_devmem_read(mem, start);
		EXPECT_TRUE(err == -EPERM || err == -EFAULT) TH_LOG("%d", err);
		err = som_devmem_read(mem, end + 1 - 4096);
		EXPECT_TRUE(err == -EPERM || err == -EFAULT) TH_LOG("%d", err);
	} else {
		TH_LOG("no /dev/mem with CONFIG_STRICT_DEVMEM: not checked");
	}
	if (mem >= 0)
		close(mem);
	EXPECT_EQ(0, som_unload());
	EXPECT_EQ(0, som_iomem_claimed(start, end));
}

/*
 * SOM_NOT_RAM is SIZE@START of a range that the guest reserves with
 * memmap=SIZE$START where the firmware has no memory at all: it looks like
 * any other reserved range in /proc/iomem, but it is not RAM. The guest
 * sets SOM_NO_FIRMWARE_MAP where som.ko was built without the firmware's
 * map (kernel/source_reserved.c).
 */
TEST_F(load, range_the_firmware_does_not_call_ram_is_refused)
{
	const char *range = getenv("SOM_NOT_RAM");
	char params[128];

	if (!range)
		SKIP(return, "SOM_NOT_RAM (a reserved range that is no RAM) not set");
	if (getenv("SOM_NO_FIRMWARE_MAP"))
		SKIP(return, "this kernel exports the firmware's E820 map to KVM only: som.ko takes a reserved range no driver claims as RAM");
	snprintf(params, sizeof(params), "ranges=%s", range);
	EXPECT_EQ(-EINVAL, som_load(params));
	EXPECT_NE(0, access(SOM_DEV, F_OK));
	ASSERT_EQ(0, som_load(""));
	EXPECT_EQ(-EINVAL, som_sysfs_write("add_range", range));
	EXPECT_EQ(0, som_stat("total_bytes"));
	EXPECT_EQ(0, som_unload());
}

/*
 * A child leaves one block in use in each GiB of the pool, faults a GiB
 * of a som file on 2 MiB entries, gives the other blocks back and sleeps;
 * the background compaction pass starts moving its GiB into one chunk.
 * The child is killed during the pass and som.ko unloaded at once: the
 * pass may still hold a chunk set aside, and the sources must not go
 * before it stops. Each cycle then loads again: a source that unloading
 * leaked would still claim its range.
 */
static void som_compacting_child(int ready)
{
	int dev = open(SOM_DEV, O_RDWR), frag, fd;
	off_t off, total = som_stat("total_bytes");
	char *p;

	frag = som_file(dev, total, 0);
	if (dev < 0 || frag < 0 || fallocate(frag, 0, 0, total))
		_exit(1);
	for (off = 0; off < total; off += GiB)
		if (fallocate(frag, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			      off, 10 * MiB) ||
		    fallocate(frag, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			      off + 12 * MiB, GiB - 12 * MiB))
			_exit(1);
	fd = som_file(dev, GiB, 0);
	p = fd < 0 ? MAP_FAILED : mmap(NULL, GiB, PROT_READ | PROT_WRITE,
				       MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		_exit(1);
	som_fill(p, 0, GiB, 2 * MiB, 1);
	close(frag);
	/*
	 * Where som maps no 1 GiB entries (arm64), compaction leaves mapped
	 * GiBs alone; a som file's GiB that nothing maps is still its to
	 * assemble.
	 */
	if (!som_cpu_has_gbpages() && munmap(p, GiB))
		_exit(1);
	if (write(ready, "r", 1) != 1)
		_exit(1);
	pause();
	_exit(0);
}

TEST_F_TIMEOUT(load, unload_while_compaction_runs, 1800)
{
	int cycle, pipefd[2], status, ret, hits = 0;
	double deadline;
	pid_t pid;
	char c;

	for (cycle = 0; cycle < 6; cycle++) {
		ASSERT_EQ(0, som_load("ranges=2G@4G"));
		/* No pass before the child is ready. */
		ASSERT_EQ(0, som_sysfs_write("migration/compact_rate", "0"));
		ASSERT_EQ(0, pipe(pipefd));
		pid = fork();
		ASSERT_LE(0, pid);
		if (!pid) {
			close(pipefd[0]);
			som_compacting_child(pipefd[1]);
		}
		close(pipefd[1]);
		ASSERT_EQ(1, read(pipefd[0], &c, 1));
		close(pipefd[0]);
		/* Full speed; the pass is due 2 s later: wait for it. */
		ASSERT_EQ(0, som_sysfs_write("migration/compact_rate",
					     "1000000"));
		deadline = time(NULL) + 120;
		while (!som_stat("migration/compact_running") &&
		       !som_stat("migration/gib_assembled") &&
		       time(NULL) < deadline)
			usleep(1000);
		hits += som_stat("migration/compact_running") > 0;
		kill(pid, SIGKILL);
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		EXPECT_TRUE(WIFSIGNALED(status));
		/* Files close as the child exits: unloading may not wait. */
		while ((ret = som_unload()) == -EBUSY || ret == -EAGAIN)
			usleep(1000);
		ASSERT_EQ(0, ret);
	}
	/* Every source came back whole: its range can be claimed again. */
	ASSERT_EQ(0, som_load("ranges=2G@4G"));
	EXPECT_EQ(2 * (long long)GiB, som_stat("total_bytes"));
	EXPECT_EQ(0, som_unload());
	TH_LOG("%d cycles, %d killed while a pass ran", cycle, hits);
	EXPECT_LT(0, hits);
}

/*
 * Writing compact_rate queues the background pass (2 s later). A write
 * still under way while som.ko unloads must not queue it after unloading
 * cancelled it: the timer would then fire in a module that is gone. A
 * child writes compact_rate over and over until the file goes; each
 * cycle unloads under it, and the test waits out the pass's delay at the
 * end (a stray timer would oops the guest).
 */
TEST_F_TIMEOUT(load, unload_while_compact_rate_is_written, 900)
{
	int cycle, status, fd;
	pid_t pid;

	for (cycle = 0; cycle < 20; cycle++) {
		ASSERT_EQ(0, som_load("ranges=1G@4G"));
		pid = fork();
		ASSERT_LE(0, pid);
		if (!pid) {
			/* Until the file goes; exit with any other errno. */
			for (;;) {
				fd = open(SOM_SYSFS "migration/compact_rate",
					  O_WRONLY);
				if (fd < 0)
					_exit(errno == ENOENT || errno == ENODEV ?
					      0 : errno);
				if (write(fd, "256\n", 4) < 0 &&
				    errno != ENOENT && errno != ENODEV)
					_exit(errno);
				close(fd);
			}
		}
		usleep(10000 * (cycle % 5));
		EXPECT_EQ(0, som_unload());
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		EXPECT_TRUE(WIFEXITED(status));
		EXPECT_EQ(0, WEXITSTATUS(status))
			TH_LOG("cycle %d: the writer got errno %d", cycle,
			       WEXITSTATUS(status));
	}
	sleep(3);
	ASSERT_EQ(0, som_load("ranges=1G@4G"));
	EXPECT_EQ(0, som_unload());
}

#define TEST_MODULES	"/som/test-modules/"

/*
 * VFIO's legacy type1 IOMMU backend keeps the pfns of a VM_PFNMAP VMA for
 * a device without a pin or a notifier: a device could write to a som
 * block after it went to another owner. som.ko refuses to load while it
 * is loaded, and refuses it while som.ko is. Debian's own vfio.ko and
 * vfio_iommu_type1.ko, staged in TEST_MODULES with their load order.
 */
TEST_F(load, vfio_type1_and_som_exclude_each_other)
{
	char names[4][64], path[sizeof(TEST_MODULES) + 64];
	int nr = 0, i;
	FILE *order = fopen(TEST_MODULES "order", "r");

	if (!order)
		SKIP(return, "no VFIO modules for this kernel in " TEST_MODULES);
	/* VFIO's modules, up to vfio_iommu_type1.ko; others may follow. */
	while (nr < 4 && fscanf(order, "%63s", names[nr]) == 1)
		if (!strcmp(names[nr++], "vfio_iommu_type1.ko"))
			break;
	fclose(order);
	ASSERT_LE(1, nr);
	ASSERT_EQ(0, strcmp(names[nr - 1], "vfio_iommu_type1.ko"));
	for (i = 0; i < nr - 1; i++) {
		snprintf(path, sizeof(path), TEST_MODULES "%.63s", names[i]);
		ASSERT_EQ(0, mod_load(path));
	}
	snprintf(path, sizeof(path), TEST_MODULES "%.63s", names[nr - 1]);

	ASSERT_EQ(0, som_load("ranges=1G@4G"));
	EXPECT_EQ(-EPERM, mod_load(path));
	EXPECT_EQ(0, som_unload());
	/* Without som.ko it loads; then som.ko does not. */
	ASSERT_EQ(0, mod_load(path));
	EXPECT_EQ(-EBUSY, som_load("ranges=1G@4G"));
	EXPECT_NE(0, access(SOM_DEV, F_OK));
	EXPECT_EQ(0, mod_unload("vfio_iommu_type1"));
	EXPECT_EQ(0, som_load("ranges=1G@4G"));
	EXPECT_EQ(0, som_unload());
	for (i = nr - 2; i >= 0; i--) {
		*strrchr(names[i], '.') = '\0';
		EXPECT_EQ(0, mod_unload(names[i]));
	}
}

TEST_HARNESS_MAIN
