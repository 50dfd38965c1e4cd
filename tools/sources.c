// SPDX-License-Identifier: GPL-2.0
/*
 * somctl add and remove: pool sources (admin-guide.md, "Memory sources").
 * --wait shows the pool zeroing what was added, as a progress bar on a
 * terminal.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/som.h>

#include "parse.h"
#include "somctl.h"

#ifndef MFD_HUGE_1GB
#define MFD_HUGE_1GB (30U << 26)
#endif
#ifndef MPOL_BIND
#define MPOL_DEFAULT 0
#define MPOL_BIND 2
#endif

/*
 * Until the pool has zeroed all of its free memory (what was just added
 * goes in dirty, and a worker clears it 2 MiB at a time): a progress bar
 * on a terminal, one line at the end.
 */
static void wait_zeroed(void)
{
	unsigned long long zeroed, target, best = 0;
	int tty = isatty(STDERR_FILENO), idle = 0, done_all;
	char a[32], b[32];

	for (;;) {
		zeroed = read_u64(SYSFS "/zeroed_bytes");
		target = read_u64(SYSFS "/free_bytes") +
			 read_u64(SYSFS "/reserved_bytes");
		done_all = zeroed >= target;
		if (tty && target) {
			int width = 40, done = done_all ? width :
					     (int)(width * (double)zeroed / target);

			gib_str(zeroed, a, sizeof(a));
			gib_str(target, b, sizeof(b));
			fprintf(stderr, "\rzeroing [%-*.*s%*s] %s of %s   ", done,
				done, "########################################",
				width - done, "", a, b);
		}
		if (done_all)
			break;
		/* Progress is more zeroed memory; a minute without any ends it. */
		if (zeroed > best) {
			best = zeroed;
			idle = 0;
		} else if (++idle > 300) {
			break;
		}
		usleep(200000);
	}
	if (tty)
		fputc('\n', stderr);
	gib_str(zeroed, a, sizeof(a));
	gib_str(target, b, sizeof(b));
	if (!done_all)
		die("gave up waiting: %s of %s free or reserved memory zeroed, no progress for a minute",
		    a, b);
	printf("zeroed %s of %s free or reserved\n", a, b);
}

/* The dax device's driver, or "" if none is bound. */
static void dax_driver(const char *dev, char *drv, size_t len)
{
	char path[PATH_MAX], target[PATH_MAX];
	ssize_t n;

	snprintf(path, sizeof(path), DAX_BUS "/devices/%s/driver", dev);
	n = readlink(path, target, sizeof(target) - 1);
	if (n < 0) {
		drv[0] = '\0';
		return;
	}
	target[n] = '\0';
	snprintf(drv, len, "%s", strrchr(target, '/') + 1);
}

static int dax_bind(const char *dev, const char *drv, int bind)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), DAX_BUS "/drivers/%s/%s", drv,
		 bind ? "bind" : "unbind");
	return write_str(path, dev);
}

/* SOM_IOC_SOURCE_ADD on the open /dev/som @dev; 0 or the errno. */
static int do_ioctl_add(int dev, struct som_source_args *args)
{
	int ret = ioctl(dev, SOM_IOC_SOURCE_ADD, args);

	return ret ? errno : 0;
}

