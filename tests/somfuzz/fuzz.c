// SPDX-License-Identifier: GPL-2.0
/*
 * The supervisor. It forks an executor (a process group of its own) that
 * runs a batch of programs, each made by mutating a corpus program or
 * generated afresh, and watches it: a program that runs longer than the
 * time limit gets its executor killed. What an executor shares with it
 * (struct sf_shared): counters, the coverage maps, the last programs that
 * ran, the programs that found new coverage (they join the corpus when
 * the executor is done) and the first finding. On a finding (a kernel
 * report, the pool not whole, a tag where it must not be, an executor
 * killed by a signal or hung) the supervisor writes a reproducer: the
 * programs that ran last in that executor, the failing one last, in the
 * text form `somfuzz --replay FILE` runs.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "somfuzz.h"

#define SF_REPRO_PROGS	4	/* programs in a reproducer */
#define SF_MAX_CORPUS	8192

/* Map the shared state, or clear it for a new run. */
int sf_shared_init(void)
{
	if (sf_shared) {
		memset(sf_shared, 0, sizeof(*sf_shared));
		return 0;
	}
	sf_shared = mmap(NULL, sizeof(*sf_shared), PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sf_shared == MAP_FAILED) {
		sf_shared = NULL;
		return -1;
	}
	return 0;
}

/* What som's zeroing counters say when a run starts. */
static const char *const sf_zero_files[4] = {
	"zero_worker_bytes", "zero_worker_ns", "zero_fault_bytes",
	"zero_fault_ns",
};

static void sf_zero_start(void)
{
	int i;

	for (i = 0; i < 4; i++)
		sf_shared->zero_at_start[i] = sf_sysfs_ll(sf_zero_files[i]);
}

static int sf_corpus_add(struct sf_prog **progs, int *n, int *cap,
			 const struct sf_prog *p)
{
	struct sf_prog *bigger;

	if (*n == *cap) {
		if (*cap >= SF_MAX_CORPUS)
			return -1;
		*cap = *cap ? *cap * 2 : 64;
		bigger = realloc(*progs, *cap * sizeof(**progs));
		if (!bigger)
			return -1;
		*progs = bigger;
	}
	(*progs)[(*n)++] = *p;
	return 0;
}

/*
 * Call @fn on each regular file of @dir but dot files, open for reading;
 * -1 if @dir cannot be read, else the sum of what @fn returned.
 */
static int sf_each_file(const char *dir,
			int (*fn)(FILE *f, const char *path, const char *name,
				  void *arg),
			void *arg)
{
	char path[512];
	struct dirent *de;
	struct stat sb;
	DIR *d = opendir(dir);
	int sum = 0;
	FILE *f;

	if (!d)
		return -1;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (stat(path, &sb) || !S_ISREG(sb.st_mode))
			continue;
		f = fopen(path, "r");
		if (!f)
			continue;
		sum += fn(f, path, de->d_name, arg);
		fclose(f);
	}
	closedir(d);
	return sum;
}

struct sf_corpus_in {
	struct sf_prog **progs;
	int *n, *cap;
};

static int sf_load_file(FILE *f, const char *path, const char *name,
			void *arg)
{
	struct sf_corpus_in *in = arg;
	struct sf_prog tmp[16];
	char err[256];
	int i, got;

	(void)name;
	got = sf_prog_parse(f, tmp, 16, err, sizeof(err));
	if (got < 0) {
		fprintf(stderr, "somfuzz: %s: %s\n", path, err);
		return 1;
	}
	for (i = 0; i < got; i++)
		sf_corpus_add(in->progs, in->n, in->cap, &tmp[i]);
	return 0;
}

int sf_load_dir(const char *dir, struct sf_prog **progs, int *n, int *cap)
{
	struct sf_corpus_in in = { progs, n, cap };

	return sf_each_file(dir, sf_load_file, &in);
}

/* FNV-1a of a program's text: its file name in the corpus. */
static uint64_t sf_prog_hash(const struct sf_prog *p)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	char *buf = NULL;
	size_t len = 0, i;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return 0;
	sf_prog_fprint(f, p);
	fclose(f);
	for (i = 0; i < len; i++)
		h = (h ^ (unsigned char)buf[i]) * 0x100000001b3ULL;
	free(buf);
	return h;
}

static void sf_save_prog(const char *dir, const struct sf_prog *p)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%016llx", dir,
		 (unsigned long long)sf_prog_hash(p));
	f = fopen(path, "w");
	if (!f)
		return;
	sf_prog_fprint(f, p);
	fclose(f);
}

