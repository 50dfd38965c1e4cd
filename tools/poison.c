// SPDX-License-Identifier: GPL-2.0
/*
 * somctl poison: declare a 4 KiB page of the pool bad, as a machine check
 * reporting an uncorrected error there would (SOM_IOC_POISON), e.g. for
 * an address a memory controller's log names or to try the handling out;
 * or, with --forget, tell the pool that memory outside it was replaced,
 * so that the errors it remembers there no longer retire blocks when the
 * range is added again.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/som.h>

#include "somctl.h"
#include "parse.h"

/* SIZE@START, page multiples, into @p. */
static void parse_forget(char *what, struct som_poison *p)
{
	if (som_parse_range(what, &p->len, &p->phys))
		usage_error("poison --forget: '%s': expected SIZE@START, e.g. 1G@4G",
			    what);
	if (!p->len || p->len % 4096 || p->phys % 4096)
		usage_error("poison --forget: '%s': SIZE and START must be multiples of 4K, SIZE not 0",
			    what);
}

void poison_cmd(const struct cmdline *cl)
{
	unsigned long long before, after;
	struct som_poison p;
	char *end;
	int fd;

	memset(&p, 0, sizeof(p));
	if (cl->given & OPT_FORGET) {
		parse_forget(cl->args[0], &p);
		p.flags = SOM_POISON_FORGET;
		fd = open_som();
		before = read_u64(SYSFS "/poisoned_pages_outside");
		if (ioctl(fd, SOM_IOC_POISON, &p))
			die("poison --forget: %s", errno == EBUSY ?
			    "part of the range is in the pool: remove its source first" :
			    why(errno, 0));
		close(fd);
		after = read_u64(SYSFS "/poisoned_pages_outside");
		printf("%llu poisoned pages of %s forgotten: added again, the range is used whole\n",
		       before > after ? before - after : 0, cl->args[0]);
		return;
	}
	errno = 0;
	p.phys = strtoull(cl->args[0], &end, 0);
	if (errno || end == cl->args[0] || *end || cl->args[0][0] == '-')
		usage_error("poison: %s: not a physical address", cl->args[0]);
	fd = open_som();
	if (ioctl(fd, SOM_IOC_POISON, &p))
		die("poison: %s", errno == EINVAL ?
		    "not an address of the pool" : why(errno, 0));
	close(fd);
	printf("page %#" PRIx64 " poisoned: its 2 MiB block leaves service (somctl status counts it)\n",
	       (uint64_t)p.phys);
}
