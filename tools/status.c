// SPDX-License-Identifier: GPL-2.0
/*
 * somctl status: the pool as an aligned table (all, per node, per source)
 * or as JSON, once or every few seconds (--watch); --prometheus is
 * prometheus.c's. Everything comes from
 * /sys/kernel/mm/som (Documentation/ABI/testing/sysfs-kernel-mm-som).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "somctl.h"

/* The byte counters of the pool and of each node, in column order. */
static const char *const counters[] = {
	"total_bytes", "free_bytes", "reserved_bytes", "zeroed_bytes",
	"unmovable_total_bytes", "unmovable_free_bytes",
};
#define NR_COUNTERS (sizeof(counters) / sizeof(counters[0]))

/* struct page would cost 64 bytes per 4 KiB page of memory. */
#define STRUCT_PAGE_PER_BYTE 64

struct source {
	char name[64], kind[16], nodes[32], tier[8];
	unsigned long long bytes, used, errors, retired;
	int struct_page, movable;
};

/* The sources, sorted by name; returns how many (at most @max). */
static int read_sources(struct source *s, int max)
{
	char path[PATH_MAX], buf[16];
	struct dirent **names;
	int n, i, nr = 0;

	n = scandir(SYSFS "/sources", &names, NULL, alphasort);
	for (i = 0; i < n; i++) {
		const char *d = names[i]->d_name;

		if (d[0] != '.' && nr < max) {
			struct source *x = &s[nr++];

			memset(x, 0, sizeof(*x));
			snprintf(x->name, sizeof(x->name), "%.63s", d);
#define SRC(f) (snprintf(path, sizeof(path), SYSFS "/sources/%s/%s", d, f), path)
			read_line(SRC("kind"), x->kind, sizeof(x->kind));
			read_line(SRC("nodes"), x->nodes, sizeof(x->nodes));
			if (!read_line(SRC("tier"), x->tier, sizeof(x->tier)))
				strcpy(x->tier, "fast");
			x->bytes = read_u64(SRC("bytes"));
			x->used = read_u64(SRC("used_bytes"));
			x->errors = read_u64(SRC("poison_events"));
			x->retired = read_u64(SRC("retired_bytes"));
			x->struct_page = read_line(SRC("struct_page"), buf,
						   sizeof(buf)) && !strcmp(buf, "1");
			x->movable = read_line(SRC("movable"), buf,
					       sizeof(buf)) && !strcmp(buf, "1");
#undef SRC
		}
		free(names[i]);
	}
	if (n >= 0)
		free(names);
	return nr;
}

/* The node directories (node0, node1, ...), sorted; how many. */
int read_nodes(char nodes[][16], int max)
{
	struct dirent **names;
	int n, i, nr = 0;

	n = scandir(SYSFS "/nodes", &names, NULL, versionsort);
	for (i = 0; i < n; i++) {
		if (!strncmp(names[i]->d_name, "node", 4) && nr < max)
			snprintf(nodes[nr++], 16, "%.15s", names[i]->d_name);
		free(names[i]);
	}
	if (n >= 0)
		free(names);
	return nr;
}

static unsigned long long counter(const char *node, const char *name)
{
	char path[PATH_MAX];

	if (node)
		snprintf(path, sizeof(path), SYSFS "/nodes/%s/%s", node, name);
	else
		snprintf(path, sizeof(path), SYSFS "/%s", name);
	return read_u64(path);
}

/* Bytes of struct page the sources without struct pages do not need. */
static unsigned long long avoided(const struct source *s, int nr)
{
	unsigned long long sum = 0;
	int i;

	for (i = 0; i < nr; i++)
		if (!s[i].struct_page)
			sum += s[i].bytes / STRUCT_PAGE_PER_BYTE;
	return sum;
}

static void print_row(const char *label, const char *node)
{
	char a[32];
	unsigned int i;

	printf("%-10s", label);
	for (i = 0; i < NR_COUNTERS; i++) {
		gib_str(counter(node, counters[i]), a, sizeof(a));
		printf(" %15s", a);
	}
	printf("\n");
}

