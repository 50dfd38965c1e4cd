// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The memory calls of the program, as the shim answers them.
 *
 * mmap():	an anonymous private read-write mapping of at least the
 *		threshold becomes a som mapping, and what is left of it past
 *		its last whole 2 MiB block ordinary memory right after it
 *		(shim_map_tailed()). Stacks (MAP_GROWSDOWN,
 *		MAP_STACK), MAP_HUGETLB, MAP_32BIT, executable and PROT_NONE
 *		reservations stay ordinary. Anything mapped with MAP_FIXED
 *		over som pieces frees them first.
 * munmap():	frees the pieces' memory (see som_release()).
 * madvise():	MADV_DONTNEED, MADV_FREE and MADV_REMOVE punch holes, so the
 *		range reads back as zeros, as anonymous memory would;
 *		MADV_DONTFORK/DOFORK/WIPEONFORK/KEEPONFORK set what fork()
 *		gives the child; MADV_POPULATE_* fault the range in; other
 *		hints succeed without effect (som picks entry sizes itself).
 * mprotect():	the kernel's, plus the table's note of the protection.
 * mremap():	shrinking and moving are the kernel's; growing makes a new
 *		som mapping and copies (the kernel cannot grow a PFN-mapped
 *		VMA).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "shim.h"

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ	22
#define MADV_POPULATE_WRITE	23
#endif
#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE		25
#endif
/* x86 only: elsewhere no mmap() asks for it. */
#ifndef MAP_32BIT
#define MAP_32BIT		0
#endif

/* Lengths the kernel will refuse anyway, and that rounding would wrap. */
static bool shim_len_ok(size_t len)
{
	return len && len <= SIZE_MAX / 2;
}

static bool shim_wants(size_t len, int prot, int flags, int fd)
{
	if ((flags & MAP_TYPE) != MAP_PRIVATE || !(flags & MAP_ANONYMOUS))
		return false;
	if (flags & (MAP_GROWSDOWN | MAP_STACK | MAP_HUGETLB | MAP_32BIT))
		return false;
	if (!(prot & PROT_WRITE) || (prot & ~(PROT_READ | PROT_WRITE)))
		return false;
	(void)fd;
	return shim_len_ok(len) && len >= shim_cfg.threshold;
}

static void shim_account(size_t len)
{
	unsigned long now = __atomic_add_fetch(&shim_stats.bytes, len,
					       __ATOMIC_RELAXED);
	unsigned long peak = __atomic_load_n(&shim_stats.peak_bytes,
					     __ATOMIC_RELAXED);

	while (now > peak &&
	       !__atomic_compare_exchange_n(&shim_stats.peak_bytes, &peak, now,
					    true, __ATOMIC_RELAXED,
					    __ATOMIC_RELAXED))
		;
}

/*
 * A som mapping and its piece; with the table lock held. MAP_FAILED with
 * *err if som cannot make it.
 */
void *shim_map_locked(void *addr, size_t len, int prot, int flags,
		      unsigned int piece_flags, int *err)
{
	struct piece pc;
	void *p;

	if ((flags & MAP_FIXED) && !(flags & MAP_FIXED_NOREPLACE)) {
		*err = som_release((uintptr_t)addr, (uintptr_t)addr + len);
		if (*err)
			return MAP_FAILED;
	}
	p = som_map_new(addr, len, prot, flags, err);
	if (p == MAP_FAILED)
		return p;
	memset(&pc, 0, sizeof(pc));
	pc.start = (uintptr_t)p;
	pc.end = pc.start + len;
	pc.file = tbl_new_file();
	pc.prot = prot;
	pc.flags = piece_flags;
	*err = tbl_insert(&pc);
	if (*err) {
		sys_munmap(p, len);
		return MAP_FAILED;
	}
	shim_count(&shim_stats.maps, 1);
	shim_account(len);
	return p;
}

/*
 * How a malloc() block of @len bytes is made: @head bytes of whole 2 MiB
 * som blocks and a @tail of ordinary memory right after them for the
 * rest, as transparent huge pages would leave it: 3 MiB is one som block
 * and 1 MiB of 4 KiB pages, not two som blocks, one of them half unused.
 * A rest within 256 KiB of a whole block, or one whose block completes a
 * GiB (a 1 GiB entry), is a som block instead, mapped whole (the block
 * is longer than asked); so is a block smaller than 2 MiB (a threshold
 * below 2 MiB asked for it).
 */
