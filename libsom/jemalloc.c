// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A jemalloc arena whose extents come from som: a program chooses which
 * heaps live on som (mallocx(size, MALLOCX_ARENA(arena))) without
 * LD_PRELOAD. jemalloc is found at run time (mallctl() of the process);
 * libsom does not link it.
 *
 * An extent is a som_alloc() of its own. jemalloc splits and merges
 * extents within one allocation; returning part of an allocation goes
 * through purging, which punches the memory back to the pool, and the
 * allocations themselves go when the arena is destroyed. som memory is
 * always committed and handed out zeroed.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "internal.h"

#if __has_include(<jemalloc/jemalloc.h>)
#include <jemalloc/jemalloc.h>

typedef int (mallctl_fn)(const char *, void *, size_t *, void *, size_t);

/*
 * What experimental.arenas_create_ext takes (jemalloc 5.3's arena_config_t):
 * the arena's own metadata must stay in ordinary memory, which a forked
 * child keeps; som memory it does not get.
 */
struct som_arena_config {
	extent_hooks_t *extent_hooks;
	bool metadata_use_hooks;
};

/* One arena's hooks; jemalloc hands back &hooks, the first member. */
struct som_arena {
	extent_hooks_t hooks;
	struct som *som;
	unsigned int index;
	struct som_arena *next;
};

static pthread_mutex_t som_arenas_lock = PTHREAD_MUTEX_INITIALIZER;
static struct som_arena *som_arenas;

static struct som *arena_som(extent_hooks_t *hooks)
{
	return ((struct som_arena *)hooks)->som;
}

/*
 * Is [addr, addr + size) a whole som allocation, as the alloc hook made
 * it? (Not a piece of one: jemalloc may have split off a tail it still
 * uses.)
 */
static bool som_whole(struct som *som, void *addr, size_t size)
{
	size_t len, asked;
	void *start;

	return !som_alloc_range(som, addr, &start, &len, &asked) &&
	       start == addr && size == asked;
}

static void *som_extent_alloc(extent_hooks_t *hooks, void *new_addr,
			      size_t size, size_t alignment, bool *zero,
			      bool *commit, unsigned int arena)
{
	struct som *som = arena_som(hooks);
	void *p;

	(void)arena;
	/* som places its memory itself, 2 MiB or 1 GiB aligned. */
	if (new_addr || som_alloc(som, size, NULL, &p))
		return NULL;
	if ((uintptr_t)p % alignment) {
		som_free(som, p);
		return NULL;
	}
	*zero = true;
	*commit = true;
	return p;
}

/* false (done) for a whole allocation; jemalloc retains the rest. */
static bool som_extent_dalloc(extent_hooks_t *hooks, void *addr, size_t size,
			      bool committed, unsigned int arena)
{
	struct som *som = arena_som(hooks);

	(void)committed;
	(void)arena;
	return !som_whole(som, addr, size) || som_free(som, addr);
}

static void som_extent_destroy(extent_hooks_t *hooks, void *addr,
			       size_t size, bool committed, unsigned int arena)
{
	struct som *som = arena_som(hooks);

	(void)committed;
	(void)arena;
	if (!som_whole(som, addr, size) || som_free(som, addr))
		som_punch(som, addr, size);
}

static bool som_extent_commit(extent_hooks_t *hooks, void *addr, size_t size,
			      size_t offset, size_t length, unsigned int arena)
{
	(void)hooks, (void)addr, (void)size, (void)offset, (void)length;
	(void)arena;
	return false;
}

/* Not supported (true): jemalloc purges instead. */
static bool som_extent_decommit(extent_hooks_t *hooks, void *addr,
				size_t size, size_t offset, size_t length,
				unsigned int arena)
{
	(void)hooks, (void)addr, (void)size, (void)offset, (void)length;
	(void)arena;
	return true;
}

static bool som_extent_purge(extent_hooks_t *hooks, void *addr, size_t size,
			     size_t offset, size_t length, unsigned int arena)
{
	(void)size;
	(void)arena;
	return som_punch(arena_som(hooks), (char *)addr + offset, length);
}

