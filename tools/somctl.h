/* SPDX-License-Identifier: GPL-2.0 */
/* somctl: what its files share. */
#ifndef SOMCTL_H
#define SOMCTL_H

#include <stddef.h>

#define SYSFS "/sys/kernel/mm/som"
#define DAX_BUS "/sys/bus/dax"
#define GIB (1ULL << 30)

extern const char *prog;

/* somctl.c */
void die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
void usage(void) __attribute__((noreturn));
const char *why(int err, int kind);
int open_som(void);
int read_line(const char *path, char *buf, size_t len);
int write_str(const char *path, const char *s);
unsigned long long read_u64(const char *path);
int parse_size(const char *s, unsigned long long *out);
void gib_str(unsigned long long bytes, char *buf, size_t len);

/* status.c */
void status_cmd(int argc, char **argv);

/* procs.c */
void ps_cmd(int argc, char **argv);

/* sources.c */
void add_cmd(int argc, char **argv);
void remove_cmd(const char *name);

/* compact.c */
void compact_cmd(void);

#endif
