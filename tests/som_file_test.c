// SPDX-License-Identifier: GPL-2.0
/*
 * som file selftests: SOM_IOC_FILE, ftruncate, fallocate (allocate and
 * punch holes), MADV_REMOVE, EOF, fstat and single ownership.
 *
 * Needs som.ko loaded with a pool of at least 2 GiB, and root. Every test
 * ends by checking that the pool's free bytes are back where they started.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/falloc.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "kselftest_harness.h"
#include "som_util.h"

FIXTURE(somfile) {
	int dev;
	long long free_start;
};

FIXTURE_SETUP(somfile)
{
	SOM_OPEN_DEV(self->dev);
	self->free_start = som_stat("free_bytes");
	ASSERT_LE(2 * (long long)GiB, self->free_start)
		TH_LOG("these tests need a pool of at least 2 GiB");
}

FIXTURE_TEARDOWN(somfile)
{
	if (self->dev < 0)
		return;
	close(self->dev);
	EXPECT_EQ(self->free_start, som_stat("free_bytes"));
	EXPECT_EQ(0, som_stat("reserved_bytes"));
}

static char *som_map_file(int fd, size_t len)
{
	return mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
}

static long long som_st_blocks_bytes(int fd)
{
	struct stat st;

	if (fstat(fd, &st))
		return -errno;
	return (long long)st.st_blocks * 512;
}

TEST_F(somfile, create_reserves_the_size_in_2_mib_blocks)
{
	struct stat st;
	int fd;

	fd = som_file(self->dev, 3 * MiB, 0);
	ASSERT_LE(0, fd);
	EXPECT_EQ(4 * (long long)MiB, som_stat("reserved_bytes"));
	EXPECT_EQ(self->free_start - 4 * (long long)MiB,
		  som_stat("free_bytes"));
	ASSERT_EQ(0, fstat(fd, &st));
	EXPECT_TRUE(S_ISREG(st.st_mode));
	EXPECT_EQ(3 * MiB, st.st_size);
	EXPECT_EQ(0, st.st_blocks);
	EXPECT_EQ(2 * MiB, st.st_blksize);
	EXPECT_EQ(3 * (off_t)MiB, lseek(fd, 0, SEEK_END));
	EXPECT_EQ(0, fcntl(fd, F_GETFD) & FD_CLOEXEC);
	EXPECT_EQ(0, close(fd));
	EXPECT_EQ(self->free_start, som_stat("free_bytes"));

	fd = som_file(self->dev, 0, SOM_FILE_CLOEXEC);
	ASSERT_LE(0, fd);
	EXPECT_EQ(FD_CLOEXEC, fcntl(fd, F_GETFD) & FD_CLOEXEC);
	EXPECT_EQ(0, close(fd));
}

TEST_F(somfile, file_outlives_the_dev_fd)
{
	int fd = som_file(self->dev, 2 * MiB, 0);
	char *p;

	ASSERT_LE(0, fd);
	p = som_map_file(fd, 2 * MiB);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(0, close(fd));
	som_fill(p, 0, 2 * MiB, 4096, 3);
	EXPECT_EQ(-1, som_check(p, 0, 2 * MiB, 4096, 3));
	EXPECT_EQ(self->free_start - 2 * (long long)MiB,
		  som_stat("free_bytes"));
	EXPECT_EQ(0, munmap(p, 2 * MiB));
	/* The last reference was the mapping. */
	EXPECT_EQ(self->free_start, som_stat("free_bytes"));
}

TEST_F(somfile, ftruncate_grows_reserving_and_shrinks_freeing)
{
	int fd = som_file(self->dev, 0, 0);
	char *p;

	ASSERT_LE(0, fd);
	EXPECT_EQ(0, ftruncate(fd, 8 * MiB));
	EXPECT_EQ(8 * (long long)MiB, som_stat("reserved_bytes"));
	p = som_map_file(fd, 8 * MiB);
	ASSERT_NE(MAP_FAILED, p);
	som_fill(p, 0, 8 * MiB, 4096, 5);
	EXPECT_EQ(0, som_stat("reserved_bytes"));
	EXPECT_EQ(8 * (long long)MiB, som_st_blocks_bytes(fd));
	EXPECT_EQ(0, ftruncate(fd, 2 * MiB));
	EXPECT_EQ(2 * (long long)MiB, som_st_blocks_bytes(fd));
	EXPECT_EQ(self->free_start - 2 * (long long)MiB,
		  som_stat("free_bytes"));
	EXPECT_EQ(-1, som_check(p, 0, 2 * MiB, 4096, 5));
	EXPECT_EQ(SIGBUS, som_probe(p + 2 * MiB, 0));
	EXPECT_EQ(p + 2 * MiB, som_probe_addr);
	EXPECT_EQ(0, munmap(p, 8 * MiB));
	EXPECT_EQ(0, close(fd));
}

