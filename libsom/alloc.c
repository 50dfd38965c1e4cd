// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libsom allocations: each som_alloc() is a som file of its own (so that
 * som_punch() can free pieces of it), sized, placed by its policy and
 * mapped once; a table per struct som finds the file behind an address.
 *
 * Across fork() the child gets none of the memory (the kernel does not
 * copy som mappings), so in the child every handle forgets its
 * allocations and closes their files, which would otherwise keep the
 * parent's memory from going back to the pool after som_free().
 *
 * The table is memory libsom maps itself, not malloc()'s: libsom runs
 * inside jemalloc's extent hooks (jemalloc.c), where calling the
 * allocator could come back to the same handle.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

#define SOM_GIB		(1UL << 30)

/* One allocation: a mapping of the whole som file @fd. */
struct som_alloc {
	char *addr;
	size_t len;	/* mapped: @size rounded up to 2 MiB */
	size_t size;	/* what the caller asked for */
	int fd;
};

struct som {
	pthread_mutex_t lock;	/* protects the table */
	int dev;		/* /dev/som */
	struct som_alloc *allocs;
	size_t nr, cap;
	struct som *next;	/* in som_handles */
};

/* Every open handle, for fork(). */
static pthread_mutex_t som_handles_lock = PTHREAD_MUTEX_INITIALIZER;
static struct som *som_handles;
static pthread_once_t som_atfork_once = PTHREAD_ONCE_INIT;

/*
 * Across fork(): only the list of handles is locked. A handle's own lock
 * may be held by a thread inside jemalloc's extent hooks, which jemalloc's
 * fork handler waits for, and taking it here could deadlock with that.
 * The child starts with the lock re-initialised instead: the table is
 * written entry first, count last, so what the child sees is at worst one
 * entry counted twice, whose file it then closes twice (harmlessly: no
 * other thread runs in the child yet).
 */
static void som_fork_prepare(void)
{
	pthread_mutex_lock(&som_handles_lock);
}

static void som_fork_parent(void)
{
	pthread_mutex_unlock(&som_handles_lock);
}

/* The child has no som mappings: forget them, and let go of the files. */
static void som_fork_child(void)
{
	struct som *som;
	size_t i, nr;

	for (som = som_handles; som; som = som->next) {
		pthread_mutex_init(&som->lock, NULL);
		nr = __atomic_load_n(&som->nr, __ATOMIC_ACQUIRE);
		for (i = 0; i < nr; i++)
			close(som->allocs[i].fd);
		som->nr = 0;
	}
	pthread_mutex_unlock(&som_handles_lock);
}

static void som_atfork_register(void)
{
	pthread_atfork(som_fork_prepare, som_fork_parent, som_fork_child);
}

int som_open(struct som **out)
{
	struct som *som = calloc(1, sizeof(*som));

	if (!som)
		return -ENOMEM;
	som->dev = open("/dev/som", O_RDWR | O_CLOEXEC);
	if (som->dev < 0) {
		int err = -errno;

		free(som);
		return err;
	}
	pthread_mutex_init(&som->lock, NULL);
	pthread_once(&som_atfork_once, som_atfork_register);
	pthread_mutex_lock(&som_handles_lock);
	som->next = som_handles;
	som_handles = som;
	pthread_mutex_unlock(&som_handles_lock);
	*out = som;
	return 0;
}

int som_close(struct som *som)
{
	struct som **link;
	size_t i;

	if (!som)
		return 0;
	pthread_mutex_lock(&som_handles_lock);
	for (link = &som_handles; *link; link = &(*link)->next) {
		if (*link == som) {
			*link = som->next;
			break;
		}
	}
	pthread_mutex_unlock(&som_handles_lock);
	for (i = 0; i < som->nr; i++) {
		munmap(som->allocs[i].addr, som->allocs[i].len);
		close(som->allocs[i].fd);
	}
	if (som->allocs)
		munmap(som->allocs, som->cap * sizeof(*som->allocs));
	close(som->dev);
	pthread_mutex_destroy(&som->lock);
	free(som);
	return 0;
}

