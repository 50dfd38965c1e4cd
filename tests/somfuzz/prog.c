// SPDX-License-Identifier: GPL-2.0
/*
 * Programs: generated from the description table, mutated, and written and
 * read as text, one call a line:
 *
 *   open_dev flags=0x2
 *   som_file dev=0 size=0x200000 flags=0 pad=0 reserved=0 ptr=0
 *   mmap fd=0 len=0x200000 off=0 prot=0x3 flags=0x1 slot=2 misalign=0
 *   touch map=0 off=0 len=0 stride=0x1000 mode=2
 *
 * A resource argument (fd=, map=, dev=, src=) is the n-th live resource of
 * its kind when the call runs (n modulo how many there are), so that any
 * mutation leaves a program that runs. Programs in one file are separated
 * by blank lines; '#' starts a comment line.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "somfuzz.h"

#define KiB	(1ULL << 10)
#define MiB	(1ULL << 20)
#define GiB	(1ULL << 30)

uint64_t sf_rand(uint64_t *s)
{
	/* xorshift64* */
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dULL;
}

static uint64_t sf_below(uint64_t *rnd, uint64_t n)
{
	return n ? sf_rand(rnd) % n : 0;
}

/* Lengths at the edges that matter to som: pages, blocks, chunks. */
static const uint64_t sf_len_edges[] = {
	4 * KiB, 8 * KiB, 12 * KiB, 64 * KiB, 2 * MiB - 4 * KiB, 2 * MiB,
	2 * MiB + 4 * KiB, 4 * MiB, 6 * MiB, 16 * MiB, 64 * MiB, 0, 1,
};

/*
 * Lengths of a GiB and more: rare. Memory that large costs a GiB of
 * zeroing (about 0.3 s under TCG) when a program touches or allocates it
 * and again when it comes back, which is the time of about a thousand
 * other calls; one length in 1,024 is one of these.
 */
static const uint64_t sf_len_big[] = {
	GiB - 4 * KiB, GiB - 2 * MiB, GiB, GiB + 2 * MiB, 2 * GiB, 3 * GiB,
	~0ULL, 1ULL << 40, (1ULL << 63) - 4096,
};

#define SF_NELEM(a)	(sizeof(a) / sizeof((a)[0]))

static uint64_t sf_gen_len(uint64_t *rnd)
{
	uint64_t r = sf_rand(rnd);

	if (r % 1024 == 0)
		return sf_len_big[(r >> 10) % SF_NELEM(sf_len_big)];
	switch (r % 32) {
	case 0:
	case 1 ... 6:
		return sf_len_edges[(r >> 8) % SF_NELEM(sf_len_edges)];
	case 7 ... 10:
		return ((r >> 8) % 1024 + 1) * 4 * KiB;
	case 11 ... 12:
		return (r >> 8) % (2 * MiB) + 1;
	default:
		/* one to a few pages or blocks */
		return (1 + (r >> 8) % 4) * ((r >> 16) & 1 ? 2 * MiB : 4 * KiB);
	}
}

static const uint64_t sf_off_edges[] = {
	4 * KiB, 2 * MiB, 2 * MiB - 4 * KiB, 2 * MiB + 4 * KiB, GiB,
	GiB - 4 * KiB, GiB + 2 * MiB, 2 * GiB, 1, 4095, 1ULL << 40, ~0ULL - 4095,
};

static uint64_t sf_gen_off(uint64_t *rnd)
{
	uint64_t r = sf_rand(rnd);

	switch (r % 8) {
	case 0: case 1: case 2:
		return 0;
	case 3:
		return ((r >> 8) % 512) * 4 * KiB;
	case 4:
		return ((r >> 8) % 16) * 2 * MiB;
	case 5:
		return (r >> 8) % (4 * MiB);
	default:
		return sf_off_edges[(r >> 8) % (sizeof(sf_off_edges) /
						 sizeof(sf_off_edges[0]))];
	}
}

static uint64_t sf_gen_rsvd(uint64_t *rnd)
{
	static const uint64_t odd[] = { 1, 0x80000000, 1ULL << 63, ~0ULL };
	uint64_t r = sf_rand(rnd);

	return r % 10 ? 0 : odd[(r >> 8) % 4];
}

