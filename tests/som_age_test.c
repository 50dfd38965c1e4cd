// SPDX-License-Identifier: GPL-2.0
/*
 * Aging of som memory without struct page (kernel/age_scan.c): scans run
 * through /sys/kernel/mm/som/aging/, ages read back per 2 MiB and per
 * process through SOM_IOC_PROC_AGES, what the ages cost in metadata, and
 * scans racing faults, munmap, fork, exit and compaction.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "som_util.h"
#include "som_slab_util.h"

#define AGING	"aging/"

static int age_scan(void)
{
	return som_sysfs_write(AGING "scan", "1");
}

/* SOM_IOC_PROC_AGES for @pid, with @map filled for [@addr, @addr + @len). */
static int proc_ages(int fd, pid_t pid, void *addr, size_t len,
		     unsigned char *map, struct som_proc_ages *out)
{
	memset(out, 0, sizeof(*out));
	out->pid = pid;
	out->addr = (uintptr_t)addr;
	out->len = len;
	out->map = (uintptr_t)map;
	return ioctl(fd, SOM_IOC_PROC_AGES, out) ? -errno : 0;
}

/* The pool's idle_bytes, SOM_AGE_NR numbers; 0 if all were read. */
static int pool_idle_bytes(long long bytes[SOM_AGE_NR])
{
	char buf[512], *p = buf, *end;
	int i;

	if (som_read_text(SOM_SYSFS AGING "idle_bytes", buf, sizeof(buf)) < 0)
		return -1;
	for (i = 0; i < SOM_AGE_NR; i++, p = end) {
		bytes[i] = strtoll(p, &end, 10);
		if (end == p)
			return -1;
	}
	return 0;
}

/* Read one byte of every 2 MiB of [@p, @p + @len): a touch of each. */
static void touch(const char *p, size_t len)
{
	size_t off;

	for (off = 0; off < len; off += 2 * MiB)
		(void)*(volatile const char *)(p + off);
}

FIXTURE(age) {
	int fd;
	long long free_start;
};

FIXTURE_SETUP(age)
{
	SOM_OPEN_DEV(self->fd);
	self->free_start = som_stat("free_bytes");
	ASSERT_LE(2 * (long long)GiB, self->free_start)
		TH_LOG("these tests need a pool of at least 2 GiB");
	ASSERT_EQ(0, som_sysfs_write(AGING "interval_ms", "0"));
}

FIXTURE_TEARDOWN(age)
{
	if (self->fd < 0)
		return;
	som_sysfs_write(AGING "interval_ms", "0");
	close(self->fd);
	EXPECT_EQ(self->free_start, som_stat("free_bytes"));
	EXPECT_EQ(0, som_stat("reserved_bytes"));
}

/*
 * 64 MiB on 2 MiB entries: all used, then only the first half for three
 * scans. The halves end three ages apart, the data is intact, and each
 * scan cost the used half one refault per 2 MiB entry.
 */
TEST_F(age, hot_and_cold_halves_age_apart)
{
	const size_t len = 64 * MiB, half = len / 2;
	unsigned char map[32];
	struct som_proc_ages a;
	long long faults, pool[SOM_AGE_NR];
	char *p;
	int i;

	p = som_map_shared(self->fd, len);
	ASSERT_NE(MAP_FAILED, p);
	som_fill(p, 0, len, 4096, 7);
	ASSERT_EQ(2 * (long long)MiB, som_page_size(self->fd, p));
	ASSERT_EQ(0, age_scan());
	ASSERT_EQ(0, proc_ages(self->fd, 0, p, len, map, &a));
	for (i = 0; i < 32; i++)
		EXPECT_EQ(0, map[i]);
	EXPECT_EQ((long long)len, (long long)a.idle_bytes[0]);

	for (i = 0; i < 3; i++) {
		faults = som_stat("faults_pmd");
		touch(p, half);
		/* The scan before unmapped every entry: one refault each. */
		EXPECT_EQ(16, som_stat("faults_pmd") - faults);
		ASSERT_EQ(0, age_scan());
	}
	ASSERT_EQ(0, proc_ages(self->fd, 0, p, len, map, &a));
	for (i = 0; i < 32; i++)
		EXPECT_EQ(i < 16 ? 0 : 3, map[i]) TH_LOG("2 MiB #%d", i);
	EXPECT_EQ((long long)half, (long long)a.idle_bytes[0]);
	EXPECT_EQ((long long)half, (long long)a.idle_bytes[3]);
	EXPECT_LE(4, (long long)a.scans);
	ASSERT_EQ(0, pool_idle_bytes(pool));
	EXPECT_LE((long long)half, pool[0]);
	EXPECT_LE((long long)half, pool[3]);
	EXPECT_EQ(-1, som_check(p, 0, len, 4096, 7));
	EXPECT_EQ(0, munmap(p, len));
}

