// SPDX-License-Identifier: GPL-2.0
/*
 * somctl swap: the store som memory is paged out to (SOM_IOC_SWAP_ADD,
 * SOM_IOC_SWAP_REMOVE), whether the pool may promise its room
 * (overcommit), and what paging has done (/sys/kernel/mm/som/swap/).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <linux/som.h>

#include "somctl.h"
#include "parse.h"

#define SWAP SYSFS "/swap/"

static const char *const swap_counters[] = {
	"size_bytes", "used_bytes", "out_bytes", "in_bytes",
	"write_errors", "read_errors", "reclaimed_bytes",
	"overcommit", "overcommitted_bytes", "pressure_passes",
	"pressure_reclaimed_bytes", "pressure_waits", "pressure_failures",
};

#define NR_SWAP_COUNTERS \
	(sizeof(swap_counters) / sizeof(swap_counters[0]))

/*
 * Open PATH for the store: a block device, or a regular file, made with
 * mode 0600 if it does not exist. The store holds every owner's memory:
 * a file that anyone but its owner may read or write is refused.
 */
static int open_store(const char *path)
{
	struct stat st;
	int fd;

	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		die("swap add: %s: %s", path, strerror(errno));
	if (fstat(fd, &st))
		die("swap add: %s: %s", path, strerror(errno));
	if (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode))
		die("swap add: %s: not a regular file or a block device", path);
	if (S_ISREG(st.st_mode) && (st.st_mode & 077))
		die("swap add: %s: group or others may access it (mode %03o); the store holds every owner's memory: chmod 600 it",
		    path, (unsigned int)(st.st_mode & 0777));
	return fd;
}

static void swap_add(const struct cmdline *cl)
{
	struct som_swap_args args;
	unsigned long long size;
	char buf[32];
	int dev, fd;

	if (cl->nargs != 3)
		usage_error("swap add: expected PATH SIZE");
	if (som_parse_size(cl->args[2], &size) || !size ||
	    size % (2ULL << 20))
		usage_error("swap add: '%s': expected a size in 2M units, e.g. 8G",
			    cl->args[2]);
	dev = open_som();
	fd = open_store(cl->args[1]);
	memset(&args, 0, sizeof(args));
	args.fd = fd;
	args.size = size;
	if (ioctl(dev, SOM_IOC_SWAP_ADD, &args))
		die("swap add: %s", errno == EBUSY ?
		    "busy: a store is in place already (somctl swap status), or the file is a kernel swap file" :
		    errno == ENOSPC ? "the file system has no room for SIZE" :
		    why(errno, 0));
	close(fd);
	close(dev);
	gib_str(size, buf, sizeof(buf));
	printf("store %s added: %s for som memory paged out\n", cl->args[1],
	       buf);
}

static void swap_remove(const struct cmdline *cl)
{
	unsigned long long used;
	char buf[32];
	int dev;

	if (cl->nargs != 1)
		usage_error("swap remove: takes no argument");
	need_sysfs();
	used = read_u64(SWAP "used_bytes");
	dev = open_som();
	if (ioctl(dev, SOM_IOC_SWAP_REMOVE))
		die("swap remove: %s", errno == ENOENT ? "no store is in place" :
		    errno == EIO ? "a block could not be read back (dmesg | grep som); the store stays" :
		    errno == EBUSY ? "busy: the pool promises more than it holds without the store (swap/overcommitted_bytes), or a process closing its memory held it; try again once mappings are gone" :
		    errno == EINTR ? "interrupted; the store stays, what was read back stays in the pool" :
		    why(errno, 0));
	close(dev);
	gib_str(used, buf, sizeof(buf));
	printf("store removed: %s read back into the pool\n", buf);
}

static void swap_status(const struct cmdline *cl)
{
	unsigned long long v[NR_SWAP_COUNTERS];
	char store[4096], path[128];
	unsigned int i;

	need_sysfs();
	if (!read_line(SWAP "store", store, sizeof(store)))
		store[0] = 0;
	for (i = 0; i < NR_SWAP_COUNTERS; i++) {
		snprintf(path, sizeof(path), SWAP "%s", swap_counters[i]);
		v[i] = read_u64(path);
	}
	if (cl->given & OPT_JSON) {
		printf("{\"store\": \"");
		for (i = 0; store[i]; i++)
			printf(store[i] == '"' || store[i] == '\\' ? "\\%c" : "%c",
			       store[i]);
		printf("\"");
		for (i = 0; i < NR_SWAP_COUNTERS; i++)
			printf(", \"%s\": %llu", swap_counters[i], v[i]);
		printf("}\n");
		return;
	}
	printf("%-25s %s\n", "store:", store[0] ? store : "(none)");
	for (i = 0; i < NR_SWAP_COUNTERS; i++)
		printf("%-25s %llu\n", swap_counters[i], v[i]);
}

/*
 * somctl swap overcommit on|off: whether the pool may promise the
 * store's room too (swap/overcommit).
 */
static void swap_overcommit(const struct cmdline *cl)
{
	int on;

	if (cl->nargs != 2 || (strcmp(cl->args[1], "on") &&
			       strcmp(cl->args[1], "off")))
		usage_error("swap overcommit: expected on or off");
	on = !strcmp(cl->args[1], "on");
	need_sysfs();
	if (!write_str(SWAP "overcommit", on ? "1" : "0"))
		die("swap overcommit: %s", denied(errno) ?
		    "permission denied (CAP_SYS_ADMIN is needed)" :
		    strerror(errno));
	printf("overcommit %s: mappings may reserve %s\n", on ? "on" : "off",
	       on ? "up to the pool plus the swap store, less 2M" :
	       "only what the pool holds");
}

/* somctl reclaim BYTES: page out the coldest som memory (swap/reclaim). */
void reclaim_cmd(const struct cmdline *cl)
{
	unsigned long long bytes, before, done;
	char buf[32], want[32];

	if (som_parse_size(cl->args[0], &bytes))
		usage_error("reclaim: '%s': expected a size, e.g. 4G",
			    cl->args[0]);
	need_sysfs();
	before = read_u64(SWAP "reclaimed_bytes");
	snprintf(buf, sizeof(buf), "%llu", bytes);
	if (!write_str(SWAP "reclaim", buf))
		die("reclaim: %s", errno == ENODEV ? "no swap store (somctl swap add)" :
		    errno == ENOSPC ? "the swap store is full" :
		    errno == EIO ? "a write to the swap store failed (dmesg | grep som)" :
		    denied(errno) ? "permission denied (CAP_SYS_ADMIN is needed)" :
		    strerror(errno));
	done = read_u64(SWAP "reclaimed_bytes") - before;
	gib_str(done, buf, sizeof(buf));
	gib_str(bytes, want, sizeof(want));
	printf("%s of %s paged out, the coldest first\n", buf, want);
}

void swap_cmd(const struct cmdline *cl)
{
	const char *what = cl->args[0];

	if (!strcmp(what, "add"))
		swap_add(cl);
	else if (!strcmp(what, "remove"))
		swap_remove(cl);
	else if (!strcmp(what, "status"))
		swap_status(cl);
	else if (!strcmp(what, "overcommit"))
		swap_overcommit(cl);
	else
		usage_error("swap: '%s': expected add, remove, overcommit or status",
			    what);
}
