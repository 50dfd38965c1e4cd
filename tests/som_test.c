// SPDX-License-Identifier: GPL-2.0
/*
 * som selftests: /dev/som mappings, their page sizes and fault counts,
 * zeroing, release, single ownership, debugger access and bad input.
 *
 * Needs som.ko loaded with a pool of at least 2 GiB, and root. Every test
 * ends by checking that the pool's free bytes are back where they started.
 */
#define _GNU_SOURCE
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>

#include "kselftest_harness.h"
#include "som_util.h"

FIXTURE(som) {
	int fd;
	long long free_start;
};

FIXTURE_SETUP(som)
{
	SOM_OPEN_DEV(self->fd);
	self->free_start = som_stat("free_bytes");
	ASSERT_LE(2 * (long long)GiB, self->free_start)
		TH_LOG("these tests need a pool of at least 2 GiB");
}

FIXTURE_TEARDOWN(som)
{
	if (self->fd < 0)
		return;
	close(self->fd);
	/* Everything this test mapped is back, reservations included. */
	EXPECT_EQ(self->free_start, som_stat("free_bytes"));
	EXPECT_EQ(0, som_stat("reserved_bytes"));
}

/* Run the fill and check code once so that its own first faults are done. */
static void som_warm_up(void)
{
	static uint64_t buf[512];

	som_fill(buf, 0, sizeof(buf), 8, 0);
	som_check(buf, 0, sizeof(buf), 8, 0);
	som_check_zero(buf, sizeof(buf), 8);
}

/* One fault where the machine has 1 GiB entries; 512 of 2 MiB on arm64. */
TEST_F_TIMEOUT(som, one_gib_written_and_read_with_one_fault, 300)
{
	long long big = som_largest_entry(), faults, flt;
	char *p;

	p = som_map_shared(self->fd, GiB);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_EQ(0, (uintptr_t)p & (GiB - 1));
	som_warm_up();
	faults = som_stat(som_fault_stat(big));
	flt = som_minflt();
	som_fill(p, 0, GiB, 8, 1);
	EXPECT_EQ(-1, som_check(p, 0, GiB, 8, 1));
	EXPECT_EQ(GiB / big, som_minflt() - flt);
	EXPECT_EQ(GiB / big, som_stat(som_fault_stat(big)) - faults);
	EXPECT_EQ(big, som_page_size(self->fd, p));
	EXPECT_EQ(big, som_page_size(self->fd, p + GiB - 1));
	EXPECT_EQ(0, munmap(p, GiB));
}

TEST_F(som, aligned_64_mib_takes_32_faults)
{
	long long pmd, flt;
	char *p = som_map_shared(self->fd, 64 * MiB);

	ASSERT_NE(MAP_FAILED, p);
	ASSERT_EQ(0, (uintptr_t)p & (2 * MiB - 1));
	som_warm_up();
	pmd = som_stat("faults_pmd");
	flt = som_minflt();
	som_fill(p, 0, 64 * MiB, 4 * KiB, 2);
	EXPECT_EQ(-1, som_check(p, 0, 64 * MiB, 4 * KiB, 2));
	EXPECT_EQ(32, som_minflt() - flt);
	EXPECT_EQ(32, som_stat("faults_pmd") - pmd);
	EXPECT_EQ((long long)(2 * MiB), som_page_size(self->fd, p + 5 * MiB));
	EXPECT_EQ(0, munmap(p, 64 * MiB));
}

/*
 * prctl(PR_SET_THP_DISABLE) (Redis sets it when THP is "always") stops
 * the core's huge faults for every VMA; som maps 2 MiB itself from its
 * 4 KiB fault handler. 1 GiB entries are out of reach then (the core has
 * put a PMD table under the PUD by that time). MADV_NOHUGEPAGE on the
 * mapping still means 4 KiB.
 */
