// SPDX-License-Identifier: GPL-2.0
/*
 * The calls of the description table (desc.c): each turns its argument
 * values into one system call (or a few) on som's interface and records
 * what it produced. Ranges relative to a mapping are clamped to the arena
 * (or to the mapping itself when it lies outside), so that no call ever
 * unmaps or changes memory of the executor's own.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <linux/som.h>

#include "somfuzz.h"
#include "calls.h"

#define GiB	(1ULL << 30)

static int sf_new_obj(struct sf_thread *t)
{
	return __atomic_add_fetch(&t->ex->nobj, 1, __ATOMIC_RELAXED);
}

static int sf_fd_arg(struct sf_thread *t, int kind, uint64_t n)
{
	struct sf_res r;

	return sf_res_get(t, kind, n, &r, NULL) ? r.fd : -1;
}

/* A new descriptor of @kind as a resource; its result, or -errno. */
static long sf_new_fd(struct sf_thread *t, int kind, int fd)
{
	struct sf_res r = { .kind = kind };

	if (fd < 0)
		return -errno;
	r.fd = fd;
	r.obj = sf_new_obj(t);
	if (sf_res_add(t, &r) < 0)
		close(fd);
	return fd;
}

/*
 * SOMFUZZ_DEV names another device to open instead of /dev/som: only for
 * trying the fuzzer itself out where som.ko is not loaded (/dev/zero
 * maps fresh shared memory, which a forked child shares: the tag check
 * must say so).
 */
long sf_call_open_dev(struct sf_thread *t, const uint64_t *a)
{
	static const char *dev;

	if (!dev)
		dev = getenv("SOMFUZZ_DEV") ? getenv("SOMFUZZ_DEV") : "/dev/som";
	return sf_new_fd(t, SF_R_DEV, open(dev, (int)a[0]));
}

long sf_call_close(struct sf_thread *t, const uint64_t *a)
{
	struct sf_res r;
	int slot;

	if (!sf_res_get(t, SF_R_FD, a[0], &r, &slot))
		return close(-1);
	sf_res_kill_slot(t, slot);
	return close(r.fd);
}

long sf_call_file(struct sf_thread *t, const uint64_t *a)
{
	struct som_file_args args = {
		.flags = (uint32_t)a[2], .__pad = (uint32_t)a[3], .size = a[1],
		.__reserved = { a[4], 0 },
	};

	return sf_new_fd(t, SF_R_FILE,
			 ioctl(sf_fd_arg(t, SF_R_DEV, a[0]), SOM_IOC_FILE,
			       sf_ptr(a[5], &args, sizeof(args))));
}

long sf_call_mmap(struct sf_thread *t, const uint64_t *a)
{
	uint64_t len = a[1], off = a[2];
	int prot = (int)a[3] & (PROT_READ | PROT_WRITE | PROT_EXEC);
	int flags = (int)a[4], slot;
	char *want = sf_arena + (a[5] % 8) * SF_ARENA_SLOT + a[6] % GiB;
	struct sf_res fd, m = { .kind = SF_R_MAP };
	int fd_slot = -1, first;
	char *p;

	if (!sf_res_get(t, SF_R_FD, a[0], &fd, &fd_slot))
		fd.fd = -1, fd.obj = 0, fd.kind = SF_R_DEV;
	flags &= ~(MAP_FIXED | MAP_FIXED_NOREPLACE | MAP_ANONYMOUS |
		   MAP_GROWSDOWN);
	if (len && len <= SF_ARENA_SIZE &&
	    want + len <= sf_arena + SF_ARENA_SIZE) {
		flags |= MAP_FIXED;
		m.in_arena = 1;
	} else {
		/* Too large for the arena: far away, over nothing. */
		want = (char *)0x600000000000UL;
		flags |= MAP_FIXED_NOREPLACE;
	}
	p = mmap(want, len, prot, flags, fd.fd, (off_t)off);
	if (p == MAP_FAILED)
		return -errno;
	m.addr = (uintptr_t)p;
	m.len = len;
	m.map_obj = fd.obj;
	m.map_file = fd.kind == SF_R_FILE;
	m.map_prot = prot;
	sf_res_kill_overlap(t, m.addr, m.len);
	slot = sf_res_add(t, &m);
	/*
	 * The first mapping of a /dev/som region is new memory of the
	 * caller's: its first word reads zero, wherever its block was
	 * before. (A later one may map offsets an earlier one still maps.)
	 * One word: each read faults in a block, or a GiB. Not once the
	 * program has started a thread: from the moment mmap() returns, the
	 * other thread may write its tag there, through the new resource or
	 * through an old one of the same addresses that it copied before.
	 */
	first = fd_slot >= 0 && !sf_res_mark_mapped(t, fd_slot);
	if (first && slot >= 0 && !m.map_file && (prot & PROT_READ) &&
	    !sf_threads_started(t))
		sf_touch(t, &m, 0, 8, 8, 3);
	return 0;
}