void shim_layout(size_t len, size_t *head, size_t *tail)
{
	size_t end = shim_round_up(len, SHIM_PAGE);

	*head = end & ~(SHIM_BLOCK - 1);
	*tail = end - *head;
	if (!*head || (*tail && (SHIM_BLOCK - *tail <= SHIM_BLOCK / 8 ||
				 (*head + SHIM_BLOCK) % SHIM_GIB == 0))) {
		*head = shim_round_up(end, SHIM_BLOCK);
		*tail = 0;
	}
}

/*
 * shim_map_tailed() once: the pool's refusal is the caller's to handle.
 * The whole range is reserved first, so that nothing else is mapped
 * between the two parts.
 */
static void *shim_map_tailed_once(size_t head, size_t tail, size_t align,
				  int flags, unsigned int piece_flags, int *err)
{
	const int prot = PROT_READ | PROT_WRITE;
	const int anon = MAP_PRIVATE | MAP_ANONYMOUS;
	uintptr_t r, a;
	struct piece pc;
	size_t span;
	void *p;

	if (align < (head >= SHIM_GIB ? SHIM_GIB : SHIM_BLOCK))
		align = head >= SHIM_GIB ? SHIM_GIB : SHIM_BLOCK;
	*err = 0;
	span = head + tail + align;
	p = sys_mmap(NULL, span, PROT_NONE, anon | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return p;
	r = (uintptr_t)p;
	a = shim_round_up(r, align);
	if (a > r)
		sys_munmap(p, a - r);
	sys_munmap((void *)(a + head + tail), r + span - (a + head + tail));
	if (sys_mmap((void *)(a + head), tail, prot, anon | MAP_FIXED |
		     (flags & (MAP_NORESERVE | MAP_POPULATE | MAP_LOCKED)),
		     -1, 0) == MAP_FAILED) {
		sys_munmap((void *)a, head + tail);
		return MAP_FAILED;
	}
	/*
	 * The pool's usual refusal, ENOSPC, comes from ftruncate() before
	 * any mmap(). A failure of the som file's mmap() itself can leave a
	 * hole where the reservation was (6.12 does not put it back once
	 * the range's page tables were cleared), which another thread could
	 * map into before the munmap() below: som's ->mmap fails only when
	 * the kernel cannot allocate.
	 */
	tbl_lock();
	p = shim_map_locked((void *)a, head, prot, anon | MAP_FIXED,
			    piece_flags, err);
	if (p != MAP_FAILED) {
		pc = *tbl_at(tbl_first_after(a));
		pc.start = a + head;
		pc.end = a + head + tail;
		pc.off = head;
		pc.flags |= PIECE_ORDINARY | PIECE_TAIL;
		*err = tbl_insert(&pc);
		if (*err) {
			som_release(a, a + head);
			p = MAP_FAILED;
		}
	}
	tbl_unlock();
	if (p == MAP_FAILED)
		sys_munmap((void *)a, head + tail);
	return p;
}

/* Did som fail for want of memory? Then kept malloc() blocks may help. */
static bool shim_pool_short(int err)
{
	return err == -ENOSPC || err == -ENOMEM;
}

/*
 * A mapping of @head som bytes, aligned to @align (at least 2 MiB, 1 GiB
 * from 1 GiB up), and @tail ordinary ones right after it, read-write, in
 * the table as a piece and its PIECE_TAIL; or MAP_FAILED with *err (0
 * if som was not the cause). When the pool is short, the freed malloc()
 * blocks this process keeps go back to it first (malloc_cache.c). The
 * tail takes MAP_NORESERVE, MAP_POPULATE and MAP_LOCKED from @flags, and
 * MAP_POPULATE faults the head in too.
 */
void *shim_map_tailed(size_t head, size_t tail, size_t align, int flags,
		      unsigned int piece_flags, int *err)
{
	void *p;

	p = shim_map_tailed_once(head, tail, align, flags, piece_flags, err);
	if (p == MAP_FAILED && shim_pool_short(*err) && mcache_trim())
		p = shim_map_tailed_once(head, tail, align, flags, piece_flags,
					 err);
	if (p != MAP_FAILED && (flags & MAP_POPULATE))
		som_populate((uintptr_t)p, (uintptr_t)p + head);
	return p;
}

/*
 * A som mapping for mmap() or malloc(), or MAP_FAILED with *err; the pool
 * short, as shim_map_tailed().
 */
void *shim_map(void *addr, size_t len, int prot, int flags,
	       unsigned int piece_flags, int *err)
{
	void *p;

	tbl_lock();
	p = shim_map_locked(addr, len, prot, flags, piece_flags, err);
	tbl_unlock();
	if (p == MAP_FAILED && shim_pool_short(*err) && mcache_trim()) {
		tbl_lock();
		p = shim_map_locked(addr, len, prot, flags, piece_flags, err);
		tbl_unlock();
	}
	if (p != MAP_FAILED && (flags & MAP_POPULATE))
		som_populate((uintptr_t)p, (uintptr_t)p + len);
	return p;
}

SHIM_EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd,
		       off_t off)
{
	uintptr_t start = (uintptr_t)addr;
	void *p;
	int err;

	shim_init();
	if ((flags & MAP_FIXED_NOREPLACE || flags & MAP_FIXED) &&
	    start % SHIM_PAGE)
		return sys_mmap(addr, len, prot, flags, fd, off);
	if (shim_wants(len, prot, flags, fd)) {
		size_t head, tail;

		len = shim_round_up(len, SHIM_PAGE);
		/*
		 * Here the rest is never a som block: the VMA would end
		 * inside it, so it would be mapped by 4 KiB entries all the
		 * same, and held whole. (shim_layout() rounds a rest up for
		 * malloc(), whose mapping covers the block.)
		 */
		head = len & ~(SHIM_BLOCK - 1);
		tail = head ? len - head : 0;
		p = MAP_FAILED;
		err = 0;
		/* A hint or a fixed place: one som mapping, as asked. */
		if (tail && !addr && prot == (PROT_READ | PROT_WRITE) &&
		    !(flags & (MAP_FIXED | MAP_FIXED_NOREPLACE))) {
			/* Whole blocks on som, the rest ordinary memory. */
			p = shim_map_tailed(head, tail, 0, flags, 0, &err);
		}
		/* Not tailed, or not for want of som: in one piece. */
		if (p == MAP_FAILED && !err)
			p = shim_map(addr, len, prot, flags, 0, &err);
		if (p != MAP_FAILED)
			return p;
		if (err == -EEXIST && (flags & MAP_FIXED_NOREPLACE)) {
			errno = EEXIST;
			return MAP_FAILED;
		}
		return som_fallback(addr, len, prot, flags, fd, off, err);
	}
	if (!(flags & MAP_FIXED) || (flags & MAP_FIXED_NOREPLACE) ||
	    tbl_empty() || start % SHIM_PAGE || !shim_len_ok(len))
		return sys_mmap(addr, len, prot, flags, fd, off);

	/* Mapped over som pieces: they go, if the mapping is made. */
	tbl_lock();
	err = som_release(start, start + shim_round_up(len, SHIM_PAGE));
	p = err ? MAP_FAILED : sys_mmap(addr, len, prot, flags, fd, off);
	tbl_unlock();
	if (err)
		errno = -err;
	return p;
}

