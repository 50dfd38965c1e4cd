// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The kernel's calls, straight. The shim defines mmap() and its kin
 * itself, so calling them by name would call the shim again; and it calls
 * the others while holding its table lock, where a libc wrapper could be a
 * cancellation point or be interposed by another preload.
 */
#define _GNU_SOURCE
#include <fcntl.h>
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

int sys_open(const char *path, int flags)
{
	return syscall(SYS_openat, AT_FDCWD, path, flags, 0);
}

int sys_close(int fd)
{
	return syscall(SYS_close, fd);
}

long sys_ioctl(int fd, unsigned long cmd, void *arg)
{
	return syscall(SYS_ioctl, fd, cmd, arg);
}

int sys_ftruncate(int fd, off_t len)
{
	return syscall(SYS_ftruncate, fd, len);
}
