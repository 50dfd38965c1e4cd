// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * SOMRUN_SUMMARY: one line at exit on what the process had on som, with
 * the page-table entries that map it now, as SOM_IOC_MAPPING reports
 * them (smaps cannot: it does not walk PFN-mapped memory).
 *
 *   somrun: summary pid=.. comm=.. pieces=.. som_bytes=.. peak_bytes=..
 *   entries_1g=.. entries_2m=.. entries_4k=.. mapped_bytes=.. maps=..
 *   malloc_maps=.. malloc_reused=.. fallbacks=.. fallback_bytes=..
 *   punched_bytes=.. forks=.. fork_copied_bytes=.. moved_bytes=..
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <linux/som.h>

#include "shim.h"

struct entries {
	unsigned long n1g, n2m, n4k;
};

/* Count the entries over one piece, entry by entry. */
static void count_entries(int dev, const struct piece *p, struct entries *e)
{
	uintptr_t a = p->start, step;

	while (a < p->end) {
		struct som_mapping m;

		memset(&m, 0, sizeof(m));
		m.addr = a;
		if (sys_ioctl(dev, SOM_IOC_MAPPING, &m))
			return;
		switch (m.page_size) {
		case SHIM_GIB:
			e->n1g++;
			step = SHIM_GIB;
			break;
		case SHIM_BLOCK:
			e->n2m++;
			step = SHIM_BLOCK;
			break;
		case SHIM_PAGE:
			e->n4k++;
			step = SHIM_PAGE;
			break;
		default:
			/* Unmapped: a block without memory is skipped whole. */
			if (m.node < 0) {
				a += SHIM_BLOCK - (m.offset & (SHIM_BLOCK - 1));
				continue;
			}
			step = SHIM_PAGE;
			break;
		}
		/* To the end of the entry that maps @a. */
		a = (a & ~(step - 1)) + step;
	}
}

void shim_summary(void)
{
	struct entries e = { 0, 0, 0 };
	char comm[32] = "?", line[768];
	int dev, fd, n;
	size_t i, pieces = 0;

	fd = open("/proc/self/comm", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, comm, sizeof(comm) - 1);
		comm[n > 0 ? n : 0] = 0;
		comm[strcspn(comm, "\n")] = 0;
		close(fd);
	}
	dev = som_dev_open();
	tbl_lock();
	for (i = 0; i < tbl_count(); i++) {
		if (tbl_at(i)->flags & PIECE_ORDINARY)
			continue;
		pieces++;
		if (dev >= 0)
			count_entries(dev, tbl_at(i), &e);
	}
	tbl_unlock();
	if (dev >= 0)
		sys_close(dev);

	n = snprintf(line, sizeof(line),
		     "somrun: summary pid=%d comm=%s pieces=%zu som_bytes=%lu peak_bytes=%lu entries_1g=%lu entries_2m=%lu entries_4k=%lu mapped_bytes=%lu maps=%lu malloc_maps=%lu malloc_reused=%lu fallbacks=%lu fallback_bytes=%lu punched_bytes=%lu forks=%lu fork_copied_bytes=%lu moved_bytes=%lu\n",
		     getpid(), comm, pieces, shim_stats.bytes,
		     shim_stats.peak_bytes, e.n1g, e.n2m, e.n4k,
		     e.n1g * SHIM_GIB + e.n2m * SHIM_BLOCK + e.n4k * SHIM_PAGE,
		     shim_stats.maps, shim_stats.malloc_maps,
		     shim_stats.malloc_reused,
		     shim_stats.fallbacks, shim_stats.fallback_bytes,
		     shim_stats.punched_bytes, shim_stats.forks,
		     shim_stats.fork_copied_bytes, shim_stats.moved_bytes);
	if (n <= 0)
		return;
	if (n >= (int)sizeof(line))
		n = sizeof(line) - 1;
	if (!strcmp(shim_cfg.summary, "1")) {
		fd = STDERR_FILENO;
	} else {
		fd = open(shim_cfg.summary,
			  O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
		if (fd < 0)
			return;
	}
	if (write(fd, line, n) < 0)
		n = 0;
	if (fd != STDERR_FILENO)
		close(fd);
}
