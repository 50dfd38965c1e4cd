// SPDX-License-Identifier: GPL-2.0
/*
 * somctl: administer the som pool.
 *
 *   somctl status                      the pool, per node and per source
 *   somctl ps                          which processes map som memory
 *   somctl ages                        how long their memory went unused
 *   somctl add reserved SIZE@START     a boot-reserved range (memmap=)
 *   somctl add hugetlb GIB             1 GiB pages from the hugetlb pool
 *   somctl add buddy GIB               1 GiB runs from the page allocator
 *   somctl add dax DEVICE              a device DAX instance, e.g. dax0.0
 *   somctl remove NAME                 give a source's memory back
 *   somctl compact                     run a compaction pass now
 *   somctl poison PHYS                 declare a page of the pool bad
 *   somctl poison --forget SIZE@START  forget errors of replaced memory
 *   somctl limit CGROUP SIZE|max       cap a cgroup's som memory
 *   somctl cgroups                     som memory per cgroup
 *   somctl user-limit SIZE|max         cap each user's som memory
 *   somctl users                       som memory per user
 *
 * status.c, procs.c, ages.c, sources.c, compact.c, poison.c, cgroups.c
 * and users.c hold the commands; this file the command line and the helpers
 * they share. Exit status: 0 done, 1 failed (one line on stderr says why),
 * 2 a usage error, found before anything is opened. See
 * Documentation/admin-guide.md and somctl(8).
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/som.h>

#include "somctl.h"

#ifndef SOM_VERSION
#define SOM_VERSION "unknown"
#endif

const char *prog = "somctl";

/* Each command: the options it takes, how many arguments, its synopsis. */
static const struct command {
	const char *name;
	unsigned int opts;
	int min_args, max_args;
	void (*run)(const struct cmdline *cl);
	const char *synopsis;	/* lines after "somctl " */
} commands[] = {
	{ "status", OPT_JSON | OPT_WATCH | OPT_COUNT | OPT_PROMETHEUS, 0, 0,
	  status_cmd,
	  "status [--json] [--watch[=SECONDS] [--count=N]]\n"
	  "status --prometheus" },
	{ "ps", OPT_JSON, 0, INT_MAX, ps_cmd,
	  "ps [--json] [PID...]" },
	{ "ages", OPT_JSON, 0, INT_MAX, ages_cmd,
	  "ages [--json] [PID...]" },
	{ "add", OPT_NODE | OPT_UNMOVABLE | OPT_SLOW | OPT_NAME | OPT_WAIT, 2, 2,
	  add_cmd,
	  "add reserved SIZE@START [--unmovable] [--slow] [--name NAME] [--wait]\n"
	  "add hugetlb GIB [--node N] [--unmovable] [--slow] [--name NAME] [--wait]\n"
	  "add buddy GIB [--node N] [--unmovable] [--slow] [--name NAME] [--wait]\n"
	  "add dax DEVICE [--unmovable] [--slow] [--wait]" },
	{ "tier", 0, 2, 2, tier_cmd,
	  "tier NAME fast|slow" },
	{ "remove", 0, 1, 1, remove_cmd,
	  "remove NAME" },
	{ "compact", 0, 0, 0, compact_cmd,
	  "compact" },
	{ "poison", OPT_FORGET, 1, 1, poison_cmd,
	  "poison PHYS\n"
	  "poison --forget SIZE@START" },
	{ "limit", 0, 2, 2, limit_cmd,
	  "limit CGROUP SIZE|max" },
	{ "cgroups", OPT_JSON, 0, 0, cgroups_cmd,
	  "cgroups [--json]" },
	{ "user-limit", 0, 1, 1, user_limit_cmd,
	  "user-limit SIZE|max" },
	{ "users", OPT_JSON, 0, 0, users_cmd,
	  "users [--json]" },
	{ "swap", OPT_JSON, 1, 3, swap_cmd,
	  "swap add PATH SIZE\n"
	  "swap remove\n"
	  "swap overcommit on|off\n"
	  "swap status [--json]" },
	{ "reclaim", 0, 1, 1, reclaim_cmd,
	  "reclaim BYTES" },
};

