// SPDX-License-Identifier: GPL-2.0
/*
 * som.ko loading: the ranges= parameter refuses bad ranges cleanly (the
 * load fails with an error, nothing is left behind), and ranges can be
 * added at run time through /sys/kernel/mm/som/add_range.
 *
 * Runs with som.ko NOT loaded; the module file is $SOM_KO (default
 * /som/som.ko). The guest reserves 2 GiB at 4 GiB (memmap=2G$4G).
 */
#define _GNU_SOURCE
#include <sys/syscall.h>

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

FIXTURE(load) {
	int unused;
};

FIXTURE_SETUP(load)
{
	if (access(som_ko(), R_OK))
		SKIP(return, "%s not found (set SOM_KO)", som_ko());
	if (!access(SOM_DEV, F_OK))
		SKIP(return, "som.ko is already loaded");
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
		"add reserved 1G@4G", "add hugetlb 1 --node 0", "add buddy 1",
		"add dax dax0.0", "remove reserved@0x100000000", "compact",
	};
	static const char *const bad[] = {
		"", "frobnicate", "--bogus status", "-x ps", "status extra",
		"status --watch=0", "status --count=2", "status --node 1",
		"ps x", "ps 0", "ps 1 --unmovable", "add", "add reserved",
		"add floppy 1", "add reserved 2G", "add reserved 1M@4G",
		"add reserved 1G@4G --node 1", "add hugetlb 0",
		"add buddy 1 --node 1024", "add buddy 1 --name bad/name",
		"add dax dax0.0 --name x", "add dax ../dax0.0", "remove",
		"remove a b", "remove bad/name", "compact now", "--count",
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

TEST_HARNESS_MAIN
