// SPDX-License-Identifier: GPL-2.0
/*
 * Memory-error selftests with real machine checks: QEMU injects them into
 * the guest when the test asks the host on a serial port (SOM_MCE_TTY,
 * x86 only; vm/lib/mce_relay.py), at a page the test found with
 * SOM_IOC_POISON's lookup. The kernel's decode chain reports them to som
 * (kernel/poison.c), as a DIMM's would be.
 *
 * It runs in a guest of its own (vm/guest/mce.sh): a machine check taints
 * the kernel, which turns lockdep off, and an SRAR must reach a CPU that
 * runs the reader and nothing else (isolcpus=1 nohz_full=1): QEMU
 * delivers it wherever the vCPU is, and in the kernel that panics the
 * guest (Documentation/kernel-facts.md, "Memory errors"). The cases and
 * their checks are those of som_poison_test.c.
 */
#define _GNU_SOURCE
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <sys/wait.h>
#include <termios.h>

#include "kselftest_harness.h"
#include "som_util.h"
#include "som_pool_util.h"
#include "som_poison_util.h"

/*
 * Ask the host for a machine check: @req is "srao PHYS" (action optional,
 * a patrol scrub's, on CPU 0) or "srar CPU PHYS" (action required: CPU
 * consumed it). Wait for the answer; 0, or -1 with the reason logged.
 */
static int inject(struct __test_metadata *_metadata, const char *req)
{
	const char *tty = getenv("SOM_MCE_TTY");
	struct pollfd pfd;
	struct termios t;
	char reply[256];
	size_t n = 0;
	int fd;

	fd = open(tty, O_RDWR | O_NOCTTY);
	if (fd < 0 || tcgetattr(fd, &t)) {
		TH_LOG("%s: %s", tty, strerror(errno));
		return -1;
	}
	cfmakeraw(&t);
	tcsetattr(fd, TCSANOW, &t);
	tcflush(fd, TCIOFLUSH);
	if (write(fd, req, strlen(req)) != (ssize_t)strlen(req) ||
	    write(fd, "\n", 1) != 1)
		TH_LOG("%s: write: %s", tty, strerror(errno));
	pfd.fd = fd;
	pfd.events = POLLIN;
	while (n < sizeof(reply) - 1 && (!n || reply[n - 1] != '\n')) {
		/* The host answers once QEMU took it: minutes at worst. */
		if (poll(&pfd, 1, 300 * 1000) != 1 ||
		    read(fd, reply + n, 1) != 1)
			break;
		n++;
	}
	close(fd);
	reply[n] = '\0';
	if (strcmp(reply, "ok\n")) {
		TH_LOG("the host answered '%s' to %s", reply, req);
		return -1;
	}
	return 0;
}

static int inject_srao(struct __test_metadata *_metadata, uint64_t phys)
{
	char req[64];

	snprintf(req, sizeof(req), "srao %#llx", (unsigned long long)phys);
	return inject(_metadata, req);
}

/* Wait for the source's count of errors to reach @events. */
static long long wait_events(long long events)
{
	long long got = 0;
	int i;

	/* The decode chain's worker, then som's: seconds under TCG. */
	for (i = 0; i < 3000; i++) {
		got = spare_stat("poison_events");
		if (got >= events)
			break;
		usleep(100 * 1000);
	}
	return got;
}

/*
 * Wait until som has made @page a hole: the lookup waits for the region
 * lock, which som holds until the rest of the block has moved. The count
 * of errors goes up before that.
 */
static int wait_hole(int dev, char *page)
{
	int i;

	for (i = 0; i < 3000; i++) {
		if (poison(dev, page, 0, SOM_POISON_LOOKUP, NULL) == -EHWPOISON)
			return 0;
		usleep(100 * 1000);
	}
	return -1;
}

#define NEED_MCE() do {							\
	if (!getenv("SOM_MCE_TTY"))					\
		SKIP(return, "no machine-check injection (SOM_MCE_TTY: x86 VMs only)"); \
} while (0)

TEST_F(poison, srao_machine_check_in_a_free_block_retires_it)
{
	long long free0 = node_stat(self->nid, "free_bytes");
	uint64_t bad;

	NEED_MCE();
	bad = free_page_phys(_metadata, self->dev, self->nid, 11);
	ASSERT_NE(0, bad);
	ASSERT_EQ(0, inject_srao(_metadata, bad));
	ASSERT_EQ(1, wait_events(1));
	EXPECT_EQ(1, spare_stat("poisoned_pages"));
	EXPECT_EQ(2 * MiB, spare_stat("retired_bytes"));
	EXPECT_EQ(free0 - 2 * (long long)MiB,
		  node_stat(self->nid, "free_bytes"));
}

