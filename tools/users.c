// SPDX-License-Identifier: GPL-2.0
/*
 * somctl users and somctl user-limit: som memory per user, for machines
 * that do not use cgroups. The kernel keeps a figure per user who holds
 * som memory (SOM_IOC_USER walks them in uid order) and one limit that
 * holds for each user (/sys/kernel/mm/som/uid_limit_bytes, off by
 * default).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/som.h>

#include "parse.h"
#include "somctl.h"

/**
 * each_user() - call @fn for each user who holds som memory, in uid order
 * @fn: gets the user's figures
 * @arg: for @fn
 *
 * Return: 0, or -1 (nothing called) if /dev/som cannot be opened or has
 * no SOM_IOC_USER.
 */
int each_user(void (*fn)(const struct som_user *u, void *arg), void *arg)
{
	struct som_user u;
	int dev = open("/dev/som", O_RDONLY | O_CLOEXEC);
	unsigned int next = 0;

	if (dev < 0)
		return -1;
	for (;;) {
		memset(&u, 0, sizeof(u));
		u.uid = next;
		u.flags = SOM_USER_NEXT;
		if (ioctl(dev, SOM_IOC_USER, &u)) {
			close(dev);
			return errno == ENOENT ? 0 : -1;
		}
		fn(&u, arg);
		if (u.uid == 0xffffffffU)
			break;
		next = u.uid + 1;
	}
	close(dev);
	return 0;
}

/*
 * @uid's name from /etc/passwd into @buf, or "" (somctl is linked
 * statically: no NSS, so no directory service either).
 */
static void user_name(unsigned int uid, char *buf, size_t len)
{
	FILE *f = fopen("/etc/passwd", "r");
	char line[512], *rest, *name, *id, *end;

	buf[0] = '\0';
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		/* name:password:uid:...; fields may be empty. */
		rest = line;
		name = strsep(&rest, ":");
		if (!strsep(&rest, ":"))
			continue;
		id = strsep(&rest, ":");
		if (!id || !*id || !rest)
			continue;
		if (strtoul(id, &end, 10) == uid && !*end) {
			snprintf(buf, len, "%s", name);
			break;
		}
	}
	fclose(f);
}

struct user_rows {
	int json;
	int shown;
};

static void print_user(const struct som_user *u, void *arg)
{
	struct user_rows *r = arg;
	char usage[32], peak[32], name[64];

	user_name(u->uid, name, sizeof(name));
	if (r->json) {
		printf("%s\n  {\"uid\": %u, \"user\": ", r->shown ? "," : "",
		       u->uid);
		if (*name)
			json_string(name);
		else
			printf("null");
		printf(", \"usage_bytes\": %llu, \"peak_bytes\": %llu, \"failures\": %llu}",
		       (unsigned long long)u->usage,
		       (unsigned long long)u->peak,
		       (unsigned long long)u->failures);
	} else {
		if (!r->shown)
			printf("%-10s %-16s %10s %10s %8s\n", "uid", "user",
			       "usage", "peak", "failures");
		gib_str(u->usage, usage, sizeof(usage));
		gib_str(u->peak, peak, sizeof(peak));
		printf("%-10u %-16s %10s %10s %8llu\n", u->uid,
		       *name ? name : "-", usage, peak,
		       (unsigned long long)u->failures);
	}
	r->shown++;
}

/* uid_limit_bytes: bytes, or SOM_CGROUP_NO_LIMIT ("max", or no file). */
unsigned long long user_limit(void)
{
	char buf[64];

	if (!read_line(SYSFS "/uid_limit_bytes", buf, sizeof(buf)) ||
	    !strcmp(buf, "max"))
		return SOM_CGROUP_NO_LIMIT;
	return strtoull(buf, NULL, 0);
}

/* @limit (read once) as a JSON value: bytes, or null for none. */
void print_user_limit_json(unsigned long long limit)
{
	if (limit == SOM_CGROUP_NO_LIMIT)
		printf("null");
	else
		printf("%llu", limit);
}

/* Can the module tell? (A som.ko without SOM_IOC_USER cannot.) */
static int users_supported(void)
{
	struct som_user u;
	int dev = open("/dev/som", O_RDONLY | O_CLOEXEC), ok;

	if (dev < 0)
		return 0;
	memset(&u, 0, sizeof(u));
	ok = !ioctl(dev, SOM_IOC_USER, &u);
	close(dev);
	return ok;
}

/*
 * The users table (text: the limit's line first), or the JSON array's
 * members: the rows shown, or -1 (nothing printed) if the module has no
 * per-user accounting.
 */
int print_users(int json)
{
	struct user_rows r = { json, 0 };
	char limit[32];

	if (!users_supported())
		return -1;
	if (!json) {
		limit_str(user_limit(), limit, sizeof(limit));
		printf("limit of each user's som memory: %s\n", limit);
	}
	if (each_user(print_user, &r))
		return -1;
	return r.shown;
}

void users_cmd(const struct cmdline *cl)
{
	int json = !!(cl->given & OPT_JSON), n;

	close(open_som());
	if (!users_supported())
		die("users: this som module has no per-user accounting");
	if (json) {
		printf("{\"limit_bytes\": ");
		print_user_limit_json(user_limit());
		printf(", \"users\": [");
	}
	n = print_users(json);
	if (n < 0)
		die("users: the users could not be read");
	if (json)
		printf("%s]}\n", n ? "\n " : "");
	else if (!n)
		printf("no user holds som memory\n");
}

void user_limit_cmd(const struct cmdline *cl)
{
	unsigned long long bytes;
	char buf[32], shown[32];

	if (!strcmp(cl->args[0], "max") || !strcmp(cl->args[0], "none")) {
		bytes = SOM_CGROUP_NO_LIMIT;
		snprintf(buf, sizeof(buf), "max");
	} else if (som_parse_size(cl->args[0], &bytes) ||
		   bytes == SOM_CGROUP_NO_LIMIT) {
		usage_error("user-limit: '%s': expected a size (512M, 4G) or max",
			    cl->args[0]);
	} else {
		snprintf(buf, sizeof(buf), "%llu", bytes);
	}
	need_sysfs();
	if (access(SYSFS "/uid_limit_bytes", F_OK))
		die("user-limit: this som module has no per-user limit");
	if (!write_str(SYSFS "/uid_limit_bytes", buf))
		die("user-limit: %s", denied(errno) ?
		    "permission denied (CAP_SYS_ADMIN is needed)" :
		    strerror(errno));
	limit_str(user_limit(), shown, sizeof(shown));
	printf("each user's som memory is limited to %s\n", shown);
}
