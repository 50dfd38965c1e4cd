/* SPDX-License-Identifier: GPL-2.0 */
/*
 * somfuzz: a coverage-guided fuzzer of som's whole user interface, in the
 * manner of syzkaller. What the files hold:
 *
 *   desc.c      the description table: every call, its arguments and their
 *               kinds (resource, flags, enum, length, offset, pointer...)
 *   prog.c      programs: generation from the table, mutation, text form
 *   calls.c     one function per call of the table: the system calls
 *   exec.c      running one program: resources, fork, threads, touches
 *   kcov.c      KCOV coverage of som.ko per executing thread
 *   check.c     the checks: kernel log, pool accounting, data tags
 *   fuzz.c      the supervisor: executors, corpus, reproducers
 *   main.c      the somfuzz command line
 *
 * Documentation/fuzzing.md describes the design.
 */
#ifndef SOMFUZZ_H
#define SOMFUZZ_H

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <time.h>

#define SF_MAX_ARGS	8
#define SF_MAX_CALLS	40	/* calls in one program */
#define SF_MAX_RES	64	/* live resources in one program */
#define SF_MAX_THREADS	4	/* threads a program may start */
#define SF_MAX_CHILDREN	4	/* processes a program may fork */
#define SF_MAX_DESCS	32	/* entries of sf_calls[] */

/* Resource kinds: what earlier calls produce and later ones use. */
enum sf_res_kind {
	SF_R_DEV,	/* an open /dev/som */
	SF_R_FILE,	/* a som file */
	SF_R_FD,	/* either of the two (only as an argument) */
	SF_R_MAP,	/* a mapping: address, length, backing */
	SF_R_SRC,	/* a pool source the program added: its name */
	SF_R_NR,
};

/* Argument kinds of the description table. */
enum sf_arg_kind {
	SF_A_RES,	/* the n-th live resource of .res (n mod live ones) */
	SF_A_ENUM,	/* one of .vals (mutation: now and then any value) */
	SF_A_FLAGS,	/* an OR of .vals (mutation: now and then a bit more) */
	SF_A_LEN,	/* a length: 0, 4 KiB, 2 MiB and 1 GiB edges, more */
	SF_A_OFF,	/* an offset: the same edges, mostly small */
	SF_A_INT,	/* an integer in [.min, .max] */
	SF_A_PTR,	/* how an argument pointer is made (enum sf_ptr) */
	SF_A_RSVD,	/* a padding or reserved field: mostly 0 */
};

/* Argument pointers the ioctls get. */
enum sf_ptr {
	SF_PTR_GOOD,	/* a valid buffer */
	SF_PTR_NULL,
	SF_PTR_UNMAPPED,	/* a page with nothing mapped */
	SF_PTR_KERNEL,	/* a kernel address */
	SF_PTR_STRADDLE,	/* the struct runs into a PROT_NONE page */
	SF_PTR_READONLY,	/* readable, not writable (out fields fail) */
	SF_PTR_NR,
};

struct sf_arg_desc {
	const char *name;
	enum sf_arg_kind kind;
	int res;			/* SF_A_RES: enum sf_res_kind */
	const uint64_t *vals;		/* SF_A_ENUM, SF_A_FLAGS */
	int nvals;
	uint64_t min, max;		/* SF_A_INT */
};

struct sf_exec;
struct sf_thread;

/*
 * A call's implementation: returns what the system call returned (-errno
 * on failure), or SF_NOOP when it had nothing to work on and made none
 * (not counted as a call).
 */
#define SF_NOOP		(-0x7fffffffL)
typedef long (*sf_call_fn)(struct sf_thread *t, const uint64_t *args);

/* What the runner does itself rather than through .fn. */
enum sf_ctl {
	SF_CTL_NONE,
	SF_CTL_FORK,	/* args: calls, wait: the next calls run in a child */
	SF_CTL_THREAD,	/* args: calls: the next calls run in a new thread */
};

struct sf_call_desc {
	const char *name;
	sf_call_fn fn;
	enum sf_ctl ctl;
	int produces;			/* enum sf_res_kind, or -1 */
	int weight;			/* how often generation picks it */
	int nargs;
	struct sf_arg_desc args[SF_MAX_ARGS];
};

extern const struct sf_call_desc sf_calls[];
extern const int sf_ncalls;
int sf_call_lookup(const char *name);

/* One call of a program: an index into sf_calls and its argument values. */
struct sf_call {
	uint16_t desc;
	uint64_t args[SF_MAX_ARGS];
};

/* Fixed size, so that it can live in memory shared with executors. */
struct sf_prog {
	int ncalls;
	struct sf_call calls[SF_MAX_CALLS];
};

/* prog.c */
uint64_t sf_rand(uint64_t *state);
int sf_may_add_gib(void);
int sf_threads_started(struct sf_thread *t);
int sf_prog_is_big(const struct sf_prog *p);
const struct sf_prog *sf_corpus_pick(const struct sf_prog *corpus, int n,
				     uint64_t *rnd);
