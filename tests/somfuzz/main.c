// SPDX-License-Identifier: GPL-2.0
/*
 * somfuzz: fuzz som's interface, guided by KCOV where the kernel has it;
 * replay reproducers; print files as hex for the serial console.
 * Documentation/fuzzing.md. Exit status: 0 nothing found, 1 a finding
 * (its reproducer written), 2 usage.
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "somfuzz.h"

static void sf_usage(FILE *f)
{
	fprintf(f,
		"usage: somfuzz [OPTIONS]              fuzz som's interface\n"
		"       somfuzz --replay FILE|DIR...   run reproducers or a corpus\n"
		"       somfuzz --dump-hex DIR PREFIX  print DIR's files as hex lines\n"
		"       somfuzz --generate N           print N generated programs\n"
		"\n"
		"  -s, --seconds N     fuzz for N seconds (60)\n"
		"  -n, --calls N       stop after N calls (no limit)\n"
		"  -r, --seed N        seed of the random choices (1)\n"
		"  -c, --corpus DIR    start from the programs in DIR (up to 4)\n"
		"  -o, --corpus-out DIR  save programs with new coverage in DIR\n"
		"  -C, --crashes DIR   write reproducers in DIR (else print them)\n"
		"  -t, --timeout N     seconds one program may run (90)\n"
		"  -b, --batch N       programs per executor process (500)\n"
		"  -h, --help\n");
}

static void sf_print_stats(const struct sf_stats *st)
{
	printf("# somfuzz: %llu calls, %llu programs in %.1f s (%.0f calls/s), %llu executors\n",
	       (unsigned long long)st->calls, (unsigned long long)st->progs,
	       st->seconds, st->seconds > 0 ? st->calls / st->seconds : 0,
	       (unsigned long long)st->executors);
	printf("# somfuzz: corpus %d (%d seeds); coverage: %s%llu PCs, %llu edges of som.ko\n",
	       st->corpus, st->seeds,
	       st->kcov ? "" : "no KCOV on this kernel (random generation and mutation without feedback): ",
	       (unsigned long long)st->pcs, (unsigned long long)st->edges);
	sf_print_calls(stdout, "# somfuzz: calls:");
	printf("# somfuzz: %d finding(s)\n", st->findings);
}

static void sf_print_finding(const struct sf_stats *st)
{
	const char *line, *nl;

	for (line = st->finding; *line; line = nl + (*nl != 0)) {
		nl = line + strcspn(line, "\n");
		printf("# finding: %.*s\n", (int)(nl - line), line);
	}
	if (st->repro[0])
		printf("# reproducer: %s\n", st->repro);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "seconds", required_argument, NULL, 's' },
		{ "calls", required_argument, NULL, 'n' },
		{ "seed", required_argument, NULL, 'r' },
		{ "corpus", required_argument, NULL, 'c' },
		{ "corpus-out", required_argument, NULL, 'o' },
		{ "crashes", required_argument, NULL, 'C' },
		{ "timeout", required_argument, NULL, 't' },
		{ "batch", required_argument, NULL, 'b' },
		{ "replay", no_argument, NULL, 'R' },
		{ "dump-hex", no_argument, NULL, 'D' },
		{ "generate", required_argument, NULL, 'G' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	struct sf_opts o = {
		.seed = 1, .seconds = 60, .prog_timeout = 90, .batch = 500,
	};
	struct sf_stats st;
	int c, replay = 0, dump = 0, generate = 0, i, status = 0;
	struct sf_prog p;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((c = getopt_long(argc, argv, "s:n:r:c:o:C:t:b:h", longopts,
				NULL)) != -1) {
		switch (c) {
		case 's':
			o.seconds = atoi(optarg);
			break;
		case 'n':
			o.max_calls = strtoull(optarg, NULL, 0);
			break;
		case 'r':
			o.seed = strtoull(optarg, NULL, 0);
			break;
		case 'c':
			if (o.ncorpus_in == 4) {
				sf_usage(stderr);
				return 2;
			}
			o.corpus_in[o.ncorpus_in++] = optarg;
			break;
		case 'o':
			o.corpus_out = optarg;
			break;
		case 'C':
			o.crashes = optarg;
			break;
		case 't':
			o.prog_timeout = atoi(optarg);
			break;
		case 'b':
			o.batch = atoi(optarg);
			break;
		case 'R':
			replay = 1;
			break;
		case 'D':
			dump = 1;
			break;
		case 'G':
			generate = atoi(optarg);
			break;
		case 'h':
			sf_usage(stdout);
			return 0;
		default:
			sf_usage(stderr);
			return 2;
		}
	}
	for (i = 0; i < generate; i++) {
		sf_prog_generate(&p, &o.seed);
		printf("%s", i ? "\n" : "");
		sf_prog_fprint(stdout, &p);
	}
	if (generate)
		return 0;
	if (dump) {
		if (argc - optind != 2) {
			sf_usage(stderr);
			return 2;
		}
		return sf_dump_hex(argv[optind], argv[optind + 1]) ? 1 : 0;
	}
	if (replay) {
		if (optind == argc) {
			sf_usage(stderr);
			return 2;
		}
		for (i = optind; i < argc; i++) {
			int r = sf_replay(argv[i], &st, 1);

			if (r) {
				printf("# somfuzz: %s: %s\n", argv[i],
				       r < 0 ? "cannot replay" : "FAILED");
				sf_print_finding(&st);
				status = 1;
			} else {
				printf("# somfuzz: %s: %llu programs, %llu calls, clean\n",
				       argv[i], (unsigned long long)st.progs,
				       (unsigned long long)st.calls);
			}
		}
		return status;
	}
	if (optind != argc || o.seconds <= 0 || o.prog_timeout <= 0 ||
	    o.batch <= 0) {
		sf_usage(stderr);
		return 2;
	}
	if (sf_fuzz(&o, &st)) {
		fprintf(stderr, "somfuzz: cannot start\n");
		return 1;
	}
	sf_print_stats(&st);
	if (st.findings) {
		sf_print_finding(&st);
		return 1;
	}
	return 0;
}