static void add_dax(int som, struct som_source_args *args, const char *dev)
{
	char path[PATH_MAX], drv[64];
	int err;

	snprintf(path, sizeof(path), DAX_BUS "/devices/%s", dev);
	if (access(path, F_OK))
		die("%s: no such dax device (ls %s/devices)", dev, DAX_BUS);
	snprintf(path, sizeof(path), DAX_BUS "/devices/%s/resource", dev);
	args->start = read_u64(path);
	snprintf(path, sizeof(path), DAX_BUS "/devices/%s/size", dev);
	args->size = read_u64(path);
	if (!args->start || !args->size)
		die("%s: cannot read its range (are you root?)", dev);
	/* resource shows the first range only; size is all of them. */
	snprintf(path, sizeof(path), DAX_BUS "/devices/%s/mapping1", dev);
	if (!access(path, F_OK))
		die("%s: has more than one physical range; som takes a device of one range", dev);
	if (args->start % GIB || args->size % GIB)
		die("%s: range %#llx+%#llx is not 1 GiB aligned (create it with --align=1G)",
		    dev, args->start, args->size);
	strcpy(args->name, dev);
	dax_driver(dev, drv, sizeof(drv));
	if (*drv && strcmp(drv, "device_dax"))
		die("%s: bound to %s, not device_dax; unbind it first", dev,
		    drv);
	if (*drv && !dax_bind(dev, "device_dax", 0))
		die("%s: cannot unbind from device_dax: %s", dev,
		    denied(errno) ? "permission denied (root is needed)" :
		    strerror(errno));
	err = do_ioctl_add(som, args);
	if (err) {
		if (*drv && !dax_bind(dev, "device_dax", 1))
			fprintf(stderr, "%s: binding %s to device_dax again failed: %s\n",
				prog, dev, strerror(errno));
		die("add dax %s: %s", dev, why(err, SOM_SOURCE_DAX));
	}
}

static void add_hugetlb(int som, struct som_source_args *args,
			unsigned long long gib, int node)
{
	unsigned long mask[1024 / (8 * sizeof(unsigned long))] = { 0 };
	int fd, err;

	fd = memfd_create("som-hugetlb", MFD_CLOEXEC | MFD_HUGETLB |
			  MFD_HUGE_1GB);
	if (fd < 0)
		die("hugetlb: cannot make a file of 1 GiB pages: %s",
		    errno == EINVAL ? "this kernel has no 1 GiB hugetlb pages (boot with hugepagesz=1G)" :
		    strerror(errno));
	if (node >= 0) {
		mask[node / (8 * sizeof(long))] |= 1UL << (node % (8 * sizeof(long)));
		if (syscall(SYS_set_mempolicy, MPOL_BIND, mask, 1024 + 1))
			die("node %d: %s", node, strerror(errno));
	}
	if (fallocate(fd, 0, 0, gib * GIB))
		die("hugetlb: cannot get %llu free 1 GiB pages%s: %s (see /sys/kernel/mm/hugepages/hugepages-1048576kB/free_hugepages)",
		    gib, node >= 0 ? " on that node" : "", strerror(errno));
	/* Only the pages were meant for that node, not what som allocates. */
	if (node >= 0)
		syscall(SYS_set_mempolicy, MPOL_DEFAULT, NULL, 0);
	args->fd = fd;
	err = do_ioctl_add(som, args);
	close(fd);
	if (err)
		die("add hugetlb: %s", why(err, SOM_SOURCE_HUGETLB));
}

/* What the kernel takes as a source's name (SOM_IOC_SOURCE_ADD). */
int source_name_ok(const char *name)
{
	const char *c;

	if (!*name || strlen(name) >= SOM_SOURCE_NAME_LEN ||
	    !strcmp(name, ".") || !strcmp(name, ".."))
		return 0;
	for (c = name; *c; c++)
		if (!isalnum((unsigned char)*c) && !strchr(".-_:@", *c))
			return 0;
	return 1;
}

/* A number of GiB for hugetlb and buddy. */
static unsigned long long parse_gib(const char *what)
{
	unsigned long long gib;
	char *end;

	errno = 0;
	gib = strtoull(what, &end, 10);
	if (errno || !isdigit((unsigned char)*what) || *end || !gib ||
	    gib > (1ULL << 33))
		usage_error("'%s': give a number of GiB", what);
	return gib;
}

/* SIZE@START, both whole GiB: into @args. */
static void parse_range(char *what, struct som_source_args *args)
{
	if (som_parse_range(what, &args->size, &args->start))
		usage_error("'%s': expected SIZE@START, e.g. 2G@4G", what);
	if (!args->size || args->size % GIB || args->start % GIB)
		usage_error("'%s': SIZE and START must be whole GiB, SIZE not 0",
			    what);
}