void sf_prog_generate(struct sf_prog *p, uint64_t *rnd);
void sf_prog_mutate(struct sf_prog *p, const struct sf_prog *corpus,
		    int ncorpus, uint64_t *rnd);
void sf_prog_fprint(FILE *f, const struct sf_prog *p);
/* Parse programs (blank-line separated) from @f; how many, or -1. */
int sf_prog_parse(FILE *f, struct sf_prog *out, int max, char *err,
		  size_t errlen);

/* kcov.c: one per executing thread; NULL where the kernel has no KCOV. */
struct sf_kcov;
int sf_kcov_available(void);
/* Open and map a buffer (at @at, if not NULL: SF_KCOV_SPACE bytes). */
#define SF_KCOV_SPACE	(512UL << 10)
struct sf_kcov *sf_kcov_open(void *at);
int sf_kcov_enable(struct sf_kcov *k);
void sf_kcov_disable(struct sf_kcov *k);
void sf_kcov_close(struct sf_kcov *k);
void sf_kcov_start(struct sf_kcov *k);
/* Fold what the call covered into the shared maps; new bits found. */
uint64_t sf_kcov_collect(struct sf_kcov *k);

/*
 * The supervisor's state that executors (forked from it) and their own
 * children share: counters, the coverage maps, the programs that ran last
 * (for a reproducer), new corpus entries and the first finding.
 */
/* som.ko has about 2500 instrumented blocks: small maps, few TLB misses. */
#define SF_MAP_BITS	18
#define SF_MAP_BYTES	((1UL << SF_MAP_BITS) / 8)
#define SF_RING		8	/* programs kept for a reproducer */
#define SF_NEWQ		256	/* new corpus entries per executor */
#define SF_FINDING_LEN	2048

/* Executor time outside the calls, for the statistics. */
enum sf_phase {
	SF_PH_CLEANUP,		/* a program's memory and descriptors */
	SF_PH_POOL,		/* removing the sources an executor added */
	SF_PH_CHECK,		/* the checks after each program */
	SF_PH_EXEC_INIT,	/* an executor's arena, stacks, KCOV */
	SF_PHASES
};

struct sf_shared {
	uint64_t calls;			/* calls executed */
	uint64_t progs;			/* programs executed */
	uint64_t edges;			/* distinct edge hashes seen */
	uint64_t pcs;			/* distinct PCs seen */
	uint64_t serial;		/* programs started, for tags */
	uint64_t by_call[SF_MAX_DESCS][3];	/* per sf_calls[]: run, worked, ns */
	uint64_t phase_ns[SF_PHASES];	/* where an executor's time went */
	long long zero_at_start[4];	/* zero_{worker,fault}_{bytes,ns} */
	int64_t prog_start_ms;		/* when the current program began */
	int64_t run_start_ms;		/* when fuzzing began; 0 in a replay */
	uint64_t gib_adds;		/* sources added, see sf_may_add_gib() */
	uint64_t ring_head;		/* next ring slot */
	struct sf_prog ring[SF_RING];
	int nnew;
	struct sf_prog newq[SF_NEWQ];
	int finding;			/* 1: something found, text below */
	char finding_text[SF_FINDING_LEN];
	uint8_t edge_map[SF_MAP_BYTES];
	uint8_t pc_map[SF_MAP_BYTES];
};

extern struct sf_shared *sf_shared;

static inline uint64_t sf_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static inline int64_t sf_ms(void)
{
	return (int64_t)(sf_ns() / 1000000);
}

static inline void sf_phase_add(enum sf_phase ph, uint64_t since)
{
	__atomic_fetch_add(&sf_shared->phase_ns[ph], sf_ns() - since,
			   __ATOMIC_RELAXED);
}

/* A resource a call produced. */
struct sf_res {
	int kind;		/* enum sf_res_kind; -1 when dead */
	int fd;			/* DEV, FILE */
	int obj;		/* DEV, FILE: object number for data tags */
	int mapped;		/* DEV: mmap() of it worked before */
	uint64_t addr, len;	/* MAP */
	int map_obj;		/* MAP: the backing's object number */
	int map_file;		/* MAP: 1 if a som file backs it */
	int map_prot;		/* MAP: PROT_* */
	int in_arena;		/* MAP: inside the executor's arena */
	char name[32];		/* SRC */
};

/* One program being run: shared by its threads (not by its children). */
struct sf_exec {
	const struct sf_prog *prog;
	pthread_mutex_t lock;		/* protects res, nres, nthreads */
	struct sf_res res[SF_MAX_RES];
	int nres;
	int nobj;
	pthread_t threads[SF_MAX_THREADS];
	int nthreads;
	pid_t children[SF_MAX_CHILDREN];
	int nchildren;
	uint64_t serial;
	int changed_rate;		/* compact_rate was written */
	volatile int stop_background;
	uint64_t new_bits;		/* coverage the program found */
};