TEST_F(somfile, access_past_eof_gets_sigbus_and_growing_reads_zeros)
{
	int fd = som_file(self->dev, 4 * MiB, 0);
	char *p;

	ASSERT_LE(0, fd);
	p = som_map_file(fd, 4 * MiB);
	ASSERT_NE(MAP_FAILED, p);
	som_fill(p, 0, 4 * MiB, 8, 7);
	/* The page holding the new EOF stays mapped, the next one is gone. */
	EXPECT_EQ(0, ftruncate(fd, MiB + 100));
	EXPECT_EQ(0, som_probe(p + MiB + 4095, 0));
	EXPECT_EQ(SIGBUS, som_probe(p + MiB + 4096, 0));
	EXPECT_EQ(SIGBUS, som_probe(p + 3 * MiB, 1));
	EXPECT_EQ(-1, som_check(p, 0, MiB + 96, 8, 7));
	/* Written past EOF in the last page: gone when the file grows. */
	*(volatile uint64_t *)(p + MiB + 200) = 0x1234;
	EXPECT_EQ(0, ftruncate(fd, 4 * MiB));
	EXPECT_EQ(-1, som_check(p, 0, MiB + 96, 8, 7));
	EXPECT_EQ(-1, som_check_zero(p + MiB + 104, 3 * MiB - 104, 8));
	EXPECT_EQ(0, munmap(p, 4 * MiB));
	EXPECT_EQ(0, close(fd));
}

/* One fault per 1 GiB entry, or (arm64) per 2 MiB one. */
TEST_F_TIMEOUT(somfile, fallocate_backs_1_gib_so_first_touch_is_one_fault, 300)
{
	long long big = som_largest_entry(), faults, flt;
	int fd;
	char *p;

	fd = som_file(self->dev, 0, 0);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, fallocate(fd, 0, 0, GiB));
	EXPECT_EQ((long long)GiB, som_st_blocks_bytes(fd));
	EXPECT_EQ(0, som_stat("reserved_bytes"));
	p = som_map_file(fd, GiB);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_EQ(0, (uintptr_t)p & (GiB - 1));
	EXPECT_EQ(-1, som_check_zero(p + 4096, 4096, 8));
	faults = som_stat(som_fault_stat(big));
	flt = som_minflt();
	som_fill(p, 0, GiB, 2 * MiB, 9);
	EXPECT_EQ(-1, som_check(p, 0, GiB, 2 * MiB, 9));
	/* The read above mapped the first entry. */
	EXPECT_EQ(GiB / big - 1, som_minflt() - flt);
	EXPECT_EQ(GiB / big - 1, som_stat(som_fault_stat(big)) - faults);
	EXPECT_EQ(big, som_page_size(fd, p + GiB - 1));
	EXPECT_EQ(0, munmap(p, GiB));
	EXPECT_EQ(0, close(fd));
}

