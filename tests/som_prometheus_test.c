// SPDX-License-Identifier: GPL-2.0
/*
 * somctl status --prometheus, read as a scraper would: every line is a
 * comment or a sample of the text exposition format, every metric has
 * one HELP and one TYPE line before its samples and no two blocks share
 * a name, and the figures are sysfs's (tools/prometheus.c).
 */
#define _GNU_SOURCE
#include <ctype.h>

#include "kselftest_harness.h"
#include "som_util.h"

#define MAX_METRICS 256

struct exposition {
	char names[MAX_METRICS][64];	/* in the order their TYPE came */
	char types[MAX_METRICS][16];
	int nr;
	int samples;
};

static int is_name_char(int c, int first)
{
	return isalpha(c) || c == '_' || c == ':' || (!first && isdigit(c));
}

/* The length of a metric or label name at @s (0: none). */
static size_t name_len(const char *s)
{
	size_t n = 0;

	while (is_name_char((unsigned char)s[n], !n))
		n++;
	return n;
}

static int find(const struct exposition *e, const char *name, size_t len)
{
	int i;

	for (i = 0; i < e->nr; i++)
		if (strlen(e->names[i]) == len && !strncmp(e->names[i], name, len))
			return i;
	return -1;
}

/*
 * Check one line; returns NULL or what is wrong. A sample must follow
 * its metric's TYPE line, and a TYPE line must be the first of its name
 * and come right after the HELP line of the same name.
 */
static const char *check_line(struct exposition *e, const char *line,
			      char *help_of)
{
	const char *p = line, *name;
	size_t len;
	char *end;

	if (!strncmp(line, "# HELP ", 7)) {
		len = name_len(line + 7);
		if (!len || line[7 + len] != ' ' || !line[8 + len])
			return "HELP without a name and a text";
		if (find(e, line + 7, len) >= 0)
			return "HELP of a metric seen before";
		snprintf(help_of, 64, "%.*s", (int)len, line + 7);
		return NULL;
	}
	if (!strncmp(line, "# TYPE ", 7)) {
		len = name_len(line + 7);
		if (!len || line[7 + len] != ' ')
			return "TYPE without a name";
		if (strlen(help_of) != len || strncmp(help_of, line + 7, len))
			return "TYPE not right after its HELP";
		if (strcmp(line + 8 + len, "gauge") &&
		    strcmp(line + 8 + len, "counter"))
			return "TYPE neither gauge nor counter";
		if (e->nr == MAX_METRICS)
			return "too many metrics";
		snprintf(e->names[e->nr], 64, "%s", help_of);
		snprintf(e->types[e->nr++], 16, "%s", line + 8 + len);
		help_of[0] = '\0';
		return NULL;
	}
	if (line[0] == '#')
		return "a comment that is neither HELP nor TYPE";
	name = p;
	len = name_len(p);
	if (!len)
		return "a sample without a metric name";
	if (e->nr == 0 || strlen(e->names[e->nr - 1]) != len ||
	    strncmp(e->names[e->nr - 1], name, len))
		return "a sample outside its metric's block";
	p += len;
	if (*p == '{') {
		do {
			p++;
			len = name_len(p);
			if (!len || p[len] != '=' || p[len + 1] != '"')
				return "a label that is not name=\"value\"";
			p += len + 2;
			while (*p && *p != '"')
				p += *p == '\\' ? 2 : 1;
			if (*p++ != '"')
				return "an unterminated label value";
		} while (*p == ',');
		if (*p++ != '}')
			return "labels not closed";
	}
	if (*p++ != ' ')
		return "no space before the value";
	strtod(p, &end);
	if (end == p || *end)
		return "a value that is not a number";
	if (!strcmp(e->types[e->nr - 1], "counter") &&
	    !strstr(e->names[e->nr - 1], "_total"))
		return "a counter whose name does not end in _total";
	e->samples++;
	return NULL;
}

