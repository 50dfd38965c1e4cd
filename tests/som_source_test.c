// SPDX-License-Identifier: GPL-2.0
/*
 * Pool source selftests: each kind of source is added at run time, used
 * by a process (1 GiB entries where the memory allows), refused removal
 * while in use where its memory cannot move (som_migrate_test moves it),
 * and removed again, with the pool's accounting checked
 * exactly at each step; NUMA placement policies and unmovable chunks.
 *
 * Needs som.ko loaded with its boot range, root, and the test VM's extra
 * memory (vm/lib/qemu.sh): SOM_SPARE_RANGES (a reserved range on node 1),
 * SOM_HUGEPAGES (1 GiB hugetlb pages), SOM_PMEM (legacy pmem that
 * vm/guest/test.sh made into the device DAX instance dax0.0). A test whose
 * memory the machine lacks is skipped with the reason; in the test VM
 * none is. Every test ends with the pool's total and free bytes back
 * where they started.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <sched.h>
#include <sys/syscall.h>

#include "kselftest_harness.h"
#include "som_util.h"
#include "som_pool_util.h"

#ifndef MFD_HUGE_1GB
#define MFD_HUGE_1GB (30U << 26)
#endif
#define HUGE_DIR "/sys/kernel/mm/hugepages/hugepages-1048576kB/"
#define HUGE_FREE HUGE_DIR "free_hugepages"

static void pin_cpu(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

static void unpin(void)
{
	cpu_set_t set;
	int cpu;

	CPU_ZERO(&set);
	for (cpu = 0; cpu < CPU_SETSIZE; cpu++)
		CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

FIXTURE(source) {
	int dev;
	long long total, free, sources;
};

FIXTURE_SETUP(source)
{
	SOM_OPEN_DEV(self->dev);
	self->total = som_stat("total_bytes");
	self->free = som_stat("free_bytes");
	self->sources = nr_sources();
}

FIXTURE_TEARDOWN(source)
{
	if (self->dev < 0)
		return;
	unpin();
	close(self->dev);
	EXPECT_EQ(self->total, som_stat("total_bytes"));
	EXPECT_EQ(self->free, som_stat("free_bytes"));
	EXPECT_EQ(0, som_stat("reserved_bytes"));
	EXPECT_EQ(self->sources, nr_sources());
}

/*
 * Map @len of a new /dev/som region with the given policy (mode < 0: the
 * default), write a pattern over it and check it; returns the region's fd
 * and the mapping in @map, or -errno from mmap.
 */
static int map_region(int mode, uint64_t mask, uint32_t flags, size_t len,
		      char **map)
{
	int fd = open(SOM_DEV, O_RDWR), err;
	char *p;

	if (fd < 0)
		return -errno;
	if (mode >= 0) {
		err = set_policy(fd, mode, mask, flags);
		if (err) {
			close(fd);
			return err;
		}
	}
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		err = -errno;
		close(fd);
		return err;
	}
	som_fill(p, 0, len, 4096, 7);
	*map = p;
	return fd;
}

/* In a child that dropped root: 0 if adding and removing get EPERM. */
static int as_nobody_admin_fails(int dev)
{
	struct som_source_args a;
	int status;
	pid_t pid;

	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		args_init(&a, SOM_SOURCE_BUDDY);
		a.size = GiB;
		_exit(setuid(65534) || src_add(dev, &a) != -EPERM ||
		      src_remove(dev, "reserved@0x100000000") != -EPERM);
	}
	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return status;
}

/*
 * Map regions whose policy (@mode over @mask, @flags) only the source
 * @name can serve: 4 MiB with 2 MiB entries, then 1 GiB with a 1 GiB
 * entry, on the source's node, written and read back, while the source
 * refuses removal.
 */
