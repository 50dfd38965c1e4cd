// SPDX-License-Identifier: GPL-2.0
/*
 * somrun: run a program with its large anonymous memory on som, through
 * the libsomrun.so preload. The options become SOMRUN_* variables that
 * the shim reads (see somrun(1)); this program checks every option with
 * the shim's own parsers, checks that /dev/som can be used, finds the
 * shim, and execs the program. Exit status before the program runs: 2 for
 * a usage error, 1 when somrun cannot do its job; then 126 or 127 as a
 * shell has them.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "parse.h"

#ifndef SOMRUN_LIBDIR
#define SOMRUN_LIBDIR "/usr/local/lib/som"
#endif
#ifndef SOM_VERSION
#define SOM_VERSION "unknown"
#endif

#define EXIT_USAGE 2

static void usage(FILE *f)
{
	fprintf(f,
		"usage: somrun [options] [--] program [args...]\n"
		"  -t, --threshold=SIZE   smallest mapping put on som (default 2M;\n"
		"                         K, M, G, T suffixes)\n"
		"  -f, --fail             fail allocations the pool cannot hold,\n"
		"                         instead of using ordinary memory\n"
		"      --fork=copy|zero   what a forked child gets of som memory\n"
		"      --malloc=auto|on|off  answer large malloc()s (auto: unless\n"
		"                         the allocator is jemalloc or tcmalloc)\n"
		"      --malloc-cache=SIZE  freed malloc() blocks kept for reuse\n"
		"                         (default 32M; 0: none)\n"
		"  -p, --policy=POLICY    local, preferred:N, bind:NODES,\n"
		"                         interleave:NODES (e.g. interleave:0-1)\n"
		"  -s, --summary[=FILE]   one line per process at exit (stderr,\n"
		"                         or appended to FILE)\n"
		"  -h, --help             this text\n"
		"      --version          somrun's version\n");
}

static void die(const char *fmt, const char *arg)
{
	fprintf(stderr, "somrun: ");
	fprintf(stderr, fmt, arg);
	fputc('\n', stderr);
	exit(1);
}

/* A bad command line: say what, point at --help, exit 2. */
static void usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, "somrun: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, " (somrun --help lists the options)\n");
	exit(EXIT_USAGE);
}

/* The shim: $SOMRUN_LIB, next to this program, ../lib/som, LIBDIR. */
static const char *find_shim(void)
{
	static char path[PATH_MAX];
	static const char *const rel[] = {
		"/libsomrun.so", "/../lib/som/libsomrun.so",
	};
	const char *env = getenv("SOMRUN_LIB");
	char self[PATH_MAX - 32];
	ssize_t n;
	size_t i;

	if (env && *env)
		return env;
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = 0;
		*strrchr(self, '/') = 0;
		for (i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
			if (snprintf(path, sizeof(path), "%s%s", self,
				     rel[i]) >= (int)sizeof(path))
				continue;
			if (!access(path, R_OK))
				return path;
		}
	}
	snprintf(path, sizeof(path), "%s/libsomrun.so", SOMRUN_LIBDIR);
	if (access(path, R_OK))
		die("cannot find libsomrun.so (set SOMRUN_LIB)", NULL);
	return path;
}

static void check_dev(void)
{
	int fd = open("/dev/som", O_RDWR | O_CLOEXEC);

	if (fd >= 0) {
		close(fd);
		return;
	}
	if (errno == ENOENT || errno == ENODEV || errno == ENXIO)
		die("/dev/som: %s: is the som module loaded? (modprobe som)",
		    strerror(errno));
	if (errno == EACCES || errno == EPERM)
		die("/dev/som: %s (the som group may use it; see somrun(1))",
		    strerror(errno));
	die("/dev/som: %s", strerror(errno));
}

