// SPDX-License-Identifier: GPL-2.0
/*
 * somctl limit and somctl cgroups: som memory per cgroup (v2), through
 * SOM_IOC_CGROUP on a file descriptor of each cgroup's directory. The
 * kernel keeps the figures; this file finds the cgroup file system, walks
 * it and prints what it finds, for these commands and for status.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <mntent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <linux/som.h>

#include "parse.h"
#include "somctl.h"

/* Where the cgroup2 file system is mounted, into @buf; 0 if nowhere. */
static int cgroup_mount(char *buf, size_t len)
{
	FILE *f = setmntent("/proc/self/mounts", "r");
	struct mntent *m;
	int found = 0;

	if (!f)
		return 0;
	while (!found && (m = getmntent(f)))
		if (!strcmp(m->mnt_type, "cgroup2")) {
			snprintf(buf, len, "%s", m->mnt_dir);
			found = 1;
		}
	endmntent(f);
	return found;
}

/* SOM_IOC_CGROUP on the cgroup directory @path; 0 or an errno. */
static int cgroup_query(int dev, const char *path, struct som_cgroup *c)
{
	int err = 0;

	c->cgroup_fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (c->cgroup_fd < 0)
		return errno;
	if (ioctl(dev, SOM_IOC_CGROUP, c))
		err = errno;
	close(c->cgroup_fd);
	return err;
}

/* Has som anything to say about it? */
static int cgroup_shown(const struct som_cgroup *c)
{
	return c->usage || c->peak || c->failures ||
	       c->limit != SOM_CGROUP_NO_LIMIT;
}

/*
 * Call @fn for the cgroup at @path (@mnt_len bytes of it the mount: the
 * root, always shown) and each cgroup below it that som charged or
 * limited, parents first, siblings in name order. The whole tree is
 * walked: a cgroup with a limit may have a parent som never charged.
 * @path is one buffer of PATH_MAX, extended and cut back in place.
 */
static void walk(int dev, char *path, size_t mnt_len,
		 void (*fn)(const char *rel, const struct som_cgroup *c,
			    void *arg),
		 void *arg)
{
	size_t len = strlen(path), n_len;
	struct som_cgroup c;
	struct dirent **names;
	struct stat st;
	int n, i;

	memset(&c, 0, sizeof(c));
	if (cgroup_query(dev, path, &c))
		return;
	if (len == mnt_len || cgroup_shown(&c))
		fn(len == mnt_len ? "/" : path + mnt_len, &c, arg);
	n = scandir(path, &names, NULL, alphasort);
	for (i = 0; i < n; i++) {
		n_len = strlen(names[i]->d_name);
		if (names[i]->d_name[0] != '.' && len + 1 + n_len < PATH_MAX) {
			path[len] = '/';
			memcpy(path + len + 1, names[i]->d_name, n_len + 1);
			if (!lstat(path, &st) && S_ISDIR(st.st_mode))
				walk(dev, path, mnt_len, fn, arg);
			path[len] = '\0';
		}
		free(names[i]);
	}
	if (n >= 0)
		free(names);
}

/**
 * each_cgroup() - call @fn for each cgroup som charged or limited
 * @fn: gets the cgroup's path below the cgroup2 mount ("/" for the root)
 *	and its figures
 * @arg: for @fn
 *
 * Return: 0; -1 (nothing called) if no cgroup2 file system is mounted,
 * -2 if /dev/som cannot be opened or has no SOM_IOC_CGROUP.
 */
int each_cgroup(void (*fn)(const char *rel, const struct som_cgroup *c,
			   void *arg),
		void *arg)
{
	char path[PATH_MAX];
	struct som_cgroup c;
	int dev;

	if (!cgroup_mount(path, sizeof(path)))
		return -1;
	dev = open("/dev/som", O_RDONLY | O_CLOEXEC);
	if (dev < 0)
		return -2;
	memset(&c, 0, sizeof(c));
	if (cgroup_query(dev, path, &c)) {
		close(dev);
		return -2;
	}
	walk(dev, path, strlen(path), fn, arg);
	close(dev);
	return 0;
}

/* @s as a JSON string: cgroup and user names are anything a file name is. */
void json_string(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			printf("\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			printf("\\u%04x", *s);
		else
			putchar(*s);
	}
	putchar('"');
}

struct rows {
	int json;
	int shown;
};

