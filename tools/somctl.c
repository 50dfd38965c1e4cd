// SPDX-License-Identifier: GPL-2.0
/*
 * somctl: administer the som pool.
 *
 *   somctl status                      the pool, per node and per source
 *   somctl ps                          which processes map som memory
 *   somctl add reserved SIZE@START     a boot-reserved range (memmap=)
 *   somctl add hugetlb GIB             1 GiB pages from the hugetlb pool
 *   somctl add buddy GIB               1 GiB runs from the page allocator
 *   somctl add dax DEVICE              a device DAX instance, e.g. dax0.0
 *   somctl remove NAME                 give a source's memory back
 *
 * status.c, procs.c and sources.c hold the commands; this file the
 * helpers they share. See Documentation/admin-guide.md and somctl(8).
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/som.h>

#include "somctl.h"

const char *prog = "somctl";

void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

void usage(void)
{
	fprintf(stderr,
		"usage: %s status [--json] [--watch[=SECONDS] [--count=N]]\n"
		"       %s ps [--json] [PID...]\n"
		"       %s add reserved SIZE@START [--unmovable] [--name NAME] [--wait]\n"
		"       %s add hugetlb GIB [--node N] [--unmovable] [--name NAME] [--wait]\n"
		"       %s add buddy GIB [--node N] [--unmovable] [--name NAME] [--wait]\n"
		"       %s add dax DEVICE [--unmovable] [--wait]\n"
		"       %s remove NAME\n"
		"       %s compact\n",
		prog, prog, prog, prog, prog, prog, prog, prog);
	exit(2);
}

/* Why an ioctl on /dev/som failed, in the administrator's words. */
const char *why(int err, int kind)
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
			return "busy: an unmovable chunk of it is in use (see used_bytes), or memory reserved on it has nowhere else to go";
		return kind == SOM_SOURCE_HUGETLB ?
		       "busy: the file is mapped, or a page of it has another user" :
		       "busy: the memory is in the pool already, or a driver still claims it";
	case ENOMEM:
		return kind == SOM_SOURCE_BUDDY ?
		       "the page allocator has no free aligned 1 GiB run (boot with movablecore= to keep some)" :
		       "out of memory";
	case ENODEV:
		return "this kernel cannot provide that kind of memory";
	case ENOSPC:
		return "no room: the rest of the pool cannot take the memory in use (on the nodes its owners' policies allow)";
	case EINVAL:
		return "refused (the kernel log says why: dmesg | grep som)";
	default:
		return strerror(err);
	}
}

int open_som(void)
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
int read_line(const char *path, char *buf, size_t len)
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

int write_str(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC), ok;

	if (fd < 0)
		return 0;
	ok = write(fd, s, strlen(s)) == (ssize_t)strlen(s);
	close(fd);
	return ok;
}

unsigned long long read_u64(const char *path)
{
	char buf[64];

	if (!read_line(path, buf, sizeof(buf)))
		return 0;
	return strtoull(buf, NULL, 0);
}

/* SIZE with an optional K/M/G/T suffix. */
int parse_size(const char *s, unsigned long long *out)
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
void gib_str(unsigned long long bytes, char *buf, size_t len)
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

int main(int argc, char **argv)
{
	if (argc < 2)
		usage();
	if (!strcmp(argv[1], "status"))
		status_cmd(argc - 1, argv + 1);
	else if (!strcmp(argv[1], "ps"))
		ps_cmd(argc - 1, argv + 1);
	else if (!strcmp(argv[1], "add"))
		add_cmd(argc - 1, argv + 1);
	else if (!strcmp(argv[1], "remove") && argc == 3)
		remove_cmd(argv[2]);
	else if (!strcmp(argv[1], "compact") && argc == 2)
		compact_cmd();
	else
		usage();
	return 0;
}
