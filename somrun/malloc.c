// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Large malloc()s on som.
 *
 * glibc's malloc maps its memory through internal calls that no preload
 * can see, and tcmalloc grows its heap with sbrk() and its own mmap(), so
 * the shim answers allocations of at least the threshold itself: each is
 * a som mapping, 2 MiB aligned, rounded up to whole 2 MiB blocks.
 * Everything else goes to the allocator after the shim in symbol order.
 * jemalloc maps its extents with the public mmap(), which the shim
 * answers, so under jemalloc these wrappers only pass calls on (and
 * jemalloc's own API, mallocx() and sdallocx(), sees only its own
 * blocks), unless SOMRUN_MALLOC=on asks for both.
 *
 * free() must tell the shim's blocks from the allocator's cheaply: the
 * shim's are 2 MiB aligned, which no glibc chunk is, and only those are
 * looked up in the table.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
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
 * malloc uses internal calls and tcmalloc uses sbrk() and its own mmap().
 * Asked by where malloc() is defined: comparing with __libc_malloc would
 * not do, since tcmalloc defines that name too.
 */
static bool next_maps_publicly(void)
{
	Dl_info info;

	if (!next_malloc || !dladdr((void *)next_malloc, &info) ||
	    !info.dli_fname)
		return false;
	return strstr(info.dli_fname, "jemalloc");
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

/* A som block of at least @size bytes aligned to @align, or NULL. */
static void *front_alloc(size_t size, size_t align, bool *failed)
{
	size_t len;
	void *p;
	int err;

	*failed = false;
	if (!align)
		align = 1;
	if (!front_on || size < shim_cfg.threshold || align > SHIM_GIB ||
	    size > SIZE_MAX - SHIM_GIB)
		return NULL;
	len = shim_round_up(size, SHIM_BLOCK);
	p = shim_map(NULL, len, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, PIECE_MALLOC, &err);
	if (p == MAP_FAILED) {
		/* As for mmap(): ordinary memory, or none if asked so. */
		*failed = !som_fallback_allowed(len, err);
		return NULL;
	}
	if ((uintptr_t)p % SHIM_BLOCK || (uintptr_t)p % align) {
		shim_unmap(p, len);
		return NULL;
	}
	shim_count(&shim_stats.malloc_maps, 1);
	__atomic_add_fetch(&front_nr, 1, __ATOMIC_RELAXED);
	return p;
}

/*
 * The length of the shim's allocation at @p, or 0 if @p is not one. Its
 * pieces are the run of pieces of one file starting at @p.
 */
static size_t front_len(const void *p)
{
	uintptr_t a = (uintptr_t)p, end;
	size_t i;

	if (!__atomic_load_n(&front_nr, __ATOMIC_RELAXED) || !p ||
	    a % SHIM_BLOCK)
		return 0;
	tbl_lock();
	i = tbl_first_after(a);
	if (i == tbl_count() || tbl_at(i)->start != a ||
	    !(tbl_at(i)->flags & PIECE_MALLOC) || tbl_at(i)->off) {
		tbl_unlock();
		return 0;
	}
	end = tbl_at(i)->end;
	for (i++; i < tbl_count() && tbl_at(i)->start == end &&
		  tbl_at(i)->file == tbl_at(i - 1)->file; i++)
		end = tbl_at(i)->end;
	tbl_unlock();
	return end - a;
}

static bool front_free(void *p)
{
	size_t len = front_len(p);

	if (!len)
		return false;
	shim_unmap(p, len);
	__atomic_sub_fetch(&front_nr, 1, __ATOMIC_RELAXED);
	return true;
}

SHIM_EXPORT void *malloc(size_t size)
{
	bool failed;
	void *p;

	if (!front_ready())
		return bootstrap_alloc(size);
	p = front_alloc(size, 1, &failed);
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
	/* som memory is zeroed before it is handed out. */
	p = front_alloc(n * size, 1, &failed);
	if (p || failed)
		return p;
	return next_calloc(n, size);
}

SHIM_EXPORT void *realloc(void *old, size_t size)
{
	size_t old_len;
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
	old_len = front_len(old);
	if (!old_len) {
		size_t have;

		if (!front_on || size < shim_cfg.threshold)
			return next_realloc(old, size);
		/* Growing past the threshold: onto som. */
		have = next_malloc_usable_size ? next_malloc_usable_size(old) : 0;
		if (!have)
			return next_realloc(old, size);
		p = front_alloc(size, 1, &failed);
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
		size_t len = shim_round_up(size, SHIM_BLOCK);

		/* Shrinking in place: the tail goes back to the pool. */
		if (len < old_len)
			shim_unmap((char *)old + len, old_len - len);
		return old;
	}
	/* Growing, or shrinking below the threshold: copy. */
	p = front_alloc(size, 1, &failed);
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
	p = front_alloc(size, align, &failed);
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
	p = front_alloc(size, align, &failed);
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
	p = front_alloc(size, SHIM_PAGE, &failed);
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
	size_t len;

	if (!p || in_bootstrap(p) || !front_ready())
		return 0;
	len = front_len(p);
	if (len)
		return len;
	return next_malloc_usable_size ? next_malloc_usable_size(p) : 0;
}