static void use_source(struct __test_metadata *_metadata, int dev,
		       const char *name, int mode, uint64_t mask,
		       uint32_t flags)
{
	struct som_mapping m;
	char *p;
	int fd;

	fd = map_region(mode, mask, flags, 4 * MiB, &p);
	ASSERT_LE(0, fd);
	EXPECT_EQ(-1, som_check(p, 0, 4 * MiB, 4096, 7));
	ASSERT_EQ(0, placement(fd, p + 2 * MiB, &m));
	EXPECT_EQ(2 * MiB, m.page_size);
	EXPECT_EQ(atoi(src_attr(name, "nodes")), m.node);
	munmap(p, 4 * MiB);
	close(fd);

	fd = map_region(mode, mask, flags, GiB, &p);
	ASSERT_LE(0, fd);
	EXPECT_EQ(-1, som_check(p, 0, GiB, 4096, 7));
	ASSERT_EQ(0, placement(fd, p, &m));
	if (som_cpu_has_gbpages())
		EXPECT_EQ(GiB, m.page_size);
	EXPECT_EQ(flags & SOM_POLICY_UNMOVABLE ? SOM_MAPPING_UNMOVABLE : 0,
		  m.out_flags);
	EXPECT_EQ(atoi(src_attr(name, "nodes")), m.node);
	EXPECT_EQ((long long)GiB, atoll(src_attr(name, "used_bytes")));
	/*
	 * In use: unmovable memory never moves; movable memory bound to the
	 * source's node has nowhere else to go there.
	 */
	EXPECT_EQ(flags & SOM_POLICY_UNMOVABLE ? -EBUSY : -ENOSPC,
		  src_remove(dev, name));
	EXPECT_EQ(-1, som_check(p, 0, GiB, 4096, 7));
	munmap(p, GiB);
	close(fd);
}

TEST_F(source, bad_arguments_are_refused)
{
	struct som_source_args a;
	uint64_t size, start;
	int memfd;

	args_init(&a, 0);
	EXPECT_EQ(-EINVAL, src_add(self->dev, &a));
	args_init(&a, SOM_SOURCE_DAX + 1);
	EXPECT_EQ(-EINVAL, src_add(self->dev, &a));
	args_init(&a, SOM_SOURCE_RESERVED);
	a.size = GiB;
	a.start = 4 * GiB;
	a.flags = 1U << 7;
	EXPECT_EQ(-EINVAL, src_add(self->dev, &a));
	a.flags = 0;
	a.__reserved[3] = 1;
	EXPECT_EQ(-EINVAL, src_add(self->dev, &a));
	a.__reserved[3] = 0;
	a.fd = 0;
	EXPECT_EQ(-EINVAL, src_add(self->dev, &a));
	a.fd = -1;
	a.node = 0;
	EXPECT_EQ(-EINVAL, src_add(self->dev, &a));
	a.node = -1;
	/* The pool's own range, misaligned ranges, System RAM. */
	EXPECT_EQ(-EBUSY, src_add(self->dev, &a));
	a.start = 4 * GiB + 2 * MiB;
	EXPECT_EQ(-EINVAL, src_add(self->dev, &a));
	a.start = 4 * GiB;
	a.size = GiB + 2 * MiB;
	EXPECT_EQ(-EINVAL, src_add(self->dev, &a));
	a.start = 0;
	a.size = GiB;
	EXPECT_EQ(-EINVAL, src_add(self->dev, &a));
	if (parse_range(getenv("SOM_SPARE_RANGES"), &size, &start)) {
		a.start = start;
		a.size = size;
		strcpy(a.name, "no/slash");
		EXPECT_EQ(-EINVAL, src_add(self->dev, &a));
		memset(a.name, 'x', sizeof(a.name));
		EXPECT_EQ(-EINVAL, src_add(self->dev, &a));
		strcpy(a.name, "reserved@0x100000000");	/* the boot range's */
		EXPECT_EQ(-EEXIST, src_add(self->dev, &a));
	}

	/* hugetlb: a descriptor is required, and must be hugetlbfs. */
	args_init(&a, SOM_SOURCE_HUGETLB);
	EXPECT_EQ(-EINVAL, src_add(self->dev, &a));
	a.fd = 1000;
	EXPECT_EQ(-EBADF, src_add(self->dev, &a));
	memfd = memfd_create("plain", MFD_CLOEXEC);
	ASSERT_LE(0, memfd);
	ASSERT_EQ(0, ftruncate(memfd, GiB));
	a.fd = memfd;
	EXPECT_EQ(-EINVAL, src_add(self->dev, &a));
	close(memfd);

	/* buddy: whole GiB, a real node. */
	args_init(&a, SOM_SOURCE_BUDDY);
	EXPECT_EQ(-EINVAL, src_add(self->dev, &a));
	a.size = 2 * MiB;
	EXPECT_EQ(-EINVAL, src_add(self->dev, &a));
	a.size = GiB;
	a.node = 1000;
	EXPECT_EQ(-EINVAL, src_add(self->dev, &a));
	a.node = -2;
	EXPECT_EQ(-EINVAL, src_add(self->dev, &a));

	/* dax: a name, and device memory. */
	args_init(&a, SOM_SOURCE_DAX);
	a.start = 4 * GiB;
	a.size = GiB;
	EXPECT_EQ(-EINVAL, src_add(self->dev, &a));
	strcpy(a.name, "dax9.9");
	EXPECT_EQ(-EINVAL, src_add(self->dev, &a));

	EXPECT_EQ(-ENOENT, src_remove(self->dev, "no-such-source"));

	/* Only CAP_SYS_ADMIN administers the pool, even with the fd open. */
	EXPECT_EQ(0, as_nobody_admin_fails(self->dev));
	EXPECT_EQ(-EINVAL, set_policy(self->dev, 4, 0, 0));
	EXPECT_EQ(-EINVAL, set_policy(self->dev, SOM_POLICY_LOCAL, 1, 0));
	EXPECT_EQ(-EINVAL, set_policy(self->dev, SOM_POLICY_PREFERRED, 3, 0));
	EXPECT_EQ(-EINVAL, set_policy(self->dev, SOM_POLICY_BIND, 0, 0));
	EXPECT_EQ(-EINVAL, set_policy(self->dev, SOM_POLICY_BIND, 1ULL << 63, 0));
	EXPECT_EQ(-EINVAL, set_policy(self->dev, SOM_POLICY_BIND, 1,
				      SOM_POLICY_INTERLEAVE_1G));
	EXPECT_EQ(-EINVAL, set_policy(self->dev, SOM_POLICY_BIND, 1, 1U << 5));
}

