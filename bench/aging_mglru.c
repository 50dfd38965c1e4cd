// SPDX-License-Identifier: GPL-2.0
/*
 * som_bench age mglru-4k|mglru-thp RUN: the kernel's own aging of
 * anonymous memory next to som's (aging.c): one MGLRU aging pass
 * (Documentation/admin-guide/mm/multigen_lru.rst: "+ memcg_id node_id
 * max_gen swappiness force_scan" written to /sys/kernel/debug/lru_gen)
 * over 128 MiB of 4 KiB pages or a GiB of THP (thp_bytes of it on huge
 * pages; under half is a skip), timed around the write.
 * The pass walks the page tables of every process in the memcg and
 * clears accessed bits; nothing is unmapped, so the next touch takes no
 * fault. Prints the same line as som's scan:
 *
 *	SOMBENCH age entry=E run=N bytes=B scan_ns=S refaults=F
 *		warm_ns=W after_ns=A thp_bytes=T
 *
 * refaults are the minor faults of the next touch (getrusage); a touch is
 * one write per entry, 4 KiB or 2 MiB, as for som.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "aging.h"
#include "measure.h"
#include "som_util.h"

#define LRU_GEN	"/sys/kernel/debug/lru_gen"
#define MPOL_INTERLEAVE_BENCH	3	/* MPOL_INTERLEAVE, <linux/mempolicy.h> */

/* mbind() keeps the nodes of this mask that have memory. */
static const unsigned long all_nodes = ~0UL;

static long minor_faults(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_minflt;
}

/* This process's cgroup path ("/" without cgroup2 mounted). */
static void own_cgroup(char *path, size_t len)
{
	FILE *f = fopen("/proc/self/cgroup", "r");
	char line[512];

	snprintf(path, len, "/");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "0::", 3)) {
			line[strcspn(line, "\n")] = '\0';
			snprintf(path, len, "%s", line + 3);
		}
	fclose(f);
}

/*
 * One aging pass of each node of this process's memcg: the commands,
 * "+ memcg node max_seq 200 1" each (swappiness 200: anonymous pages
 * too; force_scan: walk the page tables however many generations there
 * are), into @cmds. Returns how many, or -1 without lru_gen.
 */
static int aging_commands(char cmds[][64], int max)
{
	int in_me = 0, memcg = -1, node = -1, nr = 0, id, nid;
	unsigned long seq, max_seq = 0;
	char line[512], me[512], path[512];
	FILE *f = fopen(LRU_GEN, "r");

	if (!f)
		return -1;
	own_cgroup(me, sizeof(me));
	for (;;) {
		int eof = !fgets(line, sizeof(line), f);
		int is_memcg = !eof && sscanf(line, "memcg %d %511s", &id,
					      path) == 2;
		int is_node = !eof && !is_memcg &&
			      sscanf(line, " node %d", &nid) == 1;

		/* A node's generations end at the next node, memcg or EOF. */
		if ((eof || is_memcg || is_node) && in_me && node >= 0 &&
		    nr < max)
			snprintf(cmds[nr++], 64, "+ %d %d %lu 200 1", memcg,
				 node, max_seq);
		if (eof)
			break;
		if (is_memcg) {
			memcg = id;
			in_me = !strcmp(path, me);
			node = -1;
		} else if (is_node) {
			node = nid;
			max_seq = 0;
		} else if (sscanf(line, " %lu", &seq) == 1 && seq > max_seq) {
			max_seq = seq;
		}
	}
	fclose(f);
	return nr;
}

int som_bench_age_mglru(const char *entry, int run)
{
	int thp = !strcmp(entry, "mglru-thp"), fd, nr, i, err = 1;
	size_t len = thp ? GiB : 128 * MiB, maplen = len + 2 * MiB;
	uint64_t warm, after, t0, ns = 0;
	char cmds[8][64], *map, *p;
	long long huge;
	long faults;

	if (access(LRU_GEN, W_OK)) {
		printf("SOMBENCH skip what=age entry=%s reason=no_lru_gen\n",
		       entry);
		return 0;
	}
	map = mmap(NULL, maplen, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (map == MAP_FAILED)
		return 1;
	/* 2 MiB aligned, for huge pages from the first byte. */
	p = (char *)(((uintptr_t)map + 2 * MiB - 1) & ~(2 * MiB - 1));
	if (madvise(p, len, thp ? MADV_HUGEPAGE : MADV_NOHUGEPAGE))
		goto out;
	/*
	 * A THP under the default policy comes only from the CPU's node,
	 * which may have no free 2 MiB left; interleaved, from any.
	 */
	if (syscall(SYS_mbind, p, len, MPOL_INTERLEAVE_BENCH, &all_nodes,
		    sizeof(all_nodes) * 8, 0))
		goto out;
	/*
	 * Written first, not read: a read maps the huge zero page, and a
	 * write to that splits it into 4 KiB pages.
	 */
	memset(p, 1, len);
	/* Most of it THP, or what is measured is something else. */
	huge = measure_smaps(p, "AnonHugePages");
	if (thp && huge < (long long)len / 2) {
		printf("SOMBENCH skip what=age entry=%s reason=no_thp thp_bytes=%lld\n",
		       entry, huge);
		err = 0;
		goto out;
	}
	/* Like som's: one write per entry, 2 MiB for THP. */
	warm = age_touch_every(p, len, thp ? 2 * MiB : 4096);
	nr = aging_commands(cmds, 8);
	if (nr <= 0) {
		fprintf(stderr, "som_bench: age %s: no memcg of this process in %s\n",
			entry, LRU_GEN);
		goto out;
	}
	fd = open(LRU_GEN, O_WRONLY);
	if (fd < 0)
		goto out;
	for (i = 0; i < nr; i++) {
		t0 = measure_ns();
		if (write(fd, cmds[i], strlen(cmds[i])) < 0) {
			perror("som_bench: " LRU_GEN);
			close(fd);
			goto out;
		}
		ns += measure_ns() - t0;
	}
	close(fd);
	faults = minor_faults();
	after = age_touch_every(p, len, thp ? 2 * MiB : 4096);
	faults = minor_faults() - faults;
	printf("SOMBENCH age entry=%s run=%d bytes=%zu scan_ns=%llu refaults=%ld"
	       " warm_ns=%llu after_ns=%llu thp_bytes=%lld\n", entry, run, len,
	       (unsigned long long)ns, faults, (unsigned long long)warm,
	       (unsigned long long)after, huge);
	err = 0;
out:
	munmap(map, maplen);
	return err;
}