TEST_F(som, thp_disabled_process_gets_2_mib_entries)
{
	long long pmd, pte, flt;
	char *p;

	ASSERT_EQ(0, prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0));
	p = som_map_shared(self->fd, 64 * MiB);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_EQ(0, (uintptr_t)p & (2 * MiB - 1));
	som_warm_up();
	pmd = som_stat("faults_pmd");
	pte = som_stat("faults_pte");
	flt = som_minflt();
	/* A read first: the entry comes writable, the write does not fault. */
	EXPECT_EQ(0, p[3 * MiB]);
	som_fill(p, 0, 64 * MiB, 4 * KiB, 4);
	EXPECT_EQ(-1, som_check(p, 0, 64 * MiB, 4 * KiB, 4));
	EXPECT_EQ(32, som_minflt() - flt);
	EXPECT_EQ(32, som_stat("faults_pmd") - pmd);
	EXPECT_EQ(0, som_stat("faults_pte") - pte);
	EXPECT_EQ((long long)(2 * MiB), som_page_size(self->fd, p + 5 * MiB));
	EXPECT_EQ(0, munmap(p, 64 * MiB));

	if (som_cpu_has_gbpages()) {
		p = som_map_shared(self->fd, GiB);
		ASSERT_NE(MAP_FAILED, p);
		ASSERT_EQ(0, (uintptr_t)p & (GiB - 1));
		p[0] = 1;
		EXPECT_EQ((long long)(2 * MiB), som_page_size(self->fd, p));
		EXPECT_EQ(0, munmap(p, GiB));
	}

	p = som_map_shared(self->fd, 4 * MiB);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_EQ(0, madvise(p, 4 * MiB, MADV_NOHUGEPAGE));
	pte = som_stat("faults_pte");
	som_fill(p, 0, 4 * MiB, 4 * KiB, 5);
	EXPECT_EQ(-1, som_check(p, 0, 4 * MiB, 4 * KiB, 5));
	EXPECT_EQ(1024, som_stat("faults_pte") - pte);
	EXPECT_EQ((long long)(4 * KiB), som_page_size(self->fd, p + MiB));
	EXPECT_EQ(0, munmap(p, 4 * MiB));
	EXPECT_EQ(0, prctl(PR_SET_THP_DISABLE, 0, 0, 0, 0));
}

TEST_F(som, misaligned_mapping_uses_4_kib_entries)
{
	long long pte, flt;
	char *p = som_map_misaligned(self->fd, 4 * MiB, 4 * KiB);

	ASSERT_NE(MAP_FAILED, p);
	som_warm_up();
	pte = som_stat("faults_pte");
	flt = som_minflt();
	som_fill(p, 0, 4 * MiB, 4 * KiB, 3);
	EXPECT_EQ(-1, som_check(p, 0, 4 * MiB, 4 * KiB, 3));
	EXPECT_EQ(1024, som_minflt() - flt);
	EXPECT_EQ(1024, som_stat("faults_pte") - pte);
	EXPECT_EQ((long long)(4 * KiB), som_page_size(self->fd, p + 3 * MiB));
	EXPECT_EQ(0, munmap(p, 4 * MiB));
}

TEST_F(som, first_touch_reads_zeros)
{
	char *p = som_map_shared(self->fd, 64 * MiB);

	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(0, som_page_size(self->fd, p));
	EXPECT_EQ(-1, som_check_zero(p, 64 * MiB, 8));
	EXPECT_EQ(0, munmap(p, 64 * MiB));
}

/* Another owner's bytes never show: fill the whole pool, then reuse it. */
TEST_F_TIMEOUT(som, reused_blocks_hold_only_zeros, 600)
{
	size_t len = self->free_start;
	int status;
	pid_t pid;
	char *p;

	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int fd = open(SOM_DEV, O_RDWR);

		p = som_map_shared(fd, len);
		if (p == MAP_FAILED)
			_exit(1);
		som_fill(p, 0, len, 512, 7);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_EQ(0, status);
	ASSERT_EQ(self->free_start, som_stat("free_bytes"));

	p = som_map_shared(self->fd, len);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(-1, som_check_zero(p, len, 512));
	EXPECT_EQ(0, munmap(p, len));
}

TEST_F_TIMEOUT(som, munmap_2_mib_inside_1_gib_entry, 300)
{
	char *p = som_map_shared(self->fd, GiB), *hole;
	long long free_before;

	ASSERT_NE(MAP_FAILED, p);
	som_fill(p, 0, GiB, 4 * KiB, 4);
	hole = p + 512 * MiB;
	free_before = som_stat("free_bytes");
	ASSERT_EQ(0, munmap(hole, 2 * MiB));
	EXPECT_EQ(free_before + (long long)(2 * MiB), som_stat("free_bytes"));
	EXPECT_EQ(SIGSEGV, som_probe(hole, 0));
	EXPECT_EQ(hole, som_probe_addr);
	EXPECT_EQ(SIGSEGV, som_probe(hole + 2 * MiB - 1, 1));
	EXPECT_EQ(-1, som_check(p, 0, 512 * MiB, 4 * KiB, 4));
	EXPECT_EQ(-1, som_check(p, 514 * MiB, GiB, 4 * KiB, 4));
	/* What is left refaults with the largest entry that still fits. */
	EXPECT_EQ((long long)(2 * MiB), som_page_size(self->fd, p));
	EXPECT_EQ((long long)(2 * MiB), som_page_size(self->fd, hole + 2 * MiB));
	EXPECT_EQ(0, munmap(p, GiB));
}