/*
 * [m.addr + off, + len) clamped to what the call may change: the arena,
 * or the mapping when it lies outside. len 0: to the mapping's end.
 */
static void sf_clamp(const struct sf_res *m, uint64_t off, uint64_t len,
		     uint64_t *addr, uint64_t *size)
{
	uint64_t lo = m->in_arena ? (uintptr_t)sf_arena : m->addr;
	uint64_t hi = m->in_arena ? lo + SF_ARENA_SIZE : m->addr + m->len;
	uint64_t a = m->addr + off;

	if (!len)
		len = m->len > off ? m->len - off : 4096;
	if (a < m->addr || a < lo || a >= hi) {
		*addr = m->addr;
		*size = 0;
		return;
	}
	*addr = a;
	*size = len > hi - a ? hi - a : len;
}

long sf_call_touch(struct sf_thread *t, const uint64_t *a)
{
	struct sf_res m;
	int sig;

	if (!sf_res_get(t, SF_R_MAP, a[0], &m, NULL) || a[1] >= m.len)
		return SF_NOOP;
	sig = sf_touch(t, &m, a[1], a[2], a[3], (int)(a[4] % 3));
	return sig > 0 ? -sig : sig;
}

long sf_call_munmap(struct sf_thread *t, const uint64_t *a)
{
	uint64_t addr, len;
	struct sf_res m;
	int slot, ret;

	if (!sf_res_get(t, SF_R_MAP, a[0], &m, &slot))
		return munmap(sf_arena, 0);
	sf_clamp(&m, a[1], a[2], &addr, &len);
	ret = munmap((void *)(uintptr_t)addr, len);
	if (ret)
		return -errno;
	/* The arena's hole is the program's again. */
	if (m.in_arena)
		mmap((void *)(uintptr_t)addr, len, PROT_NONE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE |
		     MAP_FIXED_NOREPLACE, -1, 0);
	if (addr <= m.addr && addr + len >= m.addr + m.len)
		sf_res_kill_slot(t, slot);
	return 0;
}

long sf_call_mprotect(struct sf_thread *t, const uint64_t *a)
{
	uint64_t addr, len;
	struct sf_res m;

	if (!sf_res_get(t, SF_R_MAP, a[0], &m, NULL))
		return mprotect(sf_arena, 4096, PROT_NONE);
	sf_clamp(&m, a[1], a[2], &addr, &len);
	return mprotect((void *)(uintptr_t)addr, len,
			(int)a[3] & (PROT_READ | PROT_WRITE | PROT_EXEC)) ?
	       -errno : 0;
}