#define NR_COMMANDS (sizeof(commands) / sizeof(commands[0]))

static const struct option options[] = {
	{ "json", no_argument, NULL, 'j' },
	{ "watch", optional_argument, NULL, 'W' },
	{ "count", required_argument, NULL, 'c' },
	{ "node", required_argument, NULL, 'n' },
	{ "unmovable", no_argument, NULL, 'u' },
	{ "name", required_argument, NULL, 'N' },
	{ "wait", no_argument, NULL, 'w' },
	{ "prometheus", no_argument, NULL, 'P' },
	{ "forget", no_argument, NULL, 'F' },
	{ "slow", no_argument, NULL, 's' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

/* OPT_* bit n is options[n]: the name for "status takes no --node". */
static const char *opt_name(unsigned int bit)
{
	return options[__builtin_ctz(bit)].name;
}

/* "somctl: <message><tail>" on stderr, then exit with @status. */
static void __attribute__((noreturn))
vexit(int status, const char *tail, const char *fmt, va_list ap)
{
	fprintf(stderr, "%s: ", prog);
	vfprintf(stderr, fmt, ap);
	fputs(tail, stderr);
	exit(status);
}

void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vexit(1, "\n", fmt, ap);
}

static void print_synopsis(FILE *f, const struct command *c, int *first)
{
	const char *line = c->synopsis;
	size_t len;

	for (;;) {
		len = strcspn(line, "\n");
		fprintf(f, "%s %s %.*s\n", *first ? "usage:" : "      ", prog,
			(int)len, line);
		*first = 0;
		if (!line[len])
			break;
		line += len + 1;
	}
}

static void usage(FILE *f)
{
	unsigned int i;
	int first = 1;

	for (i = 0; i < NR_COMMANDS; i++)
		print_synopsis(f, &commands[i], &first);
	fprintf(f, "       %s --help | --version\n"
		"Options go before or after the command. See somctl(8).\n",
		prog);
}

/* A bad command line: say what is wrong and exit 2, having opened nothing. */
void usage_error(const char *fmt, ...)
{
	char tail[64];
	va_list ap;

	snprintf(tail, sizeof(tail), " (%s --help for usage)\n", prog);
	va_start(ap, fmt);
	vexit(2, tail, fmt, ap);
}

/*
 * Was it a permission problem? EPERM from a capability check, EACCES from
 * a file's mode (/dev/som, a sysfs file only root may write).
 */
int denied(int err)
{
	return err == EPERM || err == EACCES;
}

/* Why an ioctl on /dev/som failed, in the administrator's words. */
const char *why(int err, int kind)
{
	switch (err) {
	case EPERM:
	case EACCES:
		return "permission denied (CAP_SYS_ADMIN is needed)";
	case EEXIST:
		return "a source of that name exists";
	case ENOENT:
		return "no such source";
	case EBUSY:
		if (kind == -1)
			return "busy: an unmovable chunk of it is in use (see used_bytes), memory reserved on it has nowhere else to go, or a mapping of it was changing (try again)";
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
		return "no room: the rest of the pool cannot take the memory in use (on the nodes its owners' policies allow); nothing was removed";
	case EINTR:
		return kind == -1 ? "interrupted; nothing was removed" :
				    "interrupted; nothing was added";
	case EINVAL:
		return "refused (the kernel log says why: dmesg | grep som)";
	default:
		return strerror(err);
	}
}

#define NOT_LOADED "is the som module loaded? (modprobe som)"

int open_som(void)
{
	int fd = open("/dev/som", O_RDWR | O_CLOEXEC);

	if (fd < 0) {
		if (errno == ENOENT || errno == ENODEV || errno == ENXIO)
			die("/dev/som: %s: " NOT_LOADED, strerror(errno));
		if (denied(errno))
			die("/dev/som: %s (root and the group som may open it; adding and removing memory needs CAP_SYS_ADMIN)",
			    strerror(errno));
		die("/dev/som: %s", strerror(errno));
	}
	return fd;
}

/* For the commands that read or write only sysfs. */
void need_sysfs(void)
{
	if (access(SYSFS, F_OK))
		die("%s: %s: " NOT_LOADED, SYSFS, strerror(errno));
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

/* A limit: "512 MiB", or "max" for none (SOM_CGROUP_NO_LIMIT). */
void limit_str(unsigned long long limit, char *buf, size_t len)
{
	if (limit == SOM_CGROUP_NO_LIMIT)
		snprintf(buf, len, "max");
	else
		gib_str(limit, buf, len);
}

/* A whole number from @min to @max, or a usage error naming @what. */
static int number(const char *what, const char *s, long min, long max)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || !isdigit((unsigned char)*s) ||
	    v < min || v > max)
		usage_error("%s%s: a number from %ld to %ld", what, s, min, max);
	return (int)v;
}

