// SPDX-License-Identifier: GPL-2.0
/*
 * Coverage of som.ko through KCOV (Documentation/dev-tools/kcov.rst), one
 * handle per executing thread in KCOV_TRACE_PC mode. On the debug tier
 * only som.ko is instrumented (kernel/Kbuild, SOM_COVERAGE=1), so every PC
 * is som's. After each call the PCs it ran are folded into two bitmaps
 * in memory shared by all executors: distinct PCs, and edges (a hash of
 * the previous and the current PC, as AFL has it). A call that sets a bit
 * no call set before found new coverage, and its program joins the
 * corpus. A handle is opened (its buffer mapped) ahead of time and enabled
 * by the thread that uses it: a thread of a running program must not
 * map anything at an address of the kernel's choosing, which could be a
 * hole the program made in its arena (exec.c); a forked child maps its
 * own at an address its parent set aside. Without /sys/kernel/debug/kcov (the stock tier) every handle is
 * NULL and nothing is collected.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>
#include <linux/kcov.h>

#include "somfuzz.h"

#define SF_KCOV_PATH	"/sys/kernel/debug/kcov"
/* PCs one call may record; a call that runs more loses the rest. */
#define SF_KCOV_WORDS	(64 << 10)
#define SF_KCOV_BYTES	(SF_KCOV_WORDS * sizeof(unsigned long))

struct sf_kcov {
	int fd;
	unsigned long *area;
};

int sf_kcov_available(void)
{
	return access(SF_KCOV_PATH, R_OK | W_OK) == 0;
}

struct sf_kcov *sf_kcov_open(void *at)
{
	struct sf_kcov *k;

	if (!sf_kcov_available())
		return NULL;
	k = calloc(1, sizeof(*k));
	if (!k)
		return NULL;
	k->fd = open(SF_KCOV_PATH, O_RDWR | O_CLOEXEC);
	if (k->fd < 0)
		goto err_free;
	if (ioctl(k->fd, KCOV_INIT_TRACE, SF_KCOV_WORDS))
		goto err_close;
	k->area = mmap(at, SF_KCOV_BYTES, PROT_READ | PROT_WRITE,
		       MAP_SHARED | (at ? MAP_FIXED : 0), k->fd, 0);
	if (k->area == MAP_FAILED)
		goto err_close;
	return k;

err_close:
	close(k->fd);
err_free:
	free(k);
	return NULL;
}

/* Collect for the calling thread; 0 or -1. */
int sf_kcov_enable(struct sf_kcov *k)
{
	return k ? ioctl(k->fd, KCOV_ENABLE, KCOV_TRACE_PC) : 0;
}

/* Stop collecting: by the thread that enabled it. */
void sf_kcov_disable(struct sf_kcov *k)
{
	if (k)
		ioctl(k->fd, KCOV_DISABLE, 0);
}

void sf_kcov_close(struct sf_kcov *k)
{
	if (!k)
		return;
	munmap(k->area, SF_KCOV_BYTES);
	close(k->fd);
	free(k);
}

void sf_kcov_start(struct sf_kcov *k)
{
	if (k)
		__atomic_store_n(&k->area[0], 0, __ATOMIC_RELAXED);
}

static uint64_t sf_hash(uint64_t pc)
{
	return (pc * 0x9e3779b97f4a7c15ULL) >> (64 - SF_MAP_BITS);
}

/* Set bit @bit of @map; 1 if it was clear. */
static int sf_map_set(uint8_t *map, uint64_t bit)
{
	uint8_t mask = 1U << (bit & 7);

	if (__atomic_load_n(&map[bit >> 3], __ATOMIC_RELAXED) & mask)
		return 0;
	return !(__atomic_fetch_or(&map[bit >> 3], mask, __ATOMIC_RELAXED) &
		 mask);
}

uint64_t sf_kcov_collect(struct sf_kcov *k)
{
	uint64_t n, i, h, prev = 0, new_bits = 0, new_pcs = 0, new_edges = 0;

	if (!k)
		return 0;
	n = __atomic_load_n(&k->area[0], __ATOMIC_RELAXED);
	if (n > SF_KCOV_WORDS - 1)
		n = SF_KCOV_WORDS - 1;
	for (i = 0; i < n; i++) {
		h = sf_hash(k->area[i + 1]);
		if (sf_map_set(sf_shared->pc_map, h))
			new_pcs++;
		if (sf_map_set(sf_shared->edge_map,
			       (h ^ (prev >> 1)) & ((1UL << SF_MAP_BITS) - 1)))
			new_edges++;
		prev = h;
	}
	if (new_pcs)
		__atomic_fetch_add(&sf_shared->pcs, new_pcs, __ATOMIC_RELAXED);
	if (new_edges)
		__atomic_fetch_add(&sf_shared->edges, new_edges,
				   __ATOMIC_RELAXED);
	new_bits = new_pcs + new_edges;
	return new_bits;
}