SHIM_EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd,
			 off_t off) __attribute__((alias("mmap")));

/* munmap() with the table lock held: 0 or -errno. */
int shim_unmap_locked(void *addr, size_t len)
{
	uintptr_t start = (uintptr_t)addr;
	int err;

	err = som_release(start, start + shim_round_up(len, SHIM_PAGE));
	if (!err)
		err = sys_munmap(addr, len) ? -errno : 0;
	return err;
}

/* munmap() for the shim and the program; the table lock is not held. */
int shim_unmap(void *addr, size_t len)
{
	uintptr_t start = (uintptr_t)addr;
	int err;

	if (tbl_empty() || start % SHIM_PAGE || !shim_len_ok(len))
		return sys_munmap(addr, len);
	tbl_lock();
	err = shim_unmap_locked(addr, len);
	tbl_unlock();
	if (err) {
		errno = -err;
		return -1;
	}
	return 0;
}

SHIM_EXPORT int munmap(void *addr, size_t len)
{
	shim_init();
	return shim_unmap(addr, len);
}

SHIM_EXPORT int mprotect(void *addr, size_t len, int prot)
{
	uintptr_t start = (uintptr_t)addr, end;
	size_t i;
	int err;

	shim_init();
	if (tbl_empty() || start % SHIM_PAGE || !shim_len_ok(len))
		return sys_mprotect(addr, len, prot);
	end = start + shim_round_up(len, SHIM_PAGE);
	tbl_lock();
	err = tbl_overlaps(start, end) ? tbl_isolate(start, end) : 0;
	if (!err)
		err = sys_mprotect(addr, len, prot) ? -errno : 0;
	for (i = tbl_first_after(start);
	     !err && i < tbl_count() && tbl_at(i)->start < end; i++)
		tbl_at(i)->prot = prot;
	if (!err)
		tbl_coalesce(start, end);
	tbl_unlock();
	if (err) {
		errno = -err;
		return -1;
	}
	return 0;
}

