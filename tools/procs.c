// SPDX-License-Identifier: GPL-2.0
/*
 * somctl ps: which processes map som memory and with which entry sizes,
 * as numastat -p shows ordinary memory per node, and how much of it each
 * owns, next to its RSS and its cgroup. The kernel counts it
 * (SOM_IOC_PROC_USAGE, SOM_IOC_PROC_AGES): smaps does not walk
 * PFN-mapped memory, and RSS leaves it out. Looking at any process but
 * one's own needs CAP_SYS_PTRACE.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/som.h>

#include "somctl.h"

/* 0, or the errno of SOM_IOC_PROC_USAGE for @pid. */
static int usage_of(int dev, int pid, struct som_proc_usage *u)
{
	memset(u, 0, sizeof(*u));
	u->pid = pid;
	return ioctl(dev, SOM_IOC_PROC_USAGE, u) ? errno : 0;
}

/*
 * The som memory @pid owns (the regions whose first mapping it made), all
 * ages together; 0 if it cannot be asked.
 */
static unsigned long long owned_by(int dev, int pid)
{
	unsigned long long sum = 0;
	struct som_proc_ages a;
	int i;

	memset(&a, 0, sizeof(a));
	a.pid = pid;
	if (ioctl(dev, SOM_IOC_PROC_AGES, &a))
		return 0;
	for (i = 0; i < SOM_AGE_NR; i++)
		sum += a.idle_bytes[i];
	return sum;
}

/* VmRSS of @pid in bytes (0 for a kernel thread or a process gone). */
static unsigned long long rss_of(int pid)
{
	unsigned long long kb = 0;
	char path[64], line[256];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %llu kB", &kb) == 1)
			break;
	fclose(f);
	return kb * 1024;
}

/*
 * The cgroup (v2) of @pid, "-" without one; made safe for JSON if @json
 * (a path may hold any byte but '/' and NUL).
 */
static void cgroup_of(int pid, char *buf, size_t len, int json)
{
	char path[64], line[4096], *p;
	FILE *f;

	snprintf(buf, len, "-");
	snprintf(path, sizeof(path), "/proc/%d/cgroup", pid);
	f = fopen(path, "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "0::", 3)) {
			line[strcspn(line, "\n")] = '\0';
			snprintf(buf, len, "%s", line + 3);
			break;
		}
	fclose(f);
	for (p = buf; json && *p; p++)
		if (*p == '"' || *p == '\\' || !isprint((unsigned char)*p))
			*p = '?';
}

/* The command name of @pid, made safe for JSON if @json; "?" if gone. */
void proc_comm(int pid, char *buf, size_t len, int json)
{
	char path[64], *p;

	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	if (!read_line(path, buf, len))
		snprintf(buf, len, "?");
	/* comm may hold any byte: keep the JSON valid. */
	for (p = buf; json && *p; p++)
		if (*p == '"' || *p == '\\' || !isprint((unsigned char)*p))
			*p = '?';
}

/* A process id argument, or a usage error. */
int pid_arg(const char *s)
{
	char *end;
	long pid;

	errno = 0;
	pid = strtol(s, &end, 10);
	if (errno || !isdigit((unsigned char)s[0]) || *end || pid <= 0 ||
	    pid > 0x3fffffff)
		usage_error("'%s': not a process id", s);
	return (int)pid;
}