TEST_F_TIMEOUT(somfile, punch_4_kib_inside_1_gib_entry_zeroes_in_place, 300)
{
	size_t hole = GiB / 2 + 12 * KiB;
	long long blocks;
	int fd;
	char *p;

	fd = som_file(self->dev, GiB, 0);
	ASSERT_LE(0, fd);
	p = som_map_file(fd, GiB);
	ASSERT_NE(MAP_FAILED, p);
	som_fill(p, 0, GiB, 4096, 11);
	som_fill(p, hole - 4096, hole + 8192, 8, 11);
	blocks = som_st_blocks_bytes(fd);
	EXPECT_EQ((long long)GiB, blocks);
	EXPECT_EQ(0, fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			       hole, 4096));
	EXPECT_EQ(-1, som_check_zero(p + hole, 4096, 8));
	EXPECT_EQ(-1, som_check(p, hole - 4096, hole, 8, 11));
	EXPECT_EQ(-1, som_check(p, hole + 4096, hole + 8192, 8, 11));
	EXPECT_EQ(-1, som_check(p, 0, hole - 4096, 4096, 11));
	/* Part of a block is zeroed, not freed, and nothing was zapped. */
	EXPECT_EQ(blocks, som_st_blocks_bytes(fd));
	EXPECT_EQ(som_largest_entry(), som_page_size(fd, p + hole));
	EXPECT_EQ(0, munmap(p, GiB));
	EXPECT_EQ(0, close(fd));
}

TEST_F_TIMEOUT(somfile, punch_2_mib_inside_1_gib_entry_frees_the_block, 300)
{
	long long big = som_largest_entry(), free;
	size_t hole = 300 * MiB;
	int fd;
	char *p;

	fd = som_file(self->dev, GiB, 0);
	ASSERT_LE(0, fd);
	p = som_map_file(fd, GiB);
	ASSERT_NE(MAP_FAILED, p);
	som_fill(p, 0, GiB, 4096, 13);
	EXPECT_EQ(big, som_page_size(fd, p));
	free = som_stat("free_bytes");
	EXPECT_EQ(0, fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			       hole, 2 * MiB));
	EXPECT_EQ(free + 2 * (long long)MiB, som_stat("free_bytes"));
	EXPECT_EQ((long long)GiB - 2 * (long long)MiB, som_st_blocks_bytes(fd));
	/*
	 * The 1 GiB entry is gone, or (2 MiB entries) the hole's alone; the
	 * rest refaults from the same blocks.
	 */
	EXPECT_EQ(0, som_page_size(fd, p + hole));
	EXPECT_EQ(big == GiB ? 0 : big, som_page_size(fd, p));
	EXPECT_EQ(-1, som_check(p, 0, hole, 4096, 13));
	EXPECT_EQ(-1, som_check(p, hole + 2 * MiB, GiB, 4096, 13));
	EXPECT_EQ(2 * (long long)MiB, som_page_size(fd, p));
	/* The hole reads zeros from a new block. */
	EXPECT_EQ(-1, som_check_zero(p + hole, 2 * MiB, 8));
	EXPECT_EQ(free, som_stat("free_bytes"));
	EXPECT_EQ((long long)GiB, som_st_blocks_bytes(fd));
	EXPECT_EQ(0, munmap(p, GiB));
	EXPECT_EQ(0, close(fd));
}

TEST_F(somfile, punch_across_blocks_frees_only_whole_ones)
{
	int fd = som_file(self->dev, 8 * MiB, 0);
	long long free;
	char *p;

	ASSERT_LE(0, fd);
	p = som_map_file(fd, 8 * MiB);
	ASSERT_NE(MAP_FAILED, p);
	som_fill(p, 0, 8 * MiB, 8, 15);
	free = som_stat("free_bytes");
	/* 1 MiB of block 0, all of block 1, 4 KiB of block 2. */
	EXPECT_EQ(0, fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			       MiB, 3 * MiB + 4096));
	EXPECT_EQ(free + 2 * (long long)MiB, som_stat("free_bytes"));
	EXPECT_EQ(6 * (long long)MiB, som_st_blocks_bytes(fd));
	EXPECT_EQ(-1, som_check(p, 0, MiB, 8, 15));
	EXPECT_EQ(-1, som_check_zero(p + MiB, 3 * MiB + 4096, 8));
	EXPECT_EQ(-1, som_check(p, 4 * MiB + 4096, 8 * MiB, 8, 15));
	EXPECT_EQ(0, munmap(p, 8 * MiB));
	EXPECT_EQ(0, close(fd));
}