long sf_call_mremap(struct sf_thread *t, const uint64_t *a)
{
	uint64_t new_len = a[1], old_len;
	int flags = (int)a[2], slot;
	char *dest = sf_arena + (a[3] % 8) * SF_ARENA_SLOT;
	struct sf_res m;
	void *p;

	if (!sf_res_get(t, SF_R_MAP, a[0], &m, &slot))
		return SF_NOOP;
	old_len = a[4] % 3 == 0 ? m.len : a[4] % 3 == 1 ? 0 :
		  (m.len / 2 + 4095) & ~4095ULL;
	if ((flags & MREMAP_FIXED) &&
	    (new_len > SF_ARENA_SIZE ||
	     dest + new_len > sf_arena + SF_ARENA_SIZE))
		flags &= ~MREMAP_FIXED;
	p = mremap((void *)(uintptr_t)m.addr, old_len, new_len, flags, dest);
	if (p == MAP_FAILED)
		return -errno;
	if (m.in_arena && p != (void *)(uintptr_t)m.addr && old_len &&
	    !(flags & MREMAP_DONTUNMAP))
		mmap((void *)(uintptr_t)m.addr, old_len, PROT_NONE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE |
		     MAP_FIXED_NOREPLACE, -1, 0);
	sf_res_move_map(t, slot, (uintptr_t)p, new_len);
	return 0;
}

long sf_call_madvise(struct sf_thread *t, const uint64_t *a)
{
	uint64_t addr, len;
	struct sf_res m;

	if (!sf_res_get(t, SF_R_MAP, a[0], &m, NULL))
		return madvise(sf_arena, 4096, (int)a[3]);
	sf_clamp(&m, a[1], a[2], &addr, &len);
	return madvise((void *)(uintptr_t)addr, len, (int)a[3]) ? -errno : 0;
}

long sf_call_fallocate(struct sf_thread *t, const uint64_t *a)
{
	return fallocate(sf_fd_arg(t, SF_R_FILE, a[0]), (int)a[1],
			 (off_t)a[2], (off_t)a[3]) ? -errno : 0;
}

long sf_call_ftruncate(struct sf_thread *t, const uint64_t *a)
{
	return ftruncate(sf_fd_arg(t, SF_R_FD, a[0]), (off_t)a[1]) ? -errno : 0;
}

long sf_call_file_op(struct sf_thread *t, const uint64_t *a)
{
	int fd = sf_fd_arg(t, SF_R_FD, a[0]);
	char buf[64] = { 0 };
	struct stat st;

	switch (a[1] % 9) {
	case 0:
		return fstat(fd, &st);
	case 1:
		return read(fd, buf, sizeof(buf));
	case 2:
		return write(fd, buf, sizeof(buf));
	case 3:
		return fsync(fd);
	case 4:
		return lseek(fd, (off_t)a[2], SEEK_SET);
	case 5:
		return lseek(fd, (off_t)a[2], SEEK_END);
	case 6:
		return lseek(fd, (off_t)a[2], SEEK_DATA);
	case 7:
		return lseek(fd, (off_t)a[2], SEEK_HOLE);
	default:
		return pread(fd, buf, sizeof(buf), (off_t)a[2]);
	}
}

long sf_call_ioc_mapping(struct sf_thread *t, const uint64_t *a)
{
	struct som_mapping m = {
		.flags = (uint32_t)a[3], .__pad = (uint32_t)a[4],
		.__reserved = { a[5], a[6] },
	};
	struct sf_res map;

	m.addr = sf_res_get(t, SF_R_MAP, a[1], &map, NULL) ?
		 map.addr + a[2] : (uintptr_t)sf_arena + a[2];
	return ioctl(sf_fd_arg(t, SF_R_FD, a[0]), SOM_IOC_MAPPING,
		     sf_ptr(a[7], &m, sizeof(m))) ? -errno : 0;
}

long sf_call_ioc_policy(struct sf_thread *t, const uint64_t *a)
{
	struct som_policy p = {
		.mode = (uint32_t)a[1], .flags = (uint32_t)a[2],
		.__reserved = { a[5], 0 },
	};

	p.nodes[0] = a[3];
	p.nodes[SOM_MAX_NODES / 64 - 1] = a[4];
	return ioctl(sf_fd_arg(t, SF_R_FD, a[0]), SOM_IOC_POLICY,
		     sf_ptr(a[6], &p, sizeof(p))) ? -errno : 0;
}

int sf_env_range(const char *var, uint64_t *size, uint64_t *start)
{
	const char *s = getenv(var);
	char *end;

	if (!s)
		return 0;
	*size = strtoull(s, &end, 10) << 30;
	if (*end != 'G' || end[1] != '@')
		return 0;
	*start = strtoull(end + 2, &end, 10) << 30;
	return *end == 'G';
}

