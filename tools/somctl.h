/* SPDX-License-Identifier: GPL-2.0 */
/* somctl: what its files share. */
#ifndef SOMCTL_H
#define SOMCTL_H

#include <stddef.h>

#define SYSFS "/sys/kernel/mm/som"
#define DAX_BUS "/sys/bus/dax"
#define GIB (1ULL << 30)

/* The options, each a bit of struct cmdline's @given. */
#define OPT_JSON	(1U << 0)
#define OPT_WATCH	(1U << 1)
#define OPT_COUNT	(1U << 2)
#define OPT_NODE	(1U << 3)
#define OPT_UNMOVABLE	(1U << 4)
#define OPT_NAME	(1U << 5)
#define OPT_WAIT	(1U << 6)
#define OPT_PROMETHEUS	(1U << 7)
#define OPT_FORGET	(1U << 8)
#define OPT_SLOW	(1U << 9)

/*
 * A command line, options and arguments apart: options may come before
 * the command, after it, or between its arguments. Each command checks
 * its arguments before it opens anything.
 */
struct cmdline {
	const char *cmd;
	char **args;		/* the command's arguments, in order */
	int nargs;
	unsigned int given;	/* OPT_* */
	int watch;		/* --watch[=SECONDS] */
	int count;		/* --count=N */
	int node;		/* --node N */
	const char *name;	/* --name NAME */
};

extern const char *prog;

/* somctl.c */
void die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
void usage_error(const char *fmt, ...)
	__attribute__((noreturn, format(printf, 1, 2)));
int denied(int err);
const char *why(int err, int kind);
int open_som(void);
void need_sysfs(void);
int read_line(const char *path, char *buf, size_t len);
int write_str(const char *path, const char *s);
unsigned long long read_u64(const char *path);
void gib_str(unsigned long long bytes, char *buf, size_t len);
void limit_str(unsigned long long limit, char *buf, size_t len);

/* status.c */
void status_cmd(const struct cmdline *cl);
int read_nodes(char nodes[][16], int max);

/* prometheus.c */
void print_prometheus(void);

/* procs.c */
struct procs_walk {
	int json;	/* --json */
	int shown;	/* rows printed so far */
};

void ps_cmd(const struct cmdline *cl);
void proc_comm(int pid, char *buf, size_t len, int json);
int pid_arg(const char *s);
int each_process(const struct cmdline *cl, int dev,
		 int (*one)(int dev, int pid, int named, void *w),
		 struct procs_walk *w);

/* ages.c */
void ages_cmd(const struct cmdline *cl);
int pool_idle_bytes(unsigned long long *bytes);

/* sources.c */
int source_name_ok(const char *name);

/* tiers.c */
void tier_cmd(const struct cmdline *cl);
void print_tiers(int json);
void add_cmd(const struct cmdline *cl);
void remove_cmd(const struct cmdline *cl);

/* compact.c */
void compact_cmd(const struct cmdline *cl);

/* poison.c */
void poison_cmd(const struct cmdline *cl);

/* swap.c */
void swap_cmd(const struct cmdline *cl);
void reclaim_cmd(const struct cmdline *cl);

/* cgroups.c */
struct som_cgroup;
void limit_cmd(const struct cmdline *cl);
void cgroups_cmd(const struct cmdline *cl);
int print_cgroups(int json);
const char *no_cgroups(int err);
void json_string(const char *s);

/* users.c */
struct som_user;
void users_cmd(const struct cmdline *cl);
void user_limit_cmd(const struct cmdline *cl);
int print_users(int json);
void print_user_limit_json(unsigned long long limit);
unsigned long long user_limit(void);
int each_user(void (*fn)(const struct som_user *u, void *arg), void *arg);
int each_cgroup(void (*fn)(const char *rel, const struct som_cgroup *c,
			   void *arg),
		void *arg);

#endif
