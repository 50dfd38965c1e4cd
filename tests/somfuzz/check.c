// SPDX-License-Identifier: GPL-2.0
/*
 * The checks on every program:
 *
 * - the kernel log: a checker's report (KASAN, lockdep, a WARNING, a BUG,
 *   a bad page-table entry) among the lines /dev/kmsg has for us since
 *   the last look;
 * - the pool: once the program's processes and threads are gone,
 *   free_bytes equals total_bytes and nothing is reserved; once the
 *   executor is gone and the sources its programs added are removed,
 *   total_bytes is what it was too (the zeroing worker never changes
 *   free_bytes, but a pass of compaction or a region's last reference
 *   may lag: poll for a while);
 * - data tags: every word a program writes is a tag naming the program
 *   (its serial), the process and the object it maps; every non-zero word
 *   read back must be a tag this reader may see: of this program, and on
 *   /dev/som, of this very process. A tag of an earlier program is
 *   memory a new owner got without zeroing; another process's tag on
 *   /dev/som is memory two processes shared.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>
#include <linux/som.h>

#include "somfuzz.h"

#define SF_SYSFS	"/sys/kernel/mm/som/"
#define SF_TAG_MAGIC	0x50f5ULL

struct sf_shared *sf_shared;

void sf_finding(const char *fmt, ...)
{
	int expected = 0;
	va_list ap;

	if (!__atomic_compare_exchange_n(&sf_shared->finding, &expected, 1, 0,
					 __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
		return;
	va_start(ap, fmt);
	vsnprintf(sf_shared->finding_text, SF_FINDING_LEN, fmt, ap);
	va_end(ap);
}

long long sf_sysfs_ll(const char *name)
{
	char path[256], buf[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), SF_SYSFS "%s", name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	return strtoll(buf, NULL, 10);
}

int sf_sysfs_write(const char *name, const char *val)
{
	char path[256];
	int fd, ret = 0;

	snprintf(path, sizeof(path), SF_SYSFS "%s", name);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (write(fd, val, strlen(val)) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

int sf_kmsg_open(void)
{
	int fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);

	if (fd >= 0)
		lseek(fd, 0, SEEK_END);
	return fd;
}

/* What fails a run when the console shows it (vm/lib/qemu.sh). */
static const char *const sf_kmsg_patterns[] = {
	"BUG:", "WARNING:", "Oops", "KASAN:", "UBSAN:", "general protection",
	"bad pmd", "bad pud", "possible circular locking", "INFO: ",
	"possible recursive locking", "inconsistent lock state",
	"Kernel panic", "kernel BUG", "list_add corruption",
	"list_del corruption",
};

int sf_kmsg_check(int fd)
{
	char rec[1024], text[SF_FINDING_LEN] = "";
	const char *msg;
	size_t used = 0, i;
	ssize_t n;
	int hit = 0;

	if (fd < 0)
		return 0;
	for (;;) {
		n = read(fd, rec, sizeof(rec) - 1);
		if (n < 0 && errno == EPIPE)
			continue;	/* overwritten records: read on */
		if (n <= 0)
			break;
		rec[n] = '\0';
		msg = strchr(rec, ';');
		msg = msg ? msg + 1 : rec;
		for (i = 0; !hit && i < sizeof(sf_kmsg_patterns) /
					sizeof(sf_kmsg_patterns[0]); i++)
			if (strstr(msg, sf_kmsg_patterns[i]))
				hit = 1;
		/* The report and what follows it in this read. */
		if (hit && used < sizeof(text) - 2) {
			used += snprintf(text + used, sizeof(text) - used,
					 "%.*s\n", (int)strcspn(msg, "\n"), msg);
			if (used >= sizeof(text))
				used = sizeof(text) - 1;
		}
	}
	if (hit)
		sf_finding("kernel report:\n%s", text);
	return hit;
}

static long long sf_base_total = -1;
static char sf_base_rate[32];
static char sf_base_sources[32][40];
static int sf_base_nsources;