/*
 * A GiB on one 1 GiB entry ages as one: nothing but its xarray slot is
 * spent, and one touch brings all of it back to age 0 with one fault.
 */
TEST_F(age, gib_entry_ages_as_one)
{
	unsigned char map[512];
	struct som_proc_ages a;
	long long faults, meta;
	char *p;
	int i;

	if (!som_cpu_has_gbpages())
		SKIP(return, "som maps no 1 GiB entries here (x86 without pdpe1gb, or arm64)");
	p = som_map_shared(self->fd, GiB);
	ASSERT_NE(MAP_FAILED, p);
	p[0] = 1;
	ASSERT_EQ((long long)GiB, som_page_size(self->fd, p))
		TH_LOG("no whole free chunk for a 1 GiB entry");
	meta = som_stat("metadata/ages_bytes");
	for (i = 0; i < 3; i++)
		ASSERT_EQ(0, age_scan());
	ASSERT_EQ(0, proc_ages(self->fd, 0, p, GiB, map, &a));
	/* Used before the first scan, then not: 2 scans idle. */
	for (i = 0; i < 512; i++)
		ASSERT_EQ(2, map[i]) TH_LOG("2 MiB #%d", i);
	EXPECT_EQ((long long)GiB, (long long)a.idle_bytes[2]);
	EXPECT_EQ(meta, som_stat("metadata/ages_bytes"));

	faults = som_stat("faults_pud");
	EXPECT_EQ(1, p[0]);
	EXPECT_EQ(1, som_stat("faults_pud") - faults);
	EXPECT_EQ((long long)GiB, som_page_size(self->fd, p));
	ASSERT_EQ(0, age_scan());
	ASSERT_EQ(0, proc_ages(self->fd, 0, p, GiB, map, &a));
	EXPECT_EQ((long long)GiB, (long long)a.idle_bytes[0]);
	EXPECT_EQ(0, map[511]);
	EXPECT_EQ(meta, som_stat("metadata/ages_bytes"));
	EXPECT_EQ(0, munmap(p, GiB));
}

/* Touch every @step bytes of [@p, @p + @len); the seconds it took. */
static double touch_every(char *p, size_t len, size_t step)
{
	double t = som_seconds();
	size_t off;

	for (off = 0; off < len; off += step)
		(void)*(volatile char *)(p + off);
	return som_seconds() - t;
}

/*
 * What a scan costs per GiB of memory in use, by the size of the entries
 * that map it: the scan's own time, and the owner's refaults afterwards,
 * one per entry (exact), next to the same touches with no scan between.
 * The times are printed, not checked (TCG).
 */
TEST_F(age, scan_cost_per_gib_by_entry_size)
{
	static const struct {
		long long entry;
		size_t len;
		const char *stat;
	} sizes[] = {
		{ 1LL << 30, GiB, "faults_pud" },
		{ 2LL << 20, GiB, "faults_pmd" },
		{ 4096, 128 * MiB, "faults_pte" },
	};
	long long ns, faults;
	double warm, after;
	unsigned int i;
	char *p;

	TH_LOG("entry    scan ms/GiB  refaults/GiB  touch ms/GiB: warm  after a scan");
	for (i = 0; i < 3; i++) {
		size_t len = sizes[i].len, step = sizes[i].entry;
		double per_gib = (double)GiB / len;

		if (sizes[i].entry == 1LL << 30 && !som_cpu_has_gbpages())
			continue;
		if (sizes[i].entry == 1LL << 30)
			p = som_map_shared(self->fd, len);
		else
			p = som_map_past(self->fd, len, GiB, 2 * MiB);
		ASSERT_NE(MAP_FAILED, p);
		if (sizes[i].entry == 4096)
			ASSERT_EQ(0, madvise(p, len, MADV_NOHUGEPAGE));
		touch_every(p, len, step);
		ASSERT_EQ(sizes[i].entry, som_page_size(self->fd, p));
		warm = touch_every(p, len, step);
		/* A scan of the mapped memory, which it unmaps. */
		ns = som_stat(AGING "scan_ns");
		ASSERT_EQ(0, age_scan());
		ns = som_stat(AGING "scan_ns") - ns;
		faults = som_stat(sizes[i].stat);
		after = touch_every(p, len, step);
		EXPECT_EQ((long long)(len / step), som_stat(sizes[i].stat) - faults);
		TH_LOG("%-8lld %12.2f %13.0f %19.2f %13.2f", sizes[i].entry,
		       ns / 1e6 * per_gib, (len / step) * per_gib,
		       warm * 1e3 * per_gib, after * 1e3 * per_gib);
		EXPECT_EQ(0, munmap(p, len));
	}
}

