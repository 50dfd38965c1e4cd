// SPDX-License-Identifier: GPL-2.0
/*
 * measure: the measurements the benchmark and the demo share (measure.h).
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "measure.h"
#include "som_util.h"

uint64_t measure_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* The number after "<key><sep>" on a line of @path, or -1. */
static long long field(const char *path, const char *key, char sep)
{
	char line[512];
	size_t len = strlen(key);
	long long val = -1;
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, len) && line[len] == sep) {
			val = strtoll(line + len + 1, NULL, 10);
			break;
		}
	fclose(f);
	return val;
}

long long measure_status(const char *key)
{
	long long kib = field("/proc/self/status", key, ':');

	return kib < 0 ? -1 : kib << 10;
}

long long measure_vmstat(const char *key)
{
	return field("/proc/vmstat", key, ' ');
}

int measure_slab(const char *cache, long long *active, long long *objsize)
{
	char line[512], name[64];
	long long a, n, sz;
	FILE *f = fopen("/proc/slabinfo", "r");
	int ret = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%63s %lld %lld %lld", name, &a, &n, &sz) == 4 &&
		    !strcmp(name, cache)) {
			*active = a;
			*objsize = sz;
			ret = 0;
			break;
		}
	fclose(f);
	return ret;
}

/* Is @line the first line of a VMA in smaps ("start-end perms ...")? */
static int vma_line(const char *line, unsigned long *start, unsigned long *end)
{
	char *p;

	if (!isxdigit((unsigned char)line[0]))
		return 0;
	*start = strtoul(line, &p, 16);
	if (*p != '-')
		return 0;
	*end = strtoul(p + 1, &p, 16);
	return *p == ' ';
}

long long measure_smaps(const void *addr, const char *key)
{
	char line[512];
	size_t len = strlen(key);
	unsigned long start, end, a = (unsigned long)addr;
	long long val = -1;
	int in = 0;
	FILE *f = fopen("/proc/self/smaps", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (vma_line(line, &start, &end)) {
			if (in)
				break;
			in = start <= a && a < end;
		} else if (in && !strncmp(line, key, len) && line[len] == ':') {
			val = strtoll(line + len + 1, NULL, 10) << 10;
		}
	}
	fclose(f);
	return val;
}

long long measure_memmap_per_gib(void)
{
	const char *dir = "/sys/devices/system/memory";
	long long pages, boot, block;
	unsigned long long blocks = 0;
	char path[256], buf[64];
	struct dirent *d;
	DIR *dp;
	FILE *f;

	pages = measure_vmstat("nr_memmap_pages");
	boot = measure_vmstat("nr_memmap_boot_pages");
	snprintf(path, sizeof(path), "%s/block_size_bytes", dir);
	f = fopen(path, "r");
	if (!f)
		return -1;
	block = fgets(buf, sizeof(buf), f) ? strtoll(buf, NULL, 16) : -1;
	fclose(f);
	dp = opendir(dir);
	if (!dp)
		return -1;
	while ((d = readdir(dp)))
		if (!strncmp(d->d_name, "memory", 6) && isdigit((unsigned char)d->d_name[6]))
			blocks++;
	closedir(dp);
	if (pages < 0 || boot < 0 || block <= 0 || !blocks)
		return -1;
	return (long long)((unsigned __int128)(pages + boot) * getpagesize() *
			   GiB / (blocks * block));
}

void measure_touch(void *p, size_t len, struct measure_touch *t)
{
	long long pt = measure_status("VmPTE");
	long flt = som_minflt();
	uint64_t t0 = measure_ns();
	size_t off;

	for (off = 0; off < len; off += 4096)
		*(volatile uint64_t *)((char *)p + off) = off;
	t->ns = measure_ns() - t0;
	t->faults = som_minflt() - flt;
	t->pt_bytes = measure_status("VmPTE") - pt;
}

void *measure_map_anon(size_t len, size_t align)
{
	char *area, *p;

	area = mmap(NULL, len + align, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (area == MAP_FAILED)
		return MAP_FAILED;
	p = (char *)(((uintptr_t)area + align - 1) & ~(uintptr_t)(align - 1));
	if (p > area)
		munmap(area, p - area);
	if (area + align > p)
		munmap(p + len, area + align - p);
	return p;
}

const char *measure_size_name(long long size)
{
	switch (size) {
	case 1LL << 30: return "1 GiB";
	case 2LL << 20: return "2 MiB";
	case 4LL << 10: return "4 KiB";
	case 0: return "none";
	default: return "mixed";
	}
}
