// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The shim's freed malloc() blocks, kept for the next malloc() that fits.
 *
 * Each large malloc() of the shim's is a som mapping of its own. Were
 * free() to unmap it, a program that frees and allocates large blocks in
 * a loop would pay a som file, three or four mmap()/munmap() calls and the
 * page faults every time, where its allocator would have reused the
 * memory. So free() keeps up to SOMRUN_MALLOC_CACHE bytes of blocks
 * mapped (32 MiB by default, 0 for none), the oldest going first when a
 * new one does not fit, and malloc() takes the kept block with the same
 * som part and the smallest ordinary tail that holds the request (see
 * malloc.c for the layout). The taken tail keeps its length; what it has
 * beyond the request is given back to the kernel (MADV_DONTNEED), so that
 * a block reused for less holds no more memory than a new one. calloc()
 * zeroes what it takes. malloc_trim() gives every kept block back to the
 * pool, as glibc's gives its free memory back to the kernel, and so does
 * a som mapping the pool is too short for (shim_map()).
 *
 * A freed block is what a new one would be, or it is not kept: its
 * pieces, tail included, must still be read-write and without fork
 * advice, as the table says.
 *
 * Kept blocks stay in the table, marked PIECE_CACHED: a second free() of
 * one is reported and aborts, as glibc does, and fork() copies nothing of
 * a kept block's som part into the child, which gets zeros there (its
 * tail is ordinary memory, which the kernel copies) and its own copy of
 * this list.
 *
 * Context: the table lock protects the list, so that a fork sees the list
 * and the marks agree; free() looks a block up and keeps it in one hold
 * of the lock, and blocks evicted from the list are unmapped under it.
 */
#define _GNU_SOURCE
#include <sys/mman.h>

#include "shim.h"

#define CACHE_SLOTS	64

struct cached {
	uintptr_t start;
	size_t head, tail;
};

static struct cached cache[CACHE_SLOTS];	/* oldest first */
static unsigned int cache_nr;	/* read without the lock only to skip it */
static size_t cache_bytes;

/*
 * Mark or unmark the pieces of the block of @len bytes at @start; or,
 * with @check, only say whether they are all as a new block's are.
 */
static bool cache_mark(uintptr_t start, size_t len, bool cached, bool check)
{
	size_t i;

	for (i = tbl_first_after(start);
	     i < tbl_count() && tbl_at(i)->start < start + len; i++) {
		struct piece *p = tbl_at(i);

		if (check) {
			if (p->prot != (PROT_READ | PROT_WRITE) ||
			    (p->flags & (PIECE_DONTFORK | PIECE_WIPEONFORK)))
				return false;
		} else if (cached) {
			p->flags |= PIECE_CACHED;
		} else {
			p->flags &= ~PIECE_CACHED;
		}
	}
	return true;
}

/*
 * Is the block still as the list left it? Not if the program mapped over
 * or unmapped memory it had freed: the entry then names nothing of ours.
 */
static bool cache_valid(const struct cached *c)
{
	size_t i = tbl_first_after(c->start);

	return i < tbl_count() && tbl_at(i)->start == c->start &&
	       (tbl_at(i)->flags & PIECE_CACHED);
}

static struct cached cache_drop(unsigned int i)
{
	struct cached c = cache[i];

	cache_bytes -= c.head + c.tail;
	for (; i + 1 < cache_nr; i++)
		cache[i] = cache[i + 1];
	__atomic_store_n(&cache_nr, cache_nr - 1, __ATOMIC_RELAXED);
	return c;
}

/* The oldest block, out of the list and back to the pool. */
static void cache_evict(void)
{
	struct cached c = cache_drop(0);

	if (cache_valid(&c))
		front_release_locked((void *)c.start, c.head + c.tail);
}

/*
 * Keep the live block of @head som bytes and @tail ordinary ones at @p
 * for a later malloc(); with the table lock held. false if it is not
 * kept: the caller unmaps it.
 */
bool mcache_put_locked(void *p, size_t head, size_t tail)
{
	size_t len = head + tail;

	if (len > shim_cfg.malloc_cache ||
	    !cache_mark((uintptr_t)p, len, false, true))
		return false;
	while (cache_nr == CACHE_SLOTS ||
	       cache_bytes + len > shim_cfg.malloc_cache)
		cache_evict();
	cache[cache_nr].start = (uintptr_t)p;
	cache[cache_nr].head = head;
	cache[cache_nr].tail = tail;
	cache_bytes += len;
	__atomic_store_n(&cache_nr, cache_nr + 1, __ATOMIC_RELAXED);
	cache_mark((uintptr_t)p, len, true, false);
	return true;
}

/*
 * A kept block of @head som bytes whose tail holds @tail bytes, aligned
 * to @align, or NULL.
 */
void *mcache_take(size_t head, size_t tail, size_t align)
{
	unsigned int i, best = CACHE_SLOTS;
	struct cached c;

	if (!__atomic_load_n(&cache_nr, __ATOMIC_RELAXED))
		return NULL;
	tbl_lock();
again:
	/* The smallest tail that holds @tail; of equals, the newest. */
	for (i = 0; i < cache_nr; i++) {
		if (cache[i].head != head || cache[i].tail < tail ||
		    cache[i].start % align)
			continue;
		if (best == CACHE_SLOTS || cache[i].tail <= cache[best].tail)
			best = i;
	}
	if (best == CACHE_SLOTS) {
		tbl_unlock();
		return NULL;
	}
	c = cache_drop(best);
	if (!cache_valid(&c)) {
		best = CACHE_SLOTS;
		goto again;
	}
	cache_mark(c.start, c.head + c.tail, false, false);
	tbl_unlock();
	if (c.tail > tail)
		sys_madvise((void *)(c.start + head + tail), c.tail - tail,
			    MADV_DONTNEED);
	shim_count(&shim_stats.malloc_reused, 1);
	return (void *)c.start;
}

/* malloc_trim(): every kept block back to the pool. How many went. */
unsigned int mcache_trim(void)
{
	unsigned int nr = 0;

	if (!__atomic_load_n(&cache_nr, __ATOMIC_RELAXED))
		return 0;
	tbl_lock();
	for (; cache_nr; nr++)
		cache_evict();
	tbl_unlock();
	return nr;
}
