/* SPDX-License-Identifier: GPL-2.0 */
/* som_bench meta: som's metadata over the whole pool (metadata.c). */
#ifndef SOM_BENCH_METADATA_H
#define SOM_BENCH_METADATA_H

int som_bench_meta(const char *layout);

#endif
