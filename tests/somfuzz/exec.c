// SPDX-License-Identifier: GPL-2.0
/*
 * Running one program in the executor: its resources, its threads and
 * forked children, touching memory under a signal guard, and putting
 * everything back afterwards.
 *
 * The arena: every mapping a program makes with a slot lands inside one
 * 16 GiB reservation (PROT_NONE, 1 GiB aligned) with MAP_FIXED, so that
 * munmap(), mprotect() and friends at any offset hit the program's own
 * memory and nothing of the executor's; after the program one MAP_FIXED
 * mapping of the whole arena takes it all back. Nothing else may be
 * mapped at an address of the kernel's choosing while a program runs (it
 * could land in a hole the program made): thread stacks and KCOV buffers
 * are set up before the first program, and a forked child maps its KCOV
 * buffer into space set aside for it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <setjmp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/som.h>

#include "somfuzz.h"

char *sf_arena;
int sf_dev_fd = -1;

#define SF_STACK_SIZE	(256UL << 10)
/* Mappings too large for the arena go here, never over anything. */
#define SF_FAR		((char *)0x600000000000UL)
#define SF_FAR_SIZE	(64UL << 30)

/* A started thread: a range of the program's calls, or a background op. */
struct sf_slot {
	struct sf_thread t;
	int from, to;
	void (*body)(struct sf_thread *t, const uint64_t *args);
	const uint64_t *args;
	int busy;
};

static struct sf_slot sf_slots[SF_MAX_THREADS];
static char *sf_stacks;
static char *sf_kcov_window;	/* where forked children map their KCOV */
static struct sf_kcov *sf_main_kcov;
static char *sf_scratch;	/* RW page, PROT_NONE page: bad pointers */
static char *sf_ro_view;	/* a read-only view of sf_ro_alias */
static char *sf_ro_alias;

static __thread sigjmp_buf sf_touch_env;
static __thread volatile int sf_touch_armed;

/* The call each thread of the executor is in, for a fault outside a touch. */
static __thread const char *sf_current_call;
static pid_t sf_executor_pid;	/* its forked children are not it */

/*
 * The line of /proc/self/maps whose range holds @addr, into @out (empty
 * if none): which mapping a fault outside a touch hit. Plain system
 * calls and a static buffer, from a signal handler about to die.
 */
static void sf_maps_line(uintptr_t addr, char *out, size_t size)
{
	static char buf[8192];
	size_t have = 0;
	unsigned long lo, hi;
	char *line, *nl;
	ssize_t r;
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);

	out[0] = 0;
	if (fd < 0)
		return;
	for (;;) {
		r = read(fd, buf + have, sizeof(buf) - 1 - have);
		if (r <= 0)
			break;
		have += (size_t)r;
		buf[have] = 0;
		for (line = buf; (nl = strchr(line, '\n')); line = nl + 1) {
			*nl = 0;
			if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 &&
			    addr >= lo && addr < hi) {
				snprintf(out, size, "%s", line);
				close(fd);
				return;
			}
		}
		have = strlen(line);
		memmove(buf, line, have);
	}
	close(fd);
}

static void sf_fault_handler(int sig, siginfo_t *si, void *uc)
{
	char where[256];

	(void)uc;
	if (sf_touch_armed) {
		sf_touch_armed = 0;
		siglongjmp(sf_touch_env, sig);
	}
	/*
	 * Not a touch: say where and from whom (a fault has si_code > 0 and
	 * the address; a signal sent by a process, si_code <= 0 and its
	 * pid), then die of it, so that the supervisor sees the signal. A
	 * forked child's death is not a finding, as before.
	 */
	if (getpid() == sf_executor_pid) {
		sf_maps_line((uintptr_t)si->si_addr, where, sizeof(where));
		sf_finding("the executor died of signal %d (%s) outside any touch of memory: si_code %d, address %p, sender pid %d, in call %s of thread %d; mapped there: %s",
			   sig, strsignal(sig), si->si_code, si->si_addr,
			   si->si_code <= 0 ? (int)si->si_pid : 0,
			   sf_current_call ? sf_current_call : "(none)",
			   (int)gettid(), where[0] ? where : "nothing");
	}
	signal(sig, SIG_DFL);
	raise(sig);
}

