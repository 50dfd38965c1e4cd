// SPDX-License-Identifier: GPL-2.0
/*
 * Races between faults of different sizes on the same 2 MiB of a som
 * mapping, the kind a review found by reading: the core decides between a
 * 2 MiB and a 4 KiB fault before som takes its region lock, so a 4 KiB
 * fault can find that another thread's 2 MiB fault mapped the piece
 * meanwhile (and a 2 MiB fault can find a PTE table). What makes the two
 * threads decide differently:
 *
 *  - a som file's last 2 MiB block crosses its end, so it takes 4 KiB
 *    entries, while another thread grows the file (ftruncate() takes no
 *    mmap_lock) and a third faults the now whole block with 2 MiB;
 *  - prctl(PR_SET_THP_DISABLE) flips (it takes the mmap_lock, which
 *    per-VMA-lock faults do not), so faults before the flip take 4 KiB
 *    entries and faults after it 2 MiB;
 *  - shrinking the file and punching holes zap the entries again, so the
 *    race is run again and again.
 *
 * On the debug tier (DEBUG_VM) losing the first race used to hit the
 * VM_BUG_ON in walk_to_pmd(). Each test runs for SOM_RACE_SECONDS
 * (default 10), checks that no write is lost and that the pool's
 * accounting is exact at the end.
 *
 * Needs som.ko loaded and root.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/falloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/prctl.h>
#include <time.h>

#include "kselftest_harness.h"
#include "som_util.h"

#define SOM_RACE_BLOCKS		4	/* the file at its full size */
#define SOM_RACE_TOUCHERS	4

static int som_race_seconds(void)
{
	const char *s = getenv("SOM_RACE_SECONDS");
	int n = s ? atoi(s) : 0;

	return n <= 0 ? 10 : n > 300 ? 300 : n;
}

static double som_race_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

struct som_race {
	int fd;
	volatile char *p;
	size_t full, small;	/* the two sizes the file flips between */
	atomic_bool stop;
	atomic_long rounds;	/* resizes, punches and flips done */
	atomic_long touches;
	atomic_long lost;	/* writes read back wrong */
	int thp_flips, resizes, punches;
};

/*
 * Each toucher owns one word in the first page of the last block, which
 * is always inside the file and never punched: it writes a new value and
 * reads it back. In between it touches a random word of the other blocks,
 * whose contents punching throws away.
 */
struct som_toucher {
	struct som_race *race;
	int id;
};

static void *som_race_touch(void *arg)
{
	struct som_toucher *t = arg;
	struct som_race *r = t->race;
	volatile uint64_t *mine = (volatile uint64_t *)
		(r->p + (SOM_RACE_BLOCKS - 1) * 2 * MiB) + t->id * 8;
	uint64_t seed = 0x9e3779b97f4a7c15ULL * (t->id + 1), value = 0;
	size_t off;

	while (!atomic_load(&r->stop)) {
		*mine = ++value;
		if (*mine != value)
			atomic_fetch_add(&r->lost, 1);
		/* Anywhere before the last block: faults of any size. */
		off = som_rand(&seed) % ((SOM_RACE_BLOCKS - 1) * 2 * MiB);
		r->p[off & ~(size_t)7] = 1;
		atomic_fetch_add(&r->touches, 1);
	}
	return NULL;
}

/* Grow and shrink the file: the last block takes 2 MiB, then 4 KiB. */
static void *som_race_resize(void *arg)
{
	struct som_race *r = arg;

	while (!atomic_load(&r->stop)) {
		if (ftruncate(r->fd, r->full) || ftruncate(r->fd, r->small))
			break;
		atomic_fetch_add(&r->rounds, 1);
	}
	return NULL;
}

static void *som_race_flip_thp(void *arg)
{
	struct som_race *r = arg;
	long on = 1;

	while (!atomic_load(&r->stop)) {
		if (prctl(PR_SET_THP_DISABLE, on, 0, 0, 0))
			break;
		on = !on;
		atomic_fetch_add(&r->rounds, 1);
	}
	prctl(PR_SET_THP_DISABLE, 0, 0, 0, 0);
	return NULL;
}