/*
 * Every option anywhere on the line ("-" first in the option string hands
 * over the other words in order), so that "somctl ps 1 --json" and
 * "somctl --json ps 1" are one command; "--" ends the options.
 */
static void parse(int argc, char **argv, struct cmdline *cl)
{
	static char *words[256];
	int c, n = 0;

	memset(cl, 0, sizeof(*cl));
	cl->node = -1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "-:h", options, NULL)) != -1) {
		switch (c) {
		case 1:
			if (n == 256)
				usage_error("too many arguments");
			words[n++] = optarg;
			continue;
		case 'j':
			cl->given |= OPT_JSON;
			break;
		case 'W':
			cl->given |= OPT_WATCH;
			cl->watch = optarg ? number("--watch=", optarg, 1, 86400) : 2;
			break;
		case 'c':
			cl->given |= OPT_COUNT;
			cl->count = number("--count=", optarg, 1, INT_MAX);
			break;
		case 'n':
			cl->given |= OPT_NODE;
			cl->node = number("--node ", optarg, 0, SOM_MAX_NODES - 1);
			break;
		case 'u':
			cl->given |= OPT_UNMOVABLE;
			break;
		case 'N':
			cl->given |= OPT_NAME;
			cl->name = optarg;
			break;
		case 'w':
			cl->given |= OPT_WAIT;
			break;
		case 'P':
			cl->given |= OPT_PROMETHEUS;
			break;
		case 'F':
			cl->given |= OPT_FORGET;
			break;
		case 's':
			cl->given |= OPT_SLOW;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		case 'V':
			printf("%s (som) %s\n", prog, SOM_VERSION);
			exit(0);
		case ':':
			usage_error("%s: needs a value", argv[optind - 1]);
		default:
			if (optopt)
				usage_error("-%c: no such option", optopt);
			usage_error("%s: no such option", argv[optind - 1]);
		}
	}
	/* After "--": the rest are arguments. */
	for (; optind < argc; optind++) {
		if (n == 256)
			usage_error("too many arguments");
		words[n++] = argv[optind];
	}
	if (!n) {
		usage(stderr);
		exit(2);
	}
	cl->cmd = words[0];
	cl->args = words + 1;
	cl->nargs = n - 1;
}

int main(int argc, char **argv)
{
	const struct command *c = NULL;
	struct cmdline cl;
	unsigned int i, stray;
	int first = 1;

	parse(argc, argv, &cl);
	for (i = 0; i < NR_COMMANDS; i++)
		if (!strcmp(cl.cmd, commands[i].name))
			c = &commands[i];
	if (!c) {
		fprintf(stderr, "%s: '%s': no such command\n", prog, cl.cmd);
		usage(stderr);
		exit(2);
	}
	stray = cl.given & ~c->opts;
	if (stray)
		usage_error("%s takes no --%s", c->name, opt_name(stray & -stray));
	if (cl.nargs < c->min_args || cl.nargs > c->max_args) {
		fprintf(stderr, "%s: %s: %s arguments\n", prog, c->name,
			cl.nargs < c->min_args ? "too few" : "too many");
		print_synopsis(stderr, c, &first);
		exit(2);
	}
	c->run(&cl);
	return 0;
}