static void print_table(void)
{
	char nodes[64][16], a[32], b[32], c[32];
	struct source src[128];
	int nr_nodes, nr, i, n;
	unsigned int k;

	nr = read_sources(src, 128);
	nr_nodes = read_nodes(nodes, 64);
	printf("%-10s", "pool");
	for (k = 0; k < NR_COUNTERS; k++)
		printf(" %15.*s", (int)(strlen(counters[k]) - 6), counters[k]);
	printf("\n");
	print_row("all", NULL);
	for (i = 0; i < nr_nodes; i++)
		print_row(nodes[i], nodes[i]);
	gib_str(avoided(src, nr), a, sizeof(a));
	printf("metadata %llu bytes; struct page avoided: %s; faults: %llu x 1 GiB, %llu x 2 MiB, %llu x 4 KiB\n\n",
	       counter(NULL, "metadata_bytes"), a, counter(NULL, "faults_pud"),
	       counter(NULL, "faults_pmd"), counter(NULL, "faults_pte"));
	gib_str(counter(NULL, "retired_bytes"), a, sizeof(a));
	printf("memory errors: %llu, in %llu pages; retired: %s",
	       counter(NULL, "poison_events"), counter(NULL, "poisoned_pages"),
	       a);
	if (counter(NULL, "poisoned_pages_outside"))
		printf("; %llu poisoned pages of removed sources remembered",
		       counter(NULL, "poisoned_pages_outside"));
	printf("\n");
	if (counter(NULL, "free_low_bytes")) {
		gib_str(counter(NULL, "free_low_bytes"), a, sizeof(a));
		printf("low watermark of free memory: %s; free memory is %s it (went under %llu times)\n\n",
		       a, counter(NULL, "free_low") ? "under" : "over",
		       counter(NULL, "free_low_events"));
	} else {
		printf("low watermark of free memory: none\n\n");
	}
	print_tiers(0);

	printf("%-24s %-9s %-6s %-4s %8s %10s %11s %7s %6s %10s\n", "source",
	       "kind", "nodes", "tier", "size", "used", "struct_page",
	       "movable", "errors", "retired");
	for (i = 0; i < nr; i++) {
		gib_str(src[i].bytes, b, sizeof(b));
		gib_str(src[i].used, c, sizeof(c));
		gib_str(src[i].retired, a, sizeof(a));
		printf("%-24s %-9s %-6s %-4s %8s %10s %11s %7s %6llu %10s\n",
		       src[i].name, src[i].kind, src[i].nodes, src[i].tier, b, c,
		       src[i].struct_page ? "yes" : "no",
		       src[i].movable ? "yes" : "no", src[i].errors, a);
	}
	/* Each cgroup's figures count its descendants' (somctl cgroups). */
	printf("\n");
	n = print_cgroups(0);
	if (n < 0)
		printf("cgroups: %s\n", no_cgroups(n));
	printf("\n");
	if (print_users(0) < 0)
		printf("users: this som module has no per-user accounting\n");
}

static void print_counters_json(const char *node)
{
	unsigned int i;

	for (i = 0; i < NR_COUNTERS; i++)
		printf("%s\"%s\": %llu", i ? ", " : "", counters[i],
		       counter(node, counters[i]));
}

static void print_json(void)
{
	char nodes[64][16];
	struct source src[128];
	int nr_nodes, nr, i;

	nr = read_sources(src, 128);
	nr_nodes = read_nodes(nodes, 64);
	printf("{\"pool\": {");
	print_counters_json(NULL);
	printf(", \"metadata_bytes\": %llu, \"struct_page_avoided_bytes\": %llu",
	       counter(NULL, "metadata_bytes"), avoided(src, nr));
	printf(", \"faults\": {\"1g\": %llu, \"2m\": %llu, \"4k\": %llu}",
	       counter(NULL, "faults_pud"), counter(NULL, "faults_pmd"),
	       counter(NULL, "faults_pte"));
	printf(", \"memory_errors\": {\"events\": %llu, \"pages\": %llu, \"retired_bytes\": %llu, \"pages_outside\": %llu}",
	       counter(NULL, "poison_events"), counter(NULL, "poisoned_pages"),
	       counter(NULL, "retired_bytes"),
	       counter(NULL, "poisoned_pages_outside"));
	printf(", \"free_low\": {\"watermark_bytes\": %llu, \"low\": %s, \"events\": %llu}}",
	       counter(NULL, "free_low_bytes"),
	       counter(NULL, "free_low") ? "true" : "false",
	       counter(NULL, "free_low_events"));
	print_tiers(1);
	printf(",\n \"nodes\": {");
	for (i = 0; i < nr_nodes; i++) {
		printf("%s\"%s\": {", i ? ", " : "", nodes[i] + 4);
		print_counters_json(nodes[i]);
		printf("}");
	}
	printf("},\n \"sources\": [");
	/* Source names are letters, digits and . - _ : @: no escaping. */
	for (i = 0; i < nr; i++)
		printf("%s\n  {\"name\": \"%s\", \"kind\": \"%s\", \"nodes\": \"%s\", \"tier\": \"%s\", \"bytes\": %llu, \"used_bytes\": %llu, \"struct_page\": %s, \"movable\": %s, \"poison_events\": %llu, \"retired_bytes\": %llu}",
		       i ? "," : "", src[i].name, src[i].kind, src[i].nodes,
		       src[i].tier, src[i].bytes, src[i].used,
		       src[i].struct_page ? "true" : "false",
		       src[i].movable ? "true" : "false", src[i].errors,
		       src[i].retired);
	printf("%s],\n \"cgroups\": [", nr ? "\n " : "");
	printf("%s],\n \"uid_limit_bytes\": ", print_cgroups(1) > 0 ? "\n " : "");
	print_user_limit_json(user_limit());
	printf(",\n \"users\": [");
	printf("%s]}\n", print_users(1) > 0 ? "\n " : "");
}

void status_cmd(const struct cmdline *cl)
{
	int json = !!(cl->given & OPT_JSON), watch = cl->watch, n;

	if ((cl->given & OPT_COUNT) && !watch)
		usage_error("--count=%d: only with --watch", cl->count);
	/* One exposition is one scrape: a file a collector reads whole. */
	if ((cl->given & OPT_PROMETHEUS) && (json || watch))
		usage_error("--prometheus: not with --json or --watch");
	need_sysfs();
	if (cl->given & OPT_PROMETHEUS) {
		print_prometheus();
		return;
	}
	for (n = 0;; n++) {
		/* On a terminal, each round replaces the last. */
		if (watch && isatty(STDOUT_FILENO))
			printf("\033[H\033[2J");
		if (json)
			print_json();
		else
			print_table();
		fflush(stdout);
		if (!watch || (cl->count && n + 1 >= cl->count))
			break;
		sleep(watch);
		if (!isatty(STDOUT_FILENO) && !json)
			printf("\n");
	}
}
