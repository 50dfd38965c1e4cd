// SPDX-License-Identifier: GPL-2.0
/*
 * somfuzz under the suite (tests/somfuzz/, Documentation/fuzzing.md):
 * the reproducers committed in tests/somfuzz/repro/ and the seed corpus
 * replayed, then a time-boxed coverage-guided run over som's whole
 * interface from the seed corpus: SOM_GFUZZ_CALLS calls (default
 * 1000000) or SOM_GFUZZ_SECONDS (default 120 on either tier: on the
 * debug tier KCOV's coverage grows by a few percent from there to where
 * it stopped growing, about 260 s; the stock tier makes about 1,600
 * calls a second under TCG; at most 780), whichever comes first, from
 * SOM_FUZZ_SEED. The suite's time is kept for its other tests.
 * `vm/run fuzz` is for long runs. Any finding fails (a checker's report
 * in the kernel log, the pool not whole after a program, data a new owner
 * or another process must not see, an executor killed or hung) and
 * prints its reproducer. On a kernel without KCOV the run goes on without
 * feedback and says so.
 *
 * Needs som.ko loaded, root, and the programs in SOM_GFUZZ_DIR
 * (/som/somfuzz: corpus/ and repro/, which vm/lib/initramfs.sh stages).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <sys/stat.h>

#include "kselftest_harness.h"
#include "som_util.h"
#include "somfuzz.h"

static const char *gfuzz_dir(const char *sub, char *buf, size_t len)
{
	const char *d = getenv("SOM_GFUZZ_DIR");

	snprintf(buf, len, "%s/%s", d ? d : "/som/somfuzz", sub);
	return buf;
}

FIXTURE(guided_fuzz) {
	int dev;
	long long total;
};

FIXTURE_SETUP(guided_fuzz)
{
	SOM_OPEN_DEV(self->dev);
	self->total = som_stat("total_bytes");
	ASSERT_EQ(self->total, som_stat("free_bytes"));
}

FIXTURE_TEARDOWN(guided_fuzz)
{
	if (self->dev < 0)
		return;
	close(self->dev);
	EXPECT_EQ(self->total, som_stat("total_bytes"));
	EXPECT_EQ(self->total, som_stat("free_bytes"));
	EXPECT_EQ(0, som_stat("reserved_bytes"));
}

static void gfuzz_print_finding(const struct sf_stats *st)
{
	const char *line, *nl;

	for (line = st->finding; *line; line = nl + (*nl != 0)) {
		nl = line + strcspn(line, "\n");
		printf("# finding: %.*s\n", (int)(nl - line), line);
	}
}

/* Every committed reproducer and the seed corpus run clean. */
TEST_F_TIMEOUT(guided_fuzz, reproducers_and_seeds_replay_clean, 900)
{
	char dir[256], path[512];
	struct sf_stats st;
	struct dirent *de;
	int files = 0, r;
	DIR *d;

	d = opendir(gfuzz_dir("repro", dir, sizeof(dir)));
	ASSERT_NE(NULL, d) TH_LOG("no %s in the guest", dir);
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.' || !strstr(de->d_name, ".txt"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		r = sf_replay(path, &st, 1);
		gfuzz_print_finding(&st);
		EXPECT_EQ(0, r) TH_LOG("reproducer %s", path);
		files++;
	}
	closedir(d);
	r = sf_replay(gfuzz_dir("corpus", dir, sizeof(dir)), &st, 1);
	gfuzz_print_finding(&st);
	EXPECT_EQ(0, r) TH_LOG("seed corpus %s", dir);
	EXPECT_LT(0, st.progs) TH_LOG("the seed corpus ran no program");
	printf("# %d reproducer(s) and %llu seed program(s) (%llu calls) replayed\n",
	       files, (unsigned long long)st.progs,
	       (unsigned long long)st.calls);
}

TEST_F_TIMEOUT(guided_fuzz, programs_leave_kernel_pool_and_data_clean, 900)
{
	const char *seed = getenv("SOM_FUZZ_SEED");
	const char *calls = getenv("SOM_GFUZZ_CALLS");
	char corpus[256];
	struct sf_opts o = {
		.seed = seed ? strtoull(seed, NULL, 0) : 0x50f7c0ffeeULL,
		.max_calls = calls ? strtoull(calls, NULL, 0) : 1000000,
		.seconds = som_env_seconds("SOM_GFUZZ_SECONDS", 120, 780),
		.prog_timeout = 90,
		.batch = 500,
		.quiet = 0,
	};
	struct sf_stats st;

	o.corpus_in[o.ncorpus_in++] = gfuzz_dir("corpus", corpus,
						sizeof(corpus));
	ASSERT_EQ(0, sf_fuzz(&o, &st));
	printf("# %llu calls, %llu programs in %.1f s (%.0f calls/s), %llu executor processes\n",
	       (unsigned long long)st.calls, (unsigned long long)st.progs,
	       st.seconds, st.seconds > 0 ? st.calls / st.seconds : 0,
	       (unsigned long long)st.executors);
	printf("# corpus %d programs (%d seeds); %s%llu PCs, %llu edges of som.ko covered\n",
	       st.corpus, st.seeds,
	       st.kcov ? "KCOV: " : "no KCOV on this kernel (random generation and mutation without feedback): ",
	       (unsigned long long)st.pcs, (unsigned long long)st.edges);
	sf_print_calls(stdout, "# calls:");
	printf("# %d finding(s)\n", st.findings);
	gfuzz_print_finding(&st);
	/* The finding's first line, where a FAILED line shows it. */
	EXPECT_EQ(0, st.findings) TH_LOG("%.*s",
					 (int)strcspn(st.finding, "\n"),
					 st.finding);
	EXPECT_LT(0, st.progs);
}

TEST_HARNESS_MAIN
