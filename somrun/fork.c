// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * fork(): the kernel gives a child none of a som mapping (VM_DONTCOPY;
 * the memory has one owner), so the shim gives the child what anonymous
 * memory would have: a copy, in ordinary memory, at the same addresses.
 *
 *   prepare (parent, just before the fork, table locked): copy each piece
 *	into a fresh anonymous mapping, skipping blocks with no memory;
 *   parent (after): unmap the copies;
 *   child (after): move each copy to its piece's address with mremap(),
 *	give it the piece's protection, and forget the pieces: the child
 *	has no som memory. Blocks of malloc.c stay in the table, marked
 *	ordinary, so that the child's free() knows them.
 *
 * SOMRUN_FORK=zero gives the child zero-filled memory instead, for
 * programs that fork only to exec. MADV_DONTFORK pieces are left out, and
 * MADV_WIPEONFORK ones are zero-filled, as for anonymous memory, and so
 * are malloc() blocks that malloc_cache.c keeps freed. The copy
 * is taken while the forking thread waits; other threads that write
 * during it may or may not have their writes in the child's copy, page by
 * page (with anonymous memory the kernel takes the snapshot at once).
 * Only fork() runs these handlers: vfork() and posix_spawn() share the
 * parent's memory until exec and need nothing.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "shim.h"

static bool fork_copies(const struct piece *p)
{
	return shim_cfg.fork_mode == SHIM_FORK_COPY &&
	       !(p->flags & (PIECE_DONTFORK | PIECE_WIPEONFORK |
			     PIECE_ORDINARY | PIECE_CACHED));
}

static void fork_prepare(void)
{
	static bool warned;
	int dev = -1;
	size_t i;

	tbl_lock();
	for (i = 0; i < tbl_count(); i++) {
		struct piece *p = tbl_at(i);
		size_t len = p->end - p->start;

		p->copy = NULL;
		if (!fork_copies(p))
			continue;
		if (dev < 0)
			dev = som_dev_open();
		p->copy = sys_mmap(NULL, len, PROT_READ | PROT_WRITE,
				   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
				   -1, 0);
		if (p->copy == MAP_FAILED || dev < 0 ||
		    som_copy_out(dev, p->copy, p)) {
			shim_warn_once(&warned,
				       "fork: cannot copy som memory for the child (%s); it gets zeros",
				       strerrordesc_np(errno));
			if (p->copy != MAP_FAILED)
				sys_munmap(p->copy, len);
			p->copy = NULL;
			continue;
		}
		shim_count(&shim_stats.fork_copied_bytes, len);
	}
	if (dev >= 0)
		sys_close(dev);
	shim_count(&shim_stats.forks, 1);
}

static void fork_parent(void)
{
	size_t i;

	for (i = 0; i < tbl_count(); i++) {
		struct piece *p = tbl_at(i);

		if (p->copy)
			sys_munmap(p->copy, p->end - p->start);
		p->copy = NULL;
	}
	tbl_unlock();
}

static void fork_child(void)
{
	size_t i;

	for (i = 0; i < tbl_count(); i++) {
		struct piece *p = tbl_at(i);
		size_t len = p->end - p->start;

		if (p->flags & (PIECE_DONTFORK | PIECE_ORDINARY))
			continue;
		if (!p->copy ||
		    sys_mremap(p->copy, len, len, MREMAP_MAYMOVE | MREMAP_FIXED,
			       (void *)p->start) == MAP_FAILED) {
			sys_mmap((void *)p->start, len, p->prot,
				 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
			continue;
		}
		if (p->prot != (PROT_READ | PROT_WRITE))
			sys_mprotect((void *)p->start, len, p->prot);
	}
	tbl_forget_som();
	shim_stats.bytes = 0;
	tbl_lock_reinit();
}

void shim_fork_init(void)
{
	pthread_atfork(fork_prepare, fork_parent, fork_child);
}