/*
 * A GiB whose 2 MiB indices differ in age costs one struct som_gib_ages
 * (som's own slab cache, counted in metadata/ages_bytes); once they agree
 * again it goes.
 */
TEST_F(age, mixed_ages_cost_one_object_per_gib)
{
	const size_t len = 256 * MiB;
	long long size = som_slab_object_size("som_gib_ages");
	long long meta, objects;
	char *p;

	if (!som_slab_exact("som_gib_ages"))
		SKIP(return, "slab counts of som_gib_ages are not exact (boot with slab_debug=F,som_*)");
	ASSERT_LT(0, size);
	meta = som_stat("metadata/ages_bytes");
	objects = som_slabinfo_active("som_gib_ages");
	p = som_map_shared(self->fd, len);
	ASSERT_NE(MAP_FAILED, p);
	touch(p, len);
	ASSERT_EQ(0, age_scan());
	EXPECT_EQ(meta, som_stat("metadata/ages_bytes"));
	touch(p, len / 2);
	ASSERT_EQ(0, age_scan());
	EXPECT_EQ(meta + size, som_stat("metadata/ages_bytes"));
	EXPECT_EQ(objects + 1, som_slabinfo_active("som_gib_ages"));
	touch(p, len);
	ASSERT_EQ(0, age_scan());
	EXPECT_EQ(meta, som_stat("metadata/ages_bytes"));
	EXPECT_EQ(objects, som_slabinfo_active("som_gib_ages"));
	EXPECT_EQ(0, munmap(p, len));
}

/*
 * The map says SOM_AGE_NONE where no som mapping is and where a som
 * mapping has no memory yet; a som file's memory that nobody maps ages.
 */
TEST_F(age, map_and_unmapped_memory)
{
	unsigned char map[4];
	struct som_proc_ages a;
	char *anon, *p, *q;
	int file;

	anon = mmap(NULL, 8 * MiB, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, anon);
	p = som_map_shared(self->fd, 8 * MiB);
	ASSERT_NE(MAP_FAILED, p);
	p[2 * MiB] = 1;
	ASSERT_EQ(0, age_scan());
	ASSERT_EQ(0, proc_ages(self->fd, 0, p, 8 * MiB, map, &a));
	EXPECT_EQ(SOM_AGE_NONE, map[0]);
	EXPECT_EQ(0, map[1]);
	EXPECT_EQ(SOM_AGE_NONE, map[2]);
	/* 4 MiB inside the anonymous mapping, 2 MiB aligned. */
	ASSERT_EQ(0, proc_ages(self->fd, 0,
			       (void *)(((uintptr_t)anon + 2 * MiB - 1) &
					~(2 * MiB - 1)),
			       4 * MiB, map, &a));
	EXPECT_EQ(SOM_AGE_NONE, map[0]);
	EXPECT_EQ(SOM_AGE_NONE, map[1]);

	/* A som file mapped once, then only open: its memory ages. */
	file = som_file(self->fd, 16 * MiB, 0);
	ASSERT_LE(0, file);
	q = som_map_shared(file, 16 * MiB);
	ASSERT_NE(MAP_FAILED, q);
	memset(q, 5, 16 * MiB);
	EXPECT_EQ(0, munmap(q, 16 * MiB));
	ASSERT_EQ(0, age_scan());
	ASSERT_EQ(0, age_scan());
	/* The file's 16 MiB and the 2 MiB of @p, both unused for 2 scans. */
	ASSERT_EQ(0, proc_ages(self->fd, 0, NULL, 0, NULL, &a));
	EXPECT_EQ(18 * (long long)MiB, (long long)a.idle_bytes[2]);
	close(file);
	EXPECT_EQ(0, munmap(p, 8 * MiB));
	EXPECT_EQ(0, munmap(anon, 8 * MiB));
}