void add_cmd(const struct cmdline *cl)
{
	static const char *const kinds[] = {
		[SOM_SOURCE_RESERVED] = "reserved",
		[SOM_SOURCE_HUGETLB] = "hugetlb",
		[SOM_SOURCE_BUDDY] = "buddy",
		[SOM_SOURCE_DAX] = "dax",
	};
	struct som_source_args args;
	unsigned long long gib = 0;
	const char *kind = cl->args[0];
	char *what = cl->args[1];
	int err, som;

	memset(&args, 0, sizeof(args));
	args.fd = -1;
	args.node = -1;
	for (args.kind = SOM_SOURCE_RESERVED; args.kind <= SOM_SOURCE_DAX;
	     args.kind++)
		if (!strcmp(kind, kinds[args.kind]))
			break;
	if (args.kind > SOM_SOURCE_DAX)
		usage_error("'%s': no such kind (reserved, hugetlb, buddy or dax)",
			    kind);
	if (cl->given & OPT_UNMOVABLE)
		args.flags |= SOM_SOURCE_UNMOVABLE;
	if (cl->given & OPT_SLOW)
		args.flags |= SOM_SOURCE_SLOW;
	if ((cl->given & OPT_NODE) && args.kind != SOM_SOURCE_HUGETLB &&
	    args.kind != SOM_SOURCE_BUDDY)
		usage_error("--node: only for hugetlb and buddy (a %s range's node is where it is)",
			    kind);
	if (cl->given & OPT_NAME) {
		if (args.kind == SOM_SOURCE_DAX)
			usage_error("--name: a dax source is named after its device");
		if (!source_name_ok(cl->name))
			usage_error("--name %s: at most %d letters, digits and .-_:@",
				    cl->name, SOM_SOURCE_NAME_LEN - 1);
		strcpy(args.name, cl->name);
	}
	switch (args.kind) {
	case SOM_SOURCE_RESERVED:
		parse_range(what, &args);
		break;
	case SOM_SOURCE_HUGETLB:
	case SOM_SOURCE_BUDDY:
		gib = parse_gib(what);
		break;
	case SOM_SOURCE_DAX:
		if (!source_name_ok(what))
			usage_error("'%s': not a dax device name (e.g. dax0.0)",
				    what);
		break;
	}

	/* Before anything changes: a missing module leaves nothing undone. */
	som = open_som();
	switch (args.kind) {
	case SOM_SOURCE_RESERVED:
		err = do_ioctl_add(som, &args);
		if (err)
			die("add reserved: %s", why(err, args.kind));
		break;
	case SOM_SOURCE_HUGETLB:
		add_hugetlb(som, &args, gib, cl->node);
		break;
	case SOM_SOURCE_BUDDY:
		args.node = cl->node;
		args.size = gib * GIB;
		err = do_ioctl_add(som, &args);
		if (err)
			die("add buddy: %s", why(err, args.kind));
		break;
	case SOM_SOURCE_DAX:
		add_dax(som, &args, what);
		break;
	}
	close(som);
	printf("%s\n", args.name);
	if (cl->given & OPT_WAIT)
		wait_zeroed();
}

void remove_cmd(const struct cmdline *cl)
{
	const char *name = cl->args[0];
	struct som_source_name arg;
	char path[PATH_MAX], kind[16] = "";
	int fd;

	if (!source_name_ok(name))
		usage_error("'%s': not a source name (at most %d letters, digits and .-_:@)",
			    name, SOM_SOURCE_NAME_LEN - 1);
	memset(&arg, 0, sizeof(arg));
	strcpy(arg.name, name);
	fd = open_som();
	snprintf(path, sizeof(path), SYSFS "/sources/%s/kind", name);
	read_line(path, kind, sizeof(kind));
	if (ioctl(fd, SOM_IOC_SOURCE_REMOVE, &arg))
		die("remove %s: %s", name, why(errno, -1));
	close(fd);
	/* A dax device goes back to device_dax, as it was before. */
	if (!strcmp(kind, "dax") && !dax_bind(name, "device_dax", 1))
		fprintf(stderr, "%s: removed, but binding %s to device_dax again failed: %s\n",
			prog, name, strerror(errno));
}