static bool som_extent_split(extent_hooks_t *hooks, void *addr, size_t size,
			     size_t size_a, size_t size_b, bool committed,
			     unsigned int arena)
{
	(void)hooks, (void)addr, (void)size, (void)size_a, (void)size_b;
	(void)committed, (void)arena;
	return false;
}

/* Only extents of one som allocation merge. */
static bool som_extent_merge(extent_hooks_t *hooks, void *addr_a,
			     size_t size_a, void *addr_b, size_t size_b,
			     bool committed, unsigned int arena)
{
	struct som *som = arena_som(hooks);
	size_t la, lb, sa, sb;
	void *a, *b;

	(void)size_a, (void)size_b, (void)committed, (void)arena;
	return som_alloc_range(som, addr_a, &a, &la, &sa) ||
	       som_alloc_range(som, addr_b, &b, &lb, &sb) || a != b;
}

static mallctl_fn *som_mallctl(void)
{
	return (mallctl_fn *)dlsym(RTLD_DEFAULT, "mallctl");
}

int som_jemalloc_arena_create(struct som *som, unsigned int *arena)
{
	mallctl_fn *mallctl_p = som_mallctl();
	struct som_arena_config cfg;
	struct som_arena *a;
	extent_hooks_t *hooks;
	size_t sz = sizeof(a->index);

	if (!som || !arena)
		return -EINVAL;
	if (!mallctl_p)
		return -ENOSYS;
	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	a->hooks = (extent_hooks_t){
		.alloc = som_extent_alloc,
		.dalloc = som_extent_dalloc,
		.destroy = som_extent_destroy,
		.commit = som_extent_commit,
		.decommit = som_extent_decommit,
		.purge_lazy = som_extent_purge,
		.purge_forced = som_extent_purge,
		.split = som_extent_split,
		.merge = som_extent_merge,
	};
	a->som = som;
	hooks = &a->hooks;
	cfg.extent_hooks = hooks;
	cfg.metadata_use_hooks = false;
	/* Older jemalloc: metadata in som memory too (no fork). */
	if (mallctl_p("experimental.arenas_create_ext", &a->index, &sz, &cfg,
		      sizeof(cfg)) &&
	    mallctl_p("arenas.create", &a->index, &sz, &hooks, sizeof(hooks))) {
		free(a);
		return -ENOMEM;
	}
	pthread_mutex_lock(&som_arenas_lock);
	a->next = som_arenas;
	som_arenas = a;
	pthread_mutex_unlock(&som_arenas_lock);
	*arena = a->index;
	return 0;
}

int som_jemalloc_arena_destroy(struct som *som, unsigned int arena)
{
	mallctl_fn *mallctl_p = som_mallctl();
	struct som_arena **link, *a = NULL;
	char name[64];

	if (!som || !mallctl_p)
		return mallctl_p ? -EINVAL : -ENOSYS;
	pthread_mutex_lock(&som_arenas_lock);
	for (link = &som_arenas; *link; link = &(*link)->next) {
		if ((*link)->index == arena && (*link)->som == som) {
			a = *link;
			*link = a->next;
			break;
		}
	}
	pthread_mutex_unlock(&som_arenas_lock);
	if (!a)
		return -EINVAL;
	snprintf(name, sizeof(name), "arena.%u.destroy", arena);
	if (mallctl_p(name, NULL, NULL, NULL, 0)) {
		pthread_mutex_lock(&som_arenas_lock);
		a->next = som_arenas;
		som_arenas = a;
		pthread_mutex_unlock(&som_arenas_lock);
		return -EBUSY;
	}
	free(a);
	return 0;
}

#else /* no <jemalloc/jemalloc.h> when libsom was built */

int som_jemalloc_arena_create(struct som *som, unsigned int *arena)
{
	(void)som, (void)arena;
	return -ENOSYS;
}

int som_jemalloc_arena_destroy(struct som *som, unsigned int arena)
{
	(void)som, (void)arena;
	return -ENOSYS;
}

#endif
