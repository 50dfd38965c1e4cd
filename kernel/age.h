/* SPDX-License-Identifier: GPL-2.0 */
/*
 * How long each 2 MiB index of a region has gone unused (age.c), and the
 * scans that age it (age_scan.c).
 *
 * Without struct page there is no LRU and no rmap: an index's age is the
 * number of aging scans in a row that found no entry of its owner's
 * mapping it. A scan reads which indices the owner's entries map, ages
 * the others, and unmaps every entry: only a touch, which faults, maps
 * one again before the next scan (age_scan.c says why not accessed bits).
 *
 * The ages are kept per GiB of the region, in the form that costs least:
 *
 *	every index of the GiB young    no entry at all
 *	every index the same age        one xarray value entry
 *	anything else                   a struct som_gib_ages: 4 bits per
 *	                                index (256 bytes)
 *
 * A GiB mapped by a 1 GiB entry, or used all alike, costs nothing beyond
 * its xarray slot. The ages of indices without a block are not kept. An
 * index the next scan would not find used though it was (another path
 * zapped its entry, or its block is new) is marked used meanwhile.
 *
 * Context: no lock of its own; the region lock serialises every call.
 */
#ifndef _SOM_AGE_H
#define _SOM_AGE_H

#include <linux/types.h>
#include <linux/xarray.h>
#include <uapi/linux/som.h>

struct som_table;

/**
 * struct som_ages - a region's ages
 * @gibs:	GiB index -> NULL, a value entry (one state for all) or a
 *		struct som_gib_ages
 * @nr_split:	struct som_gib_ages in @gibs
 */
struct som_ages {
	struct xarray gibs;
	unsigned long nr_split;
};

/* What som_ages_get() returns for an index that holds no block. */
#define SOM_AGE_ABSENT	SOM_AGE_NONE

int som_age_cache_init(void);
void som_age_cache_exit(void);

void som_ages_init(struct som_ages *ages);
void som_ages_destroy(struct som_ages *ages);
void som_ages_advance(struct som_ages *ages, struct som_table *table,
		      pgoff_t first, const unsigned long *used);
void som_ages_mark(struct som_ages *ages, pgoff_t first,
		   const unsigned long *used);
void som_ages_renew(struct som_ages *ages, pgoff_t first,
		    const unsigned long *fresh);
void som_ages_prune(struct som_ages *ages, struct som_table *table);
unsigned int som_ages_get(struct som_ages *ages, struct som_table *table,
			  pgoff_t idx);
void som_ages_count(struct som_ages *ages, struct som_table *table,
		    u64 bytes[SOM_AGE_NR]);
u64 som_ages_bytes(struct som_ages *ages);

/* age_scan.c */
struct som_region;
struct vm_area_struct;
int som_age_scan(void);
struct mm_struct;
void som_age_note(struct som_region *region, struct vm_area_struct *vma,
		  pgoff_t from, pgoff_t to);
void som_age_note_range(struct mm_struct *mm, struct som_region *region,
			pgoff_t from, pgoff_t to);
void som_age_init(void);
void som_age_exit(void);
u64 som_age_scans(void);
extern const struct attribute_group som_aging_group;

#endif /* _SOM_AGE_H */
