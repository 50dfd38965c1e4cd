// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Large malloc()s on som.
 *
 * glibc's malloc maps its memory through internal calls that no preload
 * can see, and tcmalloc, left to itself, grows its heap with sbrk(), so
 * the shim answers allocations of at least the threshold itself: each is
 * a som mapping of whole 2 MiB blocks, 2 MiB aligned (1 GiB from 1 GiB
 * up), and what is left of the request past the last whole block, its
 * tail, is ordinary memory mapped right after it (shim_layout()): a new
 * 3 MiB block is one som block and 1 MiB of 4 KiB pages. Freed blocks
 * are kept for reuse (malloc_cache.c), and one taken from there may have
 * a longer tail. Everything else goes to the allocator after the shim in
 * symbol order.
 * jemalloc maps its extents with the public mmap(), which the shim
 * answers, and so does tcmalloc when told not to use sbrk(): under them
 * these wrappers only pass calls on (and jemalloc's own API, mallocx()
 * and sdallocx(), sees only its own blocks), unless SOMRUN_MALLOC=on asks
 * for both.
 *
 * free() must tell the shim's blocks from the allocator's cheaply: the
 * shim's are 2 MiB aligned, which no glibc chunk is, and only those are
 * looked up in the table.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "shim.h"

static void *(*next_malloc)(size_t);
static void (*next_free)(void *);
static void *(*next_calloc)(size_t, size_t);
static void *(*next_realloc)(void *, size_t);
static void *(*next_memalign)(size_t, size_t);
static int (*next_posix_memalign)(void **, size_t, size_t);
static void *(*next_aligned_alloc)(size_t, size_t);
static void *(*next_valloc)(size_t);
static void *(*next_pvalloc)(size_t);
static size_t (*next_malloc_usable_size)(void *);
static int (*next_malloc_trim)(size_t);

static bool front_on;
static unsigned long front_nr;	/* live allocations of the shim's */
static int front_state;		/* 0 unresolved, 1 resolving, 2 ready */

/*
 * dlsym() can allocate while it resolves: those few bytes come from here,
 * and are never freed.
 */
static char bootstrap[4096] __attribute__((aligned(16)));
static size_t bootstrap_used;

static void *bootstrap_alloc(size_t size)
{
	size_t n = (size + 15) & ~15UL;
	void *p;

	if (n > sizeof(bootstrap) - bootstrap_used)
		return NULL;
	p = bootstrap + bootstrap_used;
	bootstrap_used += n;
	return p;
}

static bool in_bootstrap(const void *p)
{
	return (const char *)p >= bootstrap &&
	       (const char *)p < bootstrap + sizeof(bootstrap);
}

/*
 * Does the next allocator map its memory through the public mmap(), so
 * that the shim sees its large mappings anyway? jemalloc does; glibc's
 * malloc uses internal calls; tcmalloc (gperftools) grows its heap with
 * sbrk() unless TCMALLOC_SKIP_SBRK is true, which somrun(1) sets, and
 * then with mmap(). Such an allocator keeps and reuses its free spans
 * itself, at no system call, which the shim's own blocks could not match
 * (a tenth of tcmalloc's speed on stress-ng's malloc stressor). Asked by
 * where malloc() is defined: comparing with __libc_malloc would not do,
 * since tcmalloc defines that name too.
 */
static bool next_maps_publicly(void)
{
	const char *skip = getenv("TCMALLOC_SKIP_SBRK");
	Dl_info info;

	if (!next_malloc || !dladdr((void *)next_malloc, &info) ||
	    !info.dli_fname)
		return false;
	if (strstr(info.dli_fname, "jemalloc"))
		return true;
	/* gperftools reads the flag as true from t, T, y, Y or 1. */
	return strstr(info.dli_fname, "tcmalloc") && skip &&
	       strchr("tTyY1", skip[0]) && skip[0];
}