TEST_F(somfile, madv_remove_punches_a_hole)
{
	int fd = som_file(self->dev, 4 * MiB, 0);
	long long free;
	char *p;

	ASSERT_LE(0, fd);
	p = som_map_file(fd, 4 * MiB);
	ASSERT_NE(MAP_FAILED, p);
	som_fill(p, 0, 4 * MiB, 8, 17);
	free = som_stat("free_bytes");
	EXPECT_EQ(0, madvise(p + 2 * MiB, 2 * MiB, MADV_REMOVE));
	EXPECT_EQ(free + 2 * (long long)MiB, som_stat("free_bytes"));
	EXPECT_EQ(0, madvise(p + 8192, 4096, MADV_REMOVE));
	EXPECT_EQ(-1, som_check(p, 0, 8192, 8, 17));
	EXPECT_EQ(-1, som_check_zero(p + 8192, 4096, 8));
	EXPECT_EQ(-1, som_check(p, 12288, 2 * MiB, 8, 17));
	EXPECT_EQ(-1, som_check_zero(p + 2 * MiB, 2 * MiB, 8));
	/* What the kernel allows a PFN mapping: no MADV_DONTNEED. */
	EXPECT_EQ(-1, madvise(p, 4096, MADV_DONTNEED));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(0, munmap(p, 4 * MiB));
	EXPECT_EQ(0, close(fd));
}

TEST_F(somfile, empty_pool_makes_a_punched_hole_sigbus)
{
	int fd = som_file(self->dev, 2 * MiB, 0);
	long long rest;
	char *p, *q;

	ASSERT_LE(0, fd);
	p = som_map_file(fd, 2 * MiB);
	ASSERT_NE(MAP_FAILED, p);
	som_fill(p, 0, 2 * MiB, 4096, 19);
	EXPECT_EQ(0, fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			       0, 2 * MiB));
	/* Someone else reserves everything left. */
	rest = som_stat("free_bytes");
	q = mmap(NULL, rest, PROT_READ | PROT_WRITE, MAP_SHARED, self->dev, 0);
	ASSERT_NE(MAP_FAILED, q);
	EXPECT_EQ(0, som_stat("free_bytes"));
	EXPECT_EQ(SIGBUS, som_probe(p, 0));
	EXPECT_EQ(0, munmap(q, rest));
	EXPECT_EQ(0, som_probe(p, 1));
	EXPECT_EQ(0, munmap(p, 2 * MiB));
	EXPECT_EQ(0, close(fd));
}

TEST_F(somfile, another_process_gets_eperm_after_the_first_mmap)
{
	int fd = som_file(self->dev, 4 * MiB, 0);
	int status;
	char *p;
	pid_t pid;

	ASSERT_LE(0, fd);
	p = som_map_file(fd, 4 * MiB);
	ASSERT_NE(MAP_FAILED, p);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int bad = 0;

		bad |= som_map_file(fd, 4 * MiB) != MAP_FAILED || errno != EPERM;
		bad |= ftruncate(fd, 8 * MiB) != -1 || errno != EPERM;
		bad |= (fallocate(fd, 0, 0, 8 * MiB) != -1 || errno != EPERM) << 1;
		bad |= (fallocate(fd, FALLOC_FL_PUNCH_HOLE |
				  FALLOC_FL_KEEP_SIZE, 0, 4096) != -1 ||
			errno != EPERM) << 2;
		_exit(bad);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, status);
	EXPECT_EQ(0, munmap(p, 4 * MiB));
	EXPECT_EQ(0, close(fd));
}

TEST_F(somfile, sizes_beyond_the_pool_get_enospc)
{
	long long total = som_stat("total_bytes");
	int fd;

	EXPECT_EQ(-ENOSPC, som_file(self->dev, total + 2 * MiB, 0));
	fd = som_file(self->dev, 0, 0);
	ASSERT_LE(0, fd);
	EXPECT_EQ(-1, ftruncate(fd, total + 2 * MiB));
	EXPECT_EQ(ENOSPC, errno);
	EXPECT_EQ(-1, fallocate(fd, 0, total, 2 * MiB));
	EXPECT_EQ(ENOSPC, errno);
	EXPECT_EQ(0, som_stat("reserved_bytes"));
	EXPECT_EQ(0, close(fd));
}