TEST_F_TIMEOUT(som, munmap_4_kib_inside_2_mib_entry, 120)
{
	char *p = som_map_shared(self->fd, 64 * MiB), *hole;
	long long free_before;

	ASSERT_NE(MAP_FAILED, p);
	som_fill(p, 0, 64 * MiB, 4 * KiB, 5);
	hole = p + 3 * MiB;
	free_before = som_stat("free_bytes");
	ASSERT_EQ(0, munmap(hole, 4 * KiB));
	/* The rest of the block is still mapped, so the block stays. */
	EXPECT_EQ(free_before, som_stat("free_bytes"));
	EXPECT_EQ(SIGSEGV, som_probe(hole, 1));
	EXPECT_EQ(-1, som_check(p, 0, 3 * MiB, 4 * KiB, 5));
	EXPECT_EQ(-1, som_check(p, 3 * MiB + 4 * KiB, 64 * MiB, 4 * KiB, 5));
	EXPECT_EQ((long long)(4 * KiB), som_page_size(self->fd, hole + 4 * KiB));
	EXPECT_EQ(0, munmap(p, 64 * MiB));
}

TEST_F_TIMEOUT(som, mprotect_read_only_piece_of_1_gib_entry, 300)
{
	char *p = som_map_shared(self->fd, GiB), *ro;

	ASSERT_NE(MAP_FAILED, p);
	som_fill(p, 0, GiB, 4 * KiB, 6);
	ro = p + 256 * MiB + 4 * KiB;
	ASSERT_EQ(0, mprotect(ro, 2 * MiB, PROT_READ));
	EXPECT_EQ(SIGSEGV, som_probe(ro, 1));
	EXPECT_EQ(SIGSEGV, som_probe(ro + 2 * MiB - 1, 1));
	EXPECT_EQ(0, som_probe(ro, 0));
	EXPECT_EQ(0, som_probe(ro - 1, 1));
	EXPECT_EQ(0, som_probe(ro + 2 * MiB, 1));
	*(volatile uint64_t *)(ro - 8) = som_pattern(6, ro - 8 - p);
	*(volatile uint64_t *)(ro + 2 * MiB) = som_pattern(6, 256 * MiB + 4 * KiB + 2 * MiB);
	EXPECT_EQ(-1, som_check(p, 0, GiB, 4 * KiB, 6));
	ASSERT_EQ(0, mprotect(ro, 2 * MiB, PROT_READ | PROT_WRITE));
	EXPECT_EQ(0, som_probe(ro, 1));
	EXPECT_EQ(0, munmap(p, GiB));
}

/* mremap() moves a 1 GiB entry's memory; growing is refused. */
TEST_F_TIMEOUT(som, mremap_moves_1_gib_mapping, 300)
{
	char *p = som_map_shared(self->fd, GiB), *area, *t, *q;

	ASSERT_NE(MAP_FAILED, p);
	som_fill(p, 0, GiB, 4 * KiB, 11);
	if (som_cpu_has_gbpages())
		EXPECT_EQ((long long)GiB, som_page_size(self->fd, p));
	area = mmap(NULL, 2 * GiB, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
		    -1, 0);
	ASSERT_NE(MAP_FAILED, area);
	t = (char *)(((uintptr_t)area + GiB - 1) & ~(GiB - 1));
	q = mremap(p, GiB, GiB, MREMAP_MAYMOVE | MREMAP_FIXED, t);
	ASSERT_EQ(t, q);
	EXPECT_EQ(SIGSEGV, som_probe(p, 0));
	EXPECT_EQ(-1, som_check(q, 0, GiB, 4 * KiB, 11));
	if (som_cpu_has_gbpages())
		EXPECT_EQ((long long)GiB, som_page_size(self->fd, q));
	EXPECT_EQ(self->free_start - (long long)GiB, som_stat("free_bytes"));
	EXPECT_EQ(MAP_FAILED, mremap(q, GiB, GiB + 2 * MiB, 0));
	EXPECT_EQ(EFAULT, errno);
	EXPECT_EQ(0, munmap(q, GiB));
	munmap(area, 2 * GiB);
}

/*
 * Three pieces of one mapping share a 2 MiB block; mapping over all three
 * at once releases the block although another mapping of the region lives.
 */
