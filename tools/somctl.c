// SPDX-License-Identifier: GPL-2.0
/*
 * somctl: administer the som pool.
 *
 *   somctl status                      the pool, per node and per source
 *   somctl add reserved SIZE@START     a boot-reserved range (memmap=)
 *   somctl add hugetlb GIB             1 GiB pages from the hugetlb pool
 *   somctl add buddy GIB               1 GiB runs from the page allocator
 *   somctl add dax DEVICE              a device DAX instance, e.g. dax0.0
 *   somctl remove NAME                 give a source's memory back
 *
 * add takes --node N (hugetlb, buddy: where to take the memory from),
 * --unmovable (the chunks serve only regions that need stable memory)
 * and --name NAME. See Documentation/admin-guide.md and somctl(8).
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/som.h>

#ifndef MFD_HUGE_1GB
#define MFD_HUGE_1GB (30U << 26)
#endif
#ifndef MPOL_BIND
#define MPOL_DEFAULT 0
#define MPOL_BIND 2
#endif

#define SYSFS "/sys/kernel/mm/som"
#define DAX_BUS "/sys/bus/dax"
#define GIB (1ULL << 30)

static const char *prog = "somctl";

static void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static void usage(void)
{
	fprintf(stderr,
		"usage: %s status\n"
		"       %s add reserved SIZE@START [--unmovable] [--name NAME]\n"
		"       %s add hugetlb GIB [--node N] [--unmovable] [--name NAME]\n"
		"       %s add buddy GIB [--node N] [--unmovable] [--name NAME]\n"
		"       %s add dax DEVICE [--unmovable]\n"
		"       %s remove NAME\n",
		prog, prog, prog, prog, prog, prog);
	exit(2);
}

/* Why an ioctl on /dev/som failed, in the administrator's words. */
static const char *why(int err, int kind)
{
	switch (err) {
	case EPERM:
		return "permission denied (CAP_SYS_ADMIN is needed)";
	case EEXIST:
		return "a source of that name exists";
	case ENOENT:
		return "no such source";
	case EBUSY:
		if (kind == -1)
			return "busy: some of its memory is in use (see used_bytes), or reserved by mappings the rest of the pool could not cover";
		return kind == SOM_SOURCE_HUGETLB ?
		       "busy: the file is mapped, or a page of it has another user" :
		       "busy: the memory is in the pool already, or a driver still claims it";
	case ENOMEM:
		return kind == SOM_SOURCE_BUDDY ?
		       "the page allocator has no free aligned 1 GiB run (boot with movablecore= to keep some)" :
		       "out of memory";
	case ENODEV:
		return "this kernel cannot provide that kind of memory";
	case EINVAL:
		return "refused (the kernel log says why: dmesg | grep som)";
	default:
		return strerror(err);
	}
}

static int open_som(void)
{
	int fd = open("/dev/som", O_RDWR | O_CLOEXEC);

	if (fd < 0) {
		if (errno == ENOENT)
			die("/dev/som not found: is the som module loaded? (modprobe som)");
		die("/dev/som: %s", strerror(errno));
	}
	return fd;
}

/* Read a one-line sysfs file into @buf; false if it cannot be read. */
static int read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	int ok;

	if (!f)
		return 0;
	ok = fgets(buf, len, f) != NULL;
	fclose(f);
	if (ok)
		buf[strcspn(buf, "\n")] = '\0';
	return ok;
}

static int write_str(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC), ok;

	if (fd < 0)
		return 0;
	ok = write(fd, s, strlen(s)) == (ssize_t)strlen(s);
	close(fd);
	return ok;
}

static unsigned long long read_u64(const char *path)
{
	char buf[64];

	if (!read_line(path, buf, sizeof(buf)))
		return 0;
	return strtoull(buf, NULL, 0);
}