/* Physical ranges for SOM_IOC_SOURCE_ADD: (start, size) by index. */
static void sf_source_range(uint64_t i, uint64_t *start, uint64_t *size)
{
	uint64_t spare_size = GiB, spare = 12 * GiB;

	sf_env_range("SOM_SPARE_RANGES", &spare_size, &spare);
	*start = spare;
	*size = spare_size;
	switch (i % 8) {
	case 1:
		if (!sf_env_range("SOM_PMEM", size, start))
			*start = 14 * GiB, *size = 3 * GiB;
		break;
	case 2:
		if (!sf_env_range("SOM_RANGES", size, start))
			*start = 4 * GiB, *size = 2 * GiB;
		break;
	case 3:
		*start = 0;	/* System RAM */
		*size = GiB;
		break;
	case 4:
		*start += 2 << 20;
		break;
	case 5:
		*size = 0;
		break;
	case 6:
		*start = 0;	/* what BUDDY wants */
		*size = GiB;
		break;
	case 7:
		*size = 1ULL << 50;
		break;
	}
}

static void sf_source_name(uint64_t i, char *name)
{
	static const char *const names[] = {
		"", "fz0", "fz1", "bad/name", NULL, "reserved@0x100000000",
		"a b",
	};

	memset(name, 0, SOM_SOURCE_NAME_LEN);
	if (names[i % 7])
		strcpy(name, names[i % 7]);
	else
		memset(name, 'x', SOM_SOURCE_NAME_LEN);	/* no NUL */
}

long sf_call_ioc_source_add(struct sf_thread *t, const uint64_t *a)
{
	struct som_source_args s = {
		.kind = (uint32_t)a[1], .flags = (uint32_t)a[2],
		.fd = -1, .node = (int32_t)a[3], .__reserved = { a[6] },
	};
	struct sf_res r = { .kind = SF_R_SRC };
	int dev = sf_fd_arg(t, SF_R_DEV, a[0]);
	uint64_t start, size;

	sf_source_range(a[4], &start, &size);
	s.start = start;
	s.size = size;
	if (s.kind == SOM_SOURCE_HUGETLB) {
		s.fd = dev;	/* not a hugetlbfs file: refused */
		s.size = 0;
	}
	sf_source_name(a[5], s.name);
	if (!sf_may_add_gib())
		return SF_NOOP;
	if (ioctl(dev, SOM_IOC_SOURCE_ADD, sf_ptr(a[7], &s, sizeof(s))))
		return -errno;
	memcpy(r.name, s.name, sizeof(r.name));
	r.name[sizeof(r.name) - 1] = '\0';
	sf_res_add(t, &r);
	return 0;
}

long sf_call_ioc_source_remove(struct sf_thread *t, const uint64_t *a)
{
	struct som_source_name n = { .__reserved = { a[3] } };
	struct sf_res src;
	int slot = -1;

	switch (a[2] % 5) {
	case 0:
		if (sf_res_get(t, SF_R_SRC, a[1], &src, &slot))
			strcpy(n.name, src.name);
		else
			strcpy(n.name, "fz0");
		break;
	case 1:
		break;
	case 2:
		strcpy(n.name, "nonexistent");
		break;
	case 3:
		memset(n.name, 'y', sizeof(n.name));
		break;
	default:
		strcpy(n.name, "fz0");
	}
	if (ioctl(sf_fd_arg(t, SF_R_DEV, a[0]), SOM_IOC_SOURCE_REMOVE,
		  sf_ptr(a[4], &n, sizeof(n))))
		return -errno;
	if (slot >= 0)
		sf_res_kill_slot(t, slot);
	return 0;
}