static void front_resolve(void)
{
	front_state = 1;
	next_malloc = dlsym(RTLD_NEXT, "malloc");
	next_free = dlsym(RTLD_NEXT, "free");
	next_calloc = dlsym(RTLD_NEXT, "calloc");
	next_realloc = dlsym(RTLD_NEXT, "realloc");
	next_memalign = dlsym(RTLD_NEXT, "memalign");
	next_posix_memalign = dlsym(RTLD_NEXT, "posix_memalign");
	next_aligned_alloc = dlsym(RTLD_NEXT, "aligned_alloc");
	next_valloc = dlsym(RTLD_NEXT, "valloc");
	next_pvalloc = dlsym(RTLD_NEXT, "pvalloc");
	next_malloc_usable_size = dlsym(RTLD_NEXT, "malloc_usable_size");
	next_malloc_trim = dlsym(RTLD_NEXT, "malloc_trim");
	shim_init();
	front_on = shim_cfg.malloc_mode == 1 ||
		   (shim_cfg.malloc_mode < 0 && !next_maps_publicly());
	__atomic_store_n(&front_state, 2, __ATOMIC_RELEASE);
}

/* false while dlsym() runs: the caller serves from the bootstrap. */
static bool front_ready(void)
{
	int state = __atomic_load_n(&front_state, __ATOMIC_ACQUIRE);

	if (state == 2)
		return true;
	if (state == 1)
		return false;
	front_resolve();
	return true;
}

/*
 * A new block of @head som bytes and @tail ordinary ones, aligned to
 * @align, or MAP_FAILED with *err (0 if som was not the cause).
 */
static void *front_map(size_t head, size_t tail, size_t align, int *err)
{
	if (!tail)
		return shim_map(NULL, head, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, PIECE_MALLOC, err);
	return shim_map_tailed(head, tail, align, 0, PIECE_MALLOC, err);
}

/*
 * A block of at least @size bytes aligned to @align, or NULL; zeroed if
 * @zero. *@failed if the caller must fail rather than ask the allocator.
 */
static void *front_alloc(size_t size, size_t align, bool zero, bool *failed)
{
	size_t head, tail;
	void *p;
	int err;

	*failed = false;
	/* memalign() takes any alignment: the next power of 2, as glibc's. */
	if (align & (align - 1)) {
		size_t a = align;

		while (a & (a - 1))
			a &= a - 1;
		align = a << 1;
	}
	if (!align)
		align = 1;
	if (!front_on || size < shim_cfg.threshold || align > SHIM_GIB ||
	    size > SIZE_MAX - SHIM_GIB)
		return NULL;
	shim_layout(size, &head, &tail);
	p = mcache_take(head, tail, align);
	if (p) {
		if (zero)
			memset(p, 0, size);
		return p;
	}
	/* The pool short, the blocks this process keeps go back first. */
	p = front_map(head, tail, align, &err);
	if (p == MAP_FAILED) {
		/* As for mmap(): ordinary memory, or none if asked so. */
		*failed = err && !som_fallback_allowed(head + tail, err);
		return NULL;
	}
	if ((uintptr_t)p % SHIM_BLOCK || (uintptr_t)p % align) {
		shim_unmap(p, head + tail);
		return NULL;
	}
	shim_count(&shim_stats.malloc_maps, 1);
	__atomic_add_fetch(&front_nr, 1, __ATOMIC_RELAXED);
	return p;
}

/* What the table says of the block at @p: front_find(). */
enum front_kind { FRONT_NONE, FRONT_LIVE, FRONT_KEPT };

/*
 * Is @p the shim's block, live or kept freed (malloc_cache.c)? With the
 * table lock held. For a live one, *@len is its length and *@head its som
 * part: the run of pieces of one file starting at @p, the last of which
 * may be its ordinary tail.
 */
static enum front_kind front_find(uintptr_t a, size_t *head, size_t *len)
{
	size_t i = tbl_first_after(a);
	uintptr_t end;

