// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The shim's settings, read once from the environment that somrun(1)
 * prepares, and its messages. See somrun(1) for each variable.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/som.h>

#include "parse.h"
#include "shim.h"

struct shim_config shim_cfg = {
	.threshold = SHIM_BLOCK,
	.malloc_mode = -1,
	.malloc_cache = 32UL << 20,
};

struct shim_stats shim_stats;

static void shim_vwarn(const char *fmt, va_list ap)
{
	char buf[320];
	int n;

	n = snprintf(buf, sizeof(buf), "somrun: ");
	n += vsnprintf(buf + n, sizeof(buf) - n - 1, fmt, ap);
	if (n > (int)sizeof(buf) - 2)
		n = sizeof(buf) - 2;
	buf[n++] = '\n';
	if (write(STDERR_FILENO, buf, n) < 0)
		return;
}

void shim_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	shim_vwarn(fmt, ap);
	va_end(ap);
}

void shim_warn_once(bool *done, const char *fmt, ...)
{
	va_list ap;

	if (__atomic_exchange_n(done, true, __ATOMIC_RELAXED))
		return;
	va_start(ap, fmt);
	shim_vwarn(fmt, ap);
	va_end(ap);
}

/* SOMRUN_POLICY: local, preferred:N, bind:NODES, interleave:NODES. */
static void parse_policy(const char *s)
{
	if (som_parse_policy(s, &shim_cfg.policy_mode, shim_cfg.policy_nodes)) {
		shim_warn("SOMRUN_POLICY=%s: not a policy; using local", s);
		return;
	}
	shim_cfg.has_policy = shim_cfg.policy_mode != SOM_POLICY_LOCAL;
}

static char summary_path[PATH_MAX];

static void shim_read_config(void)
{
	const char *v;

	v = getenv("SOMRUN_THRESHOLD");
	if (v) {
		size_t t;

		if (!som_parse_threshold(v, &t))
			shim_cfg.threshold = shim_round_up(t, SHIM_PAGE);
		else
			shim_warn("SOMRUN_THRESHOLD=%s: not a size; using 2M", v);
	}
	v = getenv("SOMRUN_ON_EMPTY");
	shim_cfg.fail_when_empty = v && !strcmp(v, "fail");
	v = getenv("SOMRUN_FORK");
	shim_cfg.fork_mode = v && !strcmp(v, "zero") ? SHIM_FORK_ZERO :
						       SHIM_FORK_COPY;
	v = getenv("SOMRUN_MALLOC");
	if (v && (!strcmp(v, "0") || !strcmp(v, "off")))
		shim_cfg.malloc_mode = 0;
	else if (v && (!strcmp(v, "1") || !strcmp(v, "on")))
		shim_cfg.malloc_mode = 1;
	v = getenv("SOMRUN_MALLOC_CACHE");
	if (v) {
		unsigned long long c;

		if (!som_parse_size(v, &c) && c <= SIZE_MAX >> 1)
			shim_cfg.malloc_cache = c;
		else
			shim_warn("SOMRUN_MALLOC_CACHE=%s: not a size; using 32M", v);
	}
	v = getenv("SOMRUN_POLICY");
	if (v && *v)
		parse_policy(v);
	/*
	 * A copy: programs that set their process title (redis, nginx,
	 * postgres) write over the environment's strings.
	 */
	v = getenv("SOMRUN_SUMMARY");
	if (v && *v && strcmp(v, "0")) {
		if (strlen(v) < sizeof(summary_path)) {
			strcpy(summary_path, v);
			shim_cfg.summary = summary_path;
		} else {
			shim_warn("SOMRUN_SUMMARY: path too long; no summary");
		}
	}
}

static int shim_state;	/* 0 not read, 1 reading, 2 done */

/*
 * Read the settings, once. Any entry point may be the first (another
 * library's constructor can map memory before ours runs); a call made
 * while the settings are being read sees the defaults.
 */
void shim_init(void)
{
	int expected = 0;

	if (__atomic_load_n(&shim_state, __ATOMIC_ACQUIRE) == 2)
		return;
	if (!__atomic_compare_exchange_n(&shim_state, &expected, 1, false,
					 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return;
	/*
	 * The fork handlers go in first of all: before an allocator whose
	 * first mmap() brought us here registers its own, so that ours copy
	 * som memory back in the child before its handler touches it, and
	 * take the table lock only after it has locked its mutexes.
	 */
	shim_fork_init();
	shim_read_config();
	__atomic_store_n(&shim_state, 2, __ATOMIC_RELEASE);
}

__attribute__((constructor)) static void shim_constructor(void)
{
	shim_init();
}

__attribute__((destructor)) static void shim_destructor(void)
{
	if (shim_cfg.summary)
		shim_summary();
}
