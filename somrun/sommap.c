// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * som mappings: a new som file per mapping, mapped and closed; freeing
 * pieces of one; copying one's contents out; and ordinary memory when the
 * pool cannot serve.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>
#include <linux/som.h>

#include "shim.h"

int som_dev_open(void)
{
	int fd = sys_open("/dev/som", O_RDWR | O_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

static int som_set_policy(int fd)
{
	struct som_policy pol;

	if (!shim_cfg.has_policy)
		return 0;
	memset(&pol, 0, sizeof(pol));
	pol.mode = shim_cfg.policy_mode;
	memcpy(pol.nodes, shim_cfg.policy_nodes, sizeof(pol.nodes));
	return sys_ioctl(fd, SOM_IOC_POLICY, &pol) ? -errno : 0;
}

/*
 * A som mapping of @len bytes at @addr: a hint, or the place if @flags has
 * MAP_FIXED or MAP_FIXED_NOREPLACE. Its file is sized to whole 2 MiB
 * blocks, which the pool reserves now; ENOSPC in *err means the pool
 * cannot. The caller holds the table lock and adds the piece.
 */
void *som_map_new(void *addr, size_t len, int prot, int flags, int *err)
{
	struct som_file_args args;
	void *p = MAP_FAILED;
	int dev, fd;

	dev = som_dev_open();
	if (dev < 0) {
		*err = dev;
		return MAP_FAILED;
	}
	memset(&args, 0, sizeof(args));
	args.flags = SOM_FILE_CLOEXEC;
	fd = sys_ioctl(dev, SOM_IOC_FILE, &args);
	*err = fd < 0 ? -errno : 0;
	sys_close(dev);
	if (fd < 0)
		return MAP_FAILED;
	*err = som_set_policy(fd);
	if (!*err && sys_ftruncate(fd, shim_round_up(len, SHIM_BLOCK)))
		*err = -errno;
	if (!*err) {
		p = sys_mmap(addr, len, prot,
			     MAP_SHARED | (flags & (MAP_FIXED | MAP_FIXED_NOREPLACE)),
			     fd, 0);
		if (p == MAP_FAILED)
			*err = -errno;
	}
	sys_close(fd);
	return p;
}

/*
 * Som could not make a mapping of @len bytes (@err): say so the first
 * time. Returns false if the administrator asked for failure instead of
 * ordinary memory (errno is then ENOMEM).
 */
bool som_fallback_allowed(size_t len, int err)
{
	static bool warned_empty, warned_dev, warned_other;

	if (shim_cfg.fail_when_empty) {
		errno = ENOMEM;
		return false;
	}
	if (err == -ENOSPC || err == -ENOMEM)
		shim_warn_once(&warned_empty,
			       "the som pool cannot hold %zu bytes; using ordinary memory (SOMRUN_ON_EMPTY=fail to fail instead)",
			       len);
	else if (err == -ENOENT || err == -ENODEV || err == -ENXIO ||
		 err == -EACCES || err == -EPERM)
		shim_warn_once(&warned_dev,
			       "cannot open /dev/som (%s); using ordinary memory",
			       strerrordesc_np(-err));
	else
		shim_warn_once(&warned_other,
			       "som mapping of %zu bytes failed (%s); using ordinary memory",
			       len, strerrordesc_np(-err));
	shim_count(&shim_stats.fallbacks, 1);
	shim_count(&shim_stats.fallback_bytes, len);
	return true;
}

/* The ordinary mapping in place of a som one that could not be made. */
void *som_fallback(void *addr, size_t len, int prot, int flags, int fd,
		   off_t off, int err)
{
	if (!som_fallback_allowed(len, err))
		return MAP_FAILED;
	return sys_mmap(addr, len, prot, flags, fd, off);
}

/*
 * Free the memory of som pieces in [start, end) that stay reachable
 * through other pieces of their file: munmap() would only drop the
 * mapping. The address must still be a som mapping: the table could be
 * stale if the program unmapped memory behind the shim's back, and
 * MADV_REMOVE on someone else's shared file would delete its data.
 */
int som_punch(int dev, uintptr_t start, uintptr_t end)
{
	struct som_mapping m;

	if (dev < 0)
		return dev;
	memset(&m, 0, sizeof(m));
	m.addr = start;
	if (sys_ioctl(dev, SOM_IOC_MAPPING, &m))
		return -errno;
	/* Its last page too: the piece may span VMAs. */
	m.addr = end - SHIM_PAGE;
	if (sys_ioctl(dev, SOM_IOC_MAPPING, &m))
		return -errno;
	if (sys_madvise((void *)start, end - start, MADV_REMOVE))
		return -errno;
	shim_count(&shim_stats.punched_bytes, end - start);
	return 0;
}

/*
 * [start, end) is about to be unmapped: free what would stay behind and
 * forget the pieces. Caller holds the table lock.
 */
int som_release(uintptr_t start, uintptr_t end)
{
	int dev = -1, err;
	size_t i;

	if (!tbl_overlaps(start, end))
		return 0;
	err = tbl_isolate(start, end);
	if (err)
		return err;
	for (i = tbl_first_after(start);
	     i < tbl_count() && tbl_at(i)->start < end; i++) {
		struct piece *p = tbl_at(i);

		if (p->flags & PIECE_ORDINARY)
			continue;
		if (tbl_file_outside(p->file, start, end)) {
			if (dev < 0)
				dev = som_dev_open();
			som_punch(dev, p->start, p->end);
		}
		__atomic_sub_fetch(&shim_stats.bytes, p->end - p->start,
				   __ATOMIC_RELAXED);
	}
	if (dev >= 0)
		sys_close(dev);
	tbl_remove(start, end);
	return 0;
}

/* MAP_POPULATE, MADV_POPULATE_*: fault every page in. */
void som_populate(uintptr_t start, uintptr_t end)
{
	uintptr_t a;

	for (a = start; a < end; a += SHIM_PAGE)
		(void)*(volatile char *)a;
}

/*
 * Copy piece @p into @dst, block by block, skipping the 2 MiB blocks of
 * its file that hold no memory (they read as zeros, and reading them
 * would allocate them). Caller holds the table lock.
 */
int som_copy_out(int dev, char *dst, const struct piece *p)
{
	bool unreadable = !(p->prot & PROT_READ);
	/* Writers in other threads keep writing while a fork copies. */
	int readable = p->prot | PROT_READ;
	uintptr_t a, next;
	int err = 0;

	if (unreadable &&
	    sys_mprotect((void *)p->start, p->end - p->start, readable))
		return -errno;
	for (a = p->start; a < p->end; a = next) {
		struct som_mapping m;

		memset(&m, 0, sizeof(m));
		m.addr = a;
		if (sys_ioctl(dev, SOM_IOC_MAPPING, &m)) {
			err = -errno;
			break;
		}
		next = a + SHIM_BLOCK - (m.offset & (SHIM_BLOCK - 1));
		if (next > p->end)
			next = p->end;
		if (m.node >= 0)
			memcpy(dst + (a - p->start), (void *)a, next - a);
	}
	if (unreadable)
		sys_mprotect((void *)p->start, p->end - p->start, p->prot);
	return err;
}
