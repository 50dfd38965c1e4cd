// SPDX-License-Identifier: GPL-2.0
/*
 * som_hold SIZE [SECONDS] [hot]: map SIZE of som memory (/dev/som), touch
 * every 2 MiB of it, say so, and hold it for SECONDS (default, or -1:
 * until killed); "hot" touches it all again every 100 ms meanwhile.
 * The demo's stand-in for a container's workload: what it reserves is
 * charged to its cgroup, so a cgroup's som limit refuses its mmap(); and
 * aging finds the memory of a hot holder used, a cold one's idle.
 * Exit status: 0 held and let go, 1 the mapping was refused, 2 usage.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "parse.h"

int main(int argc, char **argv)
{
	unsigned long long size, off;
	int fd, seconds = -1, hot = 0;
	volatile char *p;
	long ticks;

	if (argc == 4 && !strcmp(argv[3], "hot")) {
		hot = 1;
		argc--;
	}
	if (argc < 2 || argc > 3 || som_parse_size(argv[1], &size) || !size) {
		fprintf(stderr, "usage: som_hold SIZE [SECONDS] [hot]\n");
		return 2;
	}
	if (argc == 3)
		seconds = atoi(argv[2]);
	fd = open("/dev/som", O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "som_hold: /dev/som: %s\n", strerror(errno));
		return 1;
	}
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		printf("som_hold: mmap of %s of som memory: %s\n", argv[1],
		       strerror(errno));
		return 1;
	}
	for (off = 0; off < size; off += 2 << 20)
		p[off] = 1;
	printf("som_hold: %s of som memory mapped and touched (pid %d)\n",
	       argv[1], (int)getpid());
	fflush(stdout);
	for (ticks = 0; seconds < 0 || ticks < seconds * 10L; ticks++) {
		if (!hot) {
			if (seconds < 0)
				pause();
			else
				sleep(seconds);
			break;
		}
		for (off = 0; off < size; off += 2 << 20)
			p[off]++;
		usleep(100000);
	}
	munmap((char *)p, size);
	close(fd);
	return 0;
}