static uint64_t sf_gen_arg(const struct sf_arg_desc *a, int nres,
			   uint64_t *rnd)
{
	uint64_t v = 0;
	int i;

	switch (a->kind) {
	case SF_A_RES:
		return sf_below(rnd, nres > 0 ? nres : 1);
	case SF_A_ENUM:
		/* The first value is the common case: half the time. */
		if (sf_rand(rnd) & 1)
			return a->vals[0];
		return a->vals[sf_below(rnd, a->nvals)];
	case SF_A_FLAGS:
		/* The first value is the common case: half the time alone. */
		switch (sf_rand(rnd) % 4) {
		case 0:
		case 1:
			return a->vals[0];
		case 2:
			return a->vals[0] | a->vals[sf_below(rnd, a->nvals)];
		}
		for (i = 0; i < a->nvals; i++)
			if (sf_rand(rnd) & 1)
				v |= a->vals[i];
		return v;
	case SF_A_LEN:
		return sf_gen_len(rnd);
	case SF_A_OFF:
		return sf_gen_off(rnd);
	case SF_A_INT:
		return a->min + sf_below(rnd, a->max - a->min + 1);
	case SF_A_PTR:
		return sf_rand(rnd) % 5 ? SF_PTR_GOOD :
		       sf_below(rnd, SF_PTR_NR);
	case SF_A_RSVD:
		return sf_gen_rsvd(rnd);
	}
	return 0;
}

/* Does call @d produce a resource that an argument of kind @res takes? */
static int sf_produces(const struct sf_call_desc *d, int res)
{
	if (d->produces < 0)
		return 0;
	if (res == SF_R_FD)
		return d->produces == SF_R_DEV || d->produces == SF_R_FILE;
	return d->produces == res;
}

static int sf_count_producers(const struct sf_prog *p, int upto, int res)
{
	int i, n = 0;

	for (i = 0; i < upto; i++)
		n += sf_produces(&sf_calls[p->calls[i].desc], res);
	return n;
}

static int sf_producer_of(int res, uint64_t *rnd)
{
	switch (res) {
	case SF_R_DEV:
		return sf_call_lookup("open_dev");
	case SF_R_FILE:
		return sf_call_lookup("som_file");
	case SF_R_FD:
		return sf_call_lookup(sf_rand(rnd) & 1 ? "som_file" : "open_dev");
	case SF_R_MAP:
		return sf_call_lookup("mmap");
	default:
		return sf_call_lookup("ioc_source_add");
	}
}

static int sf_pick_call(uint64_t *rnd)
{
	int i, total = 0, r;

	for (i = 0; i < sf_ncalls; i++)
		total += sf_calls[i].weight;
	r = (int)sf_below(rnd, total);
	for (i = 0; i < sf_ncalls; i++) {
		r -= sf_calls[i].weight;
		if (r < 0)
			return i;
	}
	return 0;
}

/*
 * Put a new call of @desc at @pos, after calls that make the resources it
 * needs where the program has none yet; how many calls went in.
 */
static int sf_insert_call(struct sf_prog *p, int pos, int desc,
			  uint64_t *rnd, int depth)
{
	const struct sf_call_desc *d = &sf_calls[desc];
	int i, n, added = 0;
	struct sf_call c;

	for (i = 0; i < d->nargs; i++) {
		if (d->args[i].kind != SF_A_RES)
			continue;
		/*
		 * Not for sources: adding one is slow (1 GiB the worker
		 * zeroes, removed after the program), and the calls that
		 * take one run without.
		 */
		if (depth < 3 && p->ncalls < SF_MAX_CALLS - 1 &&
		    d->args[i].res != SF_R_SRC &&
		    !sf_count_producers(p, pos, d->args[i].res) &&
		    sf_rand(rnd) % 8) {
			n = sf_insert_call(p, pos,
					   sf_producer_of(d->args[i].res, rnd),
					   rnd, depth + 1);
			pos += n;
			added += n;
		}
	}
	if (p->ncalls >= SF_MAX_CALLS)
		return added;
	memset(&c, 0, sizeof(c));
	c.desc = (uint16_t)desc;
	for (i = 0; i < d->nargs; i++) {
		n = d->args[i].kind == SF_A_RES ?
		    sf_count_producers(p, pos, d->args[i].res) : 0;
		c.args[i] = sf_gen_arg(&d->args[i], n, rnd);
	}
	memmove(&p->calls[pos + 1], &p->calls[pos],
		(p->ncalls - pos) * sizeof(p->calls[0]));
	p->calls[pos] = c;
	p->ncalls++;
	return added + 1;
}