/*
 * The spare reserved range: added, shown, used with a 1 GiB entry on its
 * node, refused removal while mapped, removed, and added again.
 */
TEST_F(source, reserved_range_is_added_used_and_removed)
{
	char line[2 * SOM_SOURCE_NAME_LEN];
	struct som_source_args a;
	uint64_t size, start;
	long long meta;
	int nid;

	if (!parse_range(getenv("SOM_SPARE_RANGES"), &size, &start))
		SKIP(return, "no spare reserved range (SOM_SPARE_RANGES)");
	args_init(&a, SOM_SOURCE_RESERVED);
	a.start = start;
	a.size = size;
	strcpy(a.name, "spare");
	meta = som_stat("metadata_bytes");
	ASSERT_EQ(0, src_add(self->dev, &a));
	meta = som_stat("metadata_bytes") - meta;
	EXPECT_STREQ("spare", a.name);
	/* The same memory twice, under any name. */
	EXPECT_EQ(-EBUSY, src_add(self->dev, &a));
	a.name[0] = '\0';
	EXPECT_EQ(-EBUSY, src_add(self->dev, &a));

	EXPECT_STREQ("reserved", src_attr("spare", "kind"));
	EXPECT_EQ((long long)(size / GiB), atoll(src_attr("spare", "chunks")));
	EXPECT_EQ((long long)size, atoll(src_attr("spare", "bytes")));
	EXPECT_STREQ("0", src_attr("spare", "used_bytes"));
	/*
	 * memmap= takes the range out of the kernel's memory; arm64 keeps
	 * a no-map range in it, and builds struct pages for it all the same.
	 */
#ifdef __aarch64__
	EXPECT_STREQ("1", src_attr("spare", "struct_page"));
#else
	EXPECT_STREQ("0", src_attr("spare", "struct_page"));
#endif
	EXPECT_STREQ("1", src_attr("spare", "movable"));
	nid = atoi(src_attr("spare", "nodes"));
	EXPECT_EQ(self->total + (long long)size, som_stat("total_bytes"));
	EXPECT_EQ(self->free + (long long)size, som_stat("free_bytes"));
	TH_LOG("reserved: %lluG@%lluG on node %d, %lld metadata bytes for it",
	       (unsigned long long)(size >> 30),
	       (unsigned long long)(start >> 30), nid, meta);

	/* Bound to the range's node, which has nothing else: it is used. */
	use_source(_metadata, self->dev, "spare", SOM_POLICY_BIND, 1ULL << nid,
		0);
	EXPECT_EQ(self->total + (long long)size, som_stat("total_bytes"));

	EXPECT_EQ(0, src_remove(self->dev, "spare"));
	EXPECT_EQ(self->total, som_stat("total_bytes"));
	EXPECT_EQ(self->free, som_stat("free_bytes"));
	EXPECT_EQ(-ENOENT, src_remove(self->dev, "spare"));
	/* It can come back, under a name of som's choosing. */
	a.name[0] = '\0';
	ASSERT_EQ(0, src_add(self->dev, &a));
	EXPECT_EQ(0, strncmp(a.name, "reserved@", 9));
	/* And go through sysfs, as `echo NAME > remove_source` does it. */
	EXPECT_EQ(-ENOENT, som_sysfs_write("remove_source", "no-such-source\n"));
	snprintf(line, sizeof(line), "%s\n", a.name);
	EXPECT_EQ(0, som_sysfs_write("remove_source", line));
	EXPECT_EQ(self->total, som_stat("total_bytes"));
	EXPECT_EQ(-ENOENT, src_remove(self->dev, a.name));
}

