/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Writer threads for tests whose memory moves while it is used
 * (migration, tiering).
 */
#ifndef SOM_WRITERS_H
#define SOM_WRITERS_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Writer threads: each owns a stripe of the buffer and, round after
 * round, checks the word it wrote last round in every page of it and
 * writes the next one. A move that lost a write shows as an error.
 */
struct writer {
	pthread_t thread;
	char *base;
	size_t len;
	unsigned int id;
	volatile int *stop;
	long errors;
	volatile long rounds;
};

static inline uint64_t writer_word(unsigned int id, size_t off, long round)
{
	return ((uint64_t)id << 56) ^ ((uint64_t)round << 32) ^ off;
}

static inline void *writer_run(void *arg)
{
	struct writer *w = arg;
	volatile uint64_t *word;
	size_t off;

	while (!*w->stop) {
		for (off = 0; off < w->len; off += 4096) {
			word = (volatile uint64_t *)(w->base + off + 8);
			if (w->rounds && *word != writer_word(w->id, off, w->rounds - 1))
				w->errors++;
			*word = writer_word(w->id, off, w->rounds);
		}
		w->rounds++;
	}
	return NULL;
}

/* Start @n writers over [@p, @p + @len), one stripe each. */
static inline void writers_start(struct writer *w, int n, char *p, size_t len,
			  volatile int *stop)
{
	int i;

	*stop = 0;
	for (i = 0; i < n; i++) {
		w[i] = (struct writer){ .base = p + i * (len / n),
					.len = len / n, .id = i, .stop = stop };
		pthread_create(&w[i].thread, NULL, writer_run, &w[i]);
	}
}

/* Stop them; return their errors, after a last check of every word. */
static inline long writers_stop(struct writer *w, int n, volatile int *stop)
{
	long errors = 0;
	size_t off;
	int i;

	*stop = 1;
	for (i = 0; i < n; i++) {
		pthread_join(w[i].thread, NULL);
		for (off = 0; w[i].rounds && off < w[i].len; off += 4096)
			errors += *(uint64_t *)(w[i].base + off + 8) !=
				  writer_word(w[i].id, off, w[i].rounds - 1);
		errors += w[i].errors;
	}
	return errors;
}

#endif /* SOM_WRITERS_H */