TEST_F(poison, srao_machine_check_in_a_mapped_page_leaves_a_hole)
{
	size_t len = 4 * MiB;
	uint64_t bad;
	char *m, *page;
	int fd;

	NEED_MCE();
	/* Found by a scrub before the owner reads it again. */
	m = map_filled(_metadata, self->dev, self->nid, len,
		       3 * MiB + 21 * 4096, &bad, &fd);
	ASSERT_NE(NULL, m);
	page = m + 3 * MiB + 21 * 4096;
	ASSERT_EQ(0, inject_srao(_metadata, bad));
	ASSERT_EQ(0, wait_hole(self->dev, page));
	EXPECT_EQ(1, spare_stat("poison_events"));
	check_hole(_metadata, self->dev, m, len, page);
	EXPECT_EQ(2 * MiB, spare_stat("retired_bytes"));
	munmap(m, len);
	close(fd);
	EXPECT_EQ(GiB - 2 * MiB, node_stat(self->nid, "free_bytes"));
}


/* Is CPU 1 tickless (nohz_full), so that nothing but its task runs there? */
static int cpu1_isolated(void)
{
	char buf[64];

	return som_read_text("/sys/devices/system/cpu/nohz_full", buf,
			     sizeof(buf)) > 0 && !strcmp(buf, "1\n");
}

/*
 * Has CPU 1 stopped its tick (/proc/timer_list's .tick_stopped)? 1, 0, or
 * -1 if the file does not say.
 */
static int cpu1_tick_stopped(void)
{
	static char buf[1 << 16];
	char *cpu, *flag;

	if (som_read_text("/proc/timer_list", buf, sizeof(buf)) < 0)
		return -1;
	cpu = strstr(buf, "\ncpu: 1\n");
	flag = cpu ? strstr(cpu, ".tick_stopped") : NULL;
	flag = flag ? strchr(flag, ':') : NULL;
	return flag ? atoi(flag + 1) == 1 : -1;
}

/*
 * Wait until CPU 1, which only the reader uses, has had its tick stopped
 * for a second (ten looks in a row): a tick that fires when the record
 * arrives would be an SRAR in the kernel, which panics. A busy host can
 * take long to get there: the wait is long, and 0 means it was reached.
 */
static int wait_tickless(struct __test_metadata *_metadata)
{
	double end = som_seconds() + 300;
	int stopped, seen = 0;

	while (seen < 10) {
		stopped = cpu1_tick_stopped();
		if (stopped < 0) {
			TH_LOG("/proc/timer_list does not show CPU 1's tick");
			return -1;
		}
		seen = stopped ? seen + 1 : 0;
		if (som_seconds() > end) {
			TH_LOG("CPU 1 kept its tick for 300 s under the reader");
			return -1;
		}
		usleep(100 * 1000);
	}
	return 0;
}

/* The owner's reader: on CPU 1, reading one page until a signal. */
struct reader {
	volatile char *page;
	volatile int ready;
	int sig, code, lsb;
};

static struct reader *the_reader;
static sigjmp_buf reader_env;

static void reader_handler(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	the_reader->sig = sig;
	the_reader->code = si->si_code;
	the_reader->lsb = si->si_addr_lsb;
	siglongjmp(reader_env, 1);
}

static void *reader_run(void *arg)
{
	struct reader *r = arg;
	struct sigaction sa;
	cpu_set_t cpus;

	CPU_ZERO(&cpus);
	CPU_SET(1, &cpus);
	if (pthread_setaffinity_np(pthread_self(), sizeof(cpus), &cpus))
		return NULL;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = reader_handler;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGBUS, &sa, NULL);
	if (sigsetjmp(reader_env, 1))
		return NULL;
	r->ready = 1;
	for (;;)
		(void)*r->page;
}

/*
 * An action-required machine check at @phys while a thread pinned to CPU
 * 1 reads @page, the page behind it: fills @r with the signal the reader
 * got. 0, or -1 with the reason logged.
 */
static int srar(struct __test_metadata *_metadata, struct reader *r,
		char *page, uint64_t phys)
{
	char req[64];
	pthread_t t;
	int err;

	memset(r, 0, sizeof(*r));
	r->page = page;
	the_reader = r;
	if (pthread_create(&t, NULL, reader_run, r))
		return -1;
	while (!r->ready)
		usleep(10 * 1000);
	err = wait_tickless(_metadata);
	snprintf(req, sizeof(req), "srar 1 %#llx", (unsigned long long)phys);
	if (!err)
		err = inject(_metadata, req);
	if (err)
		pthread_cancel(t);
	pthread_join(t, NULL);
	return err;
}

/* The physical address of @addr from /proc/self/pagemap (root), or 0. */
static uint64_t pagemap_phys(void *addr)
{
	int fd = open("/proc/self/pagemap", O_RDONLY);
	uint64_t e = 0;

	if (fd < 0)
		return 0;
	if (pread(fd, &e, 8, ((uintptr_t)addr / 4096) * 8) != 8)
		e = 0;
	close(fd);
	return (e & (1ULL << 63)) ? (e & ((1ULL << 55) - 1)) << 12 : 0;
}

/* The 1 GiB hugetlb pool (not /proc/meminfo's, which is the default size's). */
#define HUGE_1G	"/sys/kernel/mm/hugepages/hugepages-1048576kB/"

/* Bytes of [@p, @p + @len) that signal when read, probed every @stride. */
static long long lost_bytes(char *p, size_t len, size_t stride)
{
	long long lost = 0;
	size_t off;

	for (off = 0; off < len; off += stride)
		if (touch(p + off))
			lost += stride;
	return lost;
}