/* The allocation holding [addr, addr + len); the caller holds the lock. */
static struct som_alloc *som_find(struct som *som, const void *addr,
				  size_t len)
{
	const char *p = addr;
	size_t i;

	for (i = 0; i < som->nr; i++) {
		struct som_alloc *a = &som->allocs[i];

		if (p >= a->addr && p < a->addr + a->len &&
		    len <= (size_t)(a->addr + a->len - p))
			return a;
	}
	return NULL;
}

/* Flags known and reserved fields zero? (NULL is the defaults.) */
static bool som_opts_ok(const struct som_alloc_opts *opts)
{
	size_t i;

	if (!opts)
		return true;
	if (opts->flags & ~SOM_ALLOC_FLAGS || opts->reserved0)
		return false;
	for (i = 0; i < sizeof(opts->reserved) / sizeof(opts->reserved[0]); i++)
		if (opts->reserved[i])
			return false;
	return true;
}

static int som_apply_policy(int fd, const struct som_alloc_opts *opts)
{
	static const unsigned long long none[SOM_NODE_WORDS];
	struct som_policy pol;

	if (!opts || (opts->policy == SOM_POLICY_LOCAL && !opts->policy_flags &&
		      !memcmp(opts->nodes, none, sizeof(none))))
		return 0;
	memset(&pol, 0, sizeof(pol));
	pol.mode = opts->policy;
	pol.flags = opts->policy_flags;
	_Static_assert(sizeof(pol.nodes) == sizeof(opts->nodes),
		       "libsom's node mask is the kernel's");
	memcpy(pol.nodes, opts->nodes, sizeof(pol.nodes));
	return ioctl(fd, SOM_IOC_POLICY, &pol) ? -errno : 0;
}

/* Allocate the blocks, then touch each 2 MiB so that every entry is in. */
static int som_do_prefault(int fd, off_t off, size_t len, char *p)
{
	size_t done;

	if (fallocate(fd, 0, off, len))
		return errno == ENOSPC ? -ENOMEM : -errno;
	for (done = 0; done < len; done += SOM_BLOCK)
		(void)*(volatile char *)(p + done);
	(void)*(volatile char *)(p + len - 1);
	return 0;
}

/* Map @len of @fd where the kernel aligns it for the largest entries. */
static void *som_map(int fd, size_t len)
{
	return mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
}

