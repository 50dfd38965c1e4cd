// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The memory calls, straight to the kernel. The shim defines mmap() and
 * its kin itself, so calling them by name would call the shim again.
 */
#define _GNU_SOURCE
#include <sys/syscall.h>
#include <unistd.h>

#include "shim.h"

void *sys_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	return (void *)syscall(SYS_mmap, addr, len, prot, flags, fd, off);
}

int sys_munmap(void *addr, size_t len)
{
	return syscall(SYS_munmap, addr, len);
}

void *sys_mremap(void *old, size_t old_len, size_t new_len, int flags,
		 void *new_addr)
{
	return (void *)syscall(SYS_mremap, old, old_len, new_len, flags,
			       new_addr);
}

int sys_madvise(void *addr, size_t len, int advice)
{
	return syscall(SYS_madvise, addr, len, advice);
}

int sys_mprotect(void *addr, size_t len, int prot)
{
	return syscall(SYS_mprotect, addr, len, prot);
}