/* An executing thread: the main one, a started thread, a child's. */
struct sf_thread {
	struct sf_exec *ex;
	struct sf_kcov *kcov;
	int proc;			/* 0: the executor, 1...: its children */
	uint64_t rnd;
};

/*
 * The cgroup every executor runs in (exec.c), so that the limits
 * ioc_cgroup sets bite the executor's own reservations and nobody else's.
 */
#define SF_CGROUP_FS	"/sys/fs/cgroup"
#define SF_CGROUP	SF_CGROUP_FS "/somfuzz"

/* exec.c */
extern char *sf_arena;
#define SF_ARENA_SIZE	(16UL << 30)
#define SF_ARENA_SLOT	(2UL << 30)
int sf_exec_init(void);
/*
 * Run @p and put everything back; 2 if it found new coverage, else 0.
 * A failed check sets sf_shared->finding.
 */
int sf_exec_prog(const struct sf_prog *p);
/*
 * Resources: added by the call that made them; an argument names the n-th
 * live one of its kind. sf_res_get() copies it (and says in which slot
 * it is) under the program's lock.
 */
int sf_res_add(struct sf_thread *t, const struct sf_res *r);
struct sf_res *sf_res_get(struct sf_thread *t, int kind, uint64_t n,
			  struct sf_res *copy, int *slot);
void sf_res_kill_slot(struct sf_thread *t, int slot);
/* Note that resource @slot was mapped; whether it had been before. */
int sf_res_mark_mapped(struct sf_thread *t, int slot);
/* A mapping moved (mremap): what it now overlaps is gone. */
void sf_res_move_map(struct sf_thread *t, int slot, uint64_t addr,
		     uint64_t len);
void sf_res_kill_overlap(struct sf_thread *t, uint64_t addr, uint64_t len);
int sf_thread_start(struct sf_thread *t, int from, int to,
		    void (*body)(struct sf_thread *, const uint64_t *),
		    const uint64_t *args);
int sf_touch(struct sf_thread *t, const struct sf_res *m, uint64_t off,
	     uint64_t len, uint64_t stride, int mode);
void *sf_ptr(enum sf_ptr kind, void *good, size_t size);
extern int sf_dev_fd;		/* an fd of /dev/som for the helpers */

/* check.c */
void sf_finding(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int sf_kmsg_open(void);
/* Scan new kernel log lines; 1 (and a finding) on a checker report. */
int sf_kmsg_check(int fd);
int sf_pool_baseline(void);
/* The run's swap store (check.c): add it (0 or -errno), remove it at exit. */
long sf_swap_add(void);
void sf_swap_remove(void);
/* Pool back at its baseline (polling for a while); 0, or 1 + finding. */
int sf_pool_check(const char *when, int sources);
void sf_rate_restore(struct sf_exec *ex);
void sf_sources_restore(void);
int sf_source_in_baseline(const char *name);
uint64_t sf_tag(uint64_t serial, int proc, int obj, int file);
/* Check a word read from a mapping; 0, or 1 + finding. */
int sf_tag_check(struct sf_thread *t, const struct sf_res *m, uint64_t off,
		 uint64_t word);
long long sf_sysfs_ll(const char *name);
int sf_sysfs_write(const char *name, const char *val);
/* From the environment: SOM_SPARE_RANGES, SOM_PMEM, SOM_RANGES. */
int sf_env_range(const char *var, uint64_t *size, uint64_t *start);

/* fuzz.c */
struct sf_opts {
	uint64_t seed;
	uint64_t max_calls;	/* stop after this many calls (0: no limit) */
	int seconds;		/* stop after this long */
	int prog_timeout;	/* seconds one program may take */
	int batch;		/* programs per executor */
	const char *corpus_in[4];
	int ncorpus_in;
	const char *corpus_out;	/* new corpus entries go here */
	const char *crashes;	/* reproducers go here */
	int quiet;
};

struct sf_stats {
	uint64_t calls, progs, edges, pcs, executors;
	int corpus, seeds, findings, kcov;
	double seconds;
	char finding[SF_FINDING_LEN];
	char repro[600];	/* where the reproducer went, if anywhere */
};

int sf_fuzz(const struct sf_opts *o, struct sf_stats *st);
/* "name run/worked% ..." for every call of the table that ran. */
void sf_print_calls(FILE *f, const char *prefix);
/* Replay the programs of @path, one executor each; 0 if all clean. */
int sf_replay(const char *path, struct sf_stats *st, int verbose);
int sf_shared_init(void);
int sf_load_dir(const char *dir, struct sf_prog **progs, int *n, int *cap);
int sf_dump_hex(const char *dir, const char *prefix);

#endif /* SOMFUZZ_H */
