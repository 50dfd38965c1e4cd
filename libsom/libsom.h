/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libsom: single-owner memory for programs.
 *
 * Every function returns 0 or a negative errno value (errno itself may
 * change, as in any library call). All functions are thread-safe. See
 * libsom(3) and the page of each function.
 *
 * The shared library exports these functions and nothing else, each at
 * the symbol version LIBSOM_0.1 (libsom.map). Structures that a program
 * passes in have reserved fields, which must be zero: a later version
 * gives them a meaning without changing the layout.
 */
#ifndef LIBSOM_H
#define LIBSOM_H

#include <stddef.h>
#include <linux/som.h>

#ifdef __cplusplus
extern "C" {
#endif

/* This header's version; the same as libsom.pc's (pkg-config --modversion). */
#define LIBSOM_VERSION_MAJOR	0
#define LIBSOM_VERSION_MINOR	1
#define LIBSOM_VERSION_PATCH	0

/* True if this header is version @major.@minor.@patch or later. */
#define LIBSOM_VERSION_AT_LEAST(major, minor, patch)			\
	(LIBSOM_VERSION_MAJOR > (major) ||				\
	 (LIBSOM_VERSION_MAJOR == (major) &&				\
	  (LIBSOM_VERSION_MINOR > (minor) ||				\
	   (LIBSOM_VERSION_MINOR == (minor) &&				\
	    LIBSOM_VERSION_PATCH >= (patch)))))

/* A connection to /dev/som and the allocations made through it. */
struct som;

/* struct som_alloc_opts flags */
#define SOM_ALLOC_PREFAULT	(1U << 0)	/* allocate and map it all now */
#define SOM_ALLOC_FLAGS		(SOM_ALLOC_PREFAULT)

/* Words of a node mask: as many nodes as the kernel takes (1,024). */
#define SOM_NODE_WORDS		(SOM_MAX_NODES / 64)

/**
 * struct som_alloc_opts - how som_alloc() places the memory
 * @flags:	SOM_ALLOC_* flags
 * @policy:	SOM_POLICY_LOCAL (the default), _PREFERRED, _BIND or
 *		_INTERLEAVE
 * @policy_flags: SOM_POLICY_UNMOVABLE, SOM_POLICY_INTERLEAVE_1G
 * @reserved0:	must be 0
 * @nodes:	the policy's nodes, bit n % 64 of @nodes[n / 64] for node n
 *		(nodes 0 to 1023; som_alloc_opts_set_node() sets one)
 * @reserved:	must be 0
 *
 * Zero it all, then set what is wanted: som_alloc() refuses non-zero
 * reserved fields with -EINVAL.
 */
struct som_alloc_opts {
	unsigned int flags;
	unsigned int policy;
	unsigned int policy_flags;
	unsigned int reserved0;
	unsigned long long nodes[SOM_NODE_WORDS];
	unsigned long long reserved[4];
};

/* Add node @node to @opts's nodes; nodes past the mask are ignored. */
static inline void som_alloc_opts_set_node(struct som_alloc_opts *opts,
					   unsigned int node)
{
	if (node < SOM_MAX_NODES)
		opts->nodes[node / 64] |= 1ULL << (node % 64);
}

/**
 * struct som_where - what backs an address
 * @page_size:	size of the page-table entry mapping it now (1 GiB, 2 MiB,
 *		4 KiB), or 0 if the next access faults it in
 * @node:	NUMA node of the memory, or -1 if none is allocated there yet
 * @unmovable:	1 if the memory is in an unmovable chunk
 */
struct som_where {
	size_t page_size;
	int node;
	int unmovable;
};

/**
 * struct som_pool_info - the pool's counters (/sys/kernel/mm/som)
 */
struct som_pool_info {
	unsigned long long total_bytes;
	unsigned long long free_bytes;
	unsigned long long reserved_bytes;
	unsigned long long zeroed_bytes;
	unsigned long long unmovable_total_bytes;
	unsigned long long unmovable_free_bytes;
	unsigned long long metadata_bytes;
	unsigned long long faults_pud;
	unsigned long long faults_pmd;
	unsigned long long faults_pte;
};

/**
 * struct som_usage - what one struct som holds
 * @allocations: live allocations
 * @mapped_bytes: their total size
 * @allocated_bytes: of that, backed by memory now (the rest is reserved,
 *		or holes punched with som_punch())
 */
struct som_usage {
	size_t allocations;
	unsigned long long mapped_bytes;
	unsigned long long allocated_bytes;
};

int som_open(struct som **som);
int som_close(struct som *som);
int som_alloc(struct som *som, size_t size, const struct som_alloc_opts *opts,
	      void **addr);
int som_free(struct som *som, void *addr);
int som_punch(struct som *som, void *addr, size_t len);
int som_prefault(struct som *som, void *addr, size_t len);
int som_where(struct som *som, const void *addr, struct som_where *where);
int som_usage(struct som *som, struct som_usage *usage);
int som_pool_info(struct som_pool_info *info);

/* jemalloc.c: an arena of the process's jemalloc on som memory. */
int som_jemalloc_arena_create(struct som *som, unsigned int *arena);
int som_jemalloc_arena_destroy(struct som *som, unsigned int arena);

#ifdef __cplusplus
}
#endif

#endif /* LIBSOM_H */