/*
 * Does @p ask for a GiB or more somewhere (a length of up to a TiB: more
 * than that fails at once)? Such programs are picked from the corpus as
 * rarely as sf_gen_len() makes such lengths, or they would take most of
 * the run's time.
 */
int sf_prog_is_big(const struct sf_prog *p)
{
	const struct sf_call_desc *d;
	int i, j;

	for (i = 0; i < p->ncalls; i++) {
		d = &sf_calls[p->calls[i].desc];
		for (j = 0; j < d->nargs; j++)
			if (d->args[j].kind == SF_A_LEN &&
			    p->calls[i].args[j] >= GiB - 2 * MiB &&
			    p->calls[i].args[j] <= 1ULL << 40)
				return 1;
	}
	return 0;
}

/* A program of the corpus, a big one (sf_prog_is_big()) rarely. */
const struct sf_prog *sf_corpus_pick(const struct sf_prog *corpus, int n,
				     uint64_t *rnd)
{
	const struct sf_prog *p = &corpus[sf_below(rnd, n)];
	int tries;

	for (tries = 0; tries < 8 && sf_prog_is_big(p) && sf_rand(rnd) % 64;
	     tries++)
		p = &corpus[sf_below(rnd, n)];
	return p;
}

void sf_prog_generate(struct sf_prog *p, uint64_t *rnd)
{
	int want = 4 + (int)sf_below(rnd, 20);

	memset(p, 0, sizeof(*p));
	while (p->ncalls < want && p->ncalls < SF_MAX_CALLS)
		sf_insert_call(p, p->ncalls, sf_pick_call(rnd), rnd, 0);
}

static void sf_mutate_arg(struct sf_call *c, uint64_t *rnd)
{
	const struct sf_call_desc *d = &sf_calls[c->desc];
	const struct sf_arg_desc *a;
	uint64_t *v, r;
	int i;

	if (!d->nargs)
		return;
	i = (int)sf_below(rnd, d->nargs);
	a = &d->args[i];
	v = &c->args[i];
	r = sf_rand(rnd);
	switch (a->kind) {
	case SF_A_RES:
		*v = r % 2 ? *v + 1 : sf_below(rnd, 4);
		break;
	case SF_A_ENUM:
		*v = r % 16 ? a->vals[(r >> 8) % a->nvals] :
		     r % 32 ? (uint32_t)sf_rand(rnd) : sf_rand(rnd);
		break;
	case SF_A_FLAGS:
		*v ^= r % 8 ? a->vals[(r >> 8) % a->nvals] : 1ULL << (r >> 8) % 32;
		break;
	case SF_A_LEN:
	case SF_A_OFF:
		switch (r % 6) {
		case 0:
			*v += 4096;
			break;
		case 1:
			*v -= 4096;
			break;
		case 2:
			*v += 2 * MiB;
			break;
		case 3:
			/* A GiB or more is as rare as in sf_gen_len(). */
			*v ^= 1ULL << ((r >> 8) % 1024 ? (r >> 18) % 30 :
				       30 + (r >> 18) % 34);
			break;
		default:
			*v = a->kind == SF_A_LEN ? sf_gen_len(rnd) :
			     sf_gen_off(rnd);
		}
		break;
	case SF_A_INT:
	case SF_A_PTR:
	case SF_A_RSVD:
		*v = sf_gen_arg(a, 0, rnd);
		break;
	}
}

