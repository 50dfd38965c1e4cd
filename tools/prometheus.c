// SPDX-License-Identifier: GPL-2.0
/*
 * somctl status --prometheus: the pool in the Prometheus text exposition
 * format (version 0.0.4), for node_exporter's textfile collector or any
 * scraper: each metric with its HELP and TYPE lines, then its samples;
 * the pool's figures without labels, each node's with node="N", each
 * source's with source="NAME", each cgroup's with cgroup="/PATH" (below
 * the cgroup2 mount), each user's with uid="N". Everything comes from
 * /sys/kernel/mm/som, but the cgroups' and users' figures, from
 * SOM_IOC_CGROUP and SOM_IOC_USER.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <linux/som.h>

#include "somctl.h"

/* A metric: its name, its type and what it is. */
struct metric {
	const char *name;
	const char *type;	/* "gauge" or "counter" */
	const char *help;
};

static void header(const struct metric *m)
{
	printf("# HELP %s %s\n# TYPE %s %s\n", m->name, m->help, m->name,
	       m->type);
}

/* A label value, escaped as the format wants (\\, \" and \n). */
static void label_value(const char *s)
{
	for (; *s; s++) {
		if (*s == '\\' || *s == '"')
			printf("\\%c", *s);
		else if (*s == '\n')
			printf("\\n");
		else
			putchar(*s);
	}
}

/* One sample of @name, with one label or none. */
static void sample(const char *name, const char *label, const char *value,
		   unsigned long long v)
{
	printf("%s", name);
	if (label) {
		printf("{%s=\"", label);
		label_value(value);
		printf("\"}");
	}
	printf(" %llu\n", v);
}

/*
 * /sys/kernel/mm/som/@dir/@file (@dir may be NULL) as a number into @v;
 * 0, or -1 if it cannot be read (a module without that file): the sample
 * is then left out rather than shown as 0.
 */
static int sysfs_u64(const char *dir, const char *file, unsigned long long *v)
{
	char path[PATH_MAX], buf[64], *end;

	snprintf(path, sizeof(path), SYSFS "%s%s/%s", dir ? "/" : "",
		 dir ? dir : "", file);
	if (!read_line(path, buf, sizeof(buf)))
		return -1;
	*v = strtoull(buf, &end, 10);
	return end == buf ? -1 : 0;
}

/* A sample whose value is a file's, if the file can be read. */
static void sample_file(const char *name, const char *label,
			const char *value, const char *dir, const char *file)
{
	unsigned long long v;

	if (!sysfs_u64(dir, file, &v))
		sample(name, label, value, v);
}

/* The pool's figures, and each node's where the node has them too. */
static const struct {
	struct metric m;
	const char *file;
	int per_node;
} pool_metrics[] = {
	{ { "som_total_bytes", "gauge", "Memory in the pool." },
	  "total_bytes", 1 },
	{ { "som_free_bytes", "gauge", "Free memory no mapping has reserved." },
	  "free_bytes", 1 },
	{ { "som_reserved_bytes", "gauge",
	    "Free memory reserved by mappings, not touched yet." },
	  "reserved_bytes", 1 },
	{ { "som_zeroed_bytes", "gauge",
	    "Free or reserved memory already zeroed." },
	  "zeroed_bytes", 1 },
	{ { "som_unmovable_total_bytes", "gauge",
	    "Memory in the pool's unmovable chunks." },
	  "unmovable_total_bytes", 1 },
	{ { "som_unmovable_free_bytes", "gauge",
	    "Free memory in unmovable chunks." },
	  "unmovable_free_bytes", 1 },
	{ { "som_memory_errors_total", "counter",
	    "Memory errors reported in the pool's memory." },
	  "poison_events", 1 },
	{ { "som_poisoned_pages", "gauge", "4 KiB pages with a memory error." },
	  "poisoned_pages", 1 },
	{ { "som_retired_bytes", "gauge",
	    "Memory the pool retired for memory errors." },
	  "retired_bytes", 1 },
	{ { "som_poisoned_pages_outside", "gauge",
	    "Poisoned pages of removed sources, retired again if added back." },
	  "poisoned_pages_outside", 0 },
	{ { "som_metadata_bytes", "gauge",
	    "Everything som allocates to describe its memory." },
	  "metadata_bytes", 0 },
	{ { "som_free_low_bytes", "gauge",
	    "The low watermark of free memory (0: none)." },
	  "free_low_bytes", 0 },
	{ { "som_free_low", "gauge",
	    "1 while free memory is under the low watermark." },
	  "free_low", 0 },
	{ { "som_free_low_events_total", "counter",
	    "Times free memory went under the low watermark." },
	  "free_low_events", 0 },
};

#define NR_POOL_METRICS (sizeof(pool_metrics) / sizeof(pool_metrics[0]))