/* Is @advice about fork()? What it sets and clears in a piece's flags. */
static bool shim_fork_advice(int advice, unsigned int *set,
			     unsigned int *clear)
{
	*set = 0;
	*clear = 0;
	switch (advice) {
	case MADV_DONTFORK:
		*set = PIECE_DONTFORK;
		return true;
	case MADV_DOFORK:
		*clear = PIECE_DONTFORK;
		return true;
	case MADV_WIPEONFORK:
		*set = PIECE_WIPEONFORK;
		return true;
	case MADV_KEEPONFORK:
		*clear = PIECE_WIPEONFORK;
		return true;
	}
	return false;
}

/*
 * What madvise() means for [start, end), part of one piece; the lock is
 * held. Ordinary memory (a tail, a malloc() block in a fork's child) is
 * the kernel's, and the table notes its fork advice as well, for fork()
 * and for malloc_cache.c.
 */
static int shim_advise_piece(uintptr_t start, uintptr_t end, int advice)
{
	size_t i = tbl_first_after(start);
	unsigned int set, clear;
	bool ordinary = tbl_at(i)->flags & PIECE_ORDINARY;
	int dev, err;

	if (ordinary && sys_madvise((void *)start, end - start, advice))
		return -errno;
	if (shim_fork_advice(advice, &set, &clear)) {
		err = tbl_isolate(start, end);
		if (err)
			return err;
		i = tbl_first_after(start);
		tbl_at(i)->flags = (tbl_at(i)->flags | set) & ~clear;
		tbl_coalesce(start, end);
		return 0;
	}
	if (ordinary)
		return 0;
	switch (advice) {
	case MADV_DONTNEED:
	case MADV_FREE:
	case MADV_REMOVE:
		/* A caller may count on zeros after success: report failure. */
		dev = som_dev_open();
		err = som_punch(dev, start, end);
		if (dev >= 0)
			sys_close(dev);
		return err ? -EAGAIN : 0;
	case MADV_POPULATE_READ:
	case MADV_POPULATE_WRITE:
	case MADV_WILLNEED:
		/* The caller faults the range in, without the lock. */
		return 0;
	case MADV_NORMAL:
	case MADV_RANDOM:
	case MADV_SEQUENTIAL:
	case MADV_HUGEPAGE:
	case MADV_NOHUGEPAGE:
	case MADV_COLLAPSE:
	case MADV_DONTDUMP:
	case MADV_DODUMP:
	case MADV_MERGEABLE:
	case MADV_UNMERGEABLE:
	case MADV_COLD:
	case MADV_PAGEOUT:
		return 0;
	default:
		return -EINVAL;
	}
}

/*
 * Fault in the readable som pieces of [start, end), a few at a time with
 * the lock dropped while touching: a fault can take long (zeroing), and a
 * signal it raised must not leave the lock held.
 */
static void shim_populate_readable(uintptr_t start, uintptr_t end)
{
	uintptr_t a = start, s, e;
	size_t i;

	while (a < end) {
		tbl_lock();
		i = tbl_first_after(a);
		if (i == tbl_count() || tbl_at(i)->start >= end) {
			tbl_unlock();
			return;
		}
		s = tbl_at(i)->start > a ? tbl_at(i)->start : a;
		e = tbl_at(i)->end < end ? tbl_at(i)->end : end;
		if (!(tbl_at(i)->prot & PROT_READ))
			s = e;
		tbl_unlock();
		som_populate(s, e);
		a = e;
	}
}