/* SIZE with an optional K/M/G/T suffix. */
static int parse_size(const char *s, unsigned long long *out)
{
	unsigned long long v;
	unsigned int shift = 0;
	char *end;

	if (!isdigit((unsigned char)*s))
		return 0;
	errno = 0;
	/* Decimal, or hex with 0x (no octal: 010G is ten). */
	v = strtoull(s, &end, !strncmp(s, "0x", 2) ? 16 : 10);
	if (errno || end == s)
		return 0;
	switch (toupper((unsigned char)*end)) {
	case 'T':
		shift = 40;
		break;
	case 'G':
		shift = 30;
		break;
	case 'M':
		shift = 20;
		break;
	case 'K':
		shift = 10;
		break;
	}
	if (shift) {
		if (v > ULLONG_MAX >> shift)
			return 0;
		v <<= shift;
		end++;
	}
	if (*end)
		return 0;
	*out = v;
	return 1;
}

/* "2 GiB", "2.99 GiB", "4 MiB", "0": whole units where they are whole. */
static void gib_str(unsigned long long bytes, char *buf, size_t len)
{
	if (!bytes)
		snprintf(buf, len, "0");
	else if (bytes % GIB == 0)
		snprintf(buf, len, "%llu GiB", bytes / GIB);
	else if (bytes >= GIB)
		snprintf(buf, len, "%.2f GiB", (double)bytes / GIB);
	else if (bytes % (1 << 20) == 0)
		snprintf(buf, len, "%llu MiB", bytes >> 20);
	else
		snprintf(buf, len, "%.1f MiB", (double)bytes / (1 << 20));
}

static void status(void)
{
	static const char *const cols[] = {
		"total_bytes", "free_bytes", "reserved_bytes", "zeroed_bytes",
		"unmovable_total_bytes", "unmovable_free_bytes",
	};
	char path[PATH_MAX], a[32];
	struct dirent *de;
	unsigned int i;
	DIR *d;

	if (access(SYSFS, F_OK))
		die("%s not found: is the som module loaded? (modprobe som)",
		    SYSFS);
	printf("%-10s", "pool");
	for (i = 0; i < 6; i++)
		printf(" %15.*s", (int)(strlen(cols[i]) - 6), cols[i]);
	printf("\n%-10s", "all");
	for (i = 0; i < 6; i++) {
		snprintf(path, sizeof(path), SYSFS "/%s", cols[i]);
		gib_str(read_u64(path), a, sizeof(a));
		printf(" %15s", a);
	}
	printf("\n");
	d = opendir(SYSFS "/nodes");
	while (d && (de = readdir(d))) {
		if (strncmp(de->d_name, "node", 4))
			continue;
		printf("%-10s", de->d_name);
		for (i = 0; i < 6; i++) {
			snprintf(path, sizeof(path), SYSFS "/nodes/%s/%s",
				 de->d_name, cols[i]);
			gib_str(read_u64(path), a, sizeof(a));
			printf(" %15s", a);
		}
		printf("\n");
	}
	if (d)
		closedir(d);
	printf("metadata %llu bytes; faults: %llu x 1 GiB, %llu x 2 MiB, %llu x 4 KiB\n\n",
	       read_u64(SYSFS "/metadata_bytes"), read_u64(SYSFS "/faults_pud"),
	       read_u64(SYSFS "/faults_pmd"), read_u64(SYSFS "/faults_pte"));

	printf("%-24s %-9s %-6s %8s %10s %11s %7s\n", "source", "kind",
	       "nodes", "size", "used", "struct_page", "movable");
	d = opendir(SYSFS "/sources");
	while (d && (de = readdir(d))) {
		char kind[16] = "?", nodes[32] = "?", sp[4] = "?", mv[4] = "?";
		char size[32], used[32];

		if (de->d_name[0] == '.')
			continue;
#define SRC(f) (snprintf(path, sizeof(path), SYSFS "/sources/%s/%s", \
			 de->d_name, f), path)
		read_line(SRC("kind"), kind, sizeof(kind));
		read_line(SRC("nodes"), nodes, sizeof(nodes));
		read_line(SRC("struct_page"), sp, sizeof(sp));
		read_line(SRC("movable"), mv, sizeof(mv));
		gib_str(read_u64(SRC("bytes")), size, sizeof(size));
		gib_str(read_u64(SRC("used_bytes")), used, sizeof(used));
#undef SRC
		printf("%-24s %-9s %-6s %8s %10s %11s %7s\n", de->d_name, kind,
		       nodes, size, used, strcmp(sp, "1") ? "no" : "yes",
		       strcmp(mv, "1") ? "no" : "yes");
	}
	if (d)
		closedir(d);
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

	if (strlen(dev) >= sizeof(args->name))
		die("%s: name too long", dev);
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
		if (node >= 1024)
			die("bad node %d", node);
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