/*
 * Paths that unmap entries between two scans keep what they said: an
 * mremap() move (which empties the source first) and the split of a
 * 1 GiB entry by mprotect(). Memory used before them is still used at the
 * next scan, though no entry maps it then.
 */
TEST_F(age, moves_and_splits_keep_use)
{
	const size_t len = 64 * MiB;
	unsigned char map[512];
	struct som_proc_ages a;
	char *p, *q, *area;
	int i;

	p = som_map_shared(self->fd, len);
	ASSERT_NE(MAP_FAILED, p);
	som_fill(p, 0, len, 4096, 9);
	ASSERT_EQ(0, age_scan());
	touch(p, len);
	/* Moved to a 2 MiB aligned address of a reservation. */
	area = mmap(NULL, len + 2 * MiB, PROT_NONE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	ASSERT_NE(MAP_FAILED, area);
	q = (char *)(((uintptr_t)area + 2 * MiB - 1) & ~(2 * MiB - 1));
	ASSERT_EQ(q, mremap(p, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, q));
	ASSERT_EQ(0, age_scan());
	ASSERT_EQ(0, proc_ages(self->fd, 0, q, len, map, &a));
	for (i = 0; i < 32; i++)
		EXPECT_EQ(0, map[i]) TH_LOG("2 MiB #%d", i);
	EXPECT_EQ(-1, som_check(q, 0, len, 4096, 9));
	EXPECT_EQ(0, munmap(q, len));
	munmap(area, len + 2 * MiB);

	if (!som_cpu_has_gbpages())
		return;
	p = som_map_shared(self->fd, GiB);
	ASSERT_NE(MAP_FAILED, p);
	p[0] = 1;
	ASSERT_EQ(0, age_scan());
	EXPECT_EQ(1, p[0]);
	ASSERT_EQ((long long)GiB, som_page_size(self->fd, p));
	/* The split empties the 1 GiB entry; it was used. */
	ASSERT_EQ(0, mprotect(p + GiB / 2, 4096, PROT_READ));
	ASSERT_EQ(0, age_scan());
	ASSERT_EQ(0, proc_ages(self->fd, 0, p, GiB, map, &a));
	for (i = 0; i < 512; i++)
		ASSERT_EQ(0, map[i]) TH_LOG("2 MiB #%d", i);
	EXPECT_EQ(0, munmap(p, GiB));
}

/*
 * Cutting part of a 2 MiB entry removes all of it: a 4 KiB punch of a som
 * file and a 4 KiB mprotect() of a mapping keep the use the whole entry
 * showed, and only the entry's own index is marked.
 */
TEST_F(age, partial_zaps_keep_use)
{
	const size_t len = 8 * MiB;
	unsigned char map[4];
	struct som_proc_ages a;
	int file, i;
	char *p, *q;

	file = som_file(self->fd, len, 0);
	ASSERT_LE(0, file);
	p = som_map_shared(file, len);
	ASSERT_NE(MAP_FAILED, p);
	q = som_map_shared(self->fd, len);
	ASSERT_NE(MAP_FAILED, q);
	memset(p, 1, len);
	memset(q, 1, len);
	ASSERT_EQ(0, age_scan());
	ASSERT_EQ(0, age_scan());
	touch(p + 2 * MiB, 2 * MiB);
	touch(q + 2 * MiB, 2 * MiB);
	ASSERT_EQ(2 * (long long)MiB, som_page_size(file, p + 2 * MiB));
	ASSERT_EQ(2 * (long long)MiB, som_page_size(self->fd, q + 2 * MiB));
	ASSERT_EQ(0, fallocate(file, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			       2 * MiB + 4096, 4096));
	ASSERT_EQ(0, mprotect(q + 2 * MiB + 4096, 4096, PROT_READ));
	ASSERT_EQ(0, age_scan());
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(0, proc_ages(self->fd, 0, i ? q : p, len, map, &a));
		EXPECT_EQ(2, map[0]) TH_LOG("%s", i ? "/dev/som" : "som file");
		EXPECT_EQ(0, map[1]) TH_LOG("%s", i ? "/dev/som" : "som file");
		EXPECT_EQ(2, map[2]) TH_LOG("%s", i ? "/dev/som" : "som file");
	}
	EXPECT_EQ(0, p[2 * MiB + 4096]);
	EXPECT_EQ(0, munmap(p, len));
	EXPECT_EQ(0, munmap(q, len));
	close(file);
}

