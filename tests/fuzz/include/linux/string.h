/* SPDX-License-Identifier: GPL-2.0 */
/*
 * User-space stand-in for the kernel's <linux/string.h>, with just what
 * kernel/range_parse.c uses: the u64 type and memparse() (defined in the
 * fuzz target, with the kernel's semantics).
 */
#ifndef SOM_FUZZ_LINUX_STRING_H
#define SOM_FUZZ_LINUX_STRING_H

#include <stdint.h>
#include <string.h>

typedef uint64_t u64;

unsigned long long memparse(const char *ptr, char **retptr);

#endif
