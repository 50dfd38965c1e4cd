// SPDX-License-Identifier: GPL-2.0
/*
 * somctl poison: declare a 4 KiB page of the pool bad, as a machine check
 * reporting an uncorrected error there would (SOM_IOC_POISON), e.g. for
 * an address a memory controller's log names or to try the handling out.
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

void poison_cmd(const struct cmdline *cl)
{
	struct som_poison p;
	char *end;
	int fd;

	memset(&p, 0, sizeof(p));
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
