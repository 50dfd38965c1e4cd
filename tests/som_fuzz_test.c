// SPDX-License-Identifier: GPL-2.0
/*
 * som fuzzing: random and boundary input to every ioctl, to the sysfs
 * store, and to the calls a som file takes (ftruncate, fallocate, madvise,
 * mprotect, mremap, munmap, touching it), from a fixed seed for
 * SOM_FUZZ_ITERATIONS (default 20000) iterations each, or until 800 s
 * have passed; set SOM_FUZZ_SEED and a larger count to fuzz for longer.
 * Every ioctl and add_range write must succeed or fail with an errno from
 * the documented set; for the file calls, whose valid results are too many
 * to list, the kernel log must stay clean (the host checks) and the pool
 * must be whole afterwards.
 *
 * Needs som.ko loaded with a pool of at least 2 GiB, and root.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/falloc.h>
#include <sys/stat.h>
#include <time.h>

#include "kselftest_harness.h"
#include "som_util.h"

static long som_fuzz_iterations(void)
{
	const char *s = getenv("SOM_FUZZ_ITERATIONS");

	return s && atol(s) > 0 ? atol(s) : 20000;
}

/* Stop early rather than hit the 900 s harness timeout. */
static int som_fuzz_time_left(time_t start)
{
	return time(NULL) - start < 800;
}

static uint64_t som_fuzz_seed(void)
{
	const char *s = getenv("SOM_FUZZ_SEED");

	return s ? strtoull(s, NULL, 0) | 1 : 0x50f7c0ffeeULL;
}

/* Sizes and offsets at the edges of what som and the VFS accept. */
static uint64_t som_fuzz_value(uint64_t *seed)
{
	static const uint64_t edge[] = {
		0, 1, 4095, 4096, 4097, 2 * MiB - 1, 2 * MiB, 2 * MiB + 1,
		GiB - 1, GiB, GiB + 1, 2 * GiB, 3 * GiB, 1ULL << 40,
		(1ULL << 62) - 1, 1ULL << 62, 1ULL << 63, ~0ULL, ~0ULL - 4095,
		0x7fffffffffffffffULL, 0x7fffffffffe00000ULL,
	};
	uint64_t r = som_rand(seed);

	switch (r % 4) {
	case 0:
		return edge[(r >> 8) % (sizeof(edge) / sizeof(edge[0]))];
	case 1:
		return (r >> 8) % (4 * GiB);
	case 2:
		return ((r >> 8) % 2048) * 2 * MiB + ((r >> 20) % 3 - 1) * 4096;
	default:
		return som_rand(seed);
	}
}

static int som_errno_in(int err, const int *set)
{
	for (; *set; set++)
		if (err == *set)
			return 1;
	return 0;
}

FIXTURE(fuzz) {
	int dev;
	long long total;
	char *guard;	/* one RW page followed by a PROT_NONE page */
	uint64_t seed;
	long iterations;
};

FIXTURE_SETUP(fuzz)
{
	SOM_OPEN_DEV(self->dev);
	self->total = som_stat("total_bytes");
	ASSERT_EQ(self->total, som_stat("free_bytes"));
	self->guard = mmap(NULL, 8192, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, self->guard);
	ASSERT_EQ(0, mprotect(self->guard + 4096, 4096, PROT_NONE));
	self->seed = som_fuzz_seed();
	self->iterations = som_fuzz_iterations();
}

FIXTURE_TEARDOWN(fuzz)
{
	if (self->dev < 0)
		return;
	close(self->dev);
	EXPECT_EQ(self->total, som_stat("free_bytes"));
	EXPECT_EQ(0, som_stat("reserved_bytes"));
	EXPECT_EQ(self->total, som_stat("total_bytes"));
}

/* An argument pointer: good, straddling the guard, unmapped, kernel, NULL. */
static void *som_fuzz_ptr(struct _test_data_fuzz *self, size_t size)
{
	uint64_t r = som_rand(&self->seed);
	uint64_t *w = (uint64_t *)self->guard;
	size_t i;

	switch (r % 8) {
	case 0:
		return NULL;
	case 1:
		return self->guard + 4096 - size / 2;	/* runs into PROT_NONE */
	case 2:
		return self->guard + 4096;
	case 3:
		return (void *)0xffff888000000000ULL;
	default:
		for (i = 0; i < 512; i++)
			w[i] = som_fuzz_value(&self->seed);
		/* Mostly zero flags and reserved fields, to get further in. */
		if (r & 0x100)
			w[1] &= 0x1;
		if (r & 0x200)
			w[2] = w[3] = 0;
		return self->guard + (r >> 16) % 8 * 8;
	}
}

