/* SPDX-License-Identifier: GPL-2.0 */
/*
 * som_bench age: what an aging scan costs per GiB of som memory (aging.c),
 * and an MGLRU aging pass of anonymous memory (aging_mglru.c); som_bench
 * tier: what moving memory between tiers costs (tiering.c); som_bench
 * swap: paging out and back, som next to the kernel's swap (swapping.c);
 * som_bench regions: ordinary memory counted in 2 MiB blocks (regions.c).
 */
#ifndef SOM_BENCH_AGING_H
#define SOM_BENCH_AGING_H

#include <stddef.h>
#include <stdint.h>

int som_bench_age(const char *entry, int run);
int som_bench_age_mglru(const char *entry, int run);
int som_bench_tier(const char *entry, int run);
int som_bench_swap(const char *kind, int run);
int som_bench_pressure(const char *kind, int run);
int som_bench_regions(int argc, char **argv);
int som_bench_on_brd(const char *what, const char *kind, int run,
		     int (*som)(int run), int (*kernel)(int run));
uint64_t age_touch_every(volatile char *p, size_t len, size_t step);

#endif