/*
 * hugetlb: a memfd of 1 GiB pages, given to som as unmovable memory, backs
 * an unmovable region with a 1 GiB entry; the hugetlb pool gets the page
 * back after removal.
 */
/* som-sources @cmd over @conf, its state in /tmp: its exit status. */
static int som_sources(const char *cmd, const char *conf)
{
	char line[256];
	int status;

	snprintf(line, sizeof(line),
		 "SOM_SOURCES_STATE=/tmp/som-sources.state som-sources %s %s >/dev/null 2>&1",
		 cmd, conf);
	status = system(line);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* @text into the file @path. */
static int write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -1;
	fputs(text, f);
	return fclose(f);
}

/*
 * The boot-time setup (som.service runs som-sources): the sources a
 * configuration file lists are added in order, one that fails does not
 * stop the others, and stop removes exactly those start added; a file
 * with a line that is no source changes nothing.
 */
TEST_F(source, boot_setup_adds_and_removes_configured_sources)
{
	const char *conf = "/tmp/som-sources.conf";
	uint64_t size, start;
	char text[512];

	if (!parse_range(getenv("SOM_SPARE_RANGES"), &size, &start))
		SKIP(return, "no spare reserved range (SOM_SPARE_RANGES)");
	unlink("/tmp/som-sources.state");
	ASSERT_EQ(0, write_file(conf, "# nothing but a bad line\nspare 1G@4G\n"));
	EXPECT_EQ(2, som_sources("start", conf));
	EXPECT_EQ(self->sources, nr_sources());
	EXPECT_EQ(2, som_sources("start", "/tmp/no-such.conf"));

	snprintf(text, sizeof(text),
		 "# the spare range, and a device that is not there\n"
		 "reserved %lluG@%#llx --name boot-spare   # spare\n"
		 "\n"
		 "dax dax97.0\n",
		 (unsigned long long)(size / GiB), (unsigned long long)start);
	ASSERT_EQ(0, write_file(conf, text));
	EXPECT_EQ(0, som_sources("check", conf));
	EXPECT_EQ(1, som_sources("start", conf));
	EXPECT_EQ(self->sources + 1, nr_sources());
	EXPECT_STREQ("reserved", src_attr("boot-spare", "kind"));
	EXPECT_EQ(self->total + (long long)size, som_stat("total_bytes"));
	EXPECT_EQ(0, som_sources("stop", conf));
	EXPECT_EQ(self->sources, nr_sources());
	EXPECT_EQ(self->total, som_stat("total_bytes"));
	/* Stopped twice: nothing left to remove. */
	EXPECT_EQ(0, som_sources("stop", conf));
	unlink(conf);
	unlink("/tmp/som-sources.state");
}