static void print_one(int dev, int pid, const struct som_proc_usage *u,
		      int json, int first)
{
	unsigned long long mapped = u->entries_1g * GIB +
				    u->entries_2m * (2ULL << 20) +
				    u->entries_4k * 4096;
	unsigned long long owned = owned_by(dev, pid), rss = rss_of(pid);
	char comm[64], cgroup[4096], a[32], b[32], c[32], d[32];

	proc_comm(pid, comm, sizeof(comm), json);
	cgroup_of(pid, cgroup, sizeof(cgroup), json);
	if (json) {
		printf("%s\n  {\"pid\": %d, \"comm\": \"%s\", \"mappings\": %llu, \"som_bytes\": %llu, \"entry_bytes\": %llu, \"entries\": {\"1g\": %llu, \"2m\": %llu, \"4k\": %llu}, \"owned_bytes\": %llu, \"rss_bytes\": %llu, \"cgroup\": \"%s\"}",
		       first ? "" : ",", pid, comm,
		       (unsigned long long)u->mappings,
		       (unsigned long long)u->mapped_bytes, mapped,
		       (unsigned long long)u->entries_1g,
		       (unsigned long long)u->entries_2m,
		       (unsigned long long)u->entries_4k, owned, rss, cgroup);
		return;
	}
	gib_str(u->mapped_bytes, a, sizeof(a));
	gib_str(mapped, b, sizeof(b));
	gib_str(owned, c, sizeof(c));
	gib_str(rss + owned, d, sizeof(d));
	printf("%8d %-16s %8llu %12s %12s %8llu %8llu %8llu %12s %12s %s\n",
	       pid, comm, (unsigned long long)u->mappings, a, b,
	       (unsigned long long)u->entries_1g,
	       (unsigned long long)u->entries_2m,
	       (unsigned long long)u->entries_4k, c, d, cgroup);
}

/* ps's row for @pid: none if it is not named and maps no som memory. */
static int ps_one(int dev, int pid, int named, void *arg)
{
	struct procs_walk *w = arg;
	struct som_proc_usage u;
	int err = usage_of(dev, pid, &u);

	if (!err && (named || u.mappings))
		print_one(dev, pid, &u, w->json, !w->shown++);
	return err;
}

/**
 * each_process() - ask about the processes @cl names, or every process
 * @cl: the command line: its arguments are process ids, or none
 * @dev: /dev/som
 * @one: asks the kernel and prints a row; returns 0 or the errno
 * @w: passed to @one
 *
 * A process named that does not answer is an error, said on stderr; of
 * the others, those the caller may not see are counted and said at the
 * end. Return: whether something failed.
 */
int each_process(const struct cmdline *cl, int dev,
		 int (*one)(int dev, int pid, int named, void *w),
		 struct procs_walk *w)
{
	int i, err, failed = 0, hidden = 0;
	struct dirent *de;
	char *end;
	DIR *d;

	for (i = 0; i < cl->nargs; i++) {
		int pid = pid_arg(cl->args[i]);

		err = one(dev, pid, 1, w);
		if (err) {
			fprintf(stderr, "%s: %d: %s\n", prog, pid,
				err == ESRCH ? "no such process" :
				denied(err) ? "permission denied (CAP_SYS_PTRACE is needed)" :
				strerror(err));
			failed = 1;
		}
	}
	if (cl->nargs)
		return failed;
	d = opendir("/proc");
	if (!d)
		die("/proc: %s", strerror(errno));
	while ((de = readdir(d))) {
		long pid = strtol(de->d_name, &end, 10);

		if (*end || pid <= 0)
			continue;
		hidden += denied(one(dev, (int)pid, 0, w));
	}
	closedir(d);
	if (hidden)
		fprintf(stderr, "%s: %d processes not shown: CAP_SYS_PTRACE is needed to see other processes\n",
			prog, hidden);
	return failed || hidden;
}

void ps_cmd(const struct cmdline *cl)
{
	struct procs_walk w = { .json = !!(cl->given & OPT_JSON) };
	int dev, i, failed;

	for (i = 0; i < cl->nargs; i++)
		pid_arg(cl->args[i]);
	dev = open_som();
	if (w.json)
		printf("[");
	else
		printf("%8s %-16s %8s %12s %12s %8s %8s %8s %12s %12s %s\n",
		       "pid", "command", "mappings", "som", "mapped", "1G",
		       "2M", "4K", "owned", "rss+owned", "cgroup");
	failed = each_process(cl, dev, ps_one, &w);
	if (w.json)
		printf("%s]\n", w.shown ? "\n" : "");
	close(dev);
	if (failed)
		exit(1);
}
