// SPDX-License-Identifier: GPL-2.0
/*
 * som_memload: a fixed load on memcached, with every reply checked and the
 * latency of every operation kept (memcached's text protocol over TCP).
 *
 *   som_memload [-s HOST] [-p PORT] [-c CONNS] [-k KEYS] [-v BYTES]
 *               [-n OPS] [-g GET_PERCENT] [-S SEED]
 *
 * First every key is set once (the preload, timed on its own). Then CONNS
 * threads, one connection each, run OPS operations between them in a
 * closed loop: GET_PERCENT gets of random keys, whose values are checked,
 * and sets of random keys for the rest. Prints one line of key=value:
 * operations, seconds, operations per second, latency percentiles in
 * microseconds (exact: every operation's latency is kept and sorted),
 * misses and errors. Exit 1 on any error or wrong value.
 *
 * Defaults: 127.0.0.1:11211, 4 connections, 8192 keys of 4096 bytes,
 * 16384 operations, 90% gets.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "measure.h"
#include "som_util.h"

struct load {
	const char *host;
	int port, conns, keys, value, ops, get_pct;
	uint64_t seed;
};

struct conn {
	int fd;
	char buf[65536];
	size_t len, pos;	/* bytes in buf, bytes consumed */
};

struct worker {
	const struct load *load;
	pthread_t thread;
	int id, first_key, nr_keys, ops;	/* preload: keys; run: ops */
	uint64_t *lat;		/* ns per operation */
	long misses, errors;
	char *value, *expect;
};

static int conn_open(struct conn *c, const struct load *l)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	int one = 1;

	sa.sin_port = htons(l->port);
	if (inet_pton(AF_INET, l->host, &sa.sin_addr) != 1)
		return -1;
	c->len = c->pos = 0;
	c->fd = socket(AF_INET, SOCK_STREAM, 0);
	if (c->fd < 0)
		return -1;
	setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return connect(c->fd, (struct sockaddr *)&sa, sizeof(sa));
}

static int send_all(struct conn *c, const void *p, size_t len)
{
	const char *s = p;

	while (len) {
		ssize_t n = send(c->fd, s, len, MSG_NOSIGNAL);

		if (n <= 0) {
			if (n < 0 && errno == EINTR)
				continue;
			return -1;
		}
		s += n;
		len -= n;
	}
	return 0;
}

/* Make @need bytes readable in c->buf from c->pos on. */
static int fill(struct conn *c, size_t need)
{
	if (c->pos + need > sizeof(c->buf)) {
		memmove(c->buf, c->buf + c->pos, c->len - c->pos);
		c->len -= c->pos;
		c->pos = 0;
	}
	while (c->len - c->pos < need) {
		ssize_t n = recv(c->fd, c->buf + c->len, sizeof(c->buf) - c->len, 0);

		if (n <= 0) {
			if (n < 0 && errno == EINTR)
				continue;
			return -1;
		}
		c->len += n;
	}
	return 0;
}

/* The next "\r\n"-terminated line, NUL-terminated in place, or NULL. */
static char *read_line(struct conn *c)
{
	size_t scanned = 0;

	for (;;) {
		char *start = c->buf + c->pos;
		char *eol = memmem(start + scanned, c->len - c->pos - scanned, "\r\n", 2);

		if (eol) {
			*eol = '\0';
			c->pos = eol + 2 - c->buf;
			return start;
		}
		scanned = c->len - c->pos ? c->len - c->pos - 1 : 0;
		if (fill(c, c->len - c->pos + 1))
			return NULL;
	}
}

static void make_value(char *v, int len, int key)
{
	int i;

	for (i = 0; i < len; i++)
		v[i] = 'a' + (som_pattern(key, i / 8) >> (8 * (i % 8))) % 26;
}

static int do_set(struct worker *w, struct conn *c, int key)
{
	char head[128];
	char *line;
	int n;

	make_value(w->value, w->load->value, key);
	n = snprintf(head, sizeof(head), "set k%08d 0 0 %d\r\n", key, w->load->value);
	memcpy(w->value + w->load->value, "\r\n", 2);
	if (send_all(c, head, n) || send_all(c, w->value, w->load->value + 2))
		return -1;
	line = read_line(c);
	return line && !strcmp(line, "STORED") ? 0 : -1;
}

/* 0: the right value; 1: a miss; -1: an error or a wrong value. */
static int do_get(struct worker *w, struct conn *c, int key)
{
	char req[64], name[32];
	unsigned int flags;
	int n, bytes, ok;
	char *line;

	n = snprintf(req, sizeof(req), "get k%08d\r\n", key);
	if (send_all(c, req, n))
		return -1;
	line = read_line(c);
	if (!line)
		return -1;
	if (!strcmp(line, "END"))
		return 1;
	if (sscanf(line, "VALUE %31s %u %d", name, &flags, &bytes) != 3 ||
	    bytes != w->load->value || fill(c, bytes + 2))
		return -1;
	make_value(w->expect, bytes, key);
	ok = !memcmp(c->buf + c->pos, w->expect, bytes);
	c->pos += bytes + 2;
	line = read_line(c);
	return ok && line && !strcmp(line, "END") ? 0 : -1;
}

