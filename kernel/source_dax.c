// SPDX-License-Identifier: GPL-2.0
/*
 * Chunk source: the range of a device DAX instance (persistent memory, or
 * a CXL memory region, which reaches Linux as the same kind of range).
 *
 * som takes a dax device over the way the kmem driver does, by claiming
 * its physical range with request_mem_region(), but from user space: the
 * administrator's tool reads the range from /sys/bus/dax/devices/<dev>/
 * {resource,size}, unbinds the device from device_dax (which drops its
 * claim on the range and its struct pages, so /dev/<dev> disappears), and
 * passes the range in, named after the device. While som holds the claim
 * no driver can bind the device again; on removal som releases it and the
 * tool binds device_dax back. The range must lie inside memory the
 * firmware or a driver described as persistent, soft-reserved or CXL.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/ioport.h>
#include <linux/mm.h>

#include "pool.h"
#include "source.h"

/* The descriptors of iomem ranges a dax device can sit on. */
static const unsigned long som_dax_descs[] = {
	IORES_DESC_PERSISTENT_MEMORY,
	IORES_DESC_PERSISTENT_MEMORY_LEGACY,
	IORES_DESC_SOFT_RESERVED,
	IORES_DESC_CXL,
};

static void som_dax_release(struct som_source *src)
{
	som_source_unclaim(src->priv);
}

static const struct som_source_ops som_dax_ops = {
	.kind = "dax",
	.release = som_dax_release,
};

static bool som_dax_range_ok(u64 start, u64 size)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(som_dax_descs); i++)
		if (som_range_is_covered(start, size, som_dax_descs[i]))
			return true;
	return false;
}

/**
 * som_dax_add() - take a device DAX range into the pool
 * @start: physical start of the device's range, 1 GiB aligned (create the
 *	namespace or region with a 1 GiB alignment)
 * @size: its length, a non-zero multiple of 1 GiB
 * @flags: SOM_SOURCE_* flags: its chunks serve unmovable claims only,
 *	its memory is of the slow tier
 * @name: the device's name, e.g. "dax0.0"; required
 *
 * Context: Process context, may sleep.
 * Return: 0; -EINVAL for a missing name, a misaligned range or one that is
 * not device memory; -EBUSY if a driver (device_dax, kmem) still claims
 * it; or an error from som_source_add().
 */
int som_dax_add(u64 start, u64 size, unsigned int flags, char *name)
{
	struct som_source *src;
	struct resource *res;

	if (!*name || !size || !IS_ALIGNED(start, SOM_CHUNK_SIZE) ||
	    !IS_ALIGNED(size, SOM_CHUNK_SIZE) || start + size < start) {
		pr_err_ratelimited("dax %.*s refused: needs its name, and a start and size that are multiples of 1 GiB\n",
				   SOM_SOURCE_NAME_LEN, name);
		return -EINVAL;
	}
	if (region_intersects(start, size, IORESOURCE_SYSTEM_RAM,
			      IORES_DESC_NONE) != REGION_DISJOINT ||
	    !som_dax_range_ok(start, size)) {
		pr_err_ratelimited("dax %.*s refused: %#llx@%#llx is not persistent, soft-reserved or CXL memory\n",
				   SOM_SOURCE_NAME_LEN, name, size, start);
		return -EINVAL;
	}
	src = som_source_alloc_range(&som_dax_ops, start, size, flags);
	if (!src)
		return -ENOMEM;
	res = som_source_claim(start, size);
	if (!res) {
		pr_err_ratelimited("dax %.*s refused: a driver claims its range (unbind it from device_dax first)\n",
				   SOM_SOURCE_NAME_LEN, name);
		som_source_free(src);
		return -EBUSY;
	}
	src->priv = res;
	return som_source_add(src, name);
}
