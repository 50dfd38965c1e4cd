// SPDX-License-Identifier: GPL-2.0
/*
 * somctl ps: which processes map som memory and with which entry sizes,
 * as numastat -p shows ordinary memory per node. The kernel counts it
 * (SOM_IOC_PROC_USAGE): smaps does not walk PFN-mapped memory. Looking at
 * any process but one's own needs CAP_SYS_PTRACE.
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

static void comm_of(int pid, char *buf, size_t len)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	if (!read_line(path, buf, len))
		snprintf(buf, len, "?");
}

static void print_one(int pid, const struct som_proc_usage *u, int json,
		      int first)
{
	unsigned long long mapped = u->entries_1g * GIB +
				    u->entries_2m * (2ULL << 20) +
				    u->entries_4k * 4096;
	char comm[64], a[32], b[32];

	comm_of(pid, comm, sizeof(comm));
	if (json) {
		/* comm may hold any byte: keep the JSON valid. */
		char *p;

		for (p = comm; *p; p++)
			if (*p == '"' || *p == '\\' || !isprint((unsigned char)*p))
				*p = '?';
		printf("%s\n  {\"pid\": %d, \"comm\": \"%s\", \"mappings\": %llu, \"som_bytes\": %llu, \"entry_bytes\": %llu, \"entries\": {\"1g\": %llu, \"2m\": %llu, \"4k\": %llu}}",
		       first ? "" : ",", pid, comm,
		       (unsigned long long)u->mappings,
		       (unsigned long long)u->mapped_bytes, mapped,
		       (unsigned long long)u->entries_1g,
		       (unsigned long long)u->entries_2m,
		       (unsigned long long)u->entries_4k);
		return;
	}
	gib_str(u->mapped_bytes, a, sizeof(a));
	gib_str(mapped, b, sizeof(b));
	printf("%8d %-16s %8llu %12s %12s %8llu %8llu %8llu\n", pid, comm,
	       (unsigned long long)u->mappings, a, b,
	       (unsigned long long)u->entries_1g,
	       (unsigned long long)u->entries_2m,
	       (unsigned long long)u->entries_4k);
}

void ps_cmd(const struct cmdline *cl)
{
	struct som_proc_usage u;
	int dev, json = !!(cl->given & OPT_JSON), i, n = 0, err, failed = 0;
	int hidden = 0;
	struct dirent *de;
	char *end;
	DIR *d;

	for (i = 0; i < cl->nargs; i++) {
		long pid;

		errno = 0;
		pid = strtol(cl->args[i], &end, 10);
		if (errno || !isdigit((unsigned char)cl->args[i][0]) || *end ||
		    pid <= 0 || pid > 0x3fffffff)
			usage_error("'%s': not a process id", cl->args[i]);
	}
	dev = open_som();
	if (json)
		printf("[");
	else
		printf("%8s %-16s %8s %12s %12s %8s %8s %8s\n", "pid", "command",
		       "mappings", "som", "mapped", "1G", "2M", "4K");
	if (cl->nargs) {
		/* The processes named: each must answer. */
		for (i = 0; i < cl->nargs; i++) {
			int pid = (int)strtol(cl->args[i], NULL, 10);

			err = usage_of(dev, pid, &u);
			if (err) {
				fprintf(stderr, "%s: %d: %s\n", prog, pid,
					err == ESRCH ? "no such process" :
					denied(err) ? "permission denied (CAP_SYS_PTRACE is needed)" :
					strerror(err));
				failed = 1;
				continue;
			}
			print_one(pid, &u, json, !n++);
		}
	} else {
		/* Every process that maps som memory now. */
		d = opendir("/proc");
		if (!d)
			die("/proc: %s", strerror(errno));
		while ((de = readdir(d))) {
			long pid = strtol(de->d_name, &end, 10);

			if (*end || pid <= 0)
				continue;
			err = usage_of(dev, (int)pid, &u);
			hidden += denied(err);
			if (err || !u.mappings)
				continue;
			print_one((int)pid, &u, json, !n++);
		}
		closedir(d);
	}
	if (json)
		printf("%s]\n", n ? "\n" : "");
	close(dev);
	if (hidden) {
		fprintf(stderr, "%s: %d processes not shown: CAP_SYS_PTRACE is needed to see other processes\n",
			prog, hidden);
		failed = 1;
	}
	if (failed)
		exit(1);
}