	if (i == tbl_count() || tbl_at(i)->start != a ||
	    !(tbl_at(i)->flags & PIECE_MALLOC) || tbl_at(i)->off)
		return FRONT_NONE;
	if (tbl_at(i)->flags & PIECE_CACHED)
		return FRONT_KEPT;
	end = tbl_at(i)->end;
	*head = end - a;
	for (i++; i < tbl_count() && tbl_at(i)->start == end &&
		  tbl_at(i)->file == tbl_at(i - 1)->file; i++) {
		end = tbl_at(i)->end;
		if (!(tbl_at(i)->flags & PIECE_TAIL))
			*head = end - a;
	}
	*len = end - a;
	return FRONT_LIVE;
}

/* Could @p be the shim's? Those are 2 MiB aligned: no glibc chunk is. */
static bool front_maybe(const void *p)
{
	return __atomic_load_n(&front_nr, __ATOMIC_RELAXED) && p &&
	       !((uintptr_t)p % SHIM_BLOCK);
}

/* The length of the shim's live block at @p, or 0 if @p is not one. */
static size_t front_len(const void *p, size_t *head)
{
	size_t len = 0;

	if (!front_maybe(p))
		return 0;
	tbl_lock();
	if (front_find((uintptr_t)p, head, &len) != FRONT_LIVE)
		len = 0;
	tbl_unlock();
	return len;
}

/* A block out of use for good; with the table lock held. */
void front_release_locked(void *p, size_t len)
{
	shim_unmap_locked(p, len);
	__atomic_sub_fetch(&front_nr, 1, __ATOMIC_RELAXED);
}

/*
 * free() of the shim's block: kept or unmapped, in one hold of the lock
 * so that two free()s of one block cannot both keep it. false if @p is
 * not the shim's.
 */
static bool front_free(void *p)
{
	enum front_kind kind;
	size_t head, len;

	if (!front_maybe(p))
		return false;
	tbl_lock();
	kind = front_find((uintptr_t)p, &head, &len);
	if (kind == FRONT_LIVE && !mcache_put_locked(p, head, len - head))
		front_release_locked(p, len);
	tbl_unlock();
	if (kind == FRONT_KEPT) {
		shim_warn("free(%p): double free", p);
		abort();
	}
	return kind == FRONT_LIVE;
}

/*
 * realloc() to @size, at most the block's @len, in place: a new end in
 * the som part gives back the whole som blocks past it and the tail, one
 * in the tail gives back the tail's pages past it.
 */
static void front_shrink(void *p, size_t head, size_t len, size_t size)
{
	uintptr_t a = (uintptr_t)p;
	size_t keep;

	if (size <= head)
		keep = shim_round_up(size, SHIM_BLOCK);
	else
		keep = shim_round_up(size, SHIM_PAGE);
	if (keep >= len)
		return;
	tbl_lock();
	shim_unmap_locked((void *)(a + keep), len - keep);
	tbl_unlock();
}

SHIM_EXPORT void *malloc(size_t size)
{
	bool failed;
	void *p;

	if (!front_ready())
		return bootstrap_alloc(size);
	p = front_alloc(size, 1, false, &failed);
	if (p || failed)
		return p;
	return next_malloc(size);
}

SHIM_EXPORT void free(void *p)
{
	if (!p || in_bootstrap(p))
		return;
	if (!front_ready() || front_free(p))
		return;
	next_free(p);
}

SHIM_EXPORT void *calloc(size_t n, size_t size)
{
	bool failed;
	void *p;

	if (size && n > SIZE_MAX / size) {
		errno = ENOMEM;
		return NULL;
	}
	if (!front_ready()) {
		/* The bootstrap is static storage: zeroed. */
		return bootstrap_alloc(n * size);
	}
	p = front_alloc(n * size, 1, true, &failed);
	if (p || failed)
		return p;
	return next_calloc(n, size);
}