static int sf_reserve_arena(void)
{
	void *p = mmap(sf_arena, SF_ARENA_SIZE, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED,
		       -1, 0);

	return p == MAP_FAILED ? -1 : 0;
}

/*
 * Run in SF_CGROUP, mounting cgroup2 if nothing is: without it,
 * ioc_cgroup finds no cgroup and fails with EBADF, which is fine too.
 */
static void sf_enter_cgroup(void)
{
	struct statfs fs;
	int fd;

	if (statfs(SF_CGROUP_FS, &fs) || fs.f_type != 0x63677270)
		mount("none", SF_CGROUP_FS, "cgroup2", 0, NULL);
	mkdir(SF_CGROUP, 0755);
	fd = open(SF_CGROUP "/cgroup.procs", O_WRONLY | O_CLOEXEC);
	if (fd >= 0 && write(fd, "0", 1) < 0)
		perror(SF_CGROUP);
	if (fd >= 0)
		close(fd);
}

/* A program's limit on SF_CGROUP goes with the program. */
static void sf_lift_cgroup_limit(void)
{
	struct som_cgroup c = {
		.flags = SOM_CGROUP_SET_LIMIT, .limit = SOM_CGROUP_NO_LIMIT,
	};

	c.cgroup_fd = open(SF_CGROUP, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (c.cgroup_fd < 0)
		return;
	ioctl(sf_dev_fd, SOM_IOC_CGROUP, &c);
	close(c.cgroup_fd);
}

int sf_exec_init(void)
{
	struct sigaction sa;
	char *area;
	int i, mfd;

	/* One malloc arena: threads must not map heaps of their own. */
	mallopt(M_ARENA_MAX, 1);
	area = mmap(NULL, SF_ARENA_SIZE + (1UL << 30), PROT_NONE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (area == MAP_FAILED)
		return -1;
	sf_arena = (char *)(((uintptr_t)area + (1UL << 30) - 1) &
			    ~((1UL << 30) - 1));
	if (sf_arena > area)
		munmap(area, sf_arena - area);
	munmap(sf_arena + SF_ARENA_SIZE,
	       area + SF_ARENA_SIZE + (1UL << 30) - (sf_arena + SF_ARENA_SIZE));

	sf_stacks = mmap(NULL, SF_MAX_THREADS * SF_STACK_SIZE,
			 PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			 -1, 0);
	sf_scratch = mmap(NULL, 8192, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (sf_stacks == MAP_FAILED || sf_scratch == MAP_FAILED)
		return -1;
	if (mprotect(sf_scratch + 4096, 4096, PROT_NONE))
		return -1;
	mfd = memfd_create("somfuzz-ro", MFD_CLOEXEC);
	if (mfd < 0 || ftruncate(mfd, 4096))
		return -1;
	sf_ro_alias = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED,
			   mfd, 0);
	sf_ro_view = mmap(NULL, 4096, PROT_READ, MAP_SHARED, mfd, 0);
	close(mfd);
	if (sf_ro_alias == MAP_FAILED || sf_ro_view == MAP_FAILED)
		return -1;

	sf_kcov_window = mmap(NULL, (SF_MAX_CHILDREN + 1) * SF_KCOV_SPACE,
			      PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS |
			      MAP_NORESERVE, -1, 0);
	if (sf_kcov_window == MAP_FAILED)
		return -1;
	sf_main_kcov = sf_kcov_open(NULL);
	if (sf_main_kcov && sf_kcov_enable(sf_main_kcov)) {
		sf_kcov_close(sf_main_kcov);
		sf_main_kcov = NULL;
	}
	for (i = 0; i < SF_MAX_THREADS; i++)
		sf_slots[i].t.kcov = sf_kcov_open(NULL);

	sf_executor_pid = getpid();
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = sf_fault_handler;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	sigaction(SIGSEGV, &sa, NULL);
	sigaction(SIGBUS, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	sf_dev_fd = open("/dev/som", O_RDWR | O_CLOEXEC);
	sf_enter_cgroup();
	/* An executor killed mid-program (a finding, a hang) left its limit. */
	sf_lift_cgroup_limit();
	return 0;
}

void *sf_ptr(enum sf_ptr kind, void *good, size_t size)
{
	switch (kind) {
	case SF_PTR_NULL:
		return NULL;
	case SF_PTR_UNMAPPED:
		return sf_scratch + 4096;
	case SF_PTR_KERNEL:
		return (void *)0xffff888000000000UL;
	case SF_PTR_STRADDLE:
		memcpy(sf_scratch + 4096 - size / 2, good, size / 2);
		return sf_scratch + 4096 - size / 2;
	case SF_PTR_READONLY:
		memcpy(sf_ro_alias, good, size < 4096 ? size : 4096);
		return sf_ro_view;
	default:
		return good;
	}
}

/*
 * Adding a source brings a GiB the zeroing worker clears (about 0.3 s
 * under TCG, the time of a thousand other calls) and that removing it
 * may clear again: while fuzzing, calls that would add one go ahead at
 * most SF_GIB_ADDS_PER_MIN times a minute, and are left out (not run,
 * not counted) beyond. A replay runs every call.
 */
#define SF_GIB_ADDS_PER_MIN	20

int sf_may_add_gib(void)
{
	int64_t start = sf_shared->run_start_ms, now = sf_ms();

	if (!start)
		return 1;
	if (__atomic_load_n(&sf_shared->gib_adds, __ATOMIC_RELAXED) >
	    (uint64_t)((now - start) * SF_GIB_ADDS_PER_MIN / 60000) + 1)
		return 0;
	__atomic_fetch_add(&sf_shared->gib_adds, 1, __ATOMIC_RELAXED);
	return 1;
}

/* Resources. FD arguments count DEV and FILE resources together. */
static int sf_res_match(const struct sf_res *r, int kind)
{
	if (r->kind < 0)
		return 0;
	if (kind == SF_R_FD)
		return r->kind == SF_R_DEV || r->kind == SF_R_FILE;
	return r->kind == kind;
}

int sf_res_add(struct sf_thread *t, const struct sf_res *r)
{
	struct sf_exec *ex = t->ex;
	int i, ret = -1;

	pthread_mutex_lock(&ex->lock);
	for (i = 0; i < SF_MAX_RES; i++) {
		if (i < ex->nres && ex->res[i].kind >= 0)
			continue;
		ex->res[i] = *r;
		if (i == ex->nres)
			ex->nres++;
		ret = i;
		break;
	}
	pthread_mutex_unlock(&ex->lock);
	return ret;
}

static struct sf_res *sf_res_find(struct sf_exec *ex, int kind, uint64_t n)
{
	int i, live = 0;

	for (i = 0; i < ex->nres; i++)
		live += sf_res_match(&ex->res[i], kind);
	if (!live)
		return NULL;
	n %= live;
	for (i = 0; i < ex->nres; i++)
		if (sf_res_match(&ex->res[i], kind) && !n--)
			return &ex->res[i];
	return NULL;
}

struct sf_res *sf_res_get(struct sf_thread *t, int kind, uint64_t n,
			  struct sf_res *copy, int *slot)
{
	struct sf_res *r;

	pthread_mutex_lock(&t->ex->lock);
	r = sf_res_find(t->ex, kind, n);
	if (r) {
		*copy = *r;
		if (slot)
			*slot = (int)(r - t->ex->res);
	}
	pthread_mutex_unlock(&t->ex->lock);
	return r ? copy : NULL;
}

void sf_res_kill_slot(struct sf_thread *t, int slot)
{
	pthread_mutex_lock(&t->ex->lock);
	t->ex->res[slot].kind = -1;
	pthread_mutex_unlock(&t->ex->lock);
}

int sf_res_mark_mapped(struct sf_thread *t, int slot)
{
	int was;

	pthread_mutex_lock(&t->ex->lock);
	was = t->ex->res[slot].mapped;
	t->ex->res[slot].mapped = 1;
	pthread_mutex_unlock(&t->ex->lock);
	return was;
}

/* Has the program started a thread (that may still run)? */
int sf_threads_started(struct sf_thread *t)
{
	int n;

	pthread_mutex_lock(&t->ex->lock);
	n = t->ex->nthreads;
	pthread_mutex_unlock(&t->ex->lock);
	return n > 0;
}

static void sf_kill_overlap_locked(struct sf_exec *ex, uint64_t addr,
				   uint64_t len, int except)
{
	int i;

	for (i = 0; i < ex->nres; i++) {
		struct sf_res *r = &ex->res[i];

		if (i != except && r->kind == SF_R_MAP &&
		    r->addr < addr + len && addr < r->addr + r->len)
			r->kind = -1;
	}
}

void sf_res_move_map(struct sf_thread *t, int slot, uint64_t addr,
		     uint64_t len)
{
	struct sf_res *r = &t->ex->res[slot];

	pthread_mutex_lock(&t->ex->lock);
	sf_kill_overlap_locked(t->ex, addr, len, slot);
	if (r->kind == SF_R_MAP) {
		r->addr = addr;
		r->len = len;
		r->in_arena = addr >= (uintptr_t)sf_arena &&
			      addr + len <= (uintptr_t)sf_arena + SF_ARENA_SIZE;
	}
	pthread_mutex_unlock(&t->ex->lock);
}

/* A new mapping replaced whatever mapped [addr, addr + len). */
void sf_res_kill_overlap(struct sf_thread *t, uint64_t addr, uint64_t len)
{
	pthread_mutex_lock(&t->ex->lock);
	sf_kill_overlap_locked(t->ex, addr, len, -1);
	pthread_mutex_unlock(&t->ex->lock);
}

/*
 * Touch @m at [off, off + len) every @stride bytes, at most 64 words:
 * mode 0 reads, 1 writes the tag, 2 reads then writes, 3 reads and wants
 * zeros (a fresh /dev/som mapping). Every word read must be zero or a
 * tag the reader may see (check.c). Returns 0, the signal the access
 * raised, or -1 when a check failed.
 */
static __attribute__((noinline)) int
sf_touch_words(struct sf_thread *t, const struct sf_res *m, uint64_t off,
	       int count, uint64_t stride, int mode)
{
	uint64_t tag = sf_tag(t->ex->serial, t->proc, m->map_obj, m->map_file);
	volatile uint64_t *p;
	uint64_t w;
	int k;

	for (k = 0; k < count; k++) {
		p = (volatile uint64_t *)((m->addr + off + k * stride) & ~7UL);
		if ((uintptr_t)p >= m->addr + m->len && k)
			break;
		if (mode != 1) {
			w = *p;
			if (w && mode == 3) {
				sf_finding("a new /dev/som mapping reads %#llx at offset %#llx, not 0 (program %llu, process %d)",
					   (unsigned long long)w,
					   (unsigned long long)((uintptr_t)p - m->addr),
					   (unsigned long long)t->ex->serial,
					   t->proc);
				return -1;
			}
			if (w && sf_tag_check(t, m, (uintptr_t)p - m->addr, w))
				return -1;
		}
		if (mode == 1 || mode == 2)
			*p = tag;
	}
	return 0;
}

/*
 * Touch @m at [off, off + len) every @stride bytes, at most 64 words:
 * mode 0 reads, 1 writes the tag, 2 reads then writes, 3 reads and wants
 * zeros (a fresh /dev/som mapping). Every word read must be zero or a
 * tag the reader may see (check.c). Returns 0, the signal the access
 * raised, or -1 when a check failed.
 */
int sf_touch(struct sf_thread *t, const struct sf_res *m, uint64_t off,
	     uint64_t len, uint64_t stride, int mode)
{
	int count, sig, ret;

	if (!len)
		len = m->len > off ? m->len - off : 8;
	if (stride < 8)
		stride = 8;
	count = len / stride + 1 > 64 ? 64 : (int)(len / stride) + 1;
	sig = sigsetjmp(sf_touch_env, 1);
	if (sig)
		return sig;
	sf_touch_armed = 1;
	ret = sf_touch_words(t, m, off, count, stride, mode);
	sf_touch_armed = 0;
	return ret;
}

static void sf_run_range(struct sf_thread *t, int from, int to);

static void sf_run_call(struct sf_thread *t, const struct sf_call *c)
{
	const struct sf_call_desc *d = &sf_calls[c->desc];
	uint64_t new_bits, t0 = sf_ns();
	long ret;

	sf_kcov_start(t->kcov);
	sf_current_call = d->name;
	ret = d->fn(t, c->args);
	sf_current_call = NULL;
	new_bits = sf_kcov_collect(t->kcov);
	if (ret == SF_NOOP)
		return;
	__atomic_fetch_add(&sf_shared->by_call[c->desc][2], sf_ns() - t0,
			   __ATOMIC_RELAXED);
	__atomic_fetch_add(&sf_shared->by_call[c->desc][0], 1, __ATOMIC_RELAXED);
	if (ret >= 0)
		__atomic_fetch_add(&sf_shared->by_call[c->desc][1], 1,
				   __ATOMIC_RELAXED);
	if (new_bits)
		__atomic_fetch_add(&t->ex->new_bits, new_bits,
				   __ATOMIC_RELAXED);
	__atomic_fetch_add(&sf_shared->calls, 1, __ATOMIC_RELAXED);
}

static void *sf_slot_main(void *arg)
{
	struct sf_slot *s = arg;

	if (sf_kcov_enable(s->t.kcov))
		s->t.kcov = NULL;
	if (s->body) {
		sf_current_call = "background";
		s->body(&s->t, s->args);
	} else {
		sf_run_range(&s->t, s->from, s->to);
	}
	sf_kcov_disable(s->t.kcov);
	return NULL;
}

/*
 * Start a thread of the executor (never of a child) that runs calls
 * [from, to) of the program, or @body. 0, or -1 if it cannot (then the
 * caller runs them itself).
 */
int sf_thread_start(struct sf_thread *t, int from, int to,
		    void (*body)(struct sf_thread *, const uint64_t *),
		    const uint64_t *args)
{
	struct sf_exec *ex = t->ex;
	pthread_attr_t attr;
	struct sf_slot *s;
	int i, ret = -1;

	if (t->proc)
		return -1;
	pthread_mutex_lock(&ex->lock);
	i = ex->nthreads;
	if (i < SF_MAX_THREADS) {
		s = &sf_slots[i];
		s->t.ex = ex;
		s->t.proc = 0;
		s->t.rnd = t->rnd ^ (uint64_t)(i + 1) * 0x9e3779b97f4a7c15ULL;
		s->from = from;
		s->to = to;
		s->body = body;
		s->args = args;
		pthread_attr_init(&attr);
		pthread_attr_setstack(&attr, sf_stacks + i * SF_STACK_SIZE,
				      SF_STACK_SIZE);
		if (!pthread_create(&ex->threads[i], &attr, sf_slot_main, s)) {
			ex->nthreads++;
			ret = 0;
		}
		pthread_attr_destroy(&attr);
	}
	pthread_mutex_unlock(&ex->lock);
	return ret;
}

/*
 * A forked child: calls [from, to), then exit. Its arena keeps the holes
 * its parent's som mappings leave (som VMAs are never copied; if one were,
 * the child's touches would read its parent's tags), so it maps its KCOV
 * buffer where the parent set space aside.
 */
static void sf_child(struct sf_thread *parent, int from, int to, int proc)
{
	struct sf_thread t = *parent;

	pthread_mutex_init(&t.ex->lock, NULL);
	t.ex->nthreads = 0;
	t.ex->nchildren = SF_MAX_CHILDREN;	/* no forks from a child */
	t.proc = proc;
	t.kcov = sf_kcov_open(sf_kcov_window + proc * SF_KCOV_SPACE);
	if (sf_kcov_enable(t.kcov))
		t.kcov = NULL;
	sf_run_range(&t, from, to);
	_exit(0);
}

static void sf_run_range(struct sf_thread *t, int from, int to)
{
	const struct sf_prog *p = t->ex->prog;
	struct sf_exec *ex = t->ex;
	int i = from, end, n;
	pid_t pid;

	while (i < to && !sf_shared->finding) {
		const struct sf_call *c = &p->calls[i];
		const struct sf_call_desc *d = &sf_calls[c->desc];

		if (d->ctl == SF_CTL_NONE) {
			sf_run_call(t, c);
			i++;
			continue;
		}
		n = (int)(c->args[0] % 5);
		end = i + 1 + (n ? n : 1);
		if (end > to)
			end = to;
		if (d->ctl == SF_CTL_THREAD) {
			if (sf_thread_start(t, i + 1, end, NULL, NULL))
				end = i + 1;	/* run them here */
			i = end;
			continue;
		}
		/* SF_CTL_FORK */
		pthread_mutex_lock(&ex->lock);
		n = ex->nchildren < SF_MAX_CHILDREN ? ++ex->nchildren : 0;
		pthread_mutex_unlock(&ex->lock);
		if (!n) {
			i++;
			continue;
		}
		__atomic_fetch_add(&sf_shared->calls, 1, __ATOMIC_RELAXED);
		pid = fork();
		if (pid == 0)
			sf_child(t, i + 1, end, n);
		ex->children[n - 1] = pid;
		if (pid > 0 && !(c->args[1] & 1)) {
			waitpid(pid, NULL, 0);
			ex->children[n - 1] = 0;
		}
		i = end;
	}
}

/* Give back everything the program holds (its threads are done). */
static void sf_exec_cleanup(struct sf_exec *ex)
{
	int i;

	for (i = 0; i < ex->nres; i++) {
		struct sf_res *r = &ex->res[i];

		if (r->kind == SF_R_MAP && !r->in_arena)
			munmap((void *)(uintptr_t)r->addr, r->len);
		if (r->kind == SF_R_DEV || r->kind == SF_R_FILE)
			close(r->fd);
	}
	sf_reserve_arena();
	munmap(SF_FAR, SF_FAR_SIZE);
	sf_lift_cgroup_limit();
}

int sf_exec_prog(const struct sf_prog *p)
{
	static struct sf_exec ex;
	struct sf_thread t;
	uint64_t t0;
	int i;

	memset(&ex, 0, sizeof(ex));
	pthread_mutex_init(&ex.lock, NULL);
	ex.prog = p;
	ex.serial = __atomic_add_fetch(&sf_shared->serial, 1, __ATOMIC_RELAXED);
	memset(&t, 0, sizeof(t));
	t.ex = &ex;
	t.kcov = sf_main_kcov;
	t.rnd = ex.serial * 0x2545f4914f6cdd1dULL | 1;

	sf_run_range(&t, 0, p->ncalls);

	ex.stop_background = 1;
	for (i = 0; i < ex.nthreads; i++)
		pthread_join(ex.threads[i], NULL);
	for (i = 0; i < SF_MAX_CHILDREN; i++)
		if (ex.children[i] > 0)
			waitpid(ex.children[i], NULL, 0);
	t0 = sf_ns();
	sf_exec_cleanup(&ex);
	sf_phase_add(SF_PH_CLEANUP, t0);
	sf_rate_restore(&ex);
	if (ex.new_bits)
		return 2;
	return 0;
}