TEST_F(somfile, failed_fallocate_keeps_the_size)
{
	int fd = som_file(self->dev, 4 * MiB, 0);
	long long rest;
	struct stat st;
	char *q;

	ASSERT_LE(0, fd);
	/* Two holes, then a pool with room for only one more block. */
	EXPECT_EQ(0, fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			       0, 4 * MiB));
	rest = som_stat("free_bytes") - 2 * MiB;
	q = mmap(NULL, rest, PROT_READ | PROT_WRITE, MAP_SHARED, self->dev, 0);
	ASSERT_NE(MAP_FAILED, q);
	/* Growing to 6 MiB fits, filling the holes does not. */
	EXPECT_EQ(-1, fallocate(fd, 0, 0, 6 * MiB));
	EXPECT_EQ(ENOSPC, errno);
	ASSERT_EQ(0, fstat(fd, &st));
	EXPECT_EQ(4 * MiB, st.st_size);
	EXPECT_EQ(0, st.st_blocks);
	EXPECT_EQ(2 * (long long)MiB, som_stat("free_bytes"));
	EXPECT_EQ(0, munmap(q, rest));
	EXPECT_EQ(0, close(fd));
}

TEST_F(somfile, bad_input_is_refused)
{
	struct som_file_args args;
	char buf[16];
	int fd;

	memset(&args, 0, sizeof(args));
	args.flags = 2;
	EXPECT_EQ(-1, ioctl(self->dev, SOM_IOC_FILE, &args));
	EXPECT_EQ(EINVAL, errno);
	args.flags = 0;
	args.__pad = 1;
	EXPECT_EQ(-1, ioctl(self->dev, SOM_IOC_FILE, &args));
	EXPECT_EQ(EINVAL, errno);
	args.__pad = 0;
	args.__reserved[1] = 1;
	EXPECT_EQ(-1, ioctl(self->dev, SOM_IOC_FILE, &args));
	EXPECT_EQ(EINVAL, errno);
	args.__reserved[1] = 0;
	args.size = ~0ULL;
	EXPECT_EQ(-1, ioctl(self->dev, SOM_IOC_FILE, &args));
	EXPECT_EQ(EFBIG, errno);
	EXPECT_EQ(-1, ioctl(self->dev, SOM_IOC_FILE, (void *)8));
	EXPECT_EQ(EFAULT, errno);

	fd = som_file(self->dev, 4 * MiB, 0);
	ASSERT_LE(0, fd);
	EXPECT_EQ(-1, fallocate(fd, FALLOC_FL_ZERO_RANGE, 0, 4096));
	EXPECT_EQ(EOPNOTSUPP, errno);
	EXPECT_EQ(-1, fallocate(fd, FALLOC_FL_COLLAPSE_RANGE, 0, 2 * MiB));
	EXPECT_EQ(EOPNOTSUPP, errno);
	EXPECT_EQ(-1, fallocate(fd, FALLOC_FL_PUNCH_HOLE, 0, 4096));
	EXPECT_EQ(EOPNOTSUPP, errno);
	EXPECT_EQ(-1, ftruncate(fd, -1));
	EXPECT_EQ(EINVAL, errno);
	/* No read() or write(): memory is reached by mapping it. */
	EXPECT_EQ(-1, read(fd, buf, sizeof(buf)));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, write(fd, buf, sizeof(buf)));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, ioctl(fd, SOM_IOC_FILE, &args));
	EXPECT_EQ(ENOTTY, errno);
	EXPECT_EQ(MAP_FAILED, mmap(NULL, 4 * MiB, PROT_READ, MAP_PRIVATE, fd, 0));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(0, close(fd));
	EXPECT_EQ(0, som_stat("reserved_bytes"));
}

TEST_F(somfile, mapping_query_works_on_the_file_fd)
{
	int fd = som_file(self->dev, 4 * MiB, 0);
	char *p;

	ASSERT_LE(0, fd);
	p = som_map_file(fd, 4 * MiB);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(0, som_page_size(fd, p));
	p[0] = 1;
	EXPECT_EQ(2 * (long long)MiB, som_page_size(fd, p));
	/* Any som descriptor answers for any som mapping of the caller. */
	EXPECT_EQ(2 * (long long)MiB, som_page_size(self->dev, p));
	EXPECT_EQ(0, msync(p, 4 * MiB, MS_SYNC));
	EXPECT_EQ(0, fsync(fd));
	EXPECT_EQ(0, munmap(p, 4 * MiB));
	EXPECT_EQ(0, close(fd));
}