static void print_row(const char *rel, const struct som_cgroup *c, void *arg)
{
	struct rows *r = arg;
	char usage[32], limit[32], peak[32];

	if (r->json) {
		printf("%s\n  {\"cgroup\": ", r->shown ? "," : "");
		json_string(rel);
		printf(", \"usage_bytes\": %llu, \"peak_bytes\": %llu, \"limit_bytes\": ",
		       (unsigned long long)c->usage,
		       (unsigned long long)c->peak);
		if (c->limit == SOM_CGROUP_NO_LIMIT)
			printf("null");
		else
			printf("%llu", (unsigned long long)c->limit);
		printf(", \"failures\": %llu}", (unsigned long long)c->failures);
	} else {
		if (!r->shown)
			printf("%-32s %10s %10s %10s %8s\n", "cgroup", "usage",
			       "limit", "peak", "failures");
		gib_str(c->usage, usage, sizeof(usage));
		gib_str(c->peak, peak, sizeof(peak));
		limit_str(c->limit, limit, sizeof(limit));
		printf("%-32s %10s %10s %10s %8llu\n", rel, usage, limit, peak,
		       (unsigned long long)c->failures);
	}
	r->shown++;
}

/*
 * status's cgroup table (or the JSON array's members): the rows shown, or
 * each_cgroup()'s error.
 */
int print_cgroups(int json)
{
	struct rows r = { json, 0 };
	int err = each_cgroup(print_row, &r);

	return err ? err : r.shown;
}

/* Why there is no table, for status and cgroups. */
const char *no_cgroups(int err)
{
	return err == -1 ?
	       "no cgroup2 file system is mounted (mount -t cgroup2 none /sys/fs/cgroup)" :
	       "/dev/som cannot be opened, or this som module has no per-cgroup accounting";
}

void cgroups_cmd(const struct cmdline *cl)
{
	int json = !!(cl->given & OPT_JSON), n;
	char mnt[PATH_MAX];

	if (!cgroup_mount(mnt, sizeof(mnt)))
		die("cgroups: %s", no_cgroups(-1));
	close(open_som());
	if (json)
		printf("[");
	n = print_cgroups(json);
	if (n < 0)
		die("cgroups: %s", no_cgroups(n));
	if (json)
		printf("\n]\n");
}

/*
 * CGROUP as the administrator wrote it: a path below the cgroup2 mount
 * ("/", "/ctr/a", "ctr/a"), or a path to the directory itself.
 */
static void cgroup_path(const char *arg, char *buf, size_t len)
{
	char mnt[PATH_MAX];
	struct stat st;

	if (!cgroup_mount(mnt, sizeof(mnt)))
		die("limit: no cgroup2 file system is mounted (mount -t cgroup2 none /sys/fs/cgroup)");
	if ((size_t)snprintf(buf, len, "%s%s%s", mnt, *arg == '/' ? "" : "/",
			     arg) < len && !stat(buf, &st) && S_ISDIR(st.st_mode))
		return;
	if (!stat(arg, &st) && S_ISDIR(st.st_mode)) {
		snprintf(buf, len, "%s", arg);
		return;
	}
	die("limit: %s: no such cgroup (under %s)", arg, mnt);
}

void limit_cmd(const struct cmdline *cl)
{
	unsigned long long bytes;
	char path[PATH_MAX], a[32], b[32];
	struct som_cgroup c;
	int dev, err;

	if (!strcmp(cl->args[1], "max") || !strcmp(cl->args[1], "none"))
		bytes = SOM_CGROUP_NO_LIMIT;
	else if (som_parse_size(cl->args[1], &bytes) ||
		 bytes == SOM_CGROUP_NO_LIMIT)
		usage_error("limit: '%s': expected a size (512M, 4G) or max",
			    cl->args[1]);
	cgroup_path(cl->args[0], path, sizeof(path));
	dev = open_som();
	memset(&c, 0, sizeof(c));
	c.flags = SOM_CGROUP_SET_LIMIT;
	c.limit = bytes;
	err = cgroup_query(dev, path, &c);
	if (err)
		die("limit: %s: %s", path, err == EBADF ?
		    "not a cgroup v2 directory" :
		    err == ENOTTY ? "this som module has no per-cgroup limits" :
		    why(err, 0));
	close(dev);
	limit_str(c.limit, a, sizeof(a));
	gib_str(c.usage, b, sizeof(b));
	printf("%s: som limit %s (in use: %s)\n", cl->args[0], a, b);
}