long sf_call_ioc_proc_usage(struct sf_thread *t, const uint64_t *a)
{
	struct som_proc_usage u = {
		.flags = (uint32_t)a[2], .__reserved = { a[3], 0 },
	};

	switch (a[1] % 8) {
	case 0:
		u.pid = 0;
		break;
	case 1:
		u.pid = getpid();
		break;
	case 2:
		u.pid = 1;
		break;
	case 3:
		u.pid = 2;	/* kthreadd: no mm */
		break;
	case 4:
		u.pid = -1;
		break;
	case 5:
		u.pid = 99999999;
		break;
	case 6:
		u.pid = getppid();
		break;
	default:
		u.pid = t->ex->children[0] > 0 ? t->ex->children[0] :
			getpid() + 1;
	}
	return ioctl(sf_fd_arg(t, SF_R_FD, a[0]), SOM_IOC_PROC_USAGE,
		     sf_ptr(a[4], &u, sizeof(u))) ? -errno : 0;
}

/*
 * SOM_IOC_CGROUP on: the executor's own cgroup (sf_exec_init() puts it in
 * SF_CGROUP, so a limit there bites its own mappings; sf_exec_cleanup()
 * lifts it), the root (read only: a limit there would outlive the run),
 * a directory that is no cgroup, a bad fd, /dev/som itself.
 */
long sf_call_ioc_cgroup(struct sf_thread *t, const uint64_t *a)
{
	static const char *const dirs[] = { SF_CGROUP, SF_CGROUP_FS, "/tmp" };
	struct som_cgroup c = {
		.flags = (uint32_t)a[2], .limit = a[3],
		.__reserved = { a[4], 0 },
	};
	unsigned int which = a[1] % 5;
	long ret;

	if (which == 1)
		c.flags &= ~SOM_CGROUP_SET_LIMIT;
	if (which < 3)
		c.cgroup_fd = open(dirs[which], O_RDONLY | O_DIRECTORY |
				   O_CLOEXEC);
	else
		c.cgroup_fd = which == 3 ? -1 : sf_dev_fd;
	ret = ioctl(sf_fd_arg(t, SF_R_DEV, a[0]), SOM_IOC_CGROUP,
		    sf_ptr(a[5], &c, sizeof(c))) ? -errno : 0;
	if (which < 3 && c.cgroup_fd >= 0)
		close(c.cgroup_fd);
	return ret;
}

/* SOM_IOC_USER: a uid (the caller's, root, nobody, unmapped), flags. */
long sf_call_ioc_user(struct sf_thread *t, const uint64_t *a)
{
	static const uint32_t uids[] = { 0, 65534, 4242, (uint32_t)-1 };
	struct som_user u = {
		.uid = uids[a[1] % 4], .flags = (uint32_t)a[2],
		.__reserved = { a[3], 0 },
	};

	return ioctl(sf_fd_arg(t, SF_R_DEV, a[0]), SOM_IOC_USER,
		     sf_ptr(a[4], &u, sizeof(u))) ? -errno : 0;
}

/*
 * SOM_IOC_PAGEOUT of a range of a descriptor's region: what a touch then
 * reads must be what was written (the tags), read back from the store.
 */
long sf_call_ioc_pageout(struct sf_thread *t, const uint64_t *a)
{
	struct som_pageout p = {
		.offset = a[1], .length = a[2], .flags = a[3],
		.__reserved = { a[4], 0 },
	};

	return ioctl(sf_fd_arg(t, SF_R_FD, a[0]), SOM_IOC_PAGEOUT,
		     sf_ptr(a[5], &p, sizeof(p))) ? -errno : 0;
}

/*
 * The swap store the run set up (check.c): take it away, which reads
 * every block paged out back (of this program's regions too, while they
 * run), or put it back; or let the pool promise the store's room too
 * (swap/overcommit), or stop it.
 */
long sf_call_swap_admin(struct sf_thread *t, const uint64_t *a)
{
	(void)t;
	switch (a[0] % 4) {
	case 1:
		return sf_swap_add();
	case 2:
		return sf_sysfs_write("swap/overcommit", "1");
	case 3:
		return sf_sysfs_write("swap/overcommit", "0");
	default:
		return ioctl(sf_dev_fd, SOM_IOC_SWAP_REMOVE) ? -errno : 0;
	}
}

