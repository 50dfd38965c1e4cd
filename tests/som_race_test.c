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
 *    per-VMA-lock faults do not), so with THP on faults come through
 *    ->huge_fault(), under the per-VMA lock alone and beside the flip,
 *    and with THP off through ->fault() (under mmap_lock: som has no
 *    ->map_pages), which maps 2 MiB itself (4 KiB at the file's end);
 *  - each round maps the file afresh: a zap leaves page tables behind, and
 *    only the first fault of a 2 MiB piece without a table can race.
 *
 * On the debug tier (DEBUG_VM) losing the first race used to hit the
 * VM_BUG_ON in walk_to_pmd().
 *
 * And faults beside a split of a VMA inside a live 1 GiB entry (mprotect()
 * or munmap() of one 4 KiB page): som zaps the entry before the split
 * (->may_split), since 7.3's split code takes a 1 GiB leaf for a table and
 * oopses; a fault under the per-VMA lock alone that mapped the GiB again
 * between that zap and the split would bring the oops back.
 *
 * Each test runs for SOM_RACE_SECONDS (default 10), checks that no write
 * is lost and that the pool's accounting is exact at the end.
 *
 * Needs som.ko loaded and root.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/prctl.h>

#include "kselftest_harness.h"
#include "som_util.h"

#define SOM_RACE_BLOCKS		16	/* the file at its full size */
#define SOM_RACE_TOUCHERS	4

/*
 * A round maps the file afresh (no page tables yet, so each 2 MiB piece's
 * first fault decides its size), lets the touchers fault every piece at
 * once, and unmaps it again.
 */
struct som_race {
	int fd;
	size_t full, small;	/* the two sizes the file flips between */
	volatile char *p;	/* this round's mapping */
	pthread_barrier_t start, done;
	atomic_bool stop;
	atomic_long flips;	/* resizes and THP flips done */
	atomic_long lost;	/* writes read back wrong */
};

struct som_toucher {
	struct som_race *race;
	int id;
};

/*
 * Each toucher owns one word in the first page of every piece (the last
 * piece's first page is inside the file at either size): it writes a new
 * value there and reads it back. All touchers go through the pieces in
 * the same order, so they fault the same piece at the same time.
 */
static void *som_race_touch(void *arg)
{
	struct som_toucher *t = arg;
	struct som_race *r = t->race;
	volatile uint64_t *word;
	uint64_t value = 0;
	int b;

	for (;;) {
		pthread_barrier_wait(&r->start);
		if (atomic_load(&r->stop))
			return NULL;
		for (b = 0; b < SOM_RACE_BLOCKS; b++) {
			word = (volatile uint64_t *)(r->p + b * 2 * MiB) +
			       t->id * 8;
			*word = ++value;
			if (*word != value)
				atomic_fetch_add(&r->lost, 1);
		}
		pthread_barrier_wait(&r->done);
	}
}

/* Grow and shrink the file: its last piece takes 2 MiB, then 4 KiB. */
static void *som_race_resize(void *arg)
{
	struct som_race *r = arg;

	while (!atomic_load(&r->stop)) {
		if (ftruncate(r->fd, r->full) || ftruncate(r->fd, r->small))
			break;
		atomic_fetch_add(&r->flips, 1);
	}
	return NULL;
}

/* Faults on either side of a flip enter som through different handlers. */
static void *som_race_flip_thp(void *arg)
{
	struct som_race *r = arg;
	long on = 1;

	while (!atomic_load(&r->stop)) {
		if (prctl(PR_SET_THP_DISABLE, on, 0, 0, 0))
			break;
		on = !on;
		atomic_fetch_add(&r->flips, 1);
	}
	prctl(PR_SET_THP_DISABLE, 0, 0, 0, 0);
	return NULL;
}

FIXTURE(race) {
	int dev;
	long long free_before;
	struct som_race r;
};

FIXTURE_VARIANT(race) {
	bool resize;
	bool flip_thp;
};

FIXTURE_VARIANT_ADD(race, resize) {
	.resize = true,
};

FIXTURE_VARIANT_ADD(race, thp_flips) {
	.flip_thp = true,
};

FIXTURE_VARIANT_ADD(race, both) {
	.resize = true, .flip_thp = true,
};

FIXTURE_SETUP(race)
{
	struct som_race *r = &self->r;

	SOM_OPEN_DEV(self->dev);
	self->free_before = som_stat("free_bytes");
	memset(r, 0, sizeof(*r));
	r->full = SOM_RACE_BLOCKS * 2 * MiB;
	/* The last piece crosses the end: 4 KiB of it is in the file. */
	r->small = r->full - 2 * MiB + 4 * KiB;
	r->fd = som_file(self->dev, r->small, 0);
	ASSERT_LE(0, r->fd);
	/* The memory stays in the file: rounds after the first zero nothing. */
	ASSERT_EQ(0, fallocate(r->fd, 0, 0, r->small));
	ASSERT_EQ(0, pthread_barrier_init(&r->start, NULL,
					  SOM_RACE_TOUCHERS + 1));
	ASSERT_EQ(0, pthread_barrier_init(&r->done, NULL,
					  SOM_RACE_TOUCHERS + 1));
}

FIXTURE_TEARDOWN(race)
{
	if (self->dev < 0)
		return;
	pthread_barrier_destroy(&self->r.start);
	pthread_barrier_destroy(&self->r.done);
	if (self->r.fd >= 0)
		close(self->r.fd);
	close(self->dev);
	EXPECT_EQ(self->free_before, som_stat("free_bytes"));
	EXPECT_EQ(0, som_stat("reserved_bytes"));
}

TEST_F_TIMEOUT(race, faults_of_two_sizes_on_one_piece, 600)
{
	struct som_toucher t[SOM_RACE_TOUCHERS];
	pthread_t touchers[SOM_RACE_TOUCHERS], resize, flip;
	struct som_race *r = &self->r;
	long long pmd = som_stat("faults_pmd"), pte = som_stat("faults_pte");
	double end = som_seconds() +
		     som_env_seconds("SOM_RACE_SECONDS", 10, 300);
	long rounds = 0;
	void *p;
	int i;

	for (i = 0; i < SOM_RACE_TOUCHERS; i++) {
		t[i].race = r;
		t[i].id = i;
		ASSERT_EQ(0, pthread_create(&touchers[i], NULL, som_race_touch,
					    &t[i]));
	}
	if (variant->resize)
		ASSERT_EQ(0, pthread_create(&resize, NULL, som_race_resize, r));
	if (variant->flip_thp)
		ASSERT_EQ(0, pthread_create(&flip, NULL, som_race_flip_thp, r));
	while (som_seconds() < end) {
		p = mmap(NULL, r->full, PROT_READ | PROT_WRITE, MAP_SHARED,
			 r->fd, 0);
		ASSERT_NE(MAP_FAILED, p);
		r->p = p;
		pthread_barrier_wait(&r->start);
		pthread_barrier_wait(&r->done);
		ASSERT_EQ(0, munmap(p, r->full));
		rounds++;
	}
	atomic_store(&r->stop, true);
	pthread_barrier_wait(&r->start);
	for (i = 0; i < SOM_RACE_TOUCHERS; i++)
		pthread_join(touchers[i], NULL);
	if (variant->resize)
		pthread_join(resize, NULL);
	if (variant->flip_thp)
		pthread_join(flip, NULL);

	pmd = som_stat("faults_pmd") - pmd;
	pte = som_stat("faults_pte") - pte;
	TH_LOG("%ld rounds, %ld resizes/flips; %lld 2 MiB and %lld 4 KiB faults",
	       rounds, atomic_load(&r->flips), pmd, pte);
	EXPECT_EQ(0, atomic_load(&r->lost));
	/*
	 * Both sizes of fault happened: the race was there to be lost. Only
	 * the file's end makes 4 KiB faults: with THP off, ->fault() maps a
	 * whole piece with 2 MiB.
	 */
	EXPECT_LT(0, pmd);
	if (variant->resize)
		EXPECT_LT(0, pte);
}

/*
 * Splits beside faults: each round maps a 1 GiB som file whole (one 1 GiB
 * entry), and while the touchers keep writing the first page of every
 * 2 MiB piece, the test splits the VMA at a 4 KiB page of one piece that
 * no toucher writes.
 */
struct som_split {
	volatile char *p;
	atomic_bool stop, round_over;
	atomic_long lost;
	atomic_int ids;		/* each toucher writes words of its own */
	pthread_barrier_t start, done;
};

static void *som_split_touch(void *arg)
{
	struct som_split *s = arg;
	int id = atomic_fetch_add(&s->ids, 1);
	volatile uint64_t *word;
	uint64_t value = 0;
	size_t piece;

	for (;;) {
		pthread_barrier_wait(&s->start);
		if (atomic_load(&s->stop))
			return NULL;
		while (!atomic_load(&s->round_over)) {
			for (piece = 0; piece < GiB / (2 * MiB); piece++) {
				word = (volatile uint64_t *)(s->p + piece * 2 * MiB) +
				       id * 8;
				*word = ++value;
				if (*word != value)
					atomic_fetch_add(&s->lost, 1);
			}
		}
		pthread_barrier_wait(&s->done);
	}
}

FIXTURE(split) {
	int dev, fd;
	long long free_before;
	struct som_split s;
};

FIXTURE_VARIANT(split) {
	bool unmap;	/* munmap() the page, else mprotect() it read-only */
};

FIXTURE_VARIANT_ADD(split, mprotect) {
	.unmap = false,
};

FIXTURE_VARIANT_ADD(split, munmap) {
	.unmap = true,
};

FIXTURE_SETUP(split)
{
	self->fd = -1;
	SOM_OPEN_DEV(self->dev);
	if (!som_cpu_has_gbpages())
		SKIP(return, "som maps no 1 GiB entries here (x86 without pdpe1gb, or arm64)");
	self->free_before = som_stat("free_bytes");
	/* A whole chunk free for the file, whatever else the pool holds. */
	ASSERT_LE(2 * (long long)GiB, self->free_before)
		TH_LOG("this test needs a pool of at least 2 GiB");
	memset(&self->s, 0, sizeof(self->s));
	self->fd = som_file(self->dev, GiB, 0);
	ASSERT_LE(0, self->fd);
	/* One chunk, kept by the file: rounds zero nothing. */
	ASSERT_EQ(0, fallocate(self->fd, 0, 0, GiB));
	ASSERT_EQ(0, pthread_barrier_init(&self->s.start, NULL,
					  SOM_RACE_TOUCHERS + 1));
	ASSERT_EQ(0, pthread_barrier_init(&self->s.done, NULL,
					  SOM_RACE_TOUCHERS + 1));
}

FIXTURE_TEARDOWN(split)
{
	if (self->dev < 0)
		return;
	if (self->fd >= 0) {
		pthread_barrier_destroy(&self->s.start);
		pthread_barrier_destroy(&self->s.done);
		close(self->fd);
	}
	close(self->dev);
	EXPECT_EQ(self->free_before, som_stat("free_bytes"));
	EXPECT_EQ(0, som_stat("reserved_bytes"));
}

TEST_F_TIMEOUT(split, split_beside_faults_in_a_1_gib_entry, 600)
{
	pthread_t touchers[SOM_RACE_TOUCHERS];
	struct som_split *s = &self->s;
	double end = som_seconds() +
		     som_env_seconds("SOM_RACE_SECONDS", 10, 300);
	long rounds = 0, live = 0;
	size_t off;
	int i, err;
	char *p;

	for (i = 0; i < SOM_RACE_TOUCHERS; i++)
		ASSERT_EQ(0, pthread_create(&touchers[i], NULL,
					    som_split_touch, s));
	srand(1);
	while (som_seconds() < end) {
		p = mmap(NULL, GiB, PROT_READ | PROT_WRITE, MAP_SHARED,
			 self->fd, 0);
		ASSERT_NE(MAP_FAILED, p);
		ASSERT_EQ(0, (uintptr_t)p & (GiB - 1));
		s->p = p;
		atomic_store(&s->round_over, false);
		pthread_barrier_wait(&s->start);
		/* Once the touchers have the 1 GiB entry, split under them. */
		while (som_page_size(self->dev, p) != (long long)GiB &&
		       som_seconds() < end)
			sched_yield();
		live += som_page_size(self->dev, p) == (long long)GiB;
		off = (size_t)(rand() % 512) * 2 * MiB +
		      (size_t)(1 + rand() % 511) * 4 * KiB;
		if (variant->unmap)
			err = munmap(p + off, 4 * KiB);
		else
			err = mprotect(p + off, 4 * KiB, PROT_READ);
		ASSERT_EQ(0, err);
		atomic_store(&s->round_over, true);
		pthread_barrier_wait(&s->done);
		ASSERT_EQ(0, munmap(p, GiB));
		rounds++;
	}
	atomic_store(&s->stop, true);
	pthread_barrier_wait(&s->start);
	for (i = 0; i < SOM_RACE_TOUCHERS; i++)
		pthread_join(touchers[i], NULL);

	TH_LOG("%ld rounds, %ld of them split a live 1 GiB entry", rounds,
	       live);
	EXPECT_EQ(0, atomic_load(&s->lost));
	EXPECT_LT(0, live);
}

TEST_HARNESS_MAIN