TEST_F(som, map_fixed_over_split_pieces_releases_their_block)
{
	char *p = som_map_shared(self->fd, 64 * MiB), *y, *a;

	ASSERT_NE(MAP_FAILED, p);
	y = mmap(NULL, 2 * MiB, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd,
		 64 * MiB);
	ASSERT_NE(MAP_FAILED, y);
	som_fill(p, 0, 64 * MiB, 4 * KiB, 12);
	ASSERT_EQ(0, mprotect(p + 3 * MiB + 4 * KiB, 4 * KiB, PROT_READ));
	a = mmap(p, 64 * MiB, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	ASSERT_EQ(p, a);
	EXPECT_EQ(self->free_start - (long long)(2 * MiB),
		  som_stat("free_bytes"));
	EXPECT_EQ(0, munmap(p, 64 * MiB));
	EXPECT_EQ(0, munmap(y, 2 * MiB));
}

TEST_F(som, fork_child_does_not_get_the_mapping)
{
	char *p = som_map_shared(self->fd, 4 * MiB);
	int status;
	pid_t pid;

	ASSERT_NE(MAP_FAILED, p);
	som_fill(p, 0, 4 * MiB, 4 * KiB, 8);
	EXPECT_EQ(-1, madvise(p, 4 * MiB, MADV_DOFORK));
	EXPECT_EQ(EINVAL, errno);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0)
		_exit(som_probe(p, 0) == SIGSEGV && som_probe(p, 1) == SIGSEGV ?
		      0 : 1);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, status);
	EXPECT_EQ(-1, som_check(p, 0, 4 * MiB, 4 * KiB, 8));
	EXPECT_EQ(0, munmap(p, 4 * MiB));
}

TEST_F(som, inherited_fd_mmap_gets_eperm)
{
	char *p = som_map_shared(self->fd, 4 * MiB);
	int status;
	pid_t pid;

	ASSERT_NE(MAP_FAILED, p);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0)
		_exit(som_map_shared(self->fd, 4 * MiB) == MAP_FAILED &&
		      errno == EPERM ? 0 : 1);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, status);
	EXPECT_EQ(0, munmap(p, 4 * MiB));
}

static int som_send_fd(int sock, int fd)
{
	char data = 'x', cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { .iov_base = &data, .iov_len = 1 };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = cbuf, .msg_controllen = sizeof(cbuf),
	};
	struct cmsghdr *cmsg = CMSG_FIRSTHDR(&msg);

	cmsg->cmsg_level = SOL_SOCKET;
	cmsg->cmsg_type = SCM_RIGHTS;
	cmsg->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cmsg), &fd, sizeof(int));
	return sendmsg(sock, &msg, 0) == 1 ? 0 : -1;
}

static int som_recv_fd(int sock)
{
	char data, cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { .iov_base = &data, .iov_len = 1 };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = cbuf, .msg_controllen = sizeof(cbuf),
	};
	struct cmsghdr *cmsg;
	int fd;

	if (recvmsg(sock, &msg, 0) != 1)
		return -1;
	cmsg = CMSG_FIRSTHDR(&msg);
	if (!cmsg || cmsg->cmsg_type != SCM_RIGHTS)
		return -1;
	memcpy(&fd, CMSG_DATA(cmsg), sizeof(int));
	return fd;
}

TEST_F(som, fd_passed_over_socket_mmap_gets_eperm)
{
	int sv[2], status;
	pid_t pid;
	char *p;

	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int fd = som_recv_fd(sv[1]);

		_exit(fd >= 0 && som_map_shared(fd, 2 * MiB) == MAP_FAILED &&
		      errno == EPERM ? 0 : 1);
	}
	p = som_map_shared(self->fd, 2 * MiB);
	ASSERT_NE(MAP_FAILED, p);
	ASSERT_EQ(0, som_send_fd(sv[0], self->fd));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, status);
	EXPECT_EQ(0, munmap(p, 2 * MiB));
	close(sv[0]);
	close(sv[1]);
}

/* Ownership stays with the first mapper's mm even after it has gone. */
TEST_F(som, region_stays_owned_by_first_mapper)
{
	int status;
	pid_t pid;

	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0)
		_exit(som_map_shared(self->fd, 2 * MiB) == MAP_FAILED ? 1 : 0);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_EQ(0, status);
	EXPECT_EQ(MAP_FAILED, som_map_shared(self->fd, 2 * MiB));
	EXPECT_EQ(EPERM, errno);
}

TEST_F(som, map_private_gets_einval)
{
	EXPECT_EQ(MAP_FAILED, mmap(NULL, 2 * MiB, PROT_READ | PROT_WRITE,
				   MAP_PRIVATE, self->fd, 0));
	EXPECT_EQ(EINVAL, errno);
}