/*
 * A block that replaces a punched one reads as age 0 before any scan,
 * not as the age of the GiB around it.
 */
TEST_F(age, new_blocks_read_young)
{
	unsigned char map[4];
	struct som_proc_ages a;
	int file, i;
	char *p;

	file = som_file(self->fd, 8 * MiB, 0);
	ASSERT_LE(0, file);
	p = som_map_shared(file, 8 * MiB);
	ASSERT_NE(MAP_FAILED, p);
	memset(p, 3, 8 * MiB);
	for (i = 0; i < 4; i++)
		ASSERT_EQ(0, age_scan());
	ASSERT_EQ(0, proc_ages(self->fd, 0, p, 8 * MiB, map, &a));
	for (i = 0; i < 4; i++)
		EXPECT_EQ(3, map[i]);
	ASSERT_EQ(0, fallocate(file, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			       2 * MiB, 2 * MiB));
	p[2 * MiB] = 4;
	ASSERT_EQ(0, proc_ages(self->fd, 0, p, 8 * MiB, map, &a));
	EXPECT_EQ(3, map[0]);
	EXPECT_EQ(0, map[1]);
	EXPECT_EQ(3, map[2]);
	EXPECT_EQ(0, munmap(p, 8 * MiB));
	close(file);
}

/* somctl ages: this process's row and the pool's, as text and JSON. */
TEST_F(age, somctl_shows_ages)
{
	static char out[16384];
	char cmd[128], want[128];
	char *p;

	p = som_map_shared(self->fd, 8 * MiB);
	ASSERT_NE(MAP_FAILED, p);
	memset(p, 1, 8 * MiB);
	ASSERT_EQ(0, age_scan());
	touch(p, 4 * MiB);
	ASSERT_EQ(0, age_scan());
	snprintf(cmd, sizeof(cmd), "somctl ages %d", getpid());
	ASSERT_EQ(0, som_capture(cmd, out, sizeof(out)));
	TH_LOG("%s", out);
	snprintf(want, sizeof(want), "%8d ", getpid());
	EXPECT_NE(NULL, strstr(out, want));
	EXPECT_NE(NULL, strstr(out, "8 MiB      4 MiB      4 MiB          0"));
	snprintf(cmd, sizeof(cmd), "somctl ages --json %d", getpid());
	ASSERT_EQ(0, som_capture(cmd, out, sizeof(out)));
	snprintf(want, sizeof(want),
		 "\"som_bytes\": %lu, \"idle_bytes\": [%lu, %lu, 0,",
		 8 * MiB, 4 * MiB, 4 * MiB);
	EXPECT_NE(NULL, strstr(out, want)) TH_LOG("%s", out);
	ASSERT_EQ(0, som_capture("somctl ages", out, sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "(pool)"));
	EXPECT_NE(0, som_capture("somctl ages 1073741800 2>&1", out,
				 sizeof(out)));
	EXPECT_NE(NULL, strstr(out, "no such process"));
	EXPECT_EQ(0, munmap(p, 8 * MiB));
}

TEST_F(age, bad_arguments_fail_cleanly)
{
	unsigned char map[2];
	struct som_proc_ages a;
	char *p;

	p = som_map_shared(self->fd, 4 * MiB);
	ASSERT_NE(MAP_FAILED, p);
	p[0] = 1;
	EXPECT_EQ(-EINVAL, proc_ages(self->fd, -1, NULL, 0, NULL, &a));
	EXPECT_EQ(-EINVAL, proc_ages(self->fd, 0, p + 4096, 2 * MiB, map, &a));
	EXPECT_EQ(-EINVAL, proc_ages(self->fd, 0, p, 4096, map, &a));
	EXPECT_EQ(-EINVAL, proc_ages(self->fd, 0, (void *)-(2 * MiB),
				     4 * MiB, map, &a));
	EXPECT_EQ(-EFAULT, proc_ages(self->fd, 0, p, 4 * MiB,
				     (unsigned char *)8, &a));
	EXPECT_EQ(-ESRCH, proc_ages(self->fd, 0x3ffffff, NULL, 0, NULL, &a));
	memset(&a, 0, sizeof(a));
	a.flags = 1;
	EXPECT_EQ(-1, ioctl(self->fd, SOM_IOC_PROC_AGES, &a));
	EXPECT_EQ(EINVAL, errno);
	memset(&a, 0, sizeof(a));
	a.__reserved[1] = 1;
	EXPECT_EQ(-1, ioctl(self->fd, SOM_IOC_PROC_AGES, &a));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-EINVAL, som_sysfs_write(AGING "interval_ms", "x"));
	EXPECT_EQ(-EINVAL, som_sysfs_write(AGING "scan", "maybe"));
	EXPECT_EQ(0, munmap(p, 4 * MiB));
}

