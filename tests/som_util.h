/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the som selftests: pool counters from sysfs, fault
 * counts, data patterns, and probing an address for a signal.
 */
#ifndef SOM_UTIL_H
#define SOM_UTIL_H

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/som.h>

/*
 * The kselftest harness kills a test after TEST_TIMEOUT_DEFAULT (30 s)
 * unless it says otherwise with TEST_F_TIMEOUT(). som's tests run on the
 * debug tier too, where KASAN and lockdep under TCG make them 5 to 20
 * times slower than on the stock tier, and a busy 2-core host may slow
 * either 2 or 3 times more: the slowest test left at the default took
 * 29 s there on a quiet host (Documentation/testing.md has the figures).
 * Ten times that; a test that needs more says so.
 */
#ifdef TEST_TIMEOUT_DEFAULT
#undef TEST_TIMEOUT_DEFAULT
#define TEST_TIMEOUT_DEFAULT	300
#endif

#define SOM_DEV		"/dev/som"
#define SOM_SYSFS	"/sys/kernel/mm/som/"
#define KiB		(1UL << 10)
#define MiB		(1UL << 20)
#define GiB		(1UL << 30)

/*
 * The start of a fixture's setup: skip the test when som.ko is not
 * loaded, else open /dev/som into @fd (-1 when skipped, for the
 * teardown). For files that use the kselftest harness.
 */
#define SOM_OPEN_DEV(fd) do {						\
	(fd) = -1;							\
	if (access(SOM_DEV, F_OK))					\
		SKIP(return, "som.ko is not loaded");			\
	(fd) = open(SOM_DEV, O_RDWR);					\
	ASSERT_LE(0, (fd));						\
} while (0)

/* The number a file holds (sysfs, procfs), or -1 if it cannot be read. */
/*
 * Read all of @path (at most @size - 1 bytes) into @buf, NUL-terminated:
 * its length, or -1 if it cannot be opened or is empty.
 */
static inline ssize_t som_read_text(const char *path, char *buf, size_t size)
{
	ssize_t n, len = 0;
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		return -1;
	while (len < (ssize_t)size - 1 &&
	       (n = read(fd, buf + len, size - 1 - len)) > 0)
		len += n;
	close(fd);
	buf[len] = '\0';
	return len ? len : -1;
}

static inline long long som_read_ll(const char *path)
{
	char buf[64];

	if (som_read_text(path, buf, sizeof(buf)) < 0)
		return -1;
	return strtoll(buf, NULL, 10);
}

/* A counter of /sys/kernel/mm/som, or -1 if it cannot be read. */
static inline long long som_stat(const char *name)
{
	char path[256];

	snprintf(path, sizeof(path), SOM_SYSFS "%s", name);
	return som_read_ll(path);
}

/* Write @val to any file; 0 or -errno. */
static inline int som_write_file(const char *path, const char *val)
{
	ssize_t n;
	int fd, err = 0;

	fd = open(path, O_WRONLY);
	if (fd < 0)
		return -errno;
	n = write(fd, val, strlen(val));
	if (n < 0)
		err = -errno;
	close(fd);
	return err;
}

/* Write @val to a sysfs file of som; 0 or -errno. */
static inline int som_sysfs_write(const char *name, const char *val)
{
	char path[256];

	snprintf(path, sizeof(path), SOM_SYSFS "%s", name);
	return som_write_file(path, val);
}

/* A /proc/meminfo field in bytes, or -1. */
static inline long long som_meminfo(const char *field)
{
	char line[256];
	size_t len = strlen(field);
	long long kib = -1;
	FILE *f = fopen("/proc/meminfo", "r");

	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, field, len) && line[len] == ':')
			kib = atoll(line + len + 1);
	if (f)
		fclose(f);
	return kib < 0 ? -1 : kib << 10;
}

static inline long som_minflt(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_minflt;
}

/* Size of the entry mapping @addr (0: none), or -errno. */
static inline long long som_page_size(int fd, const void *addr)
{
	struct som_mapping m;

	memset(&m, 0, sizeof(m));
	m.addr = (uintptr_t)addr;
	if (ioctl(fd, SOM_IOC_MAPPING, &m))
		return -errno;
	return (long long)m.page_size;
}

/* A new som file of @size bytes made through /dev/som fd @dev, or -errno. */
static inline int som_file(int dev, uint64_t size, uint32_t flags)
{
	struct som_file_args args;
	int fd;

	memset(&args, 0, sizeof(args));
	args.size = size;
	args.flags = flags;
	fd = ioctl(dev, SOM_IOC_FILE, &args);
	return fd < 0 ? -errno : fd;
}