static void set(const char *name, const char *value)
{
	if (setenv(name, value, 1))
		die("setenv: %s", strerror(errno));
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "threshold", required_argument, NULL, 't' },
		{ "fail", no_argument, NULL, 'f' },
		{ "fork", required_argument, NULL, 'F' },
		{ "malloc", required_argument, NULL, 'm' },
		{ "malloc-cache", required_argument, NULL, 'c' },
		{ "policy", required_argument, NULL, 'p' },
		{ "summary", optional_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned long long nodes[SOM_NODE_WORDS];
	const char *shim, *old;
	unsigned int mode;
	char *preload;
	size_t size;
	int c;

	/*
	 * Every value is checked here, with the parsers the shim uses, so
	 * that a bad one stops somrun before the program runs rather than
	 * becoming a warning and a default inside it.
	 */
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:t:fp:s::h", opts, NULL)) != -1) {
		switch (c) {
		case 't':
			if (som_parse_threshold(optarg, &size))
				usage_error("--threshold=%s: not a size (e.g. 64K, 2M, 1G)",
					    optarg);
			set("SOMRUN_THRESHOLD", optarg);
			break;
		case 'f':
			set("SOMRUN_ON_EMPTY", "fail");
			break;
		case 'F':
			if (strcmp(optarg, "copy") && strcmp(optarg, "zero"))
				usage_error("--fork=%s: copy or zero", optarg);
			set("SOMRUN_FORK", optarg);
			break;
		case 'm':
			if (!strcmp(optarg, "auto"))
				unsetenv("SOMRUN_MALLOC");
			else if (!strcmp(optarg, "on") || !strcmp(optarg, "off"))
				set("SOMRUN_MALLOC", optarg);
			else
				usage_error("--malloc=%s: auto, on or off", optarg);
			break;
		case 'c': {
			unsigned long long c;

			if (som_parse_size(optarg, &c) || c > SIZE_MAX >> 1)
				usage_error("--malloc-cache=%s: not a size (e.g. 0, 64M)",
					    optarg);
			set("SOMRUN_MALLOC_CACHE", optarg);
			break;
		}
		case 'p':
			if (som_parse_policy(optarg, &mode, nodes))
				usage_error("--policy=%s: local, preferred:N, bind:NODES or interleave:NODES (nodes 0 to 1023, e.g. 0-1,3)",
					    optarg);
			set("SOMRUN_POLICY", optarg);
			break;
		case 's':
			if (optarg && !*optarg)
				usage_error("--summary=%s: give a file name, or no =FILE for standard error",
					    optarg);
			/* The shim reads "1" as stderr and "0" as off. */
			if (optarg && (!strcmp(optarg, "0") || !strcmp(optarg, "1")))
				set("SOMRUN_SUMMARY", !strcmp(optarg, "0") ? "./0" : "./1");
			else
				set("SOMRUN_SUMMARY", optarg ? optarg : "1");
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("somrun (som) %s\n", SOM_VERSION);
			return 0;
		case ':':
			usage_error("%s: needs a value", argv[optind - 1]);
			break;
		default:
			if (optopt) {
				char opt[3] = { '-', (char)optopt, 0 };

				usage_error("%s: no such option", opt);
			}
			usage_error("%s: no such option", argv[optind - 1]);
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return EXIT_USAGE;
	}
	check_dev();
	shim = find_shim();
	old = getenv("LD_PRELOAD");
	if (old && *old) {
		if (asprintf(&preload, "%s:%s", shim, old) < 0)
			die("%s", strerror(ENOMEM));
	} else {
		preload = (char *)shim;
	}
	set("LD_PRELOAD", preload);
	/*
	 * tcmalloc (gperftools), if the program uses it: its heap through
	 * mmap(), which the library answers, rather than sbrk(), which it
	 * cannot. Others ignore the variable; a value of the user's stays.
	 */
	if (setenv("TCMALLOC_SKIP_SBRK", "1", 0))
		die("setenv: %s", strerror(errno));
	execvp(argv[optind], argv + optind);
	/* As a shell says it: 126 found but not runnable, 127 not found. */
	fprintf(stderr, "somrun: %s: %s\n", argv[optind], strerror(errno));
	return errno == ENOENT ? 127 : 126;
}