TEST_F(source, hugetlb_pages_are_added_used_and_given_back)
{
	long long free_huge = som_read_ll(HUGE_FREE), meta;
	struct som_source_args a;
	char *hp;
	int memfd;

	if (som_read_ll(HUGE_DIR "nr_hugepages") < 1)
		SKIP(return, "no 1 GiB hugetlb pages (boot with hugepagesz=1G hugepages=N)");
	ASSERT_LE(1, free_huge)
		TH_LOG("every 1 GiB hugetlb page is in use: something before this test kept one");
	memfd = memfd_create("som-hugetlb", MFD_CLOEXEC | MFD_HUGETLB |
			     MFD_HUGE_1GB);
	ASSERT_LE(0, memfd);

	/* A hole in the file, then a mapped file, are refused. */
	ASSERT_EQ(0, ftruncate(memfd, 2 * GiB));
	ASSERT_EQ(0, fallocate(memfd, 0, 0, GiB));
	args_init(&a, SOM_SOURCE_HUGETLB);
	a.fd = memfd;
	a.flags = SOM_SOURCE_UNMOVABLE;
	EXPECT_EQ(-EINVAL, src_add(self->dev, &a));
	ASSERT_EQ(0, ftruncate(memfd, GiB));
	hp = mmap(NULL, GiB, PROT_READ, MAP_SHARED, memfd, 0);
	ASSERT_NE(MAP_FAILED, hp);
	EXPECT_EQ(-EBUSY, src_add(self->dev, &a));
	munmap(hp, GiB);
	EXPECT_EQ(free_huge - 1, som_read_ll(HUGE_FREE));

	meta = som_stat("metadata_bytes");
	ASSERT_EQ(0, src_add(self->dev, &a));
	/* The pages left the file: only som can reach them now. */
	EXPECT_EQ(0, lseek(memfd, 0, SEEK_END));
	close(memfd);
	TH_LOG("hugetlb: 1 GiB page on node %d, %lld metadata bytes for it",
	       atoi(src_attr(a.name, "nodes")),
	       som_stat("metadata_bytes") - meta);
	EXPECT_STREQ("hugetlb", src_attr(a.name, "kind"));
	EXPECT_STREQ("1", src_attr(a.name, "struct_page"));
	EXPECT_STREQ("0", src_attr(a.name, "movable"));
	EXPECT_EQ((long long)GiB, som_stat("unmovable_total_bytes"));
	EXPECT_EQ((long long)GiB, som_stat("unmovable_free_bytes"));
	/* Movable regions cannot reach it. */
	EXPECT_EQ(self->free, som_stat("free_bytes") - (long long)GiB);

	use_source(_metadata, self->dev, a.name, SOM_POLICY_LOCAL, 0,
		SOM_POLICY_UNMOVABLE);
	EXPECT_EQ(0, src_remove(self->dev, a.name));
	EXPECT_EQ(0, som_stat("unmovable_total_bytes"));
	EXPECT_EQ(free_huge, som_read_ll(HUGE_FREE));
}

/* buddy: a 1 GiB run from the page allocator, used and freed back. */
TEST_F(source, buddy_run_is_added_used_and_freed)
{
	struct som_source_args a;
	long long mem_before, meta;
	int err;

	mem_before = som_meminfo("MemFree");
	meta = som_stat("metadata_bytes");
	args_init(&a, SOM_SOURCE_BUDDY);
	a.size = GiB;
	a.flags = SOM_SOURCE_UNMOVABLE;
	err = src_add(self->dev, &a);
	if (err == -ENODEV)
		SKIP(return, "this kernel has no CONFIG_CONTIG_ALLOC");
	if (err)	/* where the free memory is, for the log */
		system("sed 's/^/# /' /proc/buddyinfo; grep -E '^Node|start_pfn|spanned|present' /proc/zoneinfo | sed 's/^/# /'");
	ASSERT_EQ(0, err);
	TH_LOG("buddy: 1 GiB on node %d, %lld metadata bytes for it; MemFree fell by %lld MiB",
	       atoi(src_attr(a.name, "nodes")),
	       som_stat("metadata_bytes") - meta,
	       (mem_before - som_meminfo("MemFree")) >> 20);
	/*
	 * Give or take what the rest of the system did meanwhile, and the
	 * per-CPU free lists that taking a contiguous run drains: pages on
	 * them count in MemFree only once drained (78 MiB seen).
	 */
	EXPECT_LE((long long)GiB - 128 * (long long)MiB,
		  mem_before - som_meminfo("MemFree"));
	EXPECT_STREQ("buddy", src_attr(a.name, "kind"));
	EXPECT_STREQ("1", src_attr(a.name, "struct_page"));

	use_source(_metadata, self->dev, a.name, SOM_POLICY_LOCAL, 0,
		SOM_POLICY_UNMOVABLE);
	mem_before = som_meminfo("MemFree");
	EXPECT_EQ(0, src_remove(self->dev, a.name));
	EXPECT_LE((long long)GiB - 64 * (long long)MiB,
		  som_meminfo("MemFree") - mem_before);
}

/*
 * dax: the guest's dax0.0 (legacy pmem as device DAX), taken over and
 * given back with somctl, which unbinds and rebinds device_dax.
 */
