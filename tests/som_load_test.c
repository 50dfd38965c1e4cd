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