/* The worker scans at its interval, and stops when it is set to 0. */
TEST_F(age, worker_scans_until_stopped)
{
	long long before = som_stat(AGING "scans"), now;
	double end = som_seconds() + 120;

	ASSERT_EQ(0, som_sysfs_write(AGING "interval_ms", "50"));
	EXPECT_EQ(50, som_stat(AGING "interval_ms"));
	while ((now = som_stat(AGING "scans")) < before + 3 &&
	       som_seconds() < end)
		usleep(20 * 1000);
	EXPECT_LE(before + 3, now);
	ASSERT_EQ(0, som_sysfs_write(AGING "interval_ms", "0"));
	/* A scan under way when it was stopped may still finish. */
	usleep(500 * 1000);
	now = som_stat(AGING "scans");
	usleep(500 * 1000);
	EXPECT_EQ(now, som_stat(AGING "scans"));
}

/*
 * Scans beside everything that changes a region: faults of each size
 * (a GiB every eighth round), mprotect splits (of 1 GiB entries too), munmap, fork (a som mapping is not inherited: the child
 * maps its own), exit with memory mapped, and compaction. The data is
 * checked and the pool is whole afterwards.
 */
struct racer {
	int fd;
	volatile int stop;
	long long rounds;
};

static void *scanner(void *arg)
{
	struct racer *r = arg;

	while (!r->stop) {
		if (age_scan())
			break;
		r->rounds++;
	}
	return NULL;
}

static void *compactor(void *arg)
{
	struct racer *r = arg;

	while (!r->stop) {
		som_sysfs_write("migration/compact", "1");
		usleep(10 * 1000);
	}
	return NULL;
}

static int child_maps_and_exits(size_t len)
{
	int fd = open(SOM_DEV, O_RDWR);
	char *q;

	if (fd < 0)
		return 1;
	q = som_map_shared(fd, len);
	if (q == MAP_FAILED)
		return 2;
	som_fill(q, 0, len, 2 * MiB, 3);
	return som_check(q, 0, len, 2 * MiB, 3) >= 0 ? 3 : 0;
}

TEST_F(age, scans_race_faults_munmap_fork_and_compaction)
{
	double end = som_seconds() + som_env_seconds("SOM_AGE_RACE_SECONDS", 20, 600);
	struct racer r = { .fd = self->fd };
	pthread_t scan, compact;
	uint64_t seed = 1;
	int round = 0;

	ASSERT_EQ(0, pthread_create(&scan, NULL, scanner, &r));
	ASSERT_EQ(0, pthread_create(&compact, NULL, compactor, &r));
	while (som_seconds() < end) {
		/* Every eighth round a GiB: 1 GiB entries where there are. */
		size_t len = round % 8 == 7 ? GiB :
			     (1 + som_rand(&seed) % 48) * 2 * MiB;
		char *p = som_map_shared(self->fd, len);
		pid_t child;
		int status;

		ASSERT_NE(MAP_FAILED, p);
		som_fill(p, 0, len, 4096, round);
		/* Every other round, 4 KiB entries beside a split VMA. */
		if (round & 1)
			EXPECT_EQ(0, mprotect(p + 4096, 8192, PROT_READ));
		/* A child maps som memory of its own and exits holding it. */
		child = fork();
		ASSERT_LE(0, child);
		if (!child)
			_exit(child_maps_and_exits(len));
		touch(p, len / 2);
		EXPECT_EQ(-1, som_check(p, 0, len, 4096, round));
		ASSERT_EQ(child, waitpid(child, &status, 0));
		EXPECT_EQ(0, status);
		EXPECT_EQ(0, munmap(p, len));
		round++;
	}
	r.stop = 1;
	pthread_join(scan, NULL);
	pthread_join(compact, NULL);
	TH_LOG("%d rounds of map, fill, fork, check and munmap beside %lld scans",
	       round, r.rounds);
	EXPECT_LT(0, r.rounds);
}

TEST_HARNESS_MAIN