long sf_call_ioc_raw(struct sf_thread *t, const uint64_t *a)
{
	static const unsigned long cmds[] = {
		_IO(SOM_IOCTL_BASE, 6),
		_IOWR(SOM_IOCTL_BASE, 0x00, uint64_t),
		_IOR(SOM_IOCTL_BASE, 0x00, struct som_mapping),
		_IOW(SOM_IOCTL_BASE, 0x05, struct som_proc_usage),
		_IOWR(SOM_IOCTL_BASE, 0x7f, uint64_t),
		FIONREAD,
		0,
		_IOWR(SOM_IOCTL_BASE - 1, 0x00, struct som_mapping),
		SOM_IOC_SOURCE_REMOVE,
	};
	uint64_t buf[32];
	int i;

	for (i = 0; i < 32; i++)
		buf[i] = sf_rand(&t->rnd);
	return ioctl(sf_fd_arg(t, SF_R_FD, a[0]), cmds[a[1] % 9],
		     sf_ptr(a[2], buf, sizeof(buf))) ? -errno : 0;
}

/* The first source that was not there when the run began, or "". */
static void sf_extra_source(char *name, size_t len)
{
	DIR *d = opendir("/sys/kernel/mm/som/sources");
	struct dirent *de;

	name[0] = '\0';
	while (d && (de = readdir(d)))
		if (de->d_name[0] != '.' && !sf_source_in_baseline(de->d_name)) {
			snprintf(name, len, "%.40s", de->d_name);
			break;
		}
	if (d)
		closedir(d);
}

long sf_call_sysfs_write(struct sf_thread *t, const uint64_t *a)
{
	static const char *const rates[] = {
		"0", "1", "256", "100000", "-1", "abc", "4294967296", "  7\n",
	};
	static const char *const compact[] = {
		"1", "0", "yes", "2", "", "1\n", "y", "n",
	};
	static const char *const ranges[] = {
		NULL, NULL, "1G@0", NULL, "garbage", NULL, "0@12G",
		"18446744073709551615G@0",
	};
	uint64_t spare_size = GiB, spare = 12 * GiB, size, start;
	char val[64];
	struct sf_res src;
	int v = (int)(a[1] % 8);

	switch (a[0] % 4) {
	case 0:
		t->ex->changed_rate = 1;
		return sf_sysfs_write("migration/compact_rate", rates[v]);
	case 1:
		return sf_sysfs_write("migration/compact", compact[v]);
	case 2:
		sf_env_range("SOM_SPARE_RANGES", &spare_size, &spare);
		if (!sf_env_range("SOM_RANGES", &size, &start))
			size = 2 * GiB, start = 4 * GiB;
		if (v == 0 || v == 5)
			snprintf(val, sizeof(val), "%lluG@%lluG%s",
				 (unsigned long long)(spare_size >> 30),
				 (unsigned long long)(spare >> 30),
				 v == 5 ? "," : "");
		else if (v == 1)
			snprintf(val, sizeof(val), "%lluG@%lluG",
				 (unsigned long long)(size >> 30),
				 (unsigned long long)(start >> 30));
		else if (v == 3)
			snprintf(val, sizeof(val), "1G@%lluG,1G@%lluG",
				 (unsigned long long)(spare >> 30),
				 (unsigned long long)(spare >> 30) + 64);
		else
			snprintf(val, sizeof(val), "%s", ranges[v]);
		if (!sf_may_add_gib())
			return SF_NOOP;
		return sf_sysfs_write("add_range", val);
	default:
		if (v < 2 && sf_res_get(t, SF_R_SRC, a[2], &src, NULL))
			snprintf(val, sizeof(val), "%s", src.name);
		else if (v < 4)
			sf_extra_source(val, sizeof(val));
		else
			snprintf(val, sizeof(val), "%s",
				 v == 4 ? "nonexistent" : v == 5 ? "" :
				 v == 6 ? "x/y" : "fz0");
		return sf_sysfs_write("remove_source", val);
	}
}