SHIM_EXPORT int madvise(void *addr, size_t len, int advice)
{
	uintptr_t start = (uintptr_t)addr, end, a, e;
	size_t i;
	int err = 0;

	shim_init();
	if (tbl_empty() || start % SHIM_PAGE || !shim_len_ok(len))
		return sys_madvise(addr, len, advice);
	end = start + shim_round_up(len, SHIM_PAGE);
	tbl_lock();
	if (!tbl_overlaps(start, end)) {
		tbl_unlock();
		return sys_madvise(addr, len, advice);
	}
	/*
	 * MADV_REMOVE on private anonymous memory is EINVAL and does
	 * nothing: so for a range with a tail, before som is punched.
	 */
	for (i = tbl_first_after(start); advice == MADV_REMOVE &&
	     i < tbl_count() && tbl_at(i)->start < end; i++)
		if (tbl_at(i)->flags & PIECE_ORDINARY)
			err = -EINVAL;
	/* The kernel's answer for the gaps, the shim's for the pieces. */
	for (a = start; a < end && !err; a = e) {
		i = tbl_first_after(a);
		if (i < tbl_count() && tbl_at(i)->start <= a) {
			e = tbl_at(i)->end < end ? tbl_at(i)->end : end;
			err = shim_advise_piece(a, e, advice);
		} else {
			e = i < tbl_count() && tbl_at(i)->start < end ?
			    tbl_at(i)->start : end;
			if (sys_madvise((void *)a, e - a, advice))
				err = -errno;
		}
	}
	tbl_unlock();
	if (err) {
		errno = -err;
		return -1;
	}
	if (advice == MADV_POPULATE_READ || advice == MADV_POPULATE_WRITE)
		shim_populate_readable(start, end);
	return 0;
}

/*
 * Move [old, old + old_len), all som pieces, to a new mapping of new_len:
 * a som mapping if the pool can hold it, else ordinary memory; copy, and
 * unmap the old range. The new mapping has the protection of the old
 * range's first piece. The lock is held.
 */
static void *shim_move_grow(uintptr_t old, size_t old_len, size_t new_len,
			    int flags, void *new_addr)
{
	int mflags = (flags & MREMAP_FIXED) ? MAP_FIXED : 0;
	int prot = tbl_at(tbl_first_after(old))->prot, dev, err;
	uintptr_t a, end = old + old_len;
	struct piece pc;
	char *p;

	p = shim_map_locked(mflags ? new_addr : NULL, new_len,
			    PROT_READ | PROT_WRITE, mflags, 0, &err);
	if (p == MAP_FAILED) {
		p = som_fallback(mflags ? new_addr : NULL, new_len,
				 PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS | mflags, -1, 0,
				 err);
		if (p == MAP_FAILED)
			return p;
	}
	dev = som_dev_open();
	for (a = old; a < end; a = pc.end) {
		pc = *tbl_at(tbl_first_after(a));
		if (pc.end > end)
			pc.end = end;
		pc.start = a;
		/* Ordinary memory is read as it is: readable first. */
		if ((pc.flags & PIECE_ORDINARY) && !(pc.prot & PROT_READ))
			sys_mprotect((void *)a, pc.end - a, pc.prot | PROT_READ);
		if ((pc.flags & PIECE_ORDINARY) || dev < 0 ||
		    som_copy_out(dev, p + (a - old), &pc))
			memcpy(p + (a - old), (void *)a, pc.end - a);
	}
	if (dev >= 0)
		sys_close(dev);
	shim_count(&shim_stats.moved_bytes, old_len);
	if (!som_release(old, end))
		sys_munmap((void *)old, old_len);
	if (prot != (PROT_READ | PROT_WRITE) &&
	    !sys_mprotect(p, new_len, prot) &&
	    tbl_overlaps((uintptr_t)p, (uintptr_t)p + new_len))
		tbl_at(tbl_first_after((uintptr_t)p))->prot = prot;
	return p;
}

/*
 * Does [start, end) hold a tail (or other ordinary piece) and pieces of
 * two protections? Anonymous memory would be two VMAs there, which
 * mremap() refuses. The lock is held.
 */
static bool shim_two_protections(uintptr_t start, uintptr_t end)
{
	size_t i = tbl_first_after(start), first = i;
	bool ordinary = false, two = false;

	for (; i < tbl_count() && tbl_at(i)->start < end; i++) {
		ordinary |= tbl_at(i)->flags & PIECE_ORDINARY;
		two |= tbl_at(i)->prot != tbl_at(first)->prot;
	}
	return ordinary && two;
}

