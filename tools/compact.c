// SPDX-License-Identifier: GPL-2.0
/* somctl compact: run a compaction pass now and say what it did. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "somctl.h"

#define MIGRATION SYSFS "/migration/"

static const char *const counters[] = {
	"gib_assembled", "compact_failed", "blocks_moved", "bytes_copied",
};

void compact_cmd(const struct cmdline *cl)
{
	unsigned long long before[4], after[4];
	struct timespec t0, t1;
	char path[128];
	double secs;
	unsigned int i;

	(void)cl;
	need_sysfs();
	for (i = 0; i < 4; i++) {
		snprintf(path, sizeof(path), MIGRATION "%s", counters[i]);
		before[i] = read_u64(path);
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (!write_str(MIGRATION "compact", "1"))
		die("compact: %s", denied(errno) ?
		    "permission denied (CAP_SYS_ADMIN is needed)" :
		    strerror(errno));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	for (i = 0; i < 4; i++) {
		snprintf(path, sizeof(path), MIGRATION "%s", counters[i]);
		after[i] = read_u64(path) - before[i];
	}
	secs = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
	printf("compacted in %.2f s: %llu GiB put back in one chunk (each can be one 1 GiB entry), %llu left as they were; %llu blocks moved, %llu MiB copied\n",
	       secs, after[0], after[1], after[2], after[3] >> 20);
}