int som_alloc(struct som *som, size_t size, const struct som_alloc_opts *opts,
	      void **addr)
{
	struct som_file_args args;
	struct som_alloc *a;
	size_t len;
	void *p;
	int fd, err;

	if (!som || !addr || !size || size > SIZE_MAX - SOM_BLOCK ||
	    !som_opts_ok(opts))
		return -EINVAL;
	/* Memory comes in 2 MiB blocks: give the caller all of it. */
	len = (size + SOM_BLOCK - 1) & ~(SOM_BLOCK - 1);
	memset(&args, 0, sizeof(args));
	args.flags = SOM_FILE_CLOEXEC;
	fd = ioctl(som->dev, SOM_IOC_FILE, &args);
	if (fd < 0)
		return -errno;
	err = som_apply_policy(fd, opts);
	if (!err && ftruncate(fd, len))
		err = errno == ENOSPC ? -ENOMEM : -errno;
	if (err)
		goto err_close;
	p = som_map(fd, len);
	if (p == MAP_FAILED) {
		err = -errno;
		goto err_close;
	}
	/* Before it is in the table: no lock held while it is zeroed. */
	if (opts && opts->flags & SOM_ALLOC_PREFAULT) {
		err = som_do_prefault(fd, 0, len, p);
		if (err)
			goto err_unmap;
	}

	pthread_mutex_lock(&som->lock);
	if (som->nr == som->cap) {
		size_t cap = som->cap ? 2 * som->cap : 128;

		a = som->allocs ?
		    mremap(som->allocs, som->cap * sizeof(*a),
			   cap * sizeof(*a), MREMAP_MAYMOVE) :
		    mmap(NULL, cap * sizeof(*a), PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (a == MAP_FAILED) {
			pthread_mutex_unlock(&som->lock);
			err = -ENOMEM;
			goto err_unmap;
		}
		som->allocs = a;
		som->cap = cap;
	}
	/* The entry, then the count: see som_fork_child(). */
	som->allocs[som->nr] = (struct som_alloc){ p, len, size, fd };
	__atomic_store_n(&som->nr, som->nr + 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&som->lock);
	*addr = p;
	return 0;

err_unmap:
	munmap(p, len);
err_close:
	close(fd);
	return err;
}

/*
 * The allocation that holds @addr: its start, its mapped length and the
 * size it was asked for.
 */
int som_alloc_range(struct som *som, const void *addr, void **start,
		    size_t *len, size_t *size)
{
	struct som_alloc *a;

	pthread_mutex_lock(&som->lock);
	a = som_find(som, addr, 1);
	if (a) {
		*start = a->addr;
		*len = a->len;
		*size = a->size;
	}
	pthread_mutex_unlock(&som->lock);
	return a ? 0 : -EINVAL;
}

int som_free(struct som *som, void *addr)
{
	struct som_alloc *a, gone;

	if (!som)
		return -EINVAL;
	pthread_mutex_lock(&som->lock);
	a = som_find(som, addr, 1);
	if (!a || a->addr != addr) {
		pthread_mutex_unlock(&som->lock);
		return -EINVAL;
	}
	gone = *a;
	/* The entry, then the count: see som_fork_child(). */
	*a = som->allocs[som->nr - 1];
	__atomic_store_n(&som->nr, som->nr - 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&som->lock);
	munmap(gone.addr, gone.len);
	close(gone.fd);
	return 0;
}

/*
 * Run @fn on the file and offset behind [addr, addr + len), with the lock
 * held so that the allocation cannot be freed meanwhile.
 */
static int som_on_range(struct som *som, void *addr, size_t len,
			int (*fn)(int fd, off_t off, size_t len, char *p))
{
	struct som_alloc *a;
	int err;

	if (!som || !len || (uintptr_t)addr % 4096 || len % 4096)
		return -EINVAL;
	pthread_mutex_lock(&som->lock);
	a = som_find(som, addr, len);
	err = a ? fn(a->fd, (char *)addr - a->addr, len, addr) : -EINVAL;
	pthread_mutex_unlock(&som->lock);
	return err;
}

static int som_do_punch(int fd, off_t off, size_t len, char *p)
{
	(void)p;
	return fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, off,
			 len) ? -errno : 0;
}

int som_punch(struct som *som, void *addr, size_t len)
{
	return som_on_range(som, addr, len, som_do_punch);
}

int som_prefault(struct som *som, void *addr, size_t len)
{
	return som_on_range(som, addr, len, som_do_prefault);
}

int som_where(struct som *som, const void *addr, struct som_where *where)
{
	struct som_mapping m;
	struct som_alloc *a;
	int err = 0;

	if (!som || !where)
		return -EINVAL;
	memset(&m, 0, sizeof(m));
	m.addr = (uintptr_t)addr;
	pthread_mutex_lock(&som->lock);
	a = som_find(som, addr, 1);
	if (!a)
		err = -EINVAL;
	else if (ioctl(a->fd, SOM_IOC_MAPPING, &m))
		err = -errno;
	pthread_mutex_unlock(&som->lock);
	if (err)
		return err;
	where->page_size = m.page_size;
	where->node = m.node;
	where->unmovable = !!(m.out_flags & SOM_MAPPING_UNMOVABLE);
	return 0;
}

int som_usage(struct som *som, struct som_usage *usage)
{
	struct stat st;
	size_t i;
	int err = 0;

	if (!som || !usage)
		return -EINVAL;
	memset(usage, 0, sizeof(*usage));
	pthread_mutex_lock(&som->lock);
	for (i = 0; i < som->nr && !err; i++) {
		if (fstat(som->allocs[i].fd, &st)) {
			err = -errno;
			break;
		}
		usage->allocations++;
		usage->mapped_bytes += som->allocs[i].len;
		usage->allocated_bytes += (unsigned long long)st.st_blocks * 512;
	}
	pthread_mutex_unlock(&som->lock);
	return err;
}
