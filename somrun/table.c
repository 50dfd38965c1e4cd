// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The table of som pieces: [start, end) ranges of this process's address
 * space that are som mappings, sorted by address, never overlapping. A
 * som file starts as one piece; munmap(), mprotect() and mremap() of part
 * of it split it, and the pieces keep the file's number so that the shim
 * knows when the last one goes.
 *
 * One mutex guards the table, and the shim holds it across the system
 * call that changes what the table describes (munmap, mmap over a piece),
 * so that the table and the address space change together as seen by
 * other threads. tbl_nr is read without the lock only to skip the lock
 * when the process has no som memory at all.
 *
 * The array lives in memory mapped with sys_mmap(): the shim must not
 * call malloc().
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>

#include "shim.h"

static pthread_mutex_t tbl_mutex = PTHREAD_MUTEX_INITIALIZER;
static struct piece *tbl;
static size_t tbl_nr, tbl_cap;
static unsigned long tbl_next_file = 1;

void tbl_lock(void)
{
	pthread_mutex_lock(&tbl_mutex);
}

void tbl_unlock(void)
{
	pthread_mutex_unlock(&tbl_mutex);
}

/* In a child after fork(), whose other threads are gone. */
void tbl_lock_reinit(void)
{
	pthread_mutex_init(&tbl_mutex, NULL);
}

bool tbl_empty(void)
{
	return !__atomic_load_n(&tbl_nr, __ATOMIC_RELAXED);
}

size_t tbl_count(void)
{
	return tbl_nr;
}

struct piece *tbl_at(size_t i)
{
	return &tbl[i];
}

/* Index of the first piece that ends after @addr (tbl_nr if none). */
size_t tbl_first_after(uintptr_t addr)
{
	size_t lo = 0, hi = tbl_nr;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (tbl[mid].end <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

bool tbl_overlaps(uintptr_t start, uintptr_t end)
{
	size_t i = tbl_first_after(start);

	return i < tbl_nr && tbl[i].start < end;
}

static int tbl_grow(void)
{
	size_t cap = tbl_cap ? 2 * tbl_cap : 256;
	struct piece *t;

	if (tbl)
		t = sys_mremap(tbl, tbl_cap * sizeof(*t), cap * sizeof(*t),
			       MREMAP_MAYMOVE, NULL);
	else
		t = sys_mmap(NULL, cap * sizeof(*t), PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (t == MAP_FAILED)
		return -ENOMEM;
	tbl = t;
	tbl_cap = cap;
	return 0;
}

static int tbl_insert_at(size_t i, const struct piece *p)
{
	if (tbl_nr == tbl_cap && tbl_grow())
		return -ENOMEM;
	memmove(&tbl[i + 1], &tbl[i], (tbl_nr - i) * sizeof(*tbl));
	tbl[i] = *p;
	__atomic_store_n(&tbl_nr, tbl_nr + 1, __ATOMIC_RELAXED);
	return 0;
}

/* A number for a new som file's pieces. */
unsigned long tbl_new_file(void)
{
	return tbl_next_file++;
}

/* Add a piece; its range must be free in the table. */
int tbl_insert(const struct piece *p)
{
	return tbl_insert_at(tbl_first_after(p->start), p);
}

/* Split the piece that strictly contains @addr, if any, at @addr. */
static int tbl_split(uintptr_t addr)
{
	size_t i = tbl_first_after(addr);
	struct piece tail;

	if (i == tbl_nr || tbl[i].start >= addr)
		return 0;
	tail = tbl[i];
	tail.start = addr;
	tail.off += addr - tbl[i].start;
	if (tbl_insert_at(i + 1, &tail))
		return -ENOMEM;
	tbl[i].end = addr;
	return 0;
}

/*
 * Make [start, end) a run of whole pieces, splitting those that cross its
 * ends, so that the caller can change or drop them as a whole.
 */
int tbl_isolate(uintptr_t start, uintptr_t end)
{
	return tbl_split(start) ?: tbl_split(end);
}

/* Forget [start, end), which the caller isolated. */
void tbl_remove(uintptr_t start, uintptr_t end)
{
	size_t i = tbl_first_after(start), j = i;

	while (j < tbl_nr && tbl[j].start < end)
		j++;
	memmove(&tbl[i], &tbl[j], (tbl_nr - j) * sizeof(*tbl));
	__atomic_store_n(&tbl_nr, tbl_nr - (j - i), __ATOMIC_RELAXED);
}

/* Is all of [start, end) som pieces, with no gap? */
bool tbl_covers(uintptr_t start, uintptr_t end)
{
	size_t i = tbl_first_after(start);

	for (; i < tbl_nr && tbl[i].start <= start; i++) {
		start = tbl[i].end;
		if (start >= end)
			return true;
	}
	return false;
}

/*
 * Merge the pieces around [start, end) that continue each other: one
 * file, consecutive offsets, the same protection and flags. Splits for
 * mprotect() and madvise() would otherwise only add up.
 */
void tbl_coalesce(uintptr_t start, uintptr_t end)
{
	size_t i = tbl_first_after(start);

	if (i)
		i--;
	while (i + 1 < tbl_nr && tbl[i].start <= end) {
		struct piece *a = &tbl[i], *b = &tbl[i + 1];

		if (a->end == b->start && a->file == b->file &&
		    a->off + (a->end - a->start) == b->off &&
		    a->prot == b->prot && a->flags == b->flags) {
			a->end = b->end;
			memmove(b, b + 1, (tbl_nr - i - 2) * sizeof(*tbl));
			__atomic_store_n(&tbl_nr, tbl_nr - 1, __ATOMIC_RELAXED);
		} else {
			i++;
		}
	}
}

/* Does @file have a som piece outside [start, end)? */
bool tbl_file_outside(unsigned long file, uintptr_t start, uintptr_t end)
{
	size_t i;

	for (i = 0; i < tbl_nr; i++)
		if (tbl[i].file == file && !(tbl[i].flags & PIECE_ORDINARY) &&
		    (tbl[i].end <= start || tbl[i].start >= end))
			return true;
	return false;
}

/*
 * In a child after fork(): no piece is som memory any more. malloc()
 * blocks stay, as ordinary memory, for free() to recognise.
 */
void tbl_forget_som(void)
{
	unsigned long dropped = 0;	/* no file is 0 */
	size_t i, n = 0;

	for (i = 0; i < tbl_nr; i++) {
		/*
		 * MADV_DONTFORK blocks: the child has nothing there; nor
		 * has it the tail of a block it does not have.
		 */
		if (!(tbl[i].flags & PIECE_MALLOC) ||
		    (tbl[i].flags & PIECE_DONTFORK) ||
		    ((tbl[i].flags & PIECE_TAIL) && tbl[i].file == dropped)) {
			dropped = tbl[i].file;
			continue;
		}
		tbl[n] = tbl[i];
		tbl[n].flags |= PIECE_ORDINARY;
		tbl[n].copy = NULL;
		n++;
	}
	__atomic_store_n(&tbl_nr, n, __ATOMIC_RELAXED);
}