/* xorshift64: cheap, reproducible randomness with per-thread state. */
static inline uint64_t som_rand(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* The value the pattern puts at byte offset @off, for seed @seed. */
static inline uint64_t som_pattern(uint64_t seed, size_t off)
{
	return (seed * 0x9e3779b97f4a7c15ULL) ^ off ^ 0x5555aaaa5555aaaaULL;
}

/* Write the pattern at every @stride bytes of offsets [from, to) of @p. */
static inline void som_fill(void *p, size_t from, size_t to, size_t stride,
			    uint64_t seed)
{
	size_t off;

	for (off = from; off < to; off += stride)
		*(volatile uint64_t *)((char *)p + off) = som_pattern(seed, off);
}

/* First offset in [from, to) that differs from som_fill()'s, or -1. */
static inline long long som_check(const void *p, size_t from, size_t to,
				  size_t stride, uint64_t seed)
{
	size_t off;

	for (off = from; off < to; off += stride)
		if (*(const volatile uint64_t *)((const char *)p + off) !=
		    som_pattern(seed, off))
			return (long long)off;
	return -1;
}

/* Offset of the first non-zero 8-byte word at every @stride, or -1. */
static inline long long som_check_zero(const void *p, size_t len,
				       size_t stride)
{
	size_t off;

	for (off = 0; off < len; off += stride)
		if (*(const volatile uint64_t *)((const char *)p + off))
			return (long long)off;
	return -1;
}

static sigjmp_buf som_probe_env;
static volatile sig_atomic_t som_probe_sig;
static void *volatile som_probe_addr;

static void som_probe_handler(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	som_probe_sig = sig;
	som_probe_addr = si->si_addr;
	siglongjmp(som_probe_env, 1);
}

/*
 * Touch @addr (read, or write if @write) and return the signal it raised
 * (SIGSEGV or SIGBUS, with the faulting address in som_probe_addr), or 0
 * if the access worked.
 */
static inline int som_probe(void *addr, int write)
{
	struct sigaction sa, old_segv, old_bus;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = som_probe_handler;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	sigaction(SIGSEGV, &sa, &old_segv);
	sigaction(SIGBUS, &sa, &old_bus);
	som_probe_sig = 0;
	som_probe_addr = NULL;
	if (!sigsetjmp(som_probe_env, 1)) {
		if (write)
			*(volatile char *)addr = 1;
		else
			(void)*(volatile char *)addr;
	}
	sigaction(SIGSEGV, &old_segv, NULL);
	sigaction(SIGBUS, &old_bus, NULL);
	return som_probe_sig;
}

/*
 * Does the CPU have 1 GiB pages (so that som can map 1 GiB entries)? x86
 * says so with pdpe1gb; an arm64 CPU has them, but the kernel maps no 1
 * GiB PFN entries there (HAVE_ARCH_TRANSPARENT_HUGEPAGE_PUD is x86 only),
 * and its /proc/cpuinfo has no "flags" line: no.
 */
static inline int som_cpu_has_gbpages(void)
{
	char line[4096];
	FILE *f = fopen("/proc/cpuinfo", "r");
	int found = 0;

	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f))
		if (!strncmp(line, "flags", 5) && strstr(line, " pdpe1gb"))
			found = 1;
	fclose(f);
	return found;
}

/* The largest entry som maps on this machine: 1 GiB, else 2 MiB. */
static inline long long som_largest_entry(void)
{
	return som_cpu_has_gbpages() ? 1LL << 30 : 2LL << 20;
}

/* The fault counter (sysfs) of entries of @size: 1 GiB or 2 MiB. */
static inline const char *som_fault_stat(long long size)
{
	return size == 1LL << 30 ? "faults_pud" : "faults_pmd";
}

/* mmap @len of @fd shared, read-write, wherever the kernel puts it. */
static inline char *som_map_shared(int fd, size_t len)
{
	return mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
}

/*
 * mmap @len of @fd at an address @off bytes past an @align boundary
 * (@align a power of two, @off < @align). The MAP_FIXED lands in address
 * space reserved for it first; the rest of the reservation is given back,
 * so that munmap() of the mapping leaves nothing behind.
 */
static inline void *som_map_past(int fd, size_t len, size_t align, size_t off)
{
	size_t area_len = len + 2 * align;
	char *area = mmap(NULL, area_len, PROT_NONE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	char *want, *p;

	if (area == MAP_FAILED)
		return MAP_FAILED;
	want = (char *)(((uintptr_t)area + align - 1) & ~(align - 1)) + off;
	p = mmap(want, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
		 fd, 0);
	if (p == MAP_FAILED) {
		munmap(area, area_len);
		return MAP_FAILED;
	}
	if (want > area)
		munmap(area, want - area);
	munmap(want + len, area + area_len - (want + len));
	return p;
}

/* The same, @misalign (< 2 MiB) bytes past a 2 MiB boundary. */
static inline void *som_map_misaligned(int fd, size_t len, size_t misalign)
{
	return som_map_past(fd, len, 2 * MiB, misalign);
}

/* Run @cmd with sh; its output (at most @size - 1 bytes) in @out. */
static inline int som_capture(const char *cmd, char *out, size_t size)
{
	FILE *f = popen(cmd, "r");
	size_t n;

	if (!f)
		return -1;
	n = fread(out, 1, size - 1, f);
	out[n] = '\0';
	return pclose(f);
}

/* Seconds on the monotonic clock. */
static inline double som_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * Wait up to @seconds for the zeroing worker to have zeroed every free
 * and reserved block: from then on it changes nothing (no block's state,
 * no per-block bits) until memory is freed again. 0, or -1 on timeout.
 */
static inline int som_wait_all_zeroed(int seconds)
{
	double end = som_seconds() + seconds;

	while (som_stat("zeroed_bytes") !=
	       som_stat("free_bytes") + som_stat("reserved_bytes")) {
		if (som_seconds() > end)
			return -1;
		usleep(10 * 1000);
	}
	return 0;
}

/* A duration from environment variable @name: @def if unset, at most @max. */
static inline int som_env_seconds(const char *name, int def, int max)
{
	const char *s = getenv(name);
	int n = s ? atoi(s) : 0;

	return n <= 0 ? def : n > max ? max : n;
}

#endif /* SOM_UTIL_H */
