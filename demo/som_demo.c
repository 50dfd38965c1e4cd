// SPDX-License-Identifier: GPL-2.0
/*
 * som_demo: touch 1 GiB of som memory next to 1 GiB of anonymous memory
 * (4 KiB pages, and transparent huge pages) and print what each cost:
 * page faults, the size of the entries that map it, page-table bytes,
 * first-touch time, and memory-management metadata per GiB.
 *
 * Needs som.ko loaded with at least 1 GiB in its pool.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <linux/som.h>

#define GiB (1UL << 30)
#define MiB (1UL << 20)

struct backing {
	const char *name;
	long faults;
	long long pt_bytes;
	double seconds;
	const char *entry;
	long long meta_per_gib;
	const char *meta_what;
};

static long long som_stat(const char *name)
{
	char path[128], buf[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/sys/kernel/mm/som/%s", name);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	return strtoll(buf, NULL, 10);
}

/* A "Name:   value kB" line of /proc/self/status, in bytes. */
static long long status_bytes(const char *key)
{
	char line[256];
	long long kb = -1;
	size_t len = strlen(key);
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, len) && line[len] == ':')
			kb = strtoll(line + len + 1, NULL, 10);
	fclose(f);
	return kb * 1024;
}

static long minflt(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_minflt;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Write one word per 4 KiB page of [p, p + len) and measure the cost. */
static void touch(struct backing *b, char *p, size_t len)
{
	long long pt = status_bytes("VmPTE");
	long flt = minflt();
	double t = now();
	size_t off;

	for (off = 0; off < len; off += 4096)
		*(volatile uint64_t *)(p + off) = off;
	b->seconds = now() - t;
	b->faults = minflt() - flt;
	b->pt_bytes = status_bytes("VmPTE") - pt;
}

static const char *size_name(long long size)
{
	switch (size) {
	case 1L << 30: return "1 GiB";
	case 2L << 20: return "2 MiB";
	case 4L << 10: return "4 KiB";
	case 0: return "none";
	default: return "mixed";
	}
}

/* Which entries map anonymous [p, p + len): from AnonHugePages of smaps. */
static const char *anon_entry(char *p, size_t len)
{
	char line[256], range[64];
	FILE *f = fopen("/proc/self/smaps", "r");
	int in = 0;
	long long thp = -1;

	if (!f)
		return "?";
	snprintf(range, sizeof(range), "%lx-", (unsigned long)p);
	while (fgets(line, sizeof(line), f)) {
		if (strchr(line, '-') && strchr(line, ' ') &&
		    strchr(line, '-') < strchr(line, ' '))
			in = !strncmp(line, range, strlen(range));
		else if (in && !strncmp(line, "AnonHugePages:", 14))
			thp = strtoll(line + 14, NULL, 10) * 1024;
	}
	fclose(f);
	if (thp == (long long)len)
		return "2 MiB";
	return thp == 0 ? "4 KiB" : "mixed";
}

static char *map_aligned_anon(size_t len)
{
	char *p = mmap(NULL, len + 2 * MiB, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	if (p == MAP_FAILED)
		return p;
	return (char *)(((uintptr_t)p + 2 * MiB - 1) & ~(2 * MiB - 1));
}

static int run_anon(struct backing *b, int huge)
{
	char *p = map_aligned_anon(GiB);

	if (p == MAP_FAILED) {
		perror("mmap anonymous");
		return -1;
	}
	madvise(p, GiB, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
	touch(b, p, GiB);
	b->entry = anon_entry(p, GiB);
	b->meta_per_gib = (GiB / 4096) * 64;
	b->meta_what = "struct page";
	munmap(p, GiB);
	return 0;
}

static int run_som(struct backing *b, long long *free_during)
{
	struct som_mapping m;
	int fd = open("/dev/som", O_RDWR);
	char *p;

	if (fd < 0) {
		perror("/dev/som (is som.ko loaded?)");
		return -1;
	}
	p = mmap(NULL, GiB, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		perror("mmap /dev/som");
		close(fd);
		return -1;
	}
	touch(b, p, GiB);
	memset(&m, 0, sizeof(m));
	m.addr = (uintptr_t)p;
	b->entry = ioctl(fd, SOM_IOC_MAPPING, &m) ? "?" : size_name(m.page_size);
	b->meta_per_gib = som_stat("metadata_bytes") /
			  (som_stat("total_bytes") / (long long)GiB);
	b->meta_what = "som pool";
	*free_during = som_stat("free_bytes");
	munmap(p, GiB);
	close(fd);
	return 0;
}

int main(void)
{
	struct backing b[3] = {
		{ .name = "anonymous 4 KiB" },
		{ .name = "anonymous THP" },
		{ .name = "som" },
	};
	long long free_before, free_during = 0, free_after, total;
	int i;

	total = som_stat("total_bytes");
	if (total < (long long)GiB) {
		fprintf(stderr, "som_demo: som.ko must be loaded with at least 1 GiB in its pool\n");
		return 1;
	}
	free_before = som_stat("free_bytes");
	if (run_anon(&b[0], 0) || run_anon(&b[1], 1) ||
	    run_som(&b[2], &free_during))
		return 1;
	free_after = som_stat("free_bytes");

	printf("\nTouching 1 GiB, one write per 4 KiB page:\n\n");
	printf("%-28s", "");
	for (i = 0; i < 3; i++)
		printf("%18s", b[i].name);
	printf("\n%-28s", "page faults");
	for (i = 0; i < 3; i++)
		printf("%18ld", b[i].faults);
	printf("\n%-28s", "mapped with entries of");
	for (i = 0; i < 3; i++)
		printf("%18s", b[i].entry);
	printf("\n%-28s", "page-table bytes added");
	for (i = 0; i < 3; i++)
		printf("%18lld", b[i].pt_bytes);
	printf("\n%-28s", "first-touch time (s)");
	for (i = 0; i < 3; i++)
		printf("%18.3f", b[i].seconds);
	printf("\n%-28s", "metadata bytes per GiB");
	for (i = 0; i < 3; i++)
		printf("%18lld", b[i].meta_per_gib);
	printf("\n%-28s", "  (what it is)");
	for (i = 0; i < 3; i++)
		printf("%18s", b[i].meta_what);
	printf("\n\nsom pool: %.2f GiB total; free %.2f GiB before, %.2f GiB while mapped, %.2f GiB after\n",
	       (double)total / GiB, (double)free_before / GiB,
	       (double)free_during / GiB, (double)free_after / GiB);
	printf("struct page would cost %lld bytes per GiB; som's pool spends %lld (%.0fx less)\n",
	       b[0].meta_per_gib, b[2].meta_per_gib,
	       (double)b[0].meta_per_gib / b[2].meta_per_gib);
	printf("(first-touch times are under QEMU TCG here: indicative only)\n");
	return free_after == free_before ? 0 : 1;
}