SHIM_EXPORT void *realloc(void *old, size_t size)
{
	size_t old_len, head;
	bool failed;
	void *p;

	if (!front_ready())
		return NULL;
	if (!old)
		return malloc(size);
	if (in_bootstrap(old)) {
		p = malloc(size);
		if (p)
			memcpy(p, old, size < 64 ? size : 64);
		return p;
	}
	old_len = front_len(old, &head);
	if (!old_len) {
		size_t have;

		if (!front_on || size < shim_cfg.threshold)
			return next_realloc(old, size);
		/* Growing past the threshold: onto som. */
		have = next_malloc_usable_size ? next_malloc_usable_size(old) : 0;
		if (!have)
			return next_realloc(old, size);
		p = front_alloc(size, 1, false, &failed);
		if (!p)
			return failed ? NULL : next_realloc(old, size);
		memcpy(p, old, have < size ? have : size);
		next_free(old);
		return p;
	}
	if (!size) {
		front_free(old);
		return NULL;
	}
	if (size <= old_len && size >= shim_cfg.threshold) {
		front_shrink(old, head, old_len, size);
		return old;
	}
	/* Growing, or shrinking below the threshold: copy. */
	p = front_alloc(size, 1, false, &failed);
	if (!p && !failed)
		p = next_malloc(size);
	if (!p)
		return NULL;
	memcpy(p, old, size < old_len ? size : old_len);
	front_free(old);
	return p;
}

SHIM_EXPORT void *reallocarray(void *old, size_t n, size_t size)
{
	if (size && n > SIZE_MAX / size) {
		errno = ENOMEM;
		return NULL;
	}
	return realloc(old, n * size);
}

static void *aligned(size_t align, size_t size, void *(*next)(size_t, size_t))
{
	bool failed;
	void *p;

	if (!front_ready())
		return NULL;
	p = front_alloc(size, align, false, &failed);
	if (p || failed || !next)
		return p;
	return next(align, size);
}

SHIM_EXPORT void *memalign(size_t align, size_t size)
{
	return aligned(align, size, next_memalign);
}

SHIM_EXPORT void *aligned_alloc(size_t align, size_t size)
{
	return aligned(align, size, next_aligned_alloc);
}

SHIM_EXPORT int posix_memalign(void **out, size_t align, size_t size)
{
	bool failed;
	void *p;

	if (!front_ready())
		return ENOMEM;
	if (align < sizeof(void *) || (align & (align - 1)))
		return EINVAL;
	p = front_alloc(size, align, false, &failed);
	if (p) {
		*out = p;
		return 0;
	}
	if (failed || !next_posix_memalign)
		return ENOMEM;
	return next_posix_memalign(out, align, size);
}

/* valloc() and pvalloc(): page-aligned, and the shim's blocks are. */
static void *page_aligned(size_t size, void *(*next)(size_t))
{
	bool failed;
	void *p;

	if (!front_ready())
		return NULL;
	p = front_alloc(size, SHIM_PAGE, false, &failed);
	if (p || failed || !next)
		return p;
	return next(size);
}

SHIM_EXPORT void *valloc(size_t size)
{
	return page_aligned(size, next_valloc);
}

SHIM_EXPORT void *pvalloc(size_t size)
{
	return page_aligned(size, next_pvalloc);
}

SHIM_EXPORT size_t malloc_usable_size(void *p)
{
	size_t len, head;

	if (!p || in_bootstrap(p) || !front_ready())
		return 0;
	len = front_len(p, &head);
	if (len)
		return len;
	return next_malloc_usable_size ? next_malloc_usable_size(p) : 0;
}

/* Freed blocks back to the pool, then the allocator's trim. */
SHIM_EXPORT int malloc_trim(size_t pad)
{
	int trimmed;

	if (!front_ready())
		return 0;
	trimmed = mcache_trim() > 0;
	if (next_malloc_trim && next_malloc_trim(pad))
		trimmed = 1;
	return trimmed;
}