/* Executor: programs until the batch, the deadline or the call budget. */
static void sf_executor(const struct sf_opts *o, const struct sf_prog *corpus,
			int ncorpus, uint64_t rnd, int64_t deadline, int kmsg)
{
	struct sf_prog p;
	uint64_t t0 = sf_ns();
	int b, r;

	setpgid(0, 0);
	if (sf_exec_init()) {
		sf_finding("executor: cannot set up (arena, stacks): %s",
			   strerror(errno));
		_exit(1);
	}
	sf_phase_add(SF_PH_EXEC_INIT, t0);
	for (b = 0; b < o->batch; b++) {
		if (sf_ms() >= deadline ||
		    (o->max_calls && sf_shared->calls >= o->max_calls))
			break;
		if (!ncorpus || sf_rand(&rnd) % 10 < 2) {
			sf_prog_generate(&p, &rnd);
		} else {
			p = *sf_corpus_pick(corpus, ncorpus, &rnd);
			sf_prog_mutate(&p, corpus, ncorpus, &rnd);
		}
		sf_shared->ring[sf_shared->ring_head % SF_RING] = p;
		sf_shared->ring_head++;
		__atomic_store_n(&sf_shared->prog_start_ms, sf_ms(),
				 __ATOMIC_SEQ_CST);
		r = sf_exec_prog(&p);
		__atomic_store_n(&sf_shared->prog_start_ms, 0, __ATOMIC_SEQ_CST);
		sf_shared->progs++;
		t0 = sf_ns();
		if (sf_kmsg_check(kmsg) || sf_shared->finding ||
		    sf_pool_check("after the program", 0))
			_exit(1);
		sf_phase_add(SF_PH_CHECK, t0);
		if (r == 2 && sf_shared->nnew < SF_NEWQ)
			sf_shared->newq[sf_shared->nnew++] = p;
	}
	_exit(0);
}

/* Write the last programs as a reproducer; its path into @st. */
static void sf_write_repro(const char *dir, uint64_t first_head,
			   struct sf_stats *st)
{
	uint64_t head = sf_shared->ring_head, from = head, i;
	char path[512];
	const char *line, *nl;
	FILE *f;

	while (from > first_head && head - from < SF_REPRO_PROGS)
		from--;
	if (!dir) {
		f = stdout;
		snprintf(st->repro, sizeof(st->repro), "(printed above)");
	} else {
		mkdir(dir, 0755);
		snprintf(path, sizeof(path), "%s/repro-%llu-%llu.txt", dir,
			 (unsigned long long)time(NULL),
			 (unsigned long long)sf_shared->serial);
		f = fopen(path, "w");
		if (!f) {
			snprintf(st->repro, sizeof(st->repro),
				 "cannot write %.400s: %s", path, strerror(errno));
			return;
		}
		snprintf(st->repro, sizeof(st->repro), "%s", path);
	}
	fprintf(f, "# somfuzz reproducer: the last %llu program(s) one executor ran, the failing one last\n",
		(unsigned long long)(head - from));
	for (line = st->finding; *line; line = nl + (*nl != 0)) {
		nl = line + strcspn(line, "\n");
		fprintf(f, "# %.*s\n", (int)(nl - line), line);
	}
	for (i = from; i < head; i++) {
		fprintf(f, "\n# program %llu of %llu\n",
			(unsigned long long)(i - from + 1),
			(unsigned long long)(head - from));
		sf_prog_fprint(f, &sf_shared->ring[i % SF_RING]);
	}
	if (f != stdout)
		fclose(f);
	else
		fflush(f);
}

/*
 * Wait for executor @pid; kill it when a program runs past @timeout_s.
 * 0 when it exited cleanly, 1 when something was found.
 */
static int sf_supervise(pid_t pid, int timeout_s, struct sf_stats *st)
{
	struct timespec ts = { 0, 20 * 1000 * 1000 };
	int status = 0, hung = 0;
	int64_t start;

	for (;;) {
		pid_t r = waitpid(pid, &status, WNOHANG);

		if (r == pid)
			break;
		if (r < 0 && errno != EINTR)
			break;
		start = __atomic_load_n(&sf_shared->prog_start_ms,
					__ATOMIC_SEQ_CST);
		if (!hung && start && sf_ms() - start > timeout_s * 1000LL) {
			hung = 1;
			kill(-pid, SIGKILL);
			kill(pid, SIGKILL);
		}
		nanosleep(&ts, NULL);
	}
	/* Its children and threads die with the group. */
	kill(-pid, SIGKILL);
	if (hung)
		sf_finding("a program ran for more than %d s: its executor was killed",
			   timeout_s);
	else if (WIFSIGNALED(status))
		sf_finding("the executor died of signal %d (%s) outside any touch of memory",
			   WTERMSIG(status), strsignal(WTERMSIG(status)));
	else if (!sf_shared->finding && WIFEXITED(status) && WEXITSTATUS(status))
		sf_finding("the executor exited with status %d",
			   WEXITSTATUS(status));
	if (!sf_shared->finding)
		return 0;
	snprintf(st->finding, sizeof(st->finding), "%s",
		 sf_shared->finding_text);
	st->findings++;
	return 1;
}