TEST_F(source, dax_device_is_taken_over_and_given_back)
{
	long long meta;

	if (!getenv("SOM_PMEM"))
		SKIP(return, "no legacy pmem in this machine (SOM_PMEM)");
	ASSERT_EQ(0, access("/sys/bus/dax/devices/dax0.0", F_OK))
		TH_LOG("vm/guest/test.sh should have made dax0.0 with ndctl");
	ASSERT_EQ(0, access("/dev/dax0.0", F_OK));

	meta = som_stat("metadata_bytes");
	ASSERT_EQ(0, system("somctl add dax dax0.0 --unmovable"));
	meta = som_stat("metadata_bytes") - meta;
	/* device_dax let go of it. */
	EXPECT_NE(0, access("/sys/bus/dax/devices/dax0.0/driver", F_OK));
	EXPECT_STREQ("dax", src_attr("dax0.0", "kind"));
	EXPECT_STREQ("0", src_attr("dax0.0", "struct_page"));
	EXPECT_LE((long long)GiB, atoll(src_attr("dax0.0", "bytes")));
	TH_LOG("dax: dax0.0, %lld GiB on node %d, %lld metadata bytes for it",
	       atoll(src_attr("dax0.0", "bytes")) >> 30,
	       atoi(src_attr("dax0.0", "nodes")), meta);
	/* While som holds it, device_dax cannot have it back. */
	EXPECT_NE(0, som_write_file("/sys/bus/dax/drivers/device_dax/bind",
				    "dax0.0"));

	use_source(_metadata, self->dev, "dax0.0", SOM_POLICY_LOCAL, 0,
		SOM_POLICY_UNMOVABLE);
	EXPECT_EQ(0, system("somctl remove dax0.0"));
	/* Back with device_dax, which can claim its range again. */
	EXPECT_EQ(0, access("/sys/bus/dax/devices/dax0.0/driver", F_OK));
	EXPECT_EQ(0, access("/dev/dax0.0", F_OK));
}

/*
 * NUMA: with the spare range on node 1 in the pool, each policy places
 * blocks where it says, and the per-node counters follow exactly.
 */
