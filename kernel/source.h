/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Where the pool's chunks come from. A source is one batch of 1 GiB chunks
 * from one kind of memory, added and removed as a whole; each kind lives
 * in its own file (source_*.c) and differs only in how it finds the
 * chunks and how it gives them back.
 */
#ifndef _SOM_SOURCE_H
#define _SOM_SOURCE_H

#include <linux/kobject.h>
#include <linux/list.h>
#include <linux/nodemask.h>
#include <linux/types.h>
#include <uapi/linux/som.h>

struct resource;

struct som_source;

/**
 * struct som_source_ops - what differs between kinds of source
 * @kind:	the kind's name, as sysfs shows it
 * @release:	give the chunks back to where they came from and free
 *		the kind's private data; called once the chunks are out of
 *		the pool (or never got in), with every entry of @chunks that
 *		the kind filled in
 */
struct som_source_ops {
	const char *kind;
	void (*release)(struct som_source *src);
};

/**
 * struct som_source - one batch of chunks in the pool
 * @kobj:	/sys/kernel/mm/som/sources/<name>
 * @list:	entry in the list of sources (source.c)
 * @ops:	its kind
 * @name:	unique name
 * @unmovable:	its chunks serve unmovable claims only
 * @slow:	its memory is of the slow tier (tier.c); written by its
 *		tier file (WRITE_ONCE()), then copied to its chunks' @slow
 *		under the pool lock
 * @struct_page: the kernel has a struct page for this memory
 * @nodes:	the NUMA nodes of its chunks
 * @nr_chunks:	length of @chunks
 * @chunks:	physical address of each chunk, filled in by the kind
 * @priv:	the kind's data
 */
struct som_source {
	struct kobject kobj;
	struct list_head list;
	const struct som_source_ops *ops;
	char name[SOM_SOURCE_NAME_LEN];
	bool unmovable;
	bool slow;
	bool struct_page;
	nodemask_t nodes;
	unsigned long nr_chunks;
	phys_addr_t *chunks;
	void *priv;
};

struct som_source *som_source_alloc(const struct som_source_ops *ops,
				    unsigned long nr_chunks, unsigned int flags);
struct som_source *som_source_alloc_range(const struct som_source_ops *ops,
					  u64 start, u64 size, unsigned int flags);
void som_source_free(struct som_source *src);
int som_source_add(struct som_source *src, char *name);
int som_source_remove(const char *name);
bool som_range_is_covered(u64 start, u64 size, unsigned long desc);
struct resource *som_source_claim(u64 start, u64 size);
void som_source_unclaim(struct resource *res);
u64 som_sources_metadata_bytes(u64 *tables);
int som_sources_init(struct kobject *parent);
void som_sources_exit(void);

/* The kinds */
int som_reserved_add(u64 start, u64 size, unsigned int flags, char *name);
int som_reserved_add_list(const char *list);
int som_hugetlb_add(int fd, unsigned int flags, char *name);
int som_buddy_add(int nid, u64 size, unsigned int flags, char *name);
int som_dax_add(u64 start, u64 size, unsigned int flags, char *name);

#endif /* _SOM_SOURCE_H */