/* Counters with one label, each value from its own file. */
static const struct metric faults = {
	"som_faults_total", "counter", "Page faults on som memory, by entry size."
};
static const struct metric zero_bytes = {
	"som_zeroing_bytes_total", "counter",
	"Memory zeroed, by the worker ahead of time or in faults."
};
static const struct metric zero_seconds = {
	"som_zeroing_seconds_total", "counter",
	"CPU time spent zeroing, by the worker or in faults."
};
static const struct metric idle = {
	"som_idle_bytes", "gauge",
	"Memory by aging scans since it was last used (14: 14 or more)."
};
static const struct metric source_bytes = {
	"som_source_bytes", "gauge", "Memory each source gave the pool."
};
static const struct metric source_used = {
	"som_source_used_bytes", "gauge", "Memory of each source in use."
};

static const struct metric tier_bytes = {
	"som_tier_bytes", "gauge", "Memory of each tier's sources."
};
static const struct metric tier_free = {
	"som_tier_free_bytes", "gauge",
	"Memory of each tier not allocated to any mapping."
};
static const struct metric tier_moved = {
	"som_tier_moved_bytes_total", "counter",
	"Memory tiering moved, by the tier it moved to (demoted: to slow)."
};
static const struct metric tier_short = {
	"som_tier_short_bytes_total", "counter",
	"Memory tiering wanted to move and found no room for."
};

static const char *const migration[] = {
	"blocks_moved", "bytes_copied", "blocks_evacuated", "blocks_placed",
	"gib_assembled", "compact_runs", "compact_failed",
};

#define NR_MIGRATION (sizeof(migration) / sizeof(migration[0]))

/*
 * The pool's figures; each node's under a name of its own (som_node_...),
 * so that summing a metric never counts memory twice.
 */
static void print_pool(void)
{
	static char nodes[SOM_MAX_NODES][16];
	int nr = read_nodes(nodes, SOM_MAX_NODES), i;
	char dir[32], name[64];
	unsigned int k;

	for (k = 0; k < NR_POOL_METRICS; k++) {
		const struct metric *m = &pool_metrics[k].m;
		struct metric node = { name, m->type, NULL };
		char help[128];

		header(m);
		sample_file(m->name, NULL, NULL, NULL, pool_metrics[k].file);
		if (!pool_metrics[k].per_node)
			continue;
		snprintf(name, sizeof(name), "som_node_%s", m->name + 4);
		snprintf(help, sizeof(help), "%s By NUMA node.", m->help);
		node.help = help;
		header(&node);
		for (i = 0; i < nr; i++) {
			snprintf(dir, sizeof(dir), "nodes/%.15s", nodes[i]);
			sample_file(name, "node", nodes[i] + 4, dir,
				    pool_metrics[k].file);
		}
	}
}

static void print_activity(void)
{
	static const char *const size[] = { "1g", "2m", "4k" };
	static const char *const file[] = { "faults_pud", "faults_pmd",
					    "faults_pte" };
	static const char *const by[] = { "worker", "fault" };
	char name[64], file_ns[32];
	unsigned int k;

	unsigned long long ns;

	header(&faults);
	for (k = 0; k < 3; k++)
		sample_file(faults.name, "size", size[k], NULL, file[k]);
	header(&zero_bytes);
	for (k = 0; k < 2; k++) {
		snprintf(name, sizeof(name), "zero_%s_bytes", by[k]);
		sample_file(zero_bytes.name, "by", by[k], NULL, name);
	}
	header(&zero_seconds);
	for (k = 0; k < 2; k++) {
		snprintf(file_ns, sizeof(file_ns), "zero_%s_ns", by[k]);
		if (!sysfs_u64(NULL, file_ns, &ns))
			printf("%s{by=\"%s\"} %llu.%09llu\n",
			       zero_seconds.name, by[k], ns / 1000000000ULL,
			       ns % 1000000000ULL);
	}
	for (k = 0; k < NR_MIGRATION; k++) {
		struct metric m = { name, "counter",
				    "What som's migration did (migration/)." };

		snprintf(name, sizeof(name), "som_migration_%s_total",
			 migration[k]);
		header(&m);
		sample_file(name, NULL, NULL, "migration", migration[k]);
	}
}

static void print_ages(void)
{
	unsigned long long bytes[SOM_AGE_NR];
	char age[8];
	int a;

	if (pool_idle_bytes(bytes))
		return;
	header(&idle);
	for (a = 0; a < SOM_AGE_NR; a++) {
		snprintf(age, sizeof(age), "%d", a);
		sample(idle.name, "age", age, bytes[a]);
	}
}

static void print_tiers_prometheus(void)
{
	static const char *const tiers[] = { "fast", "slow" };
	static const char *const moved[] = { "promoted_bytes",
					     "demoted_bytes" };
	char file[32];
	int i;

	header(&tier_bytes);
	for (i = 0; i < 2; i++) {
		snprintf(file, sizeof(file), "%s_bytes", tiers[i]);
		sample_file(tier_bytes.name, "tier", tiers[i], "tiering", file);
	}
	header(&tier_free);
	for (i = 0; i < 2; i++) {
		snprintf(file, sizeof(file), "%s_free_bytes", tiers[i]);
		sample_file(tier_free.name, "tier", tiers[i], "tiering", file);
	}
	header(&tier_moved);
	for (i = 0; i < 2; i++)
		sample_file(tier_moved.name, "to", tiers[i], "tiering",
			    moved[i]);
	header(&tier_short);
	sample_file(tier_short.name, NULL, NULL, "tiering", "short_bytes");
}

