// SPDX-License-Identifier: GPL-2.0
/*
 * Chunk source: physical ranges reserved at boot.
 *
 * Booting with memmap=2G$4G makes the firmware map say 4-6 GiB is
 * "Reserved": the kernel then builds no struct page for it and never
 * touches it. An administrator gives such ranges to som as SIZE@START,
 * either as the module parameter ranges= or through the sysfs file
 * add_range. A range is accepted only if it is 1 GiB aligned, lies wholly
 * inside memory the firmware map calls reserved (so it is real memory,
 * not a hole, and not System RAM), and overlaps nothing already in the pool.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/ioport.h>
#include <linux/kernel.h>
#include <linux/mm.h>
#include <linux/mutex.h>

#include "pool.h"
#include "source_reserved.h"

/* Serializes the overlap check against the pool with the addition. */
static DEFINE_MUTEX(som_reserved_lock);

struct som_reserved_cover {
	u64 next;	/* first byte not yet known to be reserved */
};

static int som_reserved_cover_one(struct resource *res, void *arg)
{
	struct som_reserved_cover *cover = arg;

	if (res->start > cover->next)
		return 1;	/* a hole: stop the walk */
	cover->next = max_t(u64, cover->next, res->end + 1);
	return 0;
}

/* Is every byte of [start, start + size) inside a "Reserved" iomem range? */
static bool som_reserved_is_covered(u64 start, u64 size)
{
	struct som_reserved_cover cover = { .next = start };

	walk_iomem_res_desc(IORES_DESC_RESERVED, IORESOURCE_MEM, start,
			    start + size - 1, &cover, som_reserved_cover_one);
	return cover.next >= start + size;
}

/**
 * som_reserved_add() - validate a reserved range and add it to the pool
 * @pool: the pool
 * @start: physical start, 1 GiB aligned
 * @size: length, a non-zero multiple of 1 GiB
 *
 * Every refusal is logged with the reason.
 *
 * Context: Process context, may sleep.
 * Return: 0, -EINVAL for a misaligned range or one that is not reserved
 * memory, -EBUSY if it overlaps the pool, or an error from the pool.
 */
int som_reserved_add(struct som_pool *pool, u64 start, u64 size)
{
	u64 off;
	int err;

	if (!size || !IS_ALIGNED(start, SOM_CHUNK_SIZE) ||
	    !IS_ALIGNED(size, SOM_CHUNK_SIZE) || start + size < start) {
		pr_err_ratelimited("range %#llx@%#llx refused: start and size must be non-zero multiples of 1 GiB\n",
				   size, start);
		return -EINVAL;
	}
	if (region_intersects(start, size, IORESOURCE_SYSTEM_RAM,
			      IORES_DESC_NONE) != REGION_DISJOINT) {
		pr_err_ratelimited("range %#llx@%#llx refused: overlaps System RAM\n",
				   size, start);
		return -EINVAL;
	}
	if (!som_reserved_is_covered(start, size)) {
		pr_err_ratelimited("range %#llx@%#llx refused: not reserved memory (boot with memmap=SIZE$START)\n",
				   size, start);
		return -EINVAL;
	}

	mutex_lock(&som_reserved_lock);
	if (som_pool_contains(pool, start, size)) {
		pr_err_ratelimited("range %#llx@%#llx refused: overlaps memory already in the pool\n",
				   size, start);
		err = -EBUSY;
		goto out_unlock;
	}
	for (off = 0; off < size; off += SOM_CHUNK_SIZE) {
		err = som_pool_add_chunk(pool, start + off);
		if (err) {
			pr_err("range %#llx@%#llx: adding the chunk at %#llx failed (%d); %llu GiB of it added\n",
			       size, start, start + off, err,
			       off >> SOM_CHUNK_SHIFT);
			goto out_unlock;
		}
	}
	pr_info("added reserved range %#llx@%#llx (%llu GiB)\n", size, start,
		size >> SOM_CHUNK_SHIFT);
	err = 0;
out_unlock:
	mutex_unlock(&som_reserved_lock);
	return err;
}

/**
 * som_reserved_add_list() - add every range of "SIZE@START[,SIZE@START...]"
 * @pool: the pool
 * @list: the list
 *
 * The whole list is parsed before anything is added, so a typo adds
 * nothing; ranges are then added in order until one is refused.
 *
 * Context: Process context, may sleep.
 * Return: 0 if every range was added, else the first error.
 */
int som_reserved_add_list(struct som_pool *pool, const char *list)
{
	const char *s;
	u64 size, start;
	int err;

	for (s = list; *s; ) {
		err = som_reserved_parse(s, &size, &start, &s);
		if (err) {
			pr_err_ratelimited("bad range list \"%s\": expected SIZE@START[,SIZE@START...], e.g. 2G@4G\n",
					   list);
			return err;
		}
	}
	for (s = list; *s; ) {
		som_reserved_parse(s, &size, &start, &s);
		err = som_reserved_add(pool, start, size);
		if (err)
			return err;
	}
	return 0;
}