static void add(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "node", required_argument, NULL, 'n' },
		{ "unmovable", no_argument, NULL, 'u' },
		{ "name", required_argument, NULL, 'N' },
		{ NULL, 0, NULL, 0 },
	};
	struct som_source_args args;
	const char *kind, *what;
	unsigned long long gib = 0;
	int c, node = -1, err, som;
	char *end;
	long v;

	memset(&args, 0, sizeof(args));
	args.fd = -1;
	args.node = -1;
	optind = 1;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'n':
			errno = 0;
			v = strtol(optarg, &end, 10);
			if (errno || end == optarg || *end || v < 0 || v >= 1024)
				die("bad node '%s'", optarg);
			node = v;
			break;
		case 'u':
			args.flags |= SOM_SOURCE_UNMOVABLE;
			break;
		case 'N':
			if (strlen(optarg) >= sizeof(args.name))
				die("name too long (at most %zu characters)",
				    sizeof(args.name) - 1);
			strcpy(args.name, optarg);
			break;
		default:
			usage();
		}
	}
	if (argc - optind != 2)
		usage();
	kind = argv[optind];
	what = argv[optind + 1];
	if (strcmp(kind, "reserved") && strcmp(kind, "dax")) {
		errno = 0;
		gib = strtoull(what, &end, 10);
		if (errno || !isdigit((unsigned char)*what) || *end || !gib ||
		    gib > (1ULL << 33))
			die("'%s': give a number of GiB", what);
	}
	/* Before anything changes: a missing module leaves nothing undone. */
	som = open_som();

	if (!strcmp(kind, "reserved")) {
		char *at = strchr(what, '@');

		args.kind = SOM_SOURCE_RESERVED;
		if (!at)
			die("'%s': expected SIZE@START, e.g. 2G@4G", what);
		*at = '\0';
		if (!parse_size(what, &args.size) ||
		    !parse_size(at + 1, &args.start))
			die("expected SIZE@START, e.g. 2G@4G");
		err = do_ioctl_add(som, &args);
		if (err)
			die("add reserved: %s", why(err, args.kind));
	} else if (!strcmp(kind, "hugetlb")) {
		args.kind = SOM_SOURCE_HUGETLB;
		add_hugetlb(som, &args, gib, node);
	} else if (!strcmp(kind, "buddy")) {
		args.kind = SOM_SOURCE_BUDDY;
		args.node = node;
		args.size = gib * GIB;
		err = do_ioctl_add(som, &args);
		if (err)
			die("add buddy: %s", why(err, args.kind));
	} else if (!strcmp(kind, "dax")) {
		args.kind = SOM_SOURCE_DAX;
		add_dax(som, &args, what);
	} else {
		usage();
	}
	close(som);
	printf("%s\n", args.name);
}

static void remove_source(const char *name)
{
	struct som_source_name arg;
	char path[PATH_MAX], kind[16] = "";
	int fd;

	memset(&arg, 0, sizeof(arg));
	if (strlen(name) >= sizeof(arg.name))
		die("%s: no such source", name);
	strcpy(arg.name, name);
	snprintf(path, sizeof(path), SYSFS "/sources/%s/kind", name);
	read_line(path, kind, sizeof(kind));
	fd = open_som();
	if (ioctl(fd, SOM_IOC_SOURCE_REMOVE, &arg))
		die("remove %s: %s", name, why(errno, -1));
	close(fd);
	/* A dax device goes back to device_dax, as it was before. */
	if (!strcmp(kind, "dax") && !dax_bind(name, "device_dax", 1))
		fprintf(stderr, "%s: removed, but binding %s to device_dax again failed: %s\n",
			prog, name, strerror(errno));
}

int main(int argc, char **argv)
{
	if (argc < 2)
		usage();
	if (!strcmp(argv[1], "status") && argc == 2)
		status();
	else if (!strcmp(argv[1], "add"))
		add(argc - 1, argv + 1);
	else if (!strcmp(argv[1], "remove") && argc == 3)
		remove_source(argv[2]);
	else
		usage();
	return 0;
}
