// SPDX-License-Identifier: GPL-2.0
/*
 * som_bench pressure som|kernel RUN: a program 1.5 times the memory it
 * may have, touched through twice, som's overcommitting pool next to the
 * kernel's anonymous memory in a memory cgroup with swap, each paging to
 * a RAM disk (brd, loaded here: /dev/ram0 for som's store, /dev/ram1 for
 * the kernel's swap area).
 *
 * som: the store on /dev/ram0, swap/overcommit on, all of the pool's
 * free memory but 64 MiB reserved (untouched) by a filler mapping, then
 * 96 MiB of /dev/som mapped: faults past 64 MiB wait while som pages out
 * the coldest blocks (pressure.c). kernel: this process in a cgroup with
 * memory.max 64 MiB (its own few MiB of text and stack count too), 96
 * MiB of anonymous 4 KiB pages (MADV_NOHUGEPAGE): reclaim pages out on
 * the faults. Both: pass 1 writes a word in every 4 KiB in order, pass 2
 * checks every one of them in order, each pass timed. Prints
 *
 *	SOMBENCH pressure kind=K run=N bytes=B limit=L first_ns=F
 *		second_ns=S out=O in=I majflt=M
 *
 * out and in are the bytes the counters say went out and came back
 * (swap/out_bytes and in_bytes; pswpout and pswpin pages in /proc/vmstat,
 * the guest running nothing else), majflt the process's major faults over
 * both passes.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/swap.h>
#include <unistd.h>

#include "aging.h"
#include "measure.h"
#include "som_util.h"

#define PRESSURE_LEN	(96 * MiB)
#define PRESSURE_LIMIT	(64 * MiB)
#define CGROUP		"/sys/fs/cgroup/sombench-pressure"

static long majflt(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_majflt;
}

/* Pass 1 writes, pass 2 checks: their times, or -1 if a word was lost. */
static int passes(char *p, int run, uint64_t *first, uint64_t *second)
{
	uint64_t t0 = measure_ns();

	som_fill(p, 0, PRESSURE_LEN, 4096, run);
	*first = measure_ns() - t0;
	t0 = measure_ns();
	if (som_check(p, 0, PRESSURE_LEN, 4096, run) != -1)
		return -1;
	*second = measure_ns() - t0;
	return 0;
}

static void report(const char *kind, int run, uint64_t first,
		   uint64_t second, long long out, long long in, long flt)
{
	printf("SOMBENCH pressure kind=%s run=%d bytes=%lu limit=%lu first_ns=%llu second_ns=%llu out=%lld in=%lld majflt=%ld\n",
	       kind, run, (unsigned long)PRESSURE_LEN,
	       (unsigned long)PRESSURE_LIMIT, (unsigned long long)first,
	       (unsigned long long)second, out, in, flt);
}

static int bench_som(int run)
{
	long long out, in, free;
	uint64_t first, second;
	int dev, fdev, bd, err = 1;
	char *filler = MAP_FAILED, *p = MAP_FAILED;
	struct som_swap_args a;
	size_t filler_len = 0;
	long flt;

	dev = open(SOM_DEV, O_RDWR | O_CLOEXEC);
	fdev = open(SOM_DEV, O_RDWR | O_CLOEXEC);
	bd = open("/dev/ram0", O_RDWR | O_CLOEXEC);
	if (dev < 0 || fdev < 0 || bd < 0)
		goto out;
	memset(&a, 0, sizeof(a));
	a.fd = bd;
	a.size = 256 * MiB;
	if (ioctl(dev, SOM_IOC_SWAP_ADD, &a))
		goto out;
	if (som_sysfs_write("swap/overcommit", "1"))
		goto out_remove;
	free = som_stat("free_bytes");
	if (free <= (long long)PRESSURE_LIMIT)
		goto out_remove;
	filler_len = free - PRESSURE_LIMIT;
	filler = som_map_shared(fdev, filler_len);
	p = som_map_shared(dev, PRESSURE_LEN);
	if (filler == MAP_FAILED || p == MAP_FAILED)
		goto out_remove;
	out = som_stat("swap/out_bytes");
	in = som_stat("swap/in_bytes");
	flt = majflt();
	if (passes(p, run, &first, &second))
		goto out_remove;
	report("som", run, first, second, som_stat("swap/out_bytes") - out,
	       som_stat("swap/in_bytes") - in, majflt() - flt);
	err = 0;
out_remove:
	if (p != MAP_FAILED)
		munmap(p, PRESSURE_LEN);
	if (filler != MAP_FAILED)
		munmap(filler, filler_len);
	som_sysfs_write("swap/overcommit", "0");
	if (ioctl(dev, SOM_IOC_SWAP_REMOVE))
		err = 1;
out:
	if (bd >= 0)
		close(bd);
	if (fdev >= 0)
		close(fdev);
	if (dev >= 0)
		close(dev);
	return err;
}

/* A /proc/vmstat counter, or -1 (the guest runs nothing else). */
static long long vmstat(const char *name)
{
	char line[256], key[64];
	long long v, found = -1;
	FILE *f = fopen("/proc/vmstat", "r");

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "%63s %lld", key, &v) == 2 &&
		    !strcmp(key, name))
			found = v;
	if (f)
		fclose(f);
	return found;
}

static int cgroup_write(const char *file, const char *val)
{
	char path[128];
	int fd, ret = 0;

	snprintf(path, sizeof(path), "%s/%s", file[0] == '/' ? "" : CGROUP,
		 file);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (write(fd, val, strlen(val)) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

static int bench_kernel(int run)
{
	long long out, in;
	uint64_t first, second;
	char pid[32];
	int err = 1;
	char *p;
	long flt;

	if (access("/sys/fs/cgroup/cgroup.procs", F_OK) &&
	    mount("none", "/sys/fs/cgroup", "cgroup2", 0, NULL))
		return 1;
	cgroup_write("/sys/fs/cgroup/cgroup.subtree_control", "+memory");
	if (mkdir(CGROUP, 0755) && errno != EEXIST)
		return 1;
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	if (system("mkswap /dev/ram1 >/dev/null") || swapon("/dev/ram1", 0))
		goto out_rmdir;
	if (cgroup_write("memory.max", "67108864") ||
	    cgroup_write("cgroup.procs", pid))
		goto out_swapoff;
	p = mmap(NULL, PRESSURE_LEN, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED || madvise(p, PRESSURE_LEN, MADV_NOHUGEPAGE))
		goto out_leave;
	out = vmstat("pswpout");
	in = vmstat("pswpin");
	flt = majflt();
	if (!passes(p, run, &first, &second)) {
		report("kernel", run, first, second,
		       (vmstat("pswpout") - out) * 4096,
		       (vmstat("pswpin") - in) * 4096, majflt() - flt);
		err = 0;
	}
	munmap(p, PRESSURE_LEN);
out_leave:
	cgroup_write("/sys/fs/cgroup/cgroup.procs", pid);
out_swapoff:
	if (swapoff("/dev/ram1"))
		err = 1;
out_rmdir:
	rmdir(CGROUP);
	return err;
}

int som_bench_pressure(const char *kind, int run)
{
	return som_bench_on_brd("pressure", kind, run, bench_som, bench_kernel);
}