TEST_F(som, read_only_fd_maps_shared)
{
	int fd = open(SOM_DEV, O_RDONLY);
	char *p;

	ASSERT_LE(0, fd);
	p = mmap(NULL, 2 * MiB, PROT_READ, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(-1, som_check_zero(p, 2 * MiB, 4 * KiB));
	EXPECT_EQ(SIGSEGV, som_probe(p, 1));
	EXPECT_EQ(0, munmap(p, 2 * MiB));
	close(fd);
}

TEST_F(som, mapping_larger_than_pool_gets_enomem)
{
	char *p;

	EXPECT_EQ(MAP_FAILED, som_map_shared(self->fd, self->free_start + 2 * MiB));
	EXPECT_EQ(ENOMEM, errno);
	EXPECT_EQ(self->free_start, som_stat("free_bytes"));
	EXPECT_EQ(0, som_stat("reserved_bytes"));

	/* The whole pool reserves; then even 2 MiB more does not. */
	p = som_map_shared(self->fd, self->free_start);
	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(0, som_stat("free_bytes"));
	EXPECT_EQ(self->free_start, som_stat("reserved_bytes"));
	EXPECT_EQ(MAP_FAILED, mmap(NULL, 2 * MiB, PROT_READ | PROT_WRITE,
				   MAP_SHARED, self->fd, self->free_start));
	EXPECT_EQ(ENOMEM, errno);
	EXPECT_EQ(0, munmap(p, self->free_start));
}

TEST_F(som, small_mapping_reserves_a_whole_block)
{
	char *p = som_map_shared(self->fd, 4 * KiB);

	ASSERT_NE(MAP_FAILED, p);
	EXPECT_EQ(self->free_start - (long long)(2 * MiB),
		  som_stat("free_bytes"));
	*p = 1;
	EXPECT_EQ((long long)(4 * KiB), som_page_size(self->fd, p));
	EXPECT_EQ(0, munmap(p, 4 * KiB));
}

/*
 * metadata_bytes without the per-block bits of chunks, which come and go
 * as the zeroing worker cleans blocks, and without the cgroups' records,
 * which come with a region's first reservation: the sum of the other
 * parts, each of which stays put while no mapping changes
 * (metadata_bytes less chunk_bits_bytes, read one after the other, could
 * see the worker between the two reads).
 */
static long long som_meta_but_bits(void)
{
	return som_stat("metadata/chunks_bytes") +
	       som_stat("metadata/pool_bytes") +
	       som_stat("metadata/sources_bytes") +
	       som_stat("metadata/source_tables_bytes") +
	       som_stat("region_metadata_bytes");
}

/*
 * The counters of what som's metadata and zeroing cost: a mapping's
 * region table is in region_metadata_bytes (and in metadata_bytes) while
 * it lives; memory freed dirty is zeroed by the worker, which counts the
 * bytes and the time.
 */
TEST_F(som, metadata_and_zeroing_counters_follow_a_mapping)
{
	long long region = som_stat("region_metadata_bytes");
	long long meta = som_meta_but_bits();
	long long zeroed = som_stat("zero_worker_bytes");
	long long ns = som_stat("zero_worker_ns");
	size_t off;
	int tries;
	char *p;

	ASSERT_LE(0, region);
	ASSERT_LE(0, som_stat("zero_fault_bytes"));
	ASSERT_LE(0, som_stat("zero_fault_ns"));
	p = som_map_shared(self->fd, 64 * MiB);
	ASSERT_NE(MAP_FAILED, p);
	for (off = 0; off < 64 * MiB; off += 2 * MiB)
		p[off] = 1;
	EXPECT_LT(region, som_stat("region_metadata_bytes"));
	EXPECT_EQ(som_stat("region_metadata_bytes") - region,
		  som_meta_but_bits() - meta);
	EXPECT_EQ(0, munmap(p, 64 * MiB));
	close(self->fd);
	self->fd = open(SOM_DEV, O_RDWR);
	ASSERT_LE(0, self->fd);
	EXPECT_EQ(region, som_stat("region_metadata_bytes"));
	EXPECT_EQ(meta, som_meta_but_bits());
	/* 32 dirty blocks: the worker zeroes them (wait up to 60 s). */
	for (tries = 0; tries < 600; tries++) {
		if (som_stat("zero_worker_bytes") - zeroed >= 64 * (long long)MiB)
			break;
		usleep(100000);
	}
	EXPECT_LE(64 * (long long)MiB, som_stat("zero_worker_bytes") - zeroed);
	EXPECT_LT(ns, som_stat("zero_worker_ns"));
}

/* Debugger access at each entry size. */
FIXTURE(som_debug) {
	int fd;
	long long free_start;
};

FIXTURE_VARIANT(som_debug) {
	size_t len;
	size_t misalign;
	long long page_size;
};

FIXTURE_VARIANT_ADD(som_debug, pud) {
	.len = GiB, .misalign = 0, .page_size = GiB,
};

FIXTURE_VARIANT_ADD(som_debug, pmd) {
	.len = 64 * MiB, .misalign = 0, .page_size = 2 * MiB,
};

FIXTURE_VARIANT_ADD(som_debug, pte) {
	.len = 4 * MiB, .misalign = 4 * KiB, .page_size = 4 * KiB,
};

FIXTURE_SETUP(som_debug)
{
	self->fd = -1;
	if (access(SOM_DEV, F_OK))
		SKIP(return, "som.ko is not loaded");
	self->free_start = som_stat("free_bytes");
	self->fd = open(SOM_DEV, O_RDWR);
	ASSERT_LE(0, self->fd);
}

FIXTURE_TEARDOWN(som_debug)
{
	if (self->fd < 0)
		return;
	close(self->fd);
	EXPECT_EQ(self->free_start, som_stat("free_bytes"));
	EXPECT_EQ(0, som_stat("reserved_bytes"));
}

/*
 * The child maps and fills som memory and stops under ptrace; the parent
 * reads and writes it through /proc/pid/mem and PTRACE_PEEK/POKEDATA; the
 * child checks what the parent wrote.
 */
TEST_F_TIMEOUT(som_debug, proc_mem_and_ptrace_read_and_write, 300)
{
	size_t len = variant->len, spots[3], i;
	uint64_t val, want;
	int pipefd[2], status, mem;
	char path[64], *p;
	pid_t pid;

	spots[0] = 0;
	spots[1] = len / 2 - 4;	/* straddles a page boundary */
	spots[2] = len - 8;
	ASSERT_EQ(0, pipe(pipefd));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		p = variant->misalign ?
		    som_map_misaligned(self->fd, len, variant->misalign) :
		    som_map_shared(self->fd, len);
		if (p == MAP_FAILED)
			_exit(10);
		som_fill(p, 0, len, 4 * KiB, 9);
		for (i = 0; i < 3; i++)
			memcpy(p + spots[i], &(uint64_t){ som_pattern(9, spots[i]) }, 8);
		/* 2 MiB for the pud variant where there are no 1 GiB. */
		if (som_page_size(self->fd, p) !=
		    (variant->page_size < som_largest_entry() ?
		     variant->page_size : som_largest_entry()))
			_exit(11);
		if (write(pipefd[1], &p, sizeof(p)) != sizeof(p))
			_exit(12);
		ptrace(PTRACE_TRACEME, 0, NULL, NULL);
		raise(SIGSTOP);
		for (i = 0; i < 3; i++) {
			memcpy(&val, p + spots[i], 8);
			if (val != ~som_pattern(9, spots[i]))
				_exit(13 + i);
		}
		_exit(0);
	}
	ASSERT_EQ(sizeof(p), read(pipefd[0], &p, sizeof(p)));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFSTOPPED(status));

	snprintf(path, sizeof(path), "/proc/%d/mem", pid);
	mem = open(path, O_RDWR);
	ASSERT_LE(0, mem);
	for (i = 0; i < 2; i++) {
		want = som_pattern(9, spots[i]);
		EXPECT_EQ(8, pread(mem, &val, 8, (uintptr_t)(p + spots[i])));
		EXPECT_EQ(want, val);
		want = ~want;
		EXPECT_EQ(8, pwrite(mem, &want, 8, (uintptr_t)(p + spots[i])));
	}
	close(mem);

	errno = 0;
	val = ptrace(PTRACE_PEEKDATA, pid, p + spots[2], NULL);
	EXPECT_EQ(0, errno);
	EXPECT_EQ(som_pattern(9, spots[2]), val);
	EXPECT_EQ(0, ptrace(PTRACE_POKEDATA, pid, p + spots[2],
			    (void *)~som_pattern(9, spots[2])));
	EXPECT_EQ(0, ptrace(PTRACE_CONT, pid, NULL, NULL));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	close(pipefd[0]);
	close(pipefd[1]);
}