/*
 * The run's swap store: a file in /tmp, added at the baseline if the
 * machine has none, so that programs can page out (SOM_IOC_PAGEOUT) and
 * touch their memory back; removed when the process that added it exits.
 * Between programs nothing may be left in it (sf_pool_check()).
 */
#define SF_SWAP_SIZE	(64ULL << 20)

static char sf_swap_path[64];
static pid_t sf_swap_owner;

long sf_swap_add(void)
{
	struct som_swap_args a = { .size = SF_SWAP_SIZE };
	long ret = 0;
	int dev, fd;

	if (!sf_swap_path[0])
		return -ENOENT;
	dev = open("/dev/som", O_RDWR | O_CLOEXEC);
	fd = open(sf_swap_path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	a.fd = fd;
	if (dev < 0 || fd < 0 || ioctl(dev, SOM_IOC_SWAP_ADD, &a))
		ret = -errno;
	if (fd >= 0)
		close(fd);
	if (dev >= 0)
		close(dev);
	return ret;
}

void sf_swap_remove(void)
{
	int dev;

	if (!sf_swap_path[0] || getpid() != sf_swap_owner)
		return;
	sf_sysfs_write("swap/overcommit", "0");
	dev = open("/dev/som", O_RDWR | O_CLOEXEC);
	if (dev >= 0) {
		ioctl(dev, SOM_IOC_SWAP_REMOVE);
		close(dev);
	}
	unlink(sf_swap_path);
	sf_swap_path[0] = '\0';
}

static void sf_swap_setup(void)
{
	if (sf_swap_path[0] || sf_sysfs_ll("swap/size_bytes") != 0)
		return;
	snprintf(sf_swap_path, sizeof(sf_swap_path), "/tmp/somfuzz-store.%d",
		 (int)getpid());
	if (sf_swap_add()) {
		sf_swap_path[0] = '\0';
		return;
	}
	sf_swap_owner = getpid();
	atexit(sf_swap_remove);
}

int sf_pool_baseline(void)
{
	DIR *d = opendir(SF_SYSFS "sources");
	struct dirent *de;
	ssize_t n;
	int fd;

	sf_swap_setup();
	sf_base_total = sf_sysfs_ll("total_bytes");
	sf_base_nsources = 0;
	while (d && (de = readdir(d)) && sf_base_nsources < 32)
		if (de->d_name[0] != '.')
			snprintf(sf_base_sources[sf_base_nsources++],
				 sizeof(sf_base_sources[0]), "%.39s", de->d_name);
	if (d)
		closedir(d);
	fd = open(SF_SYSFS "migration/compact_rate", O_RDONLY);
	n = fd >= 0 ? read(fd, sf_base_rate, sizeof(sf_base_rate) - 1) : -1;
	sf_base_rate[n > 0 ? n : 0] = '\0';
	if (fd >= 0)
		close(fd);
	return sf_base_total < 0 ? -1 : 0;
}

int sf_source_in_baseline(const char *name)
{
	int i;

	for (i = 0; i < sf_base_nsources; i++)
		if (!strcmp(sf_base_sources[i], name))
			return 1;
	return 0;
}

/* Set compact_rate back if the program wrote it. */
void sf_rate_restore(struct sf_exec *ex)
{
	if (ex->changed_rate && sf_base_rate[0])
		sf_sysfs_write("migration/compact_rate", sf_base_rate);
}

/*
 * Remove every source the executor's programs added (they stay from one
 * program to the next: a later program may use or remove them, and adding
 * a GiB is too slow to do again for each program). A source that a
 * region's last reference still holds is tried again for a while.
 */
void sf_sources_restore(void)
{
	struct timespec ts = { 0, 20 * 1000 * 1000 };
	struct dirent *de;
	int tries, extra;
	DIR *d;

	if (sf_sysfs_ll("total_bytes") == sf_base_total)
		return;
	for (tries = 0; tries < 100; tries++) {
		extra = 0;
		d = opendir(SF_SYSFS "sources");
		while (d && (de = readdir(d))) {
			if (de->d_name[0] == '.' ||
			    sf_source_in_baseline(de->d_name))
				continue;
			extra++;
			sf_sysfs_write("remove_source", de->d_name);
		}
		if (d)
			closedir(d);
		if (!extra)
			return;
		nanosleep(&ts, NULL);
	}
}

/*
 * The pool whole: every block free, nothing reserved, and when @sources,
 * no source but those of the baseline (total_bytes as it was).
 */
int sf_pool_check(const char *when, int sources)
{
	struct timespec ts = { 0, 10 * 1000 * 1000 };
	long long total, free, reserved, swapped;
	int64_t deadline = sf_ms() + 30000;

	if (sf_base_total < 0)
		return 0;
	for (;;) {
		total = sf_sysfs_ll("total_bytes");
		free = sf_sysfs_ll("free_bytes");
		reserved = sf_sysfs_ll("reserved_bytes");
		swapped = sf_sysfs_ll("swap/used_bytes");
		if ((!sources || total == sf_base_total) && free == total &&
		    !reserved && swapped <= 0)
			return 0;
		if (sf_ms() > deadline)
			break;
		nanosleep(&ts, NULL);
	}
	sf_finding("pool not whole %s: total_bytes %lld (was %lld), free_bytes %lld, reserved_bytes %lld, swap used_bytes %lld, for 30 s",
		   when, total, sf_base_total, free, reserved, swapped);
	return 1;
}

uint64_t sf_tag(uint64_t serial, int proc, int obj, int file)
{
	return SF_TAG_MAGIC << 48 | (serial & 0xffffffffULL) << 16 |
	       (uint64_t)(proc & 0xff) << 8 | (uint64_t)(obj & 0x7f) << 1 |
	       (file ? 1 : 0);
}

/*
 * A som file cut to a size that is not a multiple of 8 keeps the bytes
 * below its end: the low bytes (little-endian, they come first) of a file
 * tag of this program, the rest zeroed by the truncation. Bytes 0 and 1
 * (process, object, the file bit) are free but for the file bit; the
 * bytes kept above them must be this program's serial and the magic.
 */
static int sf_tag_truncated(const struct sf_thread *t, uint64_t w)
{
	uint64_t want = SF_TAG_MAGIC << 48 |
			(t->ex->serial & 0xffffffffULL) << 16, mask;
	int k;

	for (k = 1; k < 8; k++) {
		mask = (1ULL << (8 * k)) - 1;
		if (!(w & ~mask))
			return (w & 1) && !((w ^ want) & mask & ~0xffffULL);
	}
	return 0;
}

int sf_tag_check(struct sf_thread *t, const struct sf_res *m, uint64_t off,
		 uint64_t w)
{
	uint64_t serial = (w >> 16) & 0xffffffffULL;
	int proc = (int)(w >> 8) & 0xff, file = (int)(w & 1);
	const char *what = m->map_file ? "som file" : "/dev/som";

	if (m->map_file && sf_tag_truncated(t, w))
		return 0;
	if (w >> 48 != SF_TAG_MAGIC) {
		sf_finding("%s mapping of program %llu, process %d, reads %#llx at offset %#llx: nothing any program wrote",
			   what, (unsigned long long)t->ex->serial, t->proc,
			   (unsigned long long)w, (unsigned long long)off);
		return 1;
	}
	if (serial != (t->ex->serial & 0xffffffffULL)) {
		sf_finding("%s mapping of program %llu, process %d, reads data of program %llu (process %d) at offset %#llx: memory a new owner got was not zeroed",
			   what, (unsigned long long)t->ex->serial, t->proc,
			   (unsigned long long)serial, proc,
			   (unsigned long long)off);
		return 1;
	}
	if (!file && proc != t->proc) {
		sf_finding("/dev/som mapping of program %llu: process %d reads what process %d wrote at offset %#llx: memory shared between processes",
			   (unsigned long long)t->ex->serial, t->proc, proc,
			   (unsigned long long)off);
		return 1;
	}
	return 0;
}