TEST_F(source, numa_policies_place_blocks)
{
	long long free0, free1;
	struct som_source_args a;
	uint64_t size, start;
	struct som_mapping m;
	int fd, i, nid;
	char *p;

	if (!parse_range(getenv("SOM_SPARE_RANGES"), &size, &start))
		SKIP(return, "no spare reserved range (SOM_SPARE_RANGES)");
	if (node_stat(1, "total_bytes") < 0)
		SKIP(return, "needs two NUMA nodes");
	args_init(&a, SOM_SOURCE_RESERVED);
	a.start = start;
	a.size = size;
	ASSERT_EQ(0, src_add(self->dev, &a));
	nid = atoi(src_attr(a.name, "nodes"));
	ASSERT_EQ(1, nid) TH_LOG("the spare range should be on node 1");
	ASSERT_EQ(node_stat(0, "total_bytes"), self->total);
	free0 = node_stat(0, "free_bytes");
	free1 = node_stat(1, "free_bytes");
	EXPECT_EQ((long long)size, free1);

	/* Local: the faulting CPU's node (CPU n is on node n). */
	for (i = 0; i < 2; i++) {
		pin_cpu(i);
		fd = map_region(-1, 0, 0, 4 * MiB, &p);
		ASSERT_LE(0, fd);
		ASSERT_EQ(0, placement(fd, p, &m));
		EXPECT_EQ(i, m.node);
		ASSERT_EQ(0, placement(fd, p + 2 * MiB, &m));
		EXPECT_EQ(i, m.node);
		EXPECT_EQ(i ? free1 - 4 * (long long)MiB : free1,
			  node_stat(1, "free_bytes"));
		munmap(p, 4 * MiB);
		close(fd);
	}

	/* Preferred node 1 from CPU 0. */
	pin_cpu(0);
	fd = map_region(SOM_POLICY_PREFERRED, 2, 0, 2 * MiB, &p);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, placement(fd, p, &m));
	EXPECT_EQ(1, m.node);
	EXPECT_EQ(free1 - 2 * (long long)MiB, node_stat(1, "free_bytes"));
	munmap(p, 2 * MiB);
	close(fd);

	/* Interleave by 2 MiB over both, then by 1 GiB. */
	fd = map_region(SOM_POLICY_INTERLEAVE, 3, 0, 8 * MiB, &p);
	ASSERT_LE(0, fd);
	for (i = 0; i < 4; i++) {
		ASSERT_EQ(0, placement(fd, p + i * 2 * MiB, &m));
		EXPECT_EQ(i % 2, m.node);
	}
	EXPECT_EQ(free0 - 4 * (long long)MiB, node_stat(0, "free_bytes"));
	EXPECT_EQ(free1 - 4 * (long long)MiB, node_stat(1, "free_bytes"));
	/* What the administrator sees meanwhile. */
	EXPECT_EQ(0, system("somctl status >/tmp/status && sed 's/^/# /' /tmp/status"));
	munmap(p, 8 * MiB);
	close(fd);
	fd = map_region(SOM_POLICY_INTERLEAVE, 3,
			SOM_POLICY_INTERLEAVE_1G, 8 * MiB, &p);
	ASSERT_LE(0, fd);
	for (i = 0; i < 4; i++) {
		ASSERT_EQ(0, placement(fd, p + i * 2 * MiB, &m));
		EXPECT_EQ(0, m.node);
	}
	munmap(p, 8 * MiB);
	close(fd);

	/* Bind: never beyond the bound nodes, even with room elsewhere. */
	fd = open(SOM_DEV, O_RDWR);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, set_policy(fd, SOM_POLICY_BIND, 2, 0));
	p = mmap(NULL, size + 2 * MiB, PROT_READ | PROT_WRITE, MAP_SHARED,
		 fd, 0);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(ENOMEM, errno);
	p = mmap(NULL, 2 * MiB, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	p[0] = 1;
	ASSERT_EQ(0, placement(fd, p, &m));
	EXPECT_EQ(1, m.node);
	/* The kind is fixed once the region holds memory. */
	EXPECT_EQ(-EBUSY, set_policy(fd, SOM_POLICY_BIND, 2,
				     SOM_POLICY_UNMOVABLE));
	munmap(p, 2 * MiB);
	close(fd);

	/* A som file takes a policy while its size is 0. */
	fd = som_file(self->dev, 0, SOM_FILE_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, set_policy(fd, SOM_POLICY_BIND, 2, 0));
	ASSERT_EQ(0, ftruncate(fd, 2 * MiB));
	EXPECT_EQ(-EBUSY, set_policy(fd, SOM_POLICY_BIND, 2,
				     SOM_POLICY_UNMOVABLE));
	p = mmap(NULL, 2 * MiB, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	p[0] = 1;
	ASSERT_EQ(0, placement(fd, p, &m));
	EXPECT_EQ(1, m.node);
	munmap(p, 2 * MiB);
	close(fd);

	EXPECT_EQ(free0, node_stat(0, "free_bytes"));
	EXPECT_EQ(free1, node_stat(1, "free_bytes"));
	EXPECT_EQ(0, src_remove(self->dev, a.name));
}

/* Unmovable chunks serve only unmovable regions, and the reverse. */
TEST_F(source, unmovable_chunks_are_kept_apart)
{
	struct som_source_args a;
	uint64_t size, start;
	struct som_mapping m;
	int fd;
	char *p;

	if (!parse_range(getenv("SOM_SPARE_RANGES"), &size, &start))
		SKIP(return, "no spare reserved range (SOM_SPARE_RANGES)");
	/* No unmovable memory yet: an unmovable region gets none. */
	EXPECT_EQ(-ENOMEM, map_region(SOM_POLICY_LOCAL, 0,
				      SOM_POLICY_UNMOVABLE, 2 * MiB, &p));
	args_init(&a, SOM_SOURCE_RESERVED);
	a.start = start;
	a.size = size;
	a.flags = SOM_SOURCE_UNMOVABLE;
	ASSERT_EQ(0, src_add(self->dev, &a));
	EXPECT_STREQ("0", src_attr(a.name, "movable"));
	EXPECT_EQ((long long)size, som_stat("unmovable_total_bytes"));
	EXPECT_EQ(self->free + (long long)size, som_stat("free_bytes"));

	/* A movable region as large as all free memory does not fit. */
	fd = open(SOM_DEV, O_RDWR);
	ASSERT_LE(0, fd);
	p = mmap(NULL, self->free + 2 * MiB, PROT_READ | PROT_WRITE,
		 MAP_SHARED, fd, 0);
	EXPECT_EQ(MAP_FAILED, p);
	close(fd);

	fd = map_region(SOM_POLICY_LOCAL, 0, SOM_POLICY_UNMOVABLE,
			size, &p);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, placement(fd, p, &m));
	EXPECT_EQ(SOM_MAPPING_UNMOVABLE, m.out_flags);
	EXPECT_EQ(atoi(src_attr(a.name, "nodes")), m.node);
	EXPECT_EQ(0, som_stat("unmovable_free_bytes"));
	EXPECT_EQ(self->free, som_stat("free_bytes"));
	munmap(p, size);
	close(fd);
	EXPECT_EQ(0, src_remove(self->dev, a.name));
	EXPECT_EQ(0, som_stat("unmovable_total_bytes"));
}