/* Punch every block but the last: their entries go, and faults race again. */
static void *som_race_punch(void *arg)
{
	struct som_race *r = arg;

	while (!atomic_load(&r->stop)) {
		if (fallocate(r->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			      0, (SOM_RACE_BLOCKS - 1) * 2 * MiB))
			break;
		atomic_fetch_add(&r->rounds, 1);
	}
	return NULL;
}

FIXTURE(race) {
	int dev;
	long long free_before;
	struct som_race r;
};

FIXTURE_VARIANT(race) {
	int resizes;
	int thp_flips;
	int punches;
};

FIXTURE_VARIANT_ADD(race, resize) {
	.resizes = 1,
};

FIXTURE_VARIANT_ADD(race, thp_flips) {
	.thp_flips = 1, .punches = 1,
};

FIXTURE_VARIANT_ADD(race, everything) {
	.resizes = 1, .thp_flips = 1, .punches = 1,
};

FIXTURE_SETUP(race)
{
	struct som_race *r = &self->r;

	SOM_OPEN_DEV(self->dev);
	self->free_before = som_stat("free_bytes");
	memset(r, 0, sizeof(*r));
	r->full = SOM_RACE_BLOCKS * 2 * MiB;
	/* The last block crosses the end: 4 KiB of it is in the file. */
	r->small = r->full - 2 * MiB + 4 * KiB;
	r->fd = som_file(self->dev, r->small, 0);
	ASSERT_LE(0, r->fd);
	r->p = mmap(NULL, r->full, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd,
		    0);
	ASSERT_NE(MAP_FAILED, r->p);
	r->resizes = variant->resizes;
	r->thp_flips = variant->thp_flips;
	r->punches = variant->punches;
}

FIXTURE_TEARDOWN(race)
{
	if (self->dev < 0)
		return;
	if (self->r.p && self->r.p != MAP_FAILED)
		munmap((void *)self->r.p, self->r.full);
	if (self->r.fd >= 0)
		close(self->r.fd);
	close(self->dev);
	EXPECT_EQ(self->free_before, som_stat("free_bytes"));
	EXPECT_EQ(0, som_stat("reserved_bytes"));
}

TEST_F_TIMEOUT(race, faults_of_two_sizes_on_one_piece, 600)
{
	struct som_toucher t[SOM_RACE_TOUCHERS];
	pthread_t touchers[SOM_RACE_TOUCHERS], resize, flip, punch;
	struct som_race *r = &self->r;
	long faults_pmd = som_stat("faults_pmd");
	long faults_pte = som_stat("faults_pte");
	double end = som_race_now() + som_race_seconds();
	int i;

	for (i = 0; i < SOM_RACE_TOUCHERS; i++) {
		t[i].race = r;
		t[i].id = i;
		ASSERT_EQ(0, pthread_create(&touchers[i], NULL, som_race_touch,
					    &t[i]));
	}
	if (r->resizes)
		ASSERT_EQ(0, pthread_create(&resize, NULL, som_race_resize, r));
	if (r->thp_flips)
		ASSERT_EQ(0, pthread_create(&flip, NULL, som_race_flip_thp, r));
	if (r->punches)
		ASSERT_EQ(0, pthread_create(&punch, NULL, som_race_punch, r));
	while (som_race_now() < end)
		usleep(100 * 1000);
	atomic_store(&r->stop, true);
	for (i = 0; i < SOM_RACE_TOUCHERS; i++)
		pthread_join(touchers[i], NULL);
	if (r->resizes)
		pthread_join(resize, NULL);
	if (r->thp_flips)
		pthread_join(flip, NULL);
	if (r->punches)
		pthread_join(punch, NULL);

	TH_LOG("%ld rounds of resizes/flips/punches, %ld touches; %lld 2 MiB and %lld 4 KiB faults",
	       atomic_load(&r->rounds), atomic_load(&r->touches),
	       som_stat("faults_pmd") - faults_pmd,
	       som_stat("faults_pte") - faults_pte);
	EXPECT_EQ(0, atomic_load(&r->lost));
	EXPECT_LT(0, atomic_load(&r->rounds));
	/* Both sizes of fault happened: the race was there to be lost. */
	EXPECT_LT(faults_pmd, som_stat("faults_pmd"));
	EXPECT_LT(faults_pte, som_stat("faults_pte"));
}

TEST_HARNESS_MAIN
