/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libsomrun.so, the LD_PRELOAD shim of somrun(1): large anonymous private
 * memory of an unmodified program becomes som memory.
 *
 * Each such mapping is a som file of its own, mapped MAP_SHARED at the
 * address the program gets and closed right away: the mapping keeps the
 * file, and the file's memory goes back to the pool when its last piece is
 * unmapped. The shim keeps a table of these pieces (table.c) so that the
 * memory calls that anonymous memory supports and a som mapping does not
 * (MADV_DONTNEED, growing mremap(), fork()) can be done another way.
 *
 * Nothing here may call malloc(): the shim sits under the allocator. It
 * talks to the kernel through raw system calls (sys_*), keeps its table
 * in memory it maps itself, and formats messages on the stack.
 */
#ifndef SOMRUN_SHIM_H
#define SOMRUN_SHIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <linux/som.h>

#define SHIM_PAGE	4096UL
#define SHIM_BLOCK	(2UL << 20)
#define SHIM_GIB	(1UL << 30)
#define SHIM_EXPORT	__attribute__((visibility("default")))

static inline uintptr_t shim_round_up(uintptr_t x, uintptr_t a)
{
	return (x + a - 1) & ~(a - 1);
}

/* config.c: settings from the environment, which somrun(1) sets. */
enum shim_fork_mode { SHIM_FORK_COPY, SHIM_FORK_ZERO };

struct shim_config {
	size_t threshold;	/* SOMRUN_THRESHOLD: smallest mapping on som */
	bool fail_when_empty;	/* SOMRUN_ON_EMPTY=fail */
	enum shim_fork_mode fork_mode;	/* SOMRUN_FORK */
	int malloc_mode;	/* SOMRUN_MALLOC: -1 auto, 0 off, 1 on */
	size_t malloc_cache;	/* SOMRUN_MALLOC_CACHE: bytes kept freed */
	const char *summary;	/* SOMRUN_SUMMARY: NULL, "1" or a file */
	bool has_policy;	/* SOMRUN_POLICY */
	unsigned int policy_mode;
	unsigned long long policy_nodes[SOM_MAX_NODES / 64];
};

extern struct shim_config shim_cfg;

void shim_init(void);
void shim_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void shim_warn_once(bool *done, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* What the summary counts; updated with __atomic builtins. */
struct shim_stats {
	unsigned long maps, malloc_maps, malloc_reused;
	unsigned long fallbacks, fallback_bytes;
	unsigned long bytes, peak_bytes, punched_bytes;
	unsigned long forks, fork_copied_bytes, moved_bytes;
};

extern struct shim_stats shim_stats;

static inline void shim_count(unsigned long *c, unsigned long n)
{
	__atomic_add_fetch(c, n, __ATOMIC_RELAXED);
}

/* sys.c: the kernel's calls, past the shim's own wrappers and libc's. */
void *sys_mmap(void *addr, size_t len, int prot, int flags, int fd,
	       off_t off);
int sys_munmap(void *addr, size_t len);
void *sys_mremap(void *old, size_t old_len, size_t new_len, int flags,
		 void *new_addr);
int sys_madvise(void *addr, size_t len, int advice);
int sys_mprotect(void *addr, size_t len, int prot);
int sys_open(const char *path, int flags);
int sys_close(int fd);
long sys_ioctl(int fd, unsigned long cmd, void *arg);
int sys_ftruncate(int fd, off_t len);

/* table.c: the som pieces of this process, sorted by address. */
#define PIECE_MALLOC		(1U << 0)	/* a malloc() of malloc.c */
#define PIECE_DONTFORK		(1U << 1)	/* MADV_DONTFORK */
#define PIECE_WIPEONFORK	(1U << 2)	/* MADV_WIPEONFORK */
#define PIECE_ORDINARY		(1U << 3)	/* a malloc() block a fork made
						 * ordinary memory in the child */
#define PIECE_CACHED		(1U << 4)	/* a freed malloc() block kept
						 * by malloc_cache.c */
#define PIECE_TAIL		(1U << 5)	/* ordinary memory mapped with
						 * the som piece before it, for
						 * the rest past its last whole
						 * 2 MiB block (also ORDINARY) */

struct piece {
	uintptr_t start, end;
	unsigned long file;	/* which som file: pieces of one file share it */
	uintptr_t off;		/* offset in the file that @start maps */
	int prot;
	unsigned int flags;
	void *copy;		/* fork.c: the child's copy while forking */
};

void tbl_lock(void);
void tbl_unlock(void);
void tbl_lock_reinit(void);
bool tbl_empty(void);
size_t tbl_count(void);
struct piece *tbl_at(size_t i);
size_t tbl_first_after(uintptr_t addr);
bool tbl_overlaps(uintptr_t start, uintptr_t end);
bool tbl_covers(uintptr_t start, uintptr_t end);
void tbl_coalesce(uintptr_t start, uintptr_t end);
unsigned long tbl_new_file(void);
int tbl_insert(const struct piece *p);
int tbl_isolate(uintptr_t start, uintptr_t end);
void tbl_remove(uintptr_t start, uintptr_t end);
bool tbl_file_outside(unsigned long file, uintptr_t start, uintptr_t end);
void tbl_forget_som(void);

/* sommap.c: making, freeing and copying som mappings. */
int som_dev_open(void);
void *som_map_new(void *addr, size_t len, int prot, int flags, int *err);
int som_release(uintptr_t start, uintptr_t end);
int som_punch(int dev, uintptr_t start, uintptr_t end);
void som_populate(uintptr_t start, uintptr_t end);
int som_copy_out(int dev, char *dst, const struct piece *p);
bool som_fallback_allowed(size_t len, int err);
void *som_fallback(void *addr, size_t len, int prot, int flags, int fd,
		   off_t off, int err);

/* calls.c */
void *shim_map(void *addr, size_t len, int prot, int flags,
	       unsigned int piece_flags, int *err);
void *shim_map_locked(void *addr, size_t len, int prot, int flags,
		      unsigned int piece_flags, int *err);
void shim_layout(size_t len, size_t *head, size_t *tail);
void *shim_map_tailed(size_t head, size_t tail, size_t align, int flags,
		      unsigned int piece_flags, int *err);
int shim_unmap(void *addr, size_t len);
int shim_unmap_locked(void *addr, size_t len);
void *shim_mremap(void *old, size_t old_len, size_t new_len, int flags,
		  void *new_addr);

/* malloc.c and malloc_cache.c */
void front_release_locked(void *p, size_t len);
bool mcache_put_locked(void *p, size_t head, size_t tail);
void *mcache_take(size_t head, size_t tail, size_t align);
unsigned int mcache_trim(void);

/* fork.c */
void shim_fork_init(void);

/* summary.c */
void shim_summary(void);

#endif
