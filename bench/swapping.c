// SPDX-License-Identifier: GPL-2.0
/*
 * som_bench swap som|kernel RUN: paging 256 MiB out to a RAM disk and
 * back, som next to the kernel's own swap of anonymous memory, on the same
 * kind of device (brd, loaded here: /dev/ram0 for som's store, /dev/ram1
 * for the kernel's swap area), so that both pay for the same I/O path
 * and neither for a disk.
 *
 * som: 256 MiB of /dev/som filled, SOM_IOC_PAGEOUT of all of it, then
 * one word read in each 2 MiB block, each read timed: the fault that
 * reads the block back and maps it. kernel: 256 MiB of anonymous 4 KiB
 * pages (MADV_NOHUGEPAGE) filled, MADV_PAGEOUT of all of it, then every
 * page of each 2 MiB read, each 2 MiB timed: the faults (and swap
 * readahead) that bring it back. Prints
 *
 *	SOMBENCH swap kind=K run=N bytes=B out_ns=O in_ns=I piece_ns_p50=P
 *		piece_ns_max=M swapped=S
 *
 * out_ns is the wall time of the page-out call, in_ns the sum of the
 * 128 timed pieces, swapped the bytes the counters say went out
 * (swap/used_bytes; the kernel's VmSwap), the data checked after.
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
#include <sys/swap.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "aging.h"
#include "measure.h"
#include "som_util.h"

#define SWAP_LEN	(256 * MiB)
#define PIECES		(SWAP_LEN / (2 * MiB))
#define BRD		"/som/test-modules/brd.ko"

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * Two RAM disks of 300 MiB each, for the benchmark @what of @kind; 0, or
 * 1 with a skip line printed, or -1.
 */
static int som_bench_brd_load(const char *what, const char *kind)
{
	int fd = open(BRD, O_RDONLY | O_CLOEXEC), i;

	if (fd < 0) {
		printf("SOMBENCH skip what=%s kind=%s reason=no_brd_module\n",
		       what, kind);
		return 1;
	}
	if (syscall(SYS_finit_module, fd, "rd_nr=2 rd_size=307200", 0)) {
		close(fd);
		return -1;
	}
	close(fd);
	for (i = 0; i < 200 && access("/dev/ram1", F_OK); i++)
		usleep(10 * 1000);
	return 0;
}

static void som_bench_brd_unload(void)
{
	syscall(SYS_delete_module, "brd", O_NONBLOCK);
}

/* VmSwap of this process, in bytes. */
static long long vm_swap(void)
{
	char line[256];
	long long kb = -1;
	FILE *f = fopen("/proc/self/status", "r");

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "VmSwap: %lld kB", &kb) == 1)
			break;
	if (f)
		fclose(f);
	return kb < 0 ? -1 : kb * 1024;
}

static void report(const char *kind, int run, uint64_t out_ns,
		   uint64_t *piece, long long swapped)
{
	uint64_t in_ns = 0;
	unsigned int i;

	for (i = 0; i < PIECES; i++)
		in_ns += piece[i];
	qsort(piece, PIECES, sizeof(*piece), cmp_u64);
	printf("SOMBENCH swap kind=%s run=%d bytes=%lu out_ns=%llu in_ns=%llu piece_ns_p50=%llu piece_ns_max=%llu swapped=%lld\n",
	       kind, run, (unsigned long)SWAP_LEN, (unsigned long long)out_ns,
	       (unsigned long long)in_ns,
	       (unsigned long long)piece[PIECES / 2],
	       (unsigned long long)piece[PIECES - 1], swapped);
}

static int bench_som(int run)
{
	uint64_t piece[PIECES], t0, out_ns;
	struct som_swap_args a;
	struct som_pageout po;
	int dev, bd = -1, err = 1;
	long long swapped;
	char *p = MAP_FAILED;
	unsigned int i;

	dev = open(SOM_DEV, O_RDWR | O_CLOEXEC);
	bd = open("/dev/ram0", O_RDWR | O_CLOEXEC);
	if (dev < 0 || bd < 0)
		goto out;
	memset(&a, 0, sizeof(a));
	a.fd = bd;
	a.size = SWAP_LEN;
	if (ioctl(dev, SOM_IOC_SWAP_ADD, &a))
		goto out;
	p = som_map_shared(dev, SWAP_LEN);
	if (p == MAP_FAILED)
		goto out_remove;
	som_fill(p, 0, SWAP_LEN, 8, run);
	memset(&po, 0, sizeof(po));
	po.length = SWAP_LEN;
	t0 = measure_ns();
	if (ioctl(dev, SOM_IOC_PAGEOUT, &po) || po.paged_out != SWAP_LEN)
		goto out_remove;
	out_ns = measure_ns() - t0;
	swapped = som_stat("swap/used_bytes");
	for (i = 0; i < PIECES; i++) {
		t0 = measure_ns();
		(void)*(volatile char *)(p + i * 2 * MiB);
		piece[i] = measure_ns() - t0;
	}
	if (som_check(p, 0, SWAP_LEN, 8, run) != -1)
		goto out_remove;
	report("som", run, out_ns, piece, swapped);
	err = 0;
out_remove:
	if (p != MAP_FAILED)
		munmap(p, SWAP_LEN);
	if (ioctl(dev, SOM_IOC_SWAP_REMOVE))
		err = 1;
out:
	if (bd >= 0)
		close(bd);
	if (dev >= 0)
		close(dev);
	return err;
}

static int bench_kernel(int run)
{
	uint64_t piece[PIECES], t0, out_ns;
	long long before, swapped;
	int err = 1;
	unsigned int i;
	size_t off;
	char *p;

	if (system("mkswap /dev/ram1 >/dev/null") ||
	    swapon("/dev/ram1", 0))
		return 1;
	p = mmap(NULL, SWAP_LEN, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED || madvise(p, SWAP_LEN, MADV_NOHUGEPAGE))
		goto out;
	som_fill(p, 0, SWAP_LEN, 8, run);
	before = vm_swap();
	t0 = measure_ns();
	if (madvise(p, SWAP_LEN, MADV_PAGEOUT))
		goto out_unmap;
	out_ns = measure_ns() - t0;
	swapped = vm_swap() - before;
	for (i = 0; i < PIECES; i++) {
		t0 = measure_ns();
		for (off = 0; off < 2 * MiB; off += 4096)
			(void)*(volatile char *)(p + i * 2 * MiB + off);
		piece[i] = measure_ns() - t0;
	}
	if (som_check(p, 0, SWAP_LEN, 8, run) != -1)
		goto out_unmap;
	report("kernel", run, out_ns, piece, swapped);
	err = 0;
out_unmap:
	munmap(p, SWAP_LEN);
out:
	if (swapoff("/dev/ram1"))
		err = 1;
	return err;
}

/*
 * Run @som or @kernel, as @kind says, with the RAM disks loaded for
 * them: 0, or 1 on a failure (a missing brd.ko is a skip line, 0).
 */
int som_bench_on_brd(const char *what, const char *kind, int run,
		     int (*som)(int run), int (*kernel)(int run))
{
	int err;

	err = som_bench_brd_load(what, kind);
	if (err)
		return err < 0;
	if (!strcmp(kind, "som"))
		err = som(run);
	else if (!strcmp(kind, "kernel"))
		err = kernel(run);
	else
		err = 1;
	som_bench_brd_unload();
	return err;
}

int som_bench_swap(const char *kind, int run)
{
	return som_bench_on_brd("swap", kind, run, bench_som, bench_kernel);
}