/*
 * An action-required machine check while a thread pinned to CPU 1 reads
 * the page: on som memory, then, side by side, on the memory som replaces:
 * anonymous memory and a 1 GiB hugetlb page (SOM_HUGEPAGES of them were
 * reserved at boot). Prints what each owner and each pool lost, and
 * checks som's figures and the kernel's behaviour for the others
 * (Documentation/kernel-facts.md, "Memory errors").
 */
TEST_F(poison, srar_costs_som_4k_against_anonymous_and_hugetlb)
{
	long long corrupt0, corrupt1, huge0, huge1, som_lost, anon_lost, huge_lost;
	struct reader r, anon, huge;
	size_t len = 4 * MiB;
	char *m, *page, *a, *h;
	uint64_t bad;
	int fd;

	NEED_MCE();
	if (!cpu1_isolated())
		SKIP(return, "CPU 1 is not isolated and tickless: an SRAR could land in the kernel, which panics");
	m = map_filled(_metadata, self->dev, self->nid, len, 2 * MiB + 9 * 4096,
		       &bad, &fd);
	ASSERT_NE(NULL, m);
	page = m + 2 * MiB + 9 * 4096;
	ASSERT_EQ(0, srar(_metadata, &r, page, bad));
	/*
	 * The kernel signals the thread that consumed the error, and no
	 * other; 6.12 and 7.3 cannot handle a pfn without struct page, so
	 * without an address (SI_KERNEL).
	 */
	EXPECT_EQ(SIGBUS, r.sig);
	ASSERT_EQ(0, wait_hole(self->dev, page));
	EXPECT_EQ(1, spare_stat("poison_events"));
	/* Then som made the page a hole: from now on it signals as it should. */
	check_hole(_metadata, self->dev, m, len, page);
	EXPECT_EQ(2 * MiB, spare_stat("retired_bytes"));
	som_lost = lost_bytes(m, len, 4096);
	EXPECT_EQ(4096, som_lost);

	a = mmap(NULL, len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, a);
	madvise(a, len, MADV_NOHUGEPAGE);
	som_fill(a, 0, len, 8, 7);
	corrupt0 = som_meminfo("HardwareCorrupted");
	ASSERT_EQ(0, srar(_metadata, &anon, a + 9 * 4096,
			  pagemap_phys(a + 9 * 4096)));
	corrupt1 = som_meminfo("HardwareCorrupted");
	EXPECT_EQ(SIGBUS, anon.sig);
	EXPECT_EQ(BUS_MCEERR_AR, anon.code);
	EXPECT_EQ(12, anon.lsb);
	EXPECT_EQ(-1, som_check(a, 0, 9 * 4096, 8, 7));
	EXPECT_EQ(-1, som_check(a, 10 * 4096, len, 8, 7));
	anon_lost = lost_bytes(a, len, 4096);

	huge_lost = -1;
	huge0 = som_read_ll(HUGE_1G "nr_hugepages");
	huge1 = huge0;
	h = som_read_ll(HUGE_1G "free_hugepages") < 1 ? MAP_FAILED :
	    mmap(NULL, GiB, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | (30 << 26), -1, 0);
	if (h != MAP_FAILED) {
		som_fill(h, 0, GiB, MiB, 7);
		ASSERT_EQ(0, srar(_metadata, &huge, h + 9 * 4096,
				  pagemap_phys(h + 9 * 4096)));
		huge1 = som_read_ll(HUGE_1G "nr_hugepages");
		EXPECT_EQ(SIGBUS, huge.sig);
		EXPECT_EQ(BUS_MCEERR_AR, huge.code);
		EXPECT_EQ(30, huge.lsb);
		huge_lost = lost_bytes(h, GiB, 2 * MiB);
		EXPECT_EQ(1, huge0 - huge1);
		munmap(h, GiB);
	} else {
		TH_LOG("no free 1 GiB hugetlb page: hugetlb left out");
	}

	TH_LOG("one SRAR in    som           anonymous     1 GiB hugetlb");
	TH_LOG("owner lost     %-13lld %-13lld %lld (bytes that signal now)",
	       som_lost, anon_lost, huge_lost);
	TH_LOG("pool lost      %-13lld %-13lld %lld (retired_bytes; HardwareCorrupted; 1 GiB nr_hugepages)",
	       spare_stat("retired_bytes"), corrupt1 - corrupt0,
	       (huge0 - huge1) * (long long)GiB);
	TH_LOG("signal         code %d, then code %d lsb %d; code %d lsb %d; code %d lsb %d",
	       r.code, BUS_MCEERR_AR, 12, anon.code, anon.lsb,
	       huge_lost < 0 ? 0 : huge.code, huge_lost < 0 ? 0 : huge.lsb);
	EXPECT_EQ(4096, anon_lost);
	EXPECT_EQ(4096, corrupt1 - corrupt0);
	munmap(a, len);
	munmap(m, len);
	close(fd);
	EXPECT_EQ(GiB - 2 * MiB, node_stat(self->nid, "free_bytes"));
}

TEST_HARNESS_MAIN