static void sf_fill_stats(struct sf_stats *st, int64_t start)
{
	st->calls = sf_shared->calls;
	st->progs = sf_shared->progs;
	st->edges = sf_shared->edges;
	st->pcs = sf_shared->pcs;
	st->seconds = (sf_ms() - start) / 1000.0;
}

int sf_fuzz(const struct sf_opts *o, struct sf_stats *st)
{
	struct sf_prog *corpus = NULL;
	int ncorpus = 0, cap = 0, i, kmsg;
	int64_t start = sf_ms(), deadline = start + o->seconds * 1000LL;
	uint64_t rnd = (o->seed + 1) * 0x9e3779b97f4a7c15ULL | 1, first_head, t0;
	int64_t last_report = start;
	pid_t pid;

	memset(st, 0, sizeof(*st));
	if (sf_shared_init())
		return -1;
	for (i = 0; i < o->ncorpus_in; i++)
		sf_load_dir(o->corpus_in[i], &corpus, &ncorpus, &cap);
	st->seeds = ncorpus;
	st->kcov = sf_kcov_available();
	if (o->corpus_out)
		mkdir(o->corpus_out, 0755);
	sf_pool_baseline();
	sf_zero_start();
	sf_shared->run_start_ms = start;
	kmsg = sf_kmsg_open();

	while (sf_ms() < deadline &&
	       (!o->max_calls || sf_shared->calls < o->max_calls)) {
		sf_shared->nnew = 0;
		first_head = sf_shared->ring_head;
		sf_rand(&rnd);
		fflush(NULL);
		pid = fork();
		if (pid < 0)
			break;
		if (pid == 0)
			sf_executor(o, corpus, ncorpus, rnd, deadline, kmsg);
		st->executors++;
		if (sf_supervise(pid, o->prog_timeout, st)) {
			sf_write_repro(o->crashes, first_head, st);
			break;
		}
		for (i = 0; i < sf_shared->nnew; i++) {
			if (sf_corpus_add(&corpus, &ncorpus, &cap,
					  &sf_shared->newq[i]))
				break;
			if (o->corpus_out)
				sf_save_prog(o->corpus_out, &sf_shared->newq[i]);
		}
		/* The executor's processes are gone: the pool is whole. */
		t0 = sf_ns();
		sf_sources_restore();
		sf_phase_add(SF_PH_POOL, t0);
		if (sf_pool_check("after the executor exited", 1)) {
			snprintf(st->finding, sizeof(st->finding), "%s",
				 sf_shared->finding_text);
			st->findings++;
			sf_write_repro(o->crashes, first_head, st);
			break;
		}
		if (!o->quiet && sf_ms() - last_report >= 30000) {
			last_report = sf_ms();
			printf("# somfuzz: %.0f s: %llu calls, %llu programs, corpus %d, %llu PCs, %llu edges\n",
			       (sf_ms() - start) / 1000.0,
			       (unsigned long long)sf_shared->calls,
			       (unsigned long long)sf_shared->progs, ncorpus,
			       (unsigned long long)sf_shared->pcs,
			       (unsigned long long)sf_shared->edges);
		}
	}
	st->corpus = ncorpus;
	sf_swap_remove();
	sf_fill_stats(st, start);
	if (kmsg >= 0)
		close(kmsg);
	free(corpus);
	return 0;
}

/* Run @progs in one executor, as fuzzing does, without mutation. */
static void sf_replay_executor(const struct sf_prog *progs, int n, int kmsg)
{
	int i;

	setpgid(0, 0);
	if (sf_exec_init())
		_exit(1);
	for (i = 0; i < n; i++) {
		sf_shared->ring[sf_shared->ring_head % SF_RING] = progs[i];
		sf_shared->ring_head++;
		__atomic_store_n(&sf_shared->prog_start_ms, sf_ms(),
				 __ATOMIC_SEQ_CST);
		sf_exec_prog(&progs[i]);
		__atomic_store_n(&sf_shared->prog_start_ms, 0, __ATOMIC_SEQ_CST);
		sf_shared->progs++;
		if (sf_kmsg_check(kmsg) || sf_shared->finding ||
		    sf_pool_check("after the program", 0))
			_exit(1);
	}
	_exit(0);
}