TEST_F(som, proc_mem_reads_untouched_memory_as_zeros)
{
	char *p = som_map_shared(self->fd, 4 * MiB), buf[64];
	long long reserved = som_stat("reserved_bytes");
	int mem = open("/proc/self/mem", O_RDONLY), i;

	ASSERT_NE(MAP_FAILED, p);
	ASSERT_LE(0, mem);
	memset(buf, 0xff, sizeof(buf));
	EXPECT_EQ(sizeof(buf), pread(mem, buf, sizeof(buf),
				     (uintptr_t)(p + 3 * MiB)));
	for (i = 0; i < (int)sizeof(buf); i++)
		EXPECT_EQ(0, buf[i]);
	/* Reading did not allocate. */
	EXPECT_EQ(reserved, som_stat("reserved_bytes"));
	close(mem);
	EXPECT_EQ(0, munmap(p, 4 * MiB));
}

/* A process killed while it faults in memory gives all of it back. */
TEST_F_TIMEOUT(som, sigkill_while_populating_returns_everything, 300)
{
	int pipefd[2], status;
	char c;
	pid_t pid;

	ASSERT_EQ(0, pipe(pipefd));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int fd = open(SOM_DEV, O_RDWR);
		char *p = som_map_misaligned(fd, 512 * MiB, 4 * KiB);

		if (p == MAP_FAILED)
			_exit(1);
		if (write(pipefd[1], "s", 1) != 1)
			_exit(2);
		for (;;)
			som_fill(p, 0, 512 * MiB, 4 * KiB, 10);
	}
	ASSERT_EQ(1, read(pipefd[0], &c, 1));
	usleep(300 * 1000);
	EXPECT_GT(self->free_start, som_stat("free_bytes"));
	ASSERT_EQ(0, kill(pid, SIGKILL));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFSIGNALED(status));
	EXPECT_EQ(self->free_start, som_stat("free_bytes"));
	close(pipefd[0]);
	close(pipefd[1]);
}

