/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the memory-error tests share (som_poison_test.c, som_mce_test.c):
 * the spare reserved range as a source of its own, declaring and finding
 * pages, and what a hole must look like. Include after som_util.h and
 * som_pool_util.h, with the kselftest harness.
 */
#ifndef SOM_POISON_UTIL_H
#define SOM_POISON_UTIL_H

#define SPARE	"poison-spare"

/* What the last touch() got. */
static sigjmp_buf touch_env;
static volatile sig_atomic_t touch_sig, touch_code, touch_lsb;
static void *volatile touch_addr;

static inline void touch_handler(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	touch_sig = sig;
	touch_code = si->si_code;
	touch_addr = si->si_addr;
	touch_lsb = si->si_addr_lsb;
	siglongjmp(touch_env, 1);
}

/* Read @addr; return the signal it raised (its fields in touch_*), or 0. */
static inline int touch(void *addr)
{
	struct sigaction sa, old;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = touch_handler;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	sigaction(SIGBUS, &sa, &old);
	touch_sig = 0;
	touch_code = 0;
	touch_lsb = 0;
	touch_addr = NULL;
	if (!sigsetjmp(touch_env, 1))
		(void)*(volatile char *)addr;
	sigaction(SIGBUS, &old, NULL);
	return touch_sig;
}

/* SOM_IOC_POISON: the page at @addr, or at @phys when @addr is NULL. */
static inline int poison(int dev, void *addr, uint64_t phys, uint32_t flags,
		  uint64_t *out)
{
	struct som_poison p;

	memset(&p, 0, sizeof(p));
	p.addr = (uintptr_t)addr;
	p.phys = phys;
	p.flags = flags | (addr ? SOM_POISON_ADDR : 0);
	if (ioctl(dev, SOM_IOC_POISON, &p))
		return -errno;
	if (out)
		*out = p.phys;
	return 0;
}

/* SOM_IOC_POISON with @flags (SOM_POISON_FORGET, ...) over @phys, @len. */
static inline int poison_range(int dev, uint64_t phys, uint64_t len,
			       uint32_t flags)
{
	struct som_poison p;

	memset(&p, 0, sizeof(p));
	p.phys = phys;
	p.len = len;
	p.flags = flags;
	return ioctl(dev, SOM_IOC_POISON, &p) ? -errno : 0;
}

/* The physical address of the page behind @addr (which must be backed). */
static inline uint64_t phys_of(int dev, void *addr)
{
	uint64_t phys = 0;

	return poison(dev, addr, 0, SOM_POISON_LOOKUP, &phys) ? 0 : phys;
}

static inline long long spare_stat(const char *attr)
{
	return atoll(src_attr(SPARE, attr));
}

FIXTURE(poison) {
	int dev;
	int nid;
	uint64_t start;
	bool added;
};

FIXTURE_SETUP(poison)
{
	struct som_source_args a;
	uint64_t size;

	SOM_OPEN_DEV(self->dev);
	self->nid = -1;
	if (!parse_range(getenv("SOM_SPARE_RANGES"), &size, &self->start) ||
	    size != GiB)
		SKIP(return, "no spare 1 GiB range (SOM_SPARE_RANGES)");
	args_init(&a, SOM_SOURCE_RESERVED);
	a.start = self->start;
	a.size = size;
	strcpy(a.name, SPARE);
	ASSERT_EQ(0, src_add(self->dev, &a));
	self->added = true;
	self->nid = atoi(src_attr(SPARE, "nodes"));
	ASSERT_LT(0, self->nid);
	ASSERT_EQ(0, spare_stat("poison_events"));
}

FIXTURE_TEARDOWN(poison)
{
	/* A case that stopped zeroing ahead and failed left it so. */
	som_sysfs_write("zero_ahead", "1");
	if (self->nid > 0) {
		/* Retired blocks leave with their source. */
		EXPECT_EQ(0, src_remove(self->dev, SPARE));
	}
	/*
	 * The pool remembers them for when the range comes back: the next
	 * case gets it whole (its setup checks).
	 */
	if (self->added)
		EXPECT_EQ(0, forget_spare_poison(self->dev));
	if (self->dev >= 0)
		close(self->dev);
}

/*
 * A /dev/som mapping of @len with policy @mode (SOM_POLICY_BIND: only
 * the spare node; PREFERRED: it first, then node 0), @off past a GiB.
 */
static inline char *map_spare_mode(struct __test_metadata *_metadata,
				   int nid, uint32_t mode, size_t len,
				   size_t off, int *fdp)
{
	int fd = open(SOM_DEV, O_RDWR);
	char *p;

	EXPECT_LE(0, fd);
	EXPECT_EQ(0, set_policy(fd, mode, 1ULL << nid, 0));
	p = som_map_past(fd, len, GiB, off);
	EXPECT_NE(MAP_FAILED, p);
	*fdp = fd;
	return p == MAP_FAILED ? NULL : p;
}

/* A /dev/som mapping of @len bound to the spare node, @off past a GiB. */
static inline char *map_spare(struct __test_metadata *_metadata, int nid,
		       size_t len, size_t off, int *fdp)
{
	return map_spare_mode(_metadata, nid, SOM_POLICY_BIND, len, off, fdp);
}

/*
 * A mapping of @len from map_spare(), 2 MiB past a GiB, filled with
 * som_fill()'s pattern (seed 7, every 8 bytes); the physical address of
 * its page at @page_off in *@phys. NULL if something failed.
 */
static inline char *map_filled(struct __test_metadata *_metadata, int dev,
			       int nid, size_t len, size_t page_off,
			       uint64_t *phys, int *fdp)
{
	char *m = map_spare(_metadata, nid, len, 2 * MiB, fdp);

	if (!m)
		return NULL;
	som_fill(m, 0, len, 8, 7);
	*phys = phys_of(dev, m + page_off);
	return *phys ? m : NULL;
}

/*
 * The physical address of page @nr of a block that was used and freed: a
 * free block, dirty or zeroed by now. 0 if something failed.
 */
static inline uint64_t free_page_phys(struct __test_metadata *_metadata, int dev,
			       int nid, int nr)
{
	uint64_t phys;
	char *m;
	int fd;

	m = map_spare(_metadata, nid, 2 * MiB, 2 * MiB, &fd);
	if (!m)
		return 0;
	m[0] = 1;
	phys = phys_of(dev, m + nr * 4096);
	munmap(m, 2 * MiB);
	close(fd);
	return phys;
}

/*
 * After an error in @page of a mapping filled with som_fill(seed 7):
 * every other byte is intact, the page signals as anonymous memory's
 * would, and the entries around it are 4 KiB.
 */
static inline void check_hole(struct __test_metadata *_metadata, int dev, char *p,
		       size_t len, char *page)
{
	size_t off = page - p;

	EXPECT_EQ(-1, som_check(p, 0, off, 8, 7));
	EXPECT_EQ(-1, som_check(p, off + 4096, len, 8, 7));
	EXPECT_EQ(SIGBUS, touch(page + 100));
	EXPECT_EQ(BUS_MCEERR_AR, touch_code);
	EXPECT_EQ(page + 100, (char *)touch_addr);
	EXPECT_EQ(12, touch_lsb);
	EXPECT_EQ(-EHWPOISON, poison(dev, page, 0, SOM_POISON_LOOKUP, NULL));
	/* The rest of its 2 MiB is mapped by 4 KiB entries now. */
	EXPECT_EQ(4096, som_page_size(dev, (void *)((uintptr_t)page ^ 4096)));
}

#endif /* SOM_POISON_UTIL_H */