void *shim_mremap(void *old_addr, size_t old_len, size_t new_len, int flags,
		  void *new_addr)
{
	uintptr_t old = (uintptr_t)old_addr, new = (uintptr_t)new_addr;
	bool fixed = flags & MREMAP_FIXED;
	size_t i, d;
	void *p;
	int err;

	/* What the kernel refuses, it refuses before anything changes. */
	if ((flags & ~(MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP)) ||
	    ((flags & (MREMAP_FIXED | MREMAP_DONTUNMAP)) &&
	     !(flags & MREMAP_MAYMOVE))) {
		errno = EINVAL;
		return MAP_FAILED;
	}
	if (tbl_empty() || old % SHIM_PAGE || !shim_len_ok(old_len) ||
	    !shim_len_ok(new_len))
		return sys_mremap(old_addr, old_len, new_len, flags, new_addr);
	old_len = shim_round_up(old_len, SHIM_PAGE);
	new_len = shim_round_up(new_len, SHIM_PAGE);
	tbl_lock();
	if (!tbl_overlaps(old, old + old_len) || (flags & MREMAP_DONTUNMAP)) {
		/* An ordinary mapping, perhaps moved over som pieces. */
		err = fixed ? som_release(new, new + new_len) : 0;
		p = err ? MAP_FAILED :
		    sys_mremap(old_addr, old_len, new_len, flags, new_addr);
		goto out;
	}
	if (fixed && (new % SHIM_PAGE ||
		      (new < old + old_len && old < new + new_len))) {
		err = -EINVAL;
		p = MAP_FAILED;
		goto out;
	}
	if (!tbl_covers(old, old + old_len) ||
	    shim_two_protections(old, old + old_len)) {
		/* Som and other mappings: more than one VMA, as the kernel says. */
		err = -EFAULT;
		p = MAP_FAILED;
		goto out;
	}
	if (new_len > old_len) {
		err = 0;
		if (!(flags & MREMAP_MAYMOVE)) {
			/* A som mapping cannot grow in place. */
			err = -ENOMEM;
			p = MAP_FAILED;
		} else {
			p = shim_move_grow(old, old_len, new_len, flags,
					   new_addr);
			if (p == MAP_FAILED)
				err = -errno;
		}
		goto out;
	}
	/* Shrinking: the tail goes as munmap() would take it. */
	if (new_len < old_len) {
		err = som_release(old + new_len, old + old_len);
		if (!err && sys_munmap((void *)(old + new_len), old_len - new_len))
			err = -errno;
		if (err) {
			p = MAP_FAILED;
			goto out;
		}
	}
	p = old_addr;
	if (!fixed)
		goto out;
	/* Moving: the kernel moves one VMA, which must be one piece. */
	i = tbl_first_after(old);
	if (tbl_at(i)->start > old || tbl_at(i)->end < old + new_len) {
		p = shim_move_grow(old, new_len, new_len, flags, new_addr);
		err = p == MAP_FAILED ? -errno : 0;
		goto out;
	}
	err = som_release(new, new + new_len) ?: tbl_isolate(old, old + new_len);
	if (!err) {
		struct piece pc = *tbl_at(tbl_first_after(old));

		p = sys_mremap(old_addr, new_len, new_len, flags, new_addr);
		if (p == MAP_FAILED && errno == EFAULT) {
			/* One piece, several VMAs (after mprotect()): copy. */
			p = shim_move_grow(old, new_len, new_len, flags,
					   new_addr);
			err = p == MAP_FAILED ? -errno : 0;
			goto out;
		}
		if (p == MAP_FAILED) {
			err = -errno;
			goto out;
		}
		tbl_remove(old, old + new_len);
		d = (uintptr_t)p - old;
		pc.start += d;
		pc.end += d;
		tbl_insert(&pc);
	} else {
		p = MAP_FAILED;
	}
out:
	tbl_unlock();
	if (p == MAP_FAILED && err)
		errno = -err;
	return p;
}

SHIM_EXPORT void *mremap(void *old_addr, size_t old_len, size_t new_len,
			 int flags, ...)
{
	void *new_addr = NULL;
	va_list ap;

	shim_init();
	if (flags & MREMAP_FIXED) {
		va_start(ap, flags);
		new_addr = va_arg(ap, void *);
		va_end(ap);
	}
	return shim_mremap(old_addr, old_len, new_len, flags, new_addr);
}