static int proc_usage(int fd, pid_t pid, struct som_proc_usage *u)
{
	memset(u, 0, sizeof(*u));
	u->pid = pid;
	return ioctl(fd, SOM_IOC_PROC_USAGE, u) ? -errno : 0;
}

TEST_F(som, proc_usage_counts_mappings_and_entries)
{
	struct som_proc_usage u;
	char *big = som_map_shared(self->fd, GiB + 4 * MiB), *small;
	int other = open(SOM_DEV, O_RDWR), status;
	pid_t pid;

	ASSERT_NE(MAP_FAILED, big);
	ASSERT_LE(0, other);
	small = mmap(NULL, 64 * KiB, PROT_READ | PROT_WRITE, MAP_SHARED,
		     other, 0);
	ASSERT_NE(MAP_FAILED, small);
	memset(big, 1, GiB + 4 * MiB);
	memset(small, 1, 3 * 4096);

	ASSERT_EQ(0, proc_usage(self->fd, 0, &u));
	EXPECT_EQ(2, u.mappings);
	EXPECT_EQ(GiB + 4 * MiB + 64 * KiB, u.mapped_bytes);
	EXPECT_EQ(3, u.entries_4k);
	if (som_cpu_has_gbpages()) {
		EXPECT_EQ(1, u.entries_1g);
		EXPECT_EQ(2, u.entries_2m);
	} else {
		EXPECT_EQ(514, u.entries_2m);
	}
	/* Another process (root) sees the same; then not after unmap. */
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct som_proc_usage v;

		if (proc_usage(self->fd, getppid(), &v) ||
		    v.mappings != 2 || v.mapped_bytes != u.mapped_bytes ||
		    v.entries_4k != 3)
			_exit(1);
		if (proc_usage(self->fd, 0, &v) || v.mappings)
			_exit(2);	/* the child got no mapping */
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, status);

	EXPECT_EQ(0, munmap(small, 64 * KiB));
	ASSERT_EQ(0, proc_usage(self->fd, getpid(), &u));
	EXPECT_EQ(1, u.mappings);
	EXPECT_EQ(0, u.entries_4k);

	/* Bad arguments. */
	EXPECT_EQ(-EINVAL, proc_usage(self->fd, -1, &u));
	EXPECT_EQ(-ESRCH, proc_usage(self->fd, 0x3ffffff0, &u));
	memset(&u, 0, sizeof(u));
	u.flags = 1;
	EXPECT_EQ(-1, ioctl(self->fd, SOM_IOC_PROC_USAGE, &u));
	EXPECT_EQ(EINVAL, errno);
	memset(&u, 0, sizeof(u));
	u.__reserved[1] = 1;
	EXPECT_EQ(-1, ioctl(self->fd, SOM_IOC_PROC_USAGE, &u));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, ioctl(self->fd, SOM_IOC_PROC_USAGE, NULL));
	EXPECT_EQ(EFAULT, errno);

	EXPECT_EQ(0, munmap(big, GiB + 4 * MiB));
	close(other);
}