/* The value of the sample written exactly @key (name and labels), or -1. */
static long long value_of(const char *out, const char *key)
{
	char want[256];
	const char *p;

	snprintf(want, sizeof(want), "\n%s ", key);
	p = strstr(out, want);
	return p ? strtoll(p + strlen(want), NULL, 10) : -1;
}

TEST(exposition_is_valid_and_agrees_with_sysfs)
{
	static char out[1 << 17], buf[1 << 17];
	static struct exposition e;
	char help_of[64] = "", *line, *save, key[128], name[64];
	long long free, nodes_total = 0, v;
	const char *bad;
	int nid, fd, lines = 0;
	char *m;

	if (access(SOM_DEV, F_OK))
		SKIP(return, "som.ko is not loaded");
	if (system("command -v somctl >/dev/null"))
		SKIP(return, "no somctl in PATH");
	/* Something to show: a watermark, a mapping, the spare source. */
	fd = open(SOM_DEV, O_RDWR);
	ASSERT_LE(0, fd);
	free = som_stat("free_bytes");
	snprintf(key, sizeof(key), "%lld", free + 2 * MiB);
	ASSERT_EQ(0, som_sysfs_write("free_low_bytes", key));
	m = som_map_shared(fd, 4 * MiB);
	ASSERT_NE(MAP_FAILED, m);
	m[0] = 1;

	ASSERT_EQ(0, som_capture("somctl status --prometheus", out + 1,
				 sizeof(out) - 1));
	out[0] = '\n';
	snprintf(buf, sizeof(buf), "%s", out + 1);
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		lines++;
		bad = check_line(&e, line, help_of);
		EXPECT_EQ(NULL, bad) TH_LOG("line %d: %s: %s", lines, bad, line);
	}
	EXPECT_LT(30, e.nr);
	EXPECT_LT(e.nr, e.samples);
	EXPECT_EQ('\n', out[strlen(out) - 1]);

	/* The pool, as sysfs has it; the nodes add up to it. */
	EXPECT_EQ(som_stat("total_bytes"), value_of(out, "som_total_bytes"));
	EXPECT_EQ(som_stat("free_bytes"), value_of(out, "som_free_bytes"));
	EXPECT_EQ(free + 2 * MiB, value_of(out, "som_free_low_bytes"));
	EXPECT_EQ(1, value_of(out, "som_free_low"));
	/* It moves with the zeroing worker (a chunk's bits come and go). */
	EXPECT_LT(0, value_of(out, "som_metadata_bytes"));
	for (nid = 0; nid < 64; nid++) {
		snprintf(key, sizeof(key), "som_node_total_bytes{node=\"%d\"}",
			 nid);
		v = value_of(out, key);
		if (v >= 0)
			nodes_total += v;
	}
	EXPECT_EQ(som_stat("total_bytes"), nodes_total);
	EXPECT_LE(1, value_of(out, "som_faults_total{size=\"2m\"}") +
		     value_of(out, "som_faults_total{size=\"1g\"}"));
	EXPECT_LE(0, value_of(out, "som_idle_bytes{age=\"14\"}"));
	/* Each source by its name. */
	ASSERT_EQ(0, som_capture("ls /sys/kernel/mm/som/sources | head -1",
				 name, sizeof(name)));
	name[strcspn(name, "\n")] = '\0';
	ASSERT_NE('\0', name[0]);
	snprintf(key, sizeof(key), "som_source_bytes{source=\"%s\"}", name);
	snprintf(buf, sizeof(buf), SOM_SYSFS "sources/%s/bytes", name);
	EXPECT_EQ(som_read_ll(buf), value_of(out, key));

	EXPECT_EQ(0, munmap(m, 4 * MiB));
	close(fd);
	EXPECT_EQ(0, som_sysfs_write("free_low_bytes", "0"));
}

TEST_HARNESS_MAIN