int sf_replay(const char *path, struct sf_stats *st, int verbose)
{
	struct sf_prog *progs = NULL;
	int n = 0, cap = 0, kmsg, ret;
	int64_t start = sf_ms();
	char err[256];
	struct stat sb;
	FILE *f;
	pid_t pid;

	memset(st, 0, sizeof(*st));
	if (sf_shared_init())
		return -1;
	sf_zero_start();
	if (!stat(path, &sb) && S_ISDIR(sb.st_mode)) {
		if (sf_load_dir(path, &progs, &n, &cap)) {
			snprintf(st->finding, sizeof(st->finding),
				 "%s: cannot read every program", path);
			free(progs);
			return -1;
		}
	} else {
		f = fopen(path, "r");
		if (!f) {
			snprintf(st->finding, sizeof(st->finding), "%s: %s",
				 path, strerror(errno));
			return -1;
		}
		cap = 16;
		progs = calloc(cap, sizeof(*progs));
		n = progs ? sf_prog_parse(f, progs, cap, err, sizeof(err)) : -1;
		fclose(f);
		if (n < 0) {
			snprintf(st->finding, sizeof(st->finding), "%s: %s",
				 path, progs ? err : "out of memory");
			free(progs);
			return -1;
		}
	}
	if (verbose)
		printf("# somfuzz: replaying %d program(s) of %s\n", n, path);
	st->seeds = n;
	sf_pool_baseline();
	kmsg = sf_kmsg_open();
	fflush(NULL);
	pid = fork();
	if (pid == 0)
		sf_replay_executor(progs, n, kmsg);
	ret = pid < 0 ? -1 : sf_supervise(pid, 120, st);
	if (!ret)
		sf_sources_restore();
	if (!ret && sf_pool_check("after the executor exited", 1)) {
		snprintf(st->finding, sizeof(st->finding), "%s",
			 sf_shared->finding_text);
		st->findings++;
		ret = 1;
	}
	sf_swap_remove();
	sf_fill_stats(st, start);
	if (kmsg >= 0)
		close(kmsg);
	free(progs);
	return ret;
}

static uint64_t sf_calls_ns(void)
{
	uint64_t sum = 0;
	int i;

	for (i = 0; i < sf_ncalls; i++)
		sum += sf_shared->by_call[i][2];
	return sum;
}

void sf_print_calls(FILE *f, const char *prefix)
{
	long long zero[4];
	int i, n = 0;

	for (i = 0; i < sf_ncalls; i++) {
		uint64_t run = sf_shared->by_call[i][0];

		if (!run)
			continue;
		if (n++ % 4 == 0)
			fprintf(f, "%s%s", n > 1 ? "\n" : "", prefix);
		fprintf(f, " %s %llu (%llu%% worked)", sf_calls[i].name,
			(unsigned long long)run,
			(unsigned long long)(sf_shared->by_call[i][1] * 100 / run));
	}
	if (n)
		fputc('\n', f);
	fprintf(f, "%s", prefix);
	for (i = 0, n = 0; i < sf_ncalls; i++)
		if (sf_shared->by_call[i][0])
			fprintf(f, "%s %s %llu us", n++ ? "," : " mean time:",
				sf_calls[i].name,
				(unsigned long long)(sf_shared->by_call[i][2] /
						     sf_shared->by_call[i][0] / 1000));
	fprintf(f, "\n%s total ms in calls %llu; outside: cleanup %llu, sources removed %llu, checks %llu, executor setup %llu\n",
		prefix, (unsigned long long)sf_calls_ns() / 1000000,
		(unsigned long long)sf_shared->phase_ns[SF_PH_CLEANUP] / 1000000,
		(unsigned long long)sf_shared->phase_ns[SF_PH_POOL] / 1000000,
		(unsigned long long)sf_shared->phase_ns[SF_PH_CHECK] / 1000000,
		(unsigned long long)sf_shared->phase_ns[SF_PH_EXEC_INIT] / 1000000);
	for (i = 0; i < 4; i++)
		zero[i] = sf_sysfs_ll(sf_zero_files[i]) -
			  sf_shared->zero_at_start[i];
	fprintf(f, "%s som zeroed meanwhile: %lld MiB ahead of time (%lld ms), %lld MiB in the callers (%lld ms)\n",
		prefix, zero[0] >> 20, zero[1] / 1000000, zero[2] >> 20,
		zero[3] / 1000000);
}

static int sf_dump_file(FILE *f, const char *path, const char *name,
			void *arg)
{
	const char *prefix = arg;
	unsigned char buf[32];
	struct stat sb;
	size_t n, i;

	(void)path;
	if (fstat(fileno(f), &sb))
		return 0;
	printf("SOMFUZZ-FILE %s/%s %lld\n", prefix, name, (long long)sb.st_size);
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0) {
		printf("SOMFUZZ-HEX ");
		for (i = 0; i < n; i++)
			printf("%02x", buf[i]);
		printf("\n");
	}
	printf("SOMFUZZ-END %s/%s\n", prefix, name);
	return 0;
}

int sf_dump_hex(const char *dir, const char *prefix)
{
	int err = sf_each_file(dir, sf_dump_file, (void *)prefix);

	fflush(stdout);
	return err < 0 ? -1 : 0;
}
