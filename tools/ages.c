// SPDX-License-Identifier: GPL-2.0
/*
 * somctl ages: how long each process's som memory has gone unused, in
 * aging scans (SOM_IOC_PROC_AGES), and the pool's (aging/idle_bytes). The
 * kernel scans only when told: aging/interval_ms, or a write of 1 to
 * aging/scan (Documentation/admin-guide.md, "Aging"). Looking at any
 * process but one's own needs CAP_SYS_PTRACE.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/som.h>

#include "somctl.h"

/* The columns of the text view: ages [lo, hi], in scans. */
static const struct {
	int lo, hi;
	const char *name;
} buckets[] = {
	{ 0, 0, "0" }, { 1, 1, "1" }, { 2, 3, "2-3" }, { 4, 7, "4-7" },
	{ 8, SOM_AGE_NR - 2, "8-13" }, { SOM_AGE_NR - 1, SOM_AGE_NR - 1, "14+" },
};

#define NR_BUCKETS (sizeof(buckets) / sizeof(buckets[0]))

static int ages_of(int dev, int pid, struct som_proc_ages *a)
{
	memset(a, 0, sizeof(*a));
	a->pid = pid;
	return ioctl(dev, SOM_IOC_PROC_AGES, a) ? errno : 0;
}

static unsigned long long total(const unsigned long long *bytes)
{
	unsigned long long t = 0;
	int i;

	for (i = 0; i < SOM_AGE_NR; i++)
		t += bytes[i];
	return t;
}

/* One row: @pid (0 for the pool), its bytes of each age. */
static void print_row(int pid, const unsigned long long *bytes, int json,
		      int first)
{
	char comm[64], s[32];
	unsigned long long b;
	unsigned int i;
	int age;

	if (pid)
		proc_comm(pid, comm, sizeof(comm), json);
	else
		snprintf(comm, sizeof(comm), "(pool)");
	if (json) {
		printf("%s\n  {\"pid\": %d, \"comm\": \"%s\", \"som_bytes\": %llu, \"idle_bytes\": [",
		       first ? "" : ",", pid, comm, total(bytes));
		for (age = 0; age < SOM_AGE_NR; age++)
			printf("%s%llu", age ? ", " : "", bytes[age]);
		printf("]}");
		return;
	}
	if (pid)
		printf("%8d %-16s", pid, comm);
	else
		printf("%8s %-16s", "-", comm);
	gib_str(total(bytes), s, sizeof(s));
	printf(" %12s", s);
	for (i = 0; i < NR_BUCKETS; i++) {
		for (b = 0, age = buckets[i].lo; age <= buckets[i].hi; age++)
			b += bytes[age];
		gib_str(b, s, sizeof(s));
		printf(" %10s", s);
	}
	printf("\n");
}

/*
 * The pool's bytes by age (aging/idle_bytes) into @bytes[SOM_AGE_NR]:
 * 0, or -1 if the file cannot be read (a module without aging). A file
 * that does not hold that many numbers is fatal.
 */
int pool_idle_bytes(unsigned long long *bytes)
{
	char line[512], *p = line, *end;
	int age;

	if (!read_line(SYSFS "/aging/idle_bytes", line, sizeof(line)))
		return -1;
	for (age = 0; age < SOM_AGE_NR; age++, p = end) {
		bytes[age] = strtoull(p, &end, 10);
		if (end == p)
			die("%s/aging/idle_bytes: not %d numbers", SYSFS,
			    SOM_AGE_NR);
	}
	return 0;
}

static void to_ull(const struct som_proc_ages *a, unsigned long long *bytes)
{
	int age;

	for (age = 0; age < SOM_AGE_NR; age++)
		bytes[age] = a->idle_bytes[age];
}

/* ages's row for @pid: none if it is not named and owns no som memory. */
static int ages_one(int dev, int pid, int named, void *arg)
{
	struct procs_walk *w = arg;
	unsigned long long bytes[SOM_AGE_NR];
	struct som_proc_ages a;
	int err = ages_of(dev, pid, &a);

	to_ull(&a, bytes);
	if (!err && (named || total(bytes)))
		print_row(pid, bytes, w->json, !w->shown++);
	return err;
}

void ages_cmd(const struct cmdline *cl)
{
	struct procs_walk w = { .json = !!(cl->given & OPT_JSON) };
	unsigned long long bytes[SOM_AGE_NR];
	struct som_proc_ages a;
	int dev, i, failed;

	for (i = 0; i < cl->nargs; i++)
		pid_arg(cl->args[i]);
	need_sysfs();
	dev = open_som();
	if (ages_of(dev, 0, &a))
		die("SOM_IOC_PROC_AGES: %s", strerror(errno));
	if (w.json) {
		printf("{\"scans\": %llu, \"processes\": [",
		       (unsigned long long)a.scans);
	} else {
		printf("# %llu aging scans; som memory by scans since last used\n",
		       (unsigned long long)a.scans);
		printf("%8s %-16s %12s", "pid", "command", "som");
		for (i = 0; i < (int)NR_BUCKETS; i++)
			printf(" %10s", buckets[i].name);
		printf("\n");
	}
	failed = each_process(cl, dev, ages_one, &w);
	if (!cl->nargs) {
		if (pool_idle_bytes(bytes))
			die("%s/aging/idle_bytes: %s", SYSFS, strerror(errno));
		print_row(0, bytes, w.json, !w.shown++);
	}
	if (w.json)
		printf("%s]}\n", w.shown ? "\n" : "");
	close(dev);
	if (failed)
		exit(1);
}