TEST_F_TIMEOUT(somfile, mremap_move_keeps_data_at_the_largest_size, 300)
{
	long long big = som_largest_entry();
	char *p, *area, *q;
	int fd;

	fd = som_file(self->dev, GiB, 0);
	ASSERT_LE(0, fd);
	p = som_map_file(fd, GiB);
	ASSERT_NE(MAP_FAILED, p);
	som_fill(p, 0, GiB, 64 * KiB, 21);
	EXPECT_EQ(big, som_page_size(fd, p));
	/* To a 1 GiB aligned address: the largest size again. */
	area = mmap(NULL, 4 * GiB, PROT_NONE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	ASSERT_NE(MAP_FAILED, area);
	q = (char *)(((uintptr_t)area + GiB - 1) & ~(GiB - 1));
	ASSERT_EQ(q, mremap(p, GiB, GiB, MREMAP_MAYMOVE | MREMAP_FIXED, q));
	EXPECT_EQ(SIGSEGV, som_probe(p, 0));
	EXPECT_EQ(-1, som_check(q, 0, GiB, 64 * KiB, 21));
	EXPECT_EQ(big, som_page_size(fd, q));
	/* To an address only 2 MiB aligned: 2 MiB entries. */
	p = q + GiB + 2 * MiB;
	ASSERT_EQ(p, mremap(q, GiB, GiB, MREMAP_MAYMOVE | MREMAP_FIXED, p));
	EXPECT_EQ(-1, som_check(p, 0, GiB, 64 * KiB, 21));
	EXPECT_EQ(2 * (long long)MiB, som_page_size(fd, p));
	/* Shrinking unmaps the tail; the file keeps the memory. */
	EXPECT_EQ(p, mremap(p, GiB, GiB / 2, 0));
	EXPECT_EQ(SIGSEGV, som_probe(p + GiB / 2, 0));
	EXPECT_EQ((long long)GiB, som_st_blocks_bytes(fd));
	EXPECT_EQ(MAP_FAILED, mremap(p, GiB / 2, GiB, 0));
	EXPECT_EQ(EFAULT, errno);
	EXPECT_EQ(0, munmap(area, 4 * GiB));
	EXPECT_EQ(0, close(fd));
}

TEST_F(somfile, madv_nohugepage_makes_later_faults_4_kib)
{
	int fd = som_file(self->dev, 4 * MiB, 0);
	long long pte;
	char *p;

	ASSERT_LE(0, fd);
	p = som_map_file(fd, 4 * MiB);
	ASSERT_NE(MAP_FAILED, p);
	p[0] = 1;
	EXPECT_EQ(2 * (long long)MiB, som_page_size(fd, p));
	EXPECT_EQ(0, madvise(p + 2 * MiB, 2 * MiB, MADV_NOHUGEPAGE));
	pte = som_stat("faults_pte");
	p[2 * MiB] = 1;
	EXPECT_EQ(4 * (long long)KiB, som_page_size(fd, p + 2 * MiB));
	EXPECT_EQ(1, som_stat("faults_pte") - pte);
	EXPECT_EQ(0, madvise(p + 2 * MiB, 2 * MiB, MADV_HUGEPAGE));
	EXPECT_EQ(0, munmap(p, 4 * MiB));
	EXPECT_EQ(0, close(fd));
}

TEST_F(somfile, unload_refused_while_a_file_exists)
{
	int fd = som_file(self->dev, 0, 0);

	ASSERT_LE(0, fd);
	/* Only the som file holds the module now. */
	close(self->dev);
	EXPECT_EQ(-1, syscall(SYS_delete_module, "som", O_NONBLOCK));
	EXPECT_TRUE(errno == EBUSY || errno == EWOULDBLOCK)
		TH_LOG("errno %d", errno);
	self->dev = open(SOM_DEV, O_RDWR);
	ASSERT_LE(0, self->dev);
	EXPECT_EQ(0, close(fd));
}

TEST_HARNESS_MAIN