static void print_sources(void)
{
	char dir[PATH_MAX];
	struct dirent **names;
	int n, i, pass;

	n = scandir(SYSFS "/sources", &names, NULL, alphasort);
	for (pass = 0; pass < 2; pass++) {
		const struct metric *m = pass ? &source_used : &source_bytes;

		header(m);
		for (i = 0; i < n; i++) {
			if (names[i]->d_name[0] == '.')
				continue;
			snprintf(dir, sizeof(dir), "sources/%s",
				 names[i]->d_name);
			sample_file(m->name, "source", names[i]->d_name, dir,
				    pass ? "used_bytes" : "bytes");
		}
	}
	for (i = 0; i < n; i++)
		free(names[i]);
	if (n >= 0)
		free(names);
}

static const struct metric cgroup_metrics[] = {
	{ "som_cgroup_usage_bytes", "gauge",
	  "som memory charged to the cgroup and its descendants." },
	{ "som_cgroup_peak_bytes", "gauge",
	  "The most som memory the cgroup and its descendants have held." },
	{ "som_cgroup_limit_bytes", "gauge",
	  "The cgroup's own som limit (cgroups without one have no sample)." },
	{ "som_cgroup_failures_total", "counter",
	  "Reservations refused because of the cgroup's limit." },
};

#define NR_CGROUP_METRICS (sizeof(cgroup_metrics) / sizeof(cgroup_metrics[0]))

/* The cgroups' figures, read in one walk so that they agree. */
struct cgroup_rows {
	struct cgroup_row {
		char *rel;
		struct som_cgroup c;
	} *v;
	int n;
};

static void cgroup_collect(const char *rel, const struct som_cgroup *c,
			   void *arg)
{
	struct cgroup_rows *rows = arg;
	struct cgroup_row *v;

	v = realloc(rows->v, (rows->n + 1) * sizeof(*v));
	if (!v)
		die("out of memory");
	rows->v = v;
	v[rows->n].rel = strdup(rel);
	if (!v[rows->n].rel)
		die("out of memory");
	v[rows->n++].c = *c;
}

static void print_cgroups_prometheus(void)
{
	struct cgroup_rows rows = { NULL, 0 };
	unsigned long long v[4];
	unsigned int k;
	int i;

	if (each_cgroup(cgroup_collect, &rows))
		return;
	for (k = 0; k < NR_CGROUP_METRICS; k++) {
		header(&cgroup_metrics[k]);
		for (i = 0; i < rows.n; i++) {
			const struct som_cgroup *c = &rows.v[i].c;

			v[0] = c->usage;
			v[1] = c->peak;
			v[2] = c->limit;
			v[3] = c->failures;
			if (k != 2 || c->limit != SOM_CGROUP_NO_LIMIT)
				sample(cgroup_metrics[k].name, "cgroup",
				       rows.v[i].rel, v[k]);
		}
	}
	for (i = 0; i < rows.n; i++)
		free(rows.v[i].rel);
	free(rows.v);
}

static const struct metric user_metrics[] = {
	{ "som_user_usage_bytes", "gauge", "som memory charged to the user." },
	{ "som_user_peak_bytes", "gauge",
	  "The most som memory the user has held." },
	{ "som_user_failures_total", "counter",
	  "Reservations refused because of the per-user limit." },
};

#define NR_USER_METRICS (sizeof(user_metrics) / sizeof(user_metrics[0]))

static const struct metric uid_limit = {
	"som_uid_limit_bytes", "gauge",
	"The limit of each user's som memory (no sample: none).",
};

struct user_rows {
	struct som_user *v;
	int n;
};

static void user_collect(const struct som_user *u, void *arg)
{
	struct user_rows *rows = arg;
	struct som_user *v;

	v = realloc(rows->v, (rows->n + 1) * sizeof(*v));
	if (!v)
		die("out of memory");
	rows->v = v;
	v[rows->n++] = *u;
}

static void print_users_prometheus(void)
{
	unsigned long long v[3], limit = user_limit();
	struct user_rows rows = { NULL, 0 };
	char uid[16];
	unsigned int k;
	int i;

	if (each_user(user_collect, &rows))
		return;
	header(&uid_limit);
	if (limit != SOM_CGROUP_NO_LIMIT)
		sample(uid_limit.name, NULL, NULL, limit);
	for (k = 0; k < NR_USER_METRICS; k++) {
		header(&user_metrics[k]);
		for (i = 0; i < rows.n; i++) {
			v[0] = rows.v[i].usage;
			v[1] = rows.v[i].peak;
			v[2] = rows.v[i].failures;
			snprintf(uid, sizeof(uid), "%u", rows.v[i].uid);
			sample(user_metrics[k].name, "uid", uid, v[k]);
		}
	}
	free(rows.v);
}

void print_prometheus(void)
{
	print_pool();
	print_activity();
	print_ages();
	print_tiers_prometheus();
	print_sources();
	print_cgroups_prometheus();
	print_users_prometheus();
}