void sf_prog_mutate(struct sf_prog *p, const struct sf_prog *corpus,
		    int ncorpus, uint64_t *rnd)
{
	int rounds = 1 + (int)sf_below(rnd, 3), i, j, k;
	struct sf_call tmp;
	const struct sf_prog *q;

	while (rounds--) {
		uint64_t r = sf_rand(rnd) % 100;

		if (r < 45 && p->ncalls) {
			k = 1 + (int)sf_below(rnd, 3);
			i = (int)sf_below(rnd, p->ncalls);
			while (k--)
				sf_mutate_arg(&p->calls[i], rnd);
		} else if (r < 65 && p->ncalls < SF_MAX_CALLS) {
			sf_insert_call(p, (int)sf_below(rnd, p->ncalls + 1),
				       sf_pick_call(rnd), rnd, 0);
		} else if (r < 78 && p->ncalls > 1) {
			i = (int)sf_below(rnd, p->ncalls);
			memmove(&p->calls[i], &p->calls[i + 1],
				(p->ncalls - i - 1) * sizeof(p->calls[0]));
			p->ncalls--;
		} else if (r < 86 && p->ncalls) {
			i = (int)sf_below(rnd, p->ncalls);
			memmove(&p->calls[i], &p->calls[i + 1],
				(p->ncalls - i - 1) * sizeof(p->calls[0]));
			p->ncalls--;
			sf_insert_call(p, i, sf_pick_call(rnd), rnd, 0);
		} else if (r < 95 && ncorpus) {
			/* splice: our head, another program's tail */
			q = sf_corpus_pick(corpus, ncorpus, rnd);
			i = (int)sf_below(rnd, p->ncalls + 1);
			j = (int)sf_below(rnd, q->ncalls + 1);
			k = q->ncalls - j;
			if (i + k > SF_MAX_CALLS)
				k = SF_MAX_CALLS - i;
			memcpy(&p->calls[i], &q->calls[j], k * sizeof(p->calls[0]));
			p->ncalls = i + k;
		} else if (p->ncalls > 1) {
			i = (int)sf_below(rnd, p->ncalls);
			j = (int)sf_below(rnd, p->ncalls);
			tmp = p->calls[i];
			p->calls[i] = p->calls[j];
			p->calls[j] = tmp;
		}
	}
	if (!p->ncalls)
		sf_prog_generate(p, rnd);
}

void sf_prog_fprint(FILE *f, const struct sf_prog *p)
{
	int i, j;

	for (i = 0; i < p->ncalls; i++) {
		const struct sf_call_desc *d = &sf_calls[p->calls[i].desc];

		fputs(d->name, f);
		for (j = 0; j < d->nargs; j++)
			fprintf(f, " %s=%#llx", d->args[j].name,
				(unsigned long long)p->calls[i].args[j]);
		fputc('\n', f);
	}
}

static int sf_parse_call(char *line, struct sf_call *c, char *err,
			 size_t errlen)
{
	const struct sf_call_desc *d;
	char *tok, *save, *eq, *end;
	int desc, j;

	tok = strtok_r(line, " \t", &save);
	desc = sf_call_lookup(tok);
	if (desc < 0) {
		snprintf(err, errlen, "unknown call '%s'", tok);
		return -1;
	}
	d = &sf_calls[desc];
	memset(c, 0, sizeof(*c));
	c->desc = (uint16_t)desc;
	while ((tok = strtok_r(NULL, " \t", &save))) {
		eq = strchr(tok, '=');
		if (!eq) {
			snprintf(err, errlen, "%s: '%s' is not NAME=VALUE",
				 d->name, tok);
			return -1;
		}
		*eq = '\0';
		for (j = 0; j < d->nargs; j++)
			if (!strcmp(d->args[j].name, tok))
				break;
		if (j == d->nargs) {
			snprintf(err, errlen, "%s has no argument '%s'",
				 d->name, tok);
			return -1;
		}
		c->args[j] = strtoull(eq + 1, &end, 0);
		if (*end || end == eq + 1) {
			snprintf(err, errlen, "%s: bad value '%s'", d->name,
				 eq + 1);
			return -1;
		}
	}
	return 0;
}

int sf_prog_parse(FILE *f, struct sf_prog *out, int max, char *err,
		  size_t errlen)
{
	char line[1024];
	int n = 0, lineno = 0, open = 0;
	size_t len;

	while (fgets(line, sizeof(line), f)) {
		lineno++;
		len = strcspn(line, "\r\n");
		line[len] = '\0';
		if (line[0] == '#')
			continue;
		if (!line[strspn(line, " \t")]) {
			open = 0;
			continue;
		}
		if (!open) {
			if (n == max) {
				snprintf(err, errlen, "more than %d programs", max);
				return -1;
			}
			memset(&out[n++], 0, sizeof(out[0]));
			open = 1;
		}
		if (out[n - 1].ncalls == SF_MAX_CALLS) {
			snprintf(err, errlen, "line %d: more than %d calls",
				 lineno, SF_MAX_CALLS);
			return -1;
		}
		if (sf_parse_call(line, &out[n - 1].calls[out[n - 1].ncalls],
				  err, errlen)) {
			len = strlen(err);
			snprintf(err + len, errlen - len, " (line %d)", lineno);
			return -1;
		}
		out[n - 1].ncalls++;
	}
	return n;
}