long sf_call_sysfs_read(struct sf_thread *t, const uint64_t *a)
{
	static const char *const files[] = {
		"total_bytes", "free_bytes", "reserved_bytes", "zeroed_bytes",
		"metadata_bytes", "region_metadata_bytes", "faults_pud",
		"unmovable_free_bytes", "migration/compact_rate",
		"migration/compact_running", "migration/blocks_moved",
		"nodes/node0/free_bytes", "nodes/node1/reserved_bytes", NULL,
	};
	char path[160];
	struct dirent *de;
	DIR *d;
	long ret = 0;

	(void)t;
	if (files[a[0] % 14])
		return sf_sysfs_ll(files[a[0] % 14]);
	d = opendir("/sys/kernel/mm/som/sources");
	while (d && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "sources/%.64s/used_bytes",
			 de->d_name);
		ret += sf_sysfs_ll(path);
	}
	if (d)
		closedir(d);
	return ret;
}

/* The background ops: a thread that keeps som busy under the program. */
static void sf_background_body(struct sf_thread *t, const uint64_t *a)
{
	uint64_t rounds = a[2] % 9, r, r_bits, spare_size = GiB;
	uint64_t spare = 12 * GiB;
	struct som_source_args s;
	struct som_source_name n;
	struct som_policy p;
	char val[64];
	int fd = sf_fd_arg(t, SF_R_FD, a[1]);

	sf_env_range("SOM_SPARE_RANGES", &spare_size, &spare);
	/* Adding and removing a GiB is slow under TCG: two rounds. */
	if (a[0] % 5 == 1 || a[0] % 5 == 4)
		rounds = !rounds || !sf_may_add_gib() ? 0 :
			 rounds < 2 ? rounds : 2;
	for (r = 0; r < rounds; r++) {
		sf_kcov_start(t->kcov);
		switch (a[0] % 5) {
		case 0:
			/* Now and then an aging scan and a tiering pass. */
			if (r % 3 == 2) {
				sf_sysfs_write("aging/scan", "1");
				sf_sysfs_write("tiering/run", "1");
			} else {
				sf_sysfs_write("migration/compact", "1");
			}
			break;
		case 1:
			memset(&s, 0, sizeof(s));
			s.kind = SOM_SOURCE_RESERVED;
			/* Half the time the slow tier: tiering moves to it. */
			s.flags = a[2] & 16 ? SOM_SOURCE_SLOW : 0;
			s.fd = -1;
			s.node = -1;
			s.start = spare;
			s.size = spare_size;
			strcpy(s.name, "fzbg");
			memset(&n, 0, sizeof(n));
			strcpy(n.name, "fzbg");
			if (r & 1)
				ioctl(sf_dev_fd, SOM_IOC_SOURCE_REMOVE, &n);
			else
				ioctl(sf_dev_fd, SOM_IOC_SOURCE_ADD, &s);
			break;
		case 2:
			memset(&p, 0, sizeof(p));
			p.mode = SOM_POLICY_PREFERRED;
			p.nodes[0] = 1ULL << (r & 1);
			ioctl(fd, SOM_IOC_POLICY, &p);
			break;
		case 3:
			t->ex->changed_rate = 1;
			sf_sysfs_write("migration/compact_rate",
				       r & 1 ? "1" : "100000");
			break;
		default:
			snprintf(val, sizeof(val), "reserved@%#llx",
				 (unsigned long long)spare);
			if (r & 1)
				sf_sysfs_write("remove_source", val);
			else {
				snprintf(val, sizeof(val), "%lluG@%lluG",
					 (unsigned long long)(spare_size >> 30),
					 (unsigned long long)(spare >> 30));
				sf_sysfs_write("add_range", val);
			}
		}
		r_bits = sf_kcov_collect(t->kcov);
		if (r_bits)
			__atomic_fetch_add(&t->ex->new_bits, r_bits,
					   __ATOMIC_RELAXED);
		__atomic_fetch_add(&sf_shared->calls, 1, __ATOMIC_RELAXED);
	}
}

long sf_call_background(struct sf_thread *t, const uint64_t *a)
{
	if (sf_thread_start(t, 0, 0, sf_background_body, a))
		sf_background_body(t, a);
	return 0;
}
