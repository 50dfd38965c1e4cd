/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The swap store and paging out, for the tests of both
 * (som_swap_test.c, som_overcommit_test.c): SOM_IOC_SWAP_ADD,
 * SOM_IOC_SWAP_REMOVE, SOM_IOC_PAGEOUT and /sys/kernel/mm/som/swap/.
 * Include after som_util.h.
 */
#ifndef SOM_SWAP_UTIL_H
#define SOM_SWAP_UTIL_H

#define STORE_SIZE	(256 * MiB)
#define SWAP		"swap/"

static inline long long swap_stat(const char *name)
{
	char path[64];

	snprintf(path, sizeof(path), SWAP "%s", name);
	return som_stat(path);
}

static inline int swap_add(int dev, int fd, uint64_t size)
{
	struct som_swap_args a;

	memset(&a, 0, sizeof(a));
	a.fd = fd;
	a.size = size;
	return ioctl(dev, SOM_IOC_SWAP_ADD, &a) ? -errno : 0;
}

static inline int swap_remove(int dev)
{
	return ioctl(dev, SOM_IOC_SWAP_REMOVE) ? -errno : 0;
}

/* SOM_IOC_PAGEOUT of [off, off + len) of @fd: -errno, or bytes paged out. */
static inline long long pageout(int fd, uint64_t off, uint64_t len)
{
	struct som_pageout p;

	memset(&p, 0, sizeof(p));
	p.offset = off;
	p.length = len;
	if (ioctl(fd, SOM_IOC_PAGEOUT, &p))
		return -errno;
	return (long long)p.paged_out;
}

#endif /* SOM_SWAP_UTIL_H */
