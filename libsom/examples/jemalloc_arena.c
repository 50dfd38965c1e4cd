// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Put one heap on som, keep the rest of the program's memory ordinary:
 * a jemalloc arena whose extents are som memory, used through
 * mallocx()/dallocx().
 *
 *   cc -o jemalloc_arena jemalloc_arena.c -lsom -ljemalloc
 *   ./jemalloc_arena
 */
#include <stdio.h>
#include <string.h>
#include <jemalloc/jemalloc.h>
#include <libsom.h>

int main(void)
{
	struct som_where where;
	unsigned int arena;
	struct som *som;
	char *table;
	int err, flags;

	err = som_open(&som);
	if (err) {
		fprintf(stderr, "som_open: %s\n", strerror(-err));
		return 1;
	}
	err = som_jemalloc_arena_create(som, &arena);
	if (err) {
		fprintf(stderr, "som_jemalloc_arena_create: %s\n",
			strerror(-err));
		return 1;
	}
	/* No thread cache: the arena can be destroyed when we are done. */
	flags = MALLOCX_ARENA(arena) | MALLOCX_TCACHE_NONE;

	table = mallocx(256 << 20, flags);	/* a big table on som */
	if (!table)
		return 1;
	memset(table, 1, 256 << 20);
	if (!som_where(som, table, &where))
		printf("table at %p: som, %zu-byte entries, node %d\n",
		       (void *)table, where.page_size, where.node);
	dallocx(table, flags);

	err = som_jemalloc_arena_destroy(som, arena);
	if (err)
		fprintf(stderr, "som_jemalloc_arena_destroy: %s\n",
			strerror(-err));
	som_close(som);
	return err ? 1 : 0;
}