TEST_F_TIMEOUT(fuzz, ioctls_fail_cleanly, 900)
{
	static const int ok_errno[] = {
		EFAULT, EINVAL, ENOTTY, EFBIG, ENOSPC, ENOMEM, EPERM, EBUSY,
		EBADF, ENOENT, EEXIST, 0
	};
	/* The policy and pool calls, with random (mostly refused) bytes. */
	static const unsigned int more[] = {
		SOM_IOC_POLICY, SOM_IOC_SOURCE_ADD, SOM_IOC_SOURCE_REMOVE,
	};
	int sfd = som_file(self->dev, 4 * MiB, 0), fd, ret, nr_files = 0;
	char *p = mmap(NULL, 4 * MiB, PROT_READ | PROT_WRITE, MAP_SHARED,
		       sfd, 0);
	time_t start = time(NULL);
	unsigned int cmd;
	long i, bad = 0;
	uint64_t r;

	ASSERT_LE(0, sfd);
	ASSERT_NE(MAP_FAILED, p);
	for (i = 0; i < self->iterations && som_fuzz_time_left(start); i++) {
		r = som_rand(&self->seed);
		switch (r % 7) {
		case 0:
			cmd = SOM_IOC_MAPPING;
			break;
		case 1:
			cmd = SOM_IOC_FILE;
			break;
		case 2:	/* som's type, any number, direction and size */
			cmd = _IOC((r >> 8) % 4, SOM_IOCTL_BASE, (r >> 16) % 256,
				   (r >> 24) % 256);
			break;
		case 3:
			cmd = (unsigned int)(r >> 32);
			break;
		case 4:
			cmd = more[(r >> 8) % 3];
			break;
		default:	/* a valid call with an address in our mapping */
			cmd = SOM_IOC_MAPPING;
			break;
		}
		fd = (r >> 40) & 1 ? sfd : self->dev;
		if (r % 7 == 1 && (r >> 41) & 1) {
			/* Mostly well-formed, to reach the file's life cycle. */
			struct som_file_args args = {
				.flags = (r >> 42) % 3,
				.size = som_fuzz_value(&self->seed) % (3 * GiB),
			};
			ret = ioctl(fd, cmd, &args);
		} else if (r % 7 >= 5) {
			struct som_mapping m = { .addr = (uintptr_t)p +
						 (r >> 12) % (6 * MiB) };
			ret = ioctl(fd, cmd, &m);
		} else {
			ret = ioctl(fd, cmd, som_fuzz_ptr(self, 64));
		}
		if (ret < 0 && !som_errno_in(errno, ok_errno)) {
			bad++;
			TH_LOG("ioctl(%s, %#x) failed with errno %d",
			       fd == sfd ? "som file" : "/dev/som", cmd, errno);
		}
		if (ret > 2 && cmd == SOM_IOC_FILE) {
			struct stat st;

			EXPECT_EQ(0, fstat(ret, &st));
			EXPECT_TRUE(S_ISREG(st.st_mode));
			close(ret);
			nr_files++;
		} else if (ret > 0) {
			bad++;
			TH_LOG("ioctl(%#x) returned %d", cmd, ret);
		}
	}
	TH_LOG("%ld ioctls from seed %#llx, %d som files made",
	       i, (unsigned long long)som_fuzz_seed(), nr_files);
	EXPECT_EQ(0, bad);
	EXPECT_EQ(0, munmap(p, 4 * MiB));
	EXPECT_EQ(0, close(sfd));
}