TEST_F(som, bad_ioctls_are_refused)
{
	struct som_mapping m;
	char *p = som_map_shared(self->fd, 2 * MiB);
	int other = open(SOM_DEV, O_RDWR);
	char *q;

	ASSERT_NE(MAP_FAILED, p);
	ASSERT_LE(0, other);
	q = som_map_shared(other, 2 * MiB);
	ASSERT_NE(MAP_FAILED, q);

	EXPECT_EQ(-1, ioctl(self->fd, _IO(SOM_IOCTL_BASE, 0x7f)));
	EXPECT_EQ(ENOTTY, errno);
	EXPECT_EQ(-1, ioctl(self->fd, _IOWR(SOM_IOCTL_BASE, 0x00, uint64_t), &m));
	EXPECT_EQ(ENOTTY, errno);
	EXPECT_EQ(-1, ioctl(self->fd, SOM_IOC_MAPPING, NULL));
	EXPECT_EQ(EFAULT, errno);
	EXPECT_EQ(-1, ioctl(self->fd, SOM_IOC_MAPPING, (void *)16));
	EXPECT_EQ(EFAULT, errno);

	memset(&m, 0, sizeof(m));
	m.addr = (uintptr_t)p;
	m.flags = 1;
	EXPECT_EQ(-1, ioctl(self->fd, SOM_IOC_MAPPING, &m));
	EXPECT_EQ(EINVAL, errno);
	m.flags = 0;
	m.__pad = 1;
	EXPECT_EQ(-1, ioctl(self->fd, SOM_IOC_MAPPING, &m));
	EXPECT_EQ(EINVAL, errno);
	m.__pad = 0;
	m.__reserved[1] = 1;
	EXPECT_EQ(-1, ioctl(self->fd, SOM_IOC_MAPPING, &m));
	EXPECT_EQ(EINVAL, errno);
	m.__reserved[1] = 0;

	/* Not som memory; som memory of another region is reported. */
	m.addr = (uintptr_t)&m;
	EXPECT_EQ(-1, ioctl(self->fd, SOM_IOC_MAPPING, &m));
	EXPECT_EQ(EINVAL, errno);
	q[4096] = 1;
	m.addr = (uintptr_t)q + 4096;
	EXPECT_EQ(0, ioctl(self->fd, SOM_IOC_MAPPING, &m));
	EXPECT_EQ(4096, m.offset);
	EXPECT_NE(0, m.page_size);
	EXPECT_LE(0, m.node);

	/* The good case: an untouched address is reported unmapped. */
	m.addr = (uintptr_t)p + 12345;
	EXPECT_EQ(0, ioctl(self->fd, SOM_IOC_MAPPING, &m));
	EXPECT_EQ(0, m.page_size);
	EXPECT_EQ(12345, m.offset);

	EXPECT_EQ(0, munmap(p, 2 * MiB));
	EXPECT_EQ(0, munmap(q, 2 * MiB));
	close(other);
}

TEST_F(som, add_range_refuses_bad_ranges)
{
	static const struct { const char *range; int err; } bad[] = {
		{ "garbage", -EINVAL },
		{ "1G", -EINVAL },
		{ "1G@", -EINVAL },
		{ "1M@4G", -EINVAL },		/* not 1 GiB aligned */
		{ "1G@4G+1", -EINVAL },
		{ "0@4G", -EINVAL },
		{ "1G@0", -EINVAL },		/* System RAM */
		{ "1G@6G", -EINVAL },		/* System RAM above the reservation */
		{ "1G@3G", -EINVAL },		/* PCI hole: not reserved memory */
		{ "1G@1024G", -EINVAL },	/* nothing there */
		{ "16E@4G", -EINVAL },		/* wraps around */
		{ "1G@4G", -EBUSY },		/* already in the pool */
	};
	long long total = som_stat("total_bytes");
	unsigned int i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		printf("# add_range \"%s\"\n", bad[i].range);
		EXPECT_EQ(bad[i].err, som_sysfs_write("add_range", bad[i].range));
	}
	EXPECT_EQ(total, som_stat("total_bytes"));
}

TEST_F(som, add_range_needs_root)
{
	int status;
	pid_t pid = fork();

	ASSERT_LE(0, pid);
	if (pid == 0) {
		if (setresuid(65534, 65534, 65534))
			_exit(2);
		_exit(som_sysfs_write("add_range", "1G@4G") == -EACCES ? 0 : 1);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, status);
}

TEST_F(som, unload_refused_while_a_region_is_open)
{
	EXPECT_EQ(-1, syscall(SYS_delete_module, "som", O_NONBLOCK));
	EXPECT_TRUE(errno == EBUSY || errno == EWOULDBLOCK)
		TH_LOG("errno %d", errno);
	EXPECT_EQ(0, access(SOM_DEV, F_OK));
}

TEST_HARNESS_MAIN