static void *preload(void *arg)
{
	struct worker *w = arg;
	struct conn *c = malloc(sizeof(*c));
	int k;

	if (!c || conn_open(c, w->load)) {
		w->errors++;
		free(c);
		return NULL;
	}
	for (k = w->first_key; k < w->first_key + w->nr_keys; k++)
		if (do_set(w, c, k))
			w->errors++;
	close(c->fd);
	free(c);
	return NULL;
}

static void *run(void *arg)
{
	struct worker *w = arg;
	uint64_t rnd = w->load->seed + 0x9e3779b97f4a7c15ULL * (w->id + 1);
	struct conn *c = malloc(sizeof(*c));
	int i, r;

	if (!c || conn_open(c, w->load)) {
		w->errors++;
		free(c);
		return NULL;
	}
	for (i = 0; i < w->ops; i++) {
		uint64_t x = som_rand(&rnd), t0 = measure_ns();
		int key = x % w->load->keys;

		if ((int)((x >> 32) % 100) < w->load->get_pct) {
			r = do_get(w, c, key);
			w->misses += r == 1;
		} else {
			r = do_set(w, c, key);
		}
		w->lat[i] = measure_ns() - t0;
		if (r < 0) {
			w->errors++;
			break;
		}
	}
	close(c->fd);
	free(c);
	return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The @p-th percentile of sorted @v (nearest rank), in microseconds. */
static double pct_us(const uint64_t *v, size_t n, double p)
{
	size_t rank = (size_t)(p / 100 * n + 0.999999);

	return v[rank ? rank - 1 : 0] / 1000.0;
}

/* Run @fn on every worker in its own thread; the ns it all took. */
static uint64_t run_all(struct worker *w, int nr, void *(*fn)(void *))
{
	uint64_t t0 = measure_ns();
	int i;

	for (i = 0; i < nr; i++)
		pthread_create(&w[i].thread, NULL, fn, &w[i]);
	for (i = 0; i < nr; i++)
		pthread_join(w[i].thread, NULL);
	return measure_ns() - t0;
}

int main(int argc, char **argv)
{
	struct load l = { "127.0.0.1", 11211, 4, 8192, 4096, 16384, 90, 1 };
	uint64_t *all, pre_ns, ns;
	long misses = 0, errors = 0;
	struct worker *w;
	size_t n = 0;
	int i, j, opt;

	while ((opt = getopt(argc, argv, "s:p:c:k:v:n:g:S:")) != -1) {
		switch (opt) {
		case 's': l.host = optarg; break;
		case 'p': l.port = atoi(optarg); break;
		case 'c': l.conns = atoi(optarg); break;
		case 'k': l.keys = atoi(optarg); break;
		case 'v': l.value = atoi(optarg); break;
		case 'n': l.ops = atoi(optarg); break;
		case 'g': l.get_pct = atoi(optarg); break;
		case 'S': l.seed = strtoull(optarg, NULL, 0); break;
		default:
			fprintf(stderr, "usage: som_memload [-s HOST] [-p PORT] [-c CONNS] [-k KEYS] [-v BYTES] [-n OPS] [-g GET_PERCENT] [-S SEED]\n");
			return 2;
		}
	}
	if (l.conns < 1 || l.keys < l.conns || l.value < 1 || l.ops < l.conns ||
	    l.get_pct < 0 || l.get_pct > 100) {
		fprintf(stderr, "som_memload: bad arguments\n");
		return 2;
	}
	w = calloc(l.conns, sizeof(*w));
	all = calloc(l.ops, sizeof(*all));
	if (!w || !all)
		return 1;
	for (i = 0; i < l.conns; i++) {
		w[i].load = &l;
		w[i].id = i;
		w[i].value = malloc(l.value + 2);
		w[i].expect = malloc(l.value);
		w[i].first_key = (long)l.keys * i / l.conns;
		w[i].nr_keys = (long)l.keys * (i + 1) / l.conns - w[i].first_key;
		w[i].ops = (long)l.ops * (i + 1) / l.conns - (long)l.ops * i / l.conns;
		w[i].lat = calloc(w[i].ops, sizeof(uint64_t));
		if (!w[i].value || !w[i].expect || !w[i].lat)
			return 1;
	}
	pre_ns = run_all(w, l.conns, preload);
	for (i = 0; i < l.conns; i++)
		if (w[i].errors) {
			fprintf(stderr, "som_memload: preload failed\n");
			return 1;
		}
	ns = run_all(w, l.conns, run);
	for (i = 0; i < l.conns; i++) {
		for (j = 0; j < w[i].ops; j++)
			all[n++] = w[i].lat[j];
		misses += w[i].misses;
		errors += w[i].errors;
	}
	qsort(all, n, sizeof(*all), cmp_u64);
	printf("ops=%zu conns=%d keys=%d value_bytes=%d get_pct=%d preload_ns=%llu"
	       " ns=%llu ops_per_s=%.1f p50_us=%.1f p90_us=%.1f p99_us=%.1f"
	       " max_us=%.1f misses=%ld errors=%ld\n",
	       n, l.conns, l.keys, l.value, l.get_pct,
	       (unsigned long long)pre_ns, (unsigned long long)ns,
	       n * 1e9 / ns, pct_us(all, n, 50), pct_us(all, n, 90),
	       pct_us(all, n, 99), all[n - 1] / 1000.0, misses, errors);
	return errors || misses ? 1 : 0;
}