/* Random SIZE@START texts: all must be refused (the pool has them). */
TEST_F_TIMEOUT(fuzz, add_range_refuses_garbage, 900)
{
	static const char *const piece[] = {
		"0", "1", "2", "4", "1G", "2G", "4G", "6G", "1T", "512M", "@",
		",", "\n", "K", "0x", "ffff", "-1", "99999999999999999999",
		"G", "@@", " ", "\t", "1G@", "@4G", "2G@4G", "1G@4G",
	};
	static const int ok_errno[] = { EINVAL, EBUSY, ERANGE, 0 };
	time_t start = time(NULL);
	char buf[128];
	long i, bad = 0, n;
	int ret, k;

	for (i = 0; i < self->iterations / 10 && som_fuzz_time_left(start);
	     i++) {
		buf[0] = 0;
		n = 1 + som_rand(&self->seed) % 6;
		for (k = 0; k < n; k++)
			strncat(buf, piece[som_rand(&self->seed) %
					   (sizeof(piece) / sizeof(piece[0]))],
				sizeof(buf) - strlen(buf) - 1);
		ret = som_sysfs_write("add_range", buf);
		if (ret >= 0 || !som_errno_in(-ret, ok_errno)) {
			bad++;
			TH_LOG("add_range \"%s\": %d", buf, ret);
		}
	}
	TH_LOG("%ld add_range writes from seed %#llx", i,
	       (unsigned long long)som_fuzz_seed());
	EXPECT_EQ(0, bad);
}

/* Random sizes, holes, protections and moves on one som file. */
TEST_F_TIMEOUT(fuzz, file_calls_keep_the_pool_whole, 900)
{
	static const int advice[] = {
		MADV_REMOVE, MADV_DONTNEED, MADV_FREE, MADV_HUGEPAGE,
		MADV_NOHUGEPAGE, MADV_DONTFORK, MADV_DOFORK, MADV_WIPEONFORK,
		MADV_POPULATE_WRITE, MADV_COLD, MADV_PAGEOUT, 99,
	};
	int fd = som_file(self->dev, 64 * MiB, 0);
	size_t len = 64 * MiB;
	time_t start = time(NULL);
	char *p, *q, *to;
	long i, moves = 0;
	uint64_t r, off, n;

	ASSERT_LE(0, fd);
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	for (i = 0; i < self->iterations && som_fuzz_time_left(start); i++) {
		r = som_rand(&self->seed);
		off = som_fuzz_value(&self->seed);
		n = som_fuzz_value(&self->seed);
		switch (r % 8) {
		case 0:
			ftruncate(fd, (off_t)(off % (3 * GiB)));
			break;
		case 1:
			fallocate(fd, (int)((r >> 8) % 0x80), (off_t)off,
				  (off_t)n);
			break;
		case 2:
			fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				  (off_t)(off % len), (off_t)(n % len));
			break;
		case 3:
			madvise(p + (off % len & ~4095ULL), n % len,
				advice[(r >> 8) % (sizeof(advice) /
						   sizeof(advice[0]))]);
			break;
		case 4:
			mprotect(p + (off % len & ~4095ULL), n % len,
				 (int)((r >> 8) % 8));
			break;
		case 5:	/* touch, where the protection and EOF allow */
			som_probe(p + off % len, (r >> 8) & 1);
			break;
		case 6:	/* move it (whatever pieces are left) elsewhere */
			to = mmap(NULL, len, PROT_NONE,
				  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			if (to == MAP_FAILED)
				break;
			q = mremap(p, len, len, MREMAP_MAYMOVE | MREMAP_FIXED,
				   to);
			if (q == MAP_FAILED) {
				munmap(to, len);
			} else {
				p = q;
				moves++;
			}
			break;
		default:	/* drop a piece and map it again */
			off = off % len & ~4095ULL;
			n = (n % (len - off) + 4095) & ~4095ULL;
			/* Not MAP_FIXED: the hole is no longer ours. */
			if (n && !munmap(p + off, n))
				mmap(p + off, n, PROT_READ | PROT_WRITE,
				     MAP_SHARED | MAP_FIXED_NOREPLACE, fd,
				     (off_t)off);
			break;
		}
	}
	TH_LOG("%ld file calls from seed %#llx, %ld moves", i,
	       (unsigned long long)som_fuzz_seed(), moves);
	EXPECT_EQ(0, munmap(p, len));
	EXPECT_EQ(0, close(fd));
}

TEST_HARNESS_MAIN