/*
 * somctl's views: status --json agrees with sysfs, ps finds this process
 * with its entries and the memory it owns (options before or after the
 * arguments), add --wait
 * waits for the zeroing, and the errors say what went wrong.
 */
TEST_F(source, somctl_reports_pool_and_processes)
{
	static char out[16384];
	uint64_t size, start;
	char want[128], cmd[128];
	char *p;

	/* status --json: the pool's counters, as sysfs has them. */
	ASSERT_EQ(0, som_capture("somctl status --json", out, sizeof(out)));
	snprintf(want, sizeof(want), "\"total_bytes\": %lld,",
		 som_stat("total_bytes"));
	EXPECT_NE(NULL, strstr(out, want));
	EXPECT_NE(NULL, strstr(out, "\"sources\": ["));
	EXPECT_NE(NULL, strstr(out, "\"struct_page_avoided_bytes\": "));
	/* --watch: two rounds, each with its table. */
	ASSERT_EQ(0, som_capture("somctl status --watch=1 --count=2", out,
			     sizeof(out)));
	p = strstr(out, "metadata");
	ASSERT_NE(NULL, p);
	EXPECT_NE(NULL, strstr(p + 1, "metadata"));

	/* ps: this process, with a 2 MiB entry of a 4 MiB region. */
	p = mmap(NULL, 4 * MiB, PROT_READ | PROT_WRITE, MAP_SHARED, self->dev,
		 0);
	ASSERT_NE(MAP_FAILED, p);
	p[0] = 1;
	snprintf(cmd, sizeof(cmd), "somctl ps %d", getpid());
	ASSERT_EQ(0, som_capture(cmd, out, sizeof(out)));
	TH_LOG("%s", out);
	snprintf(want, sizeof(want), "%8d ", getpid());
	EXPECT_NE(NULL, strstr(out, want));
	EXPECT_NE(NULL, strstr(out, "4 MiB        2 MiB        0        1        0"));
	ASSERT_EQ(0, som_capture("somctl ps --json", out, sizeof(out)));
	snprintf(want, sizeof(want), "\"pid\": %d, ", getpid());
	EXPECT_NE(NULL, strstr(out, want));
	EXPECT_NE(NULL, strstr(out, "\"entries\": {\"1g\": 0, \"2m\": 1, \"4k\": 0}"));
	/* The block it owns, and its cgroup as /proc has it. */
	EXPECT_NE(NULL, strstr(out, "\"owned_bytes\": 2097152, \"rss_bytes\": "));
	EXPECT_NE(NULL, strstr(out, "\"cgroup\": \""));
	/* Options after the arguments, and before the command. */
	snprintf(cmd, sizeof(cmd), "somctl ps %d --json", getpid());
	ASSERT_EQ(0, som_capture(cmd, out, sizeof(out)));
	EXPECT_EQ('[', out[0]);
	EXPECT_NE(NULL, strstr(out, want));
	ASSERT_EQ(0, som_capture("somctl --json status", out, sizeof(out)));
	EXPECT_EQ(0, strncmp(out, "{\"pool\": {", 10));
	munmap(p, 4 * MiB);
	EXPECT_NE(0, som_capture("somctl ps 1073741800 2>&1", out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "no such process"));

	/* add --wait: the new range is zeroed before somctl returns. */
	if (parse_range(getenv("SOM_SPARE_RANGES"), &size, &start)) {
		snprintf(cmd, sizeof(cmd),
			 "somctl add reserved %lluG@%lluG --name spare --wait",
			 (unsigned long long)(size >> 30),
			 (unsigned long long)(start >> 30));
		ASSERT_EQ(0, som_capture(cmd, out, sizeof(out)));
		EXPECT_NE(NULL, strstr(out, "zeroed"));
		EXPECT_EQ(som_stat("free_bytes"), som_stat("zeroed_bytes"));
		EXPECT_EQ(0, system("somctl remove spare"));
	}
	EXPECT_NE(0, som_capture("somctl remove no-such-source 2>&1", out,
			     sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "no such source"));
	/* Usage errors: exit status 2, nothing done. */
	EXPECT_EQ(2, WEXITSTATUS(som_capture("somctl frobnicate 2>&1", out,
					 sizeof(out))));
	EXPECT_NE(NULL, strstr(out, "usage:"));
	EXPECT_EQ(2, WEXITSTATUS(som_capture("somctl add reserved 1G@4G --node 1 2>&1",
					 out, sizeof(out))));
}

TEST_HARNESS_MAIN
