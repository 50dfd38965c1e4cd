// SPDX-License-Identifier: GPL-2.0
/*
 * Chunk source: physical ranges reserved at boot.
 *
 * Booting with memmap=2G$4G makes the firmware map say 4-6 GiB is
 * "Reserved": the kernel then builds no struct page for it and never
 * touches it. On arm64 a no-map node under /reserved-memory (or UEFI
 * memory of a type that is not usable) keeps a range out of the kernel's
 * linear map, though not out of its memory map: such memory has struct
 * pages there. An administrator gives such ranges to som as SIZE@START,
 * either as the module parameter ranges= or through the sysfs file
 * add_range, or through SOM_IOC_SOURCE_ADD. A range is accepted only if
 * it is 1 GiB aligned, lies wholly inside memory the kernel's memory map
 * calls reserved (not System RAM; on arm64: no-map memory), is RAM as far
 * as a module can tell (on x86, where the kernel exports it to modules,
 * the firmware's own E820 map, before memmap= changed it, says RAM for
 * every 2 MiB of it: no MMIO, no ACPI tables, no hole; elsewhere the
 * administrator's word is taken: arm64 keeps ACPI tables, firmware
 * carve-outs and bad RAM out of its linear map alike), and overlaps
 * nothing already in the pool. All of that is decided before anything is
 * claimed.
 *
 * While in the pool the range is claimed as an exclusive "som" resource,
 * a child of the "Reserved" (arm64: "reserved") one in /proc/iomem: no
 * driver can claim it,
 * and /dev/mem refuses it (CONFIG_STRICT_DEVMEM), as it refuses System
 * RAM. Removing it gives nothing back to the kernel: the claim goes, and
 * the range stays reserved, ready to be added again.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/ioport.h>
#include <linux/kernel.h>
#include <linux/mm.h>
#include <linux/sched.h>
#ifdef CONFIG_X86
#include <asm/e820/api.h>
#endif

#include "pool.h"
#include "source.h"
#include "source_reserved.h"

/* Nothing to give back but the claim: the range stays reserved. */
static void som_reserved_release(struct som_source *src)
{
	som_source_unclaim(src->priv);
}

static const struct som_source_ops som_reserved_ops = {
	.kind = "reserved",
	.release = som_reserved_release,
};

#ifdef CONFIG_ARM64
#define SOM_RESERVE_HOW "a no-map node under /reserved-memory"

/*
 * arm64 lists no-map memory as top-level "reserved" resources without a
 * descriptor (request_standard_resources()), and a name is no ABI; the
 * kernel's own test is per pfn: memory it has a memory map for
 * (pfn_valid()) but keeps out of its linear map (!pfn_is_map_memory()).
 * A hole in a section that holds memory elsewhere passes that test too:
 * /proc/iomem must show something over every byte as well.
 */
static bool som_reserved_is_reserved(u64 start, u64 size)
{
	unsigned long pfn;

	if (!som_range_is_covered(start, size, IORES_DESC_NONE))
		return false;
	for (pfn = PHYS_PFN(start); pfn < PHYS_PFN(start + size); pfn++) {
		if (!pfn_valid(pfn) || pfn_is_map_memory(pfn))
			return false;
		if (IS_ALIGNED(pfn, PTRS_PER_PMD))
			cond_resched();
	}
	return true;
}
#else
#define SOM_RESERVE_HOW "boot with memmap=SIZE$START"

/* e820 gives each reserved entry the descriptor IORES_DESC_RESERVED. */
static bool som_reserved_is_reserved(u64 start, u64 size)
{
	return som_range_is_covered(start, size, IORES_DESC_RESERVED);
}
#endif

#if defined(CONFIG_X86) && defined(SOM_HAVE_E820_RAW)
/*
 * Does the firmware's E820 map (e820_table_firmware: memmap= does not
 * change it) say RAM for the whole range? No entry of another type may
 * touch it, and every 2 MiB of it must hold RAM (a hole has no entry).
 */
static bool som_reserved_is_ram(u64 start, u64 size)
{
	static const enum e820_type others[] = {
		E820_TYPE_RESERVED, E820_TYPE_ACPI, E820_TYPE_NVS,
		E820_TYPE_UNUSABLE, E820_TYPE_PMEM, E820_TYPE_PRAM,
		E820_TYPE_SOFT_RESERVED,
	};
	unsigned int i;
	u64 b;

	for (i = 0; i < ARRAY_SIZE(others); i++)
		if (e820__mapped_raw_any(start, start + size, others[i]))
			return false;
	for (b = start; b < start + size; b += SOM_BLOCK_SIZE) {
		if (!e820__mapped_raw_any(b, b + SOM_BLOCK_SIZE, E820_TYPE_RAM))
			return false;
		cond_resched();
	}
	return true;
}
#else
/*
 * Elsewhere, and on x86 kernels that export the firmware's map to KVM
 * only (7.3), a module can read no map that memmap= has not changed
 * already: a range that is reserved memory and not claimed by a driver
 * is taken as RAM, on the administrator's word.
 */
static bool som_reserved_is_ram(u64 start, u64 size)
{
	return true;
}
#endif

/**
 * som_reserved_add() - validate a reserved range and add it to the pool
 * @start: physical start, 1 GiB aligned
 * @size: length, a non-zero multiple of 1 GiB
 * @flags: SOM_SOURCE_* flags: its chunks serve unmovable claims only,
 *	its memory is of the slow tier
 * @name: the source's name, or "" for "reserved@<start>"; set on success
 *
 * Every refusal is logged with the reason.
 *
 * Context: Process context, may sleep.
 * Return: 0, -EINVAL for a misaligned range or one that is not reserved
 * RAM, -EBUSY if it overlaps the pool or another driver claims part of it,
 * or an error from som_source_add().
 */
int som_reserved_add(u64 start, u64 size, unsigned int flags, char *name)
{
	struct som_source *src;

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
	if (!som_reserved_is_reserved(start, size)) {
		pr_err_ratelimited("range %#llx@%#llx refused: not reserved memory (%s)\n",
				   size, start, SOM_RESERVE_HOW);
		return -EINVAL;
	}

	if (!som_reserved_is_ram(start, size)) {
		pr_err_ratelimited("range %#llx@%#llx refused: the firmware's memory map does not call all of it RAM (MMIO, ACPI tables or a hole?)\n",
				   size, start);
		return -EINVAL;
	}

	src = som_source_alloc_range(&som_reserved_ops, start, size, flags);
	if (!src)
		return -ENOMEM;
	src->priv = som_source_claim(start, size);
	if (!src->priv) {
		pr_err_ratelimited("range %#llx@%#llx refused: claimed by som or another driver, or it spans two entries of the memory map (see /proc/iomem)\n",
				   size, start);
		som_source_free(src);
		return -EBUSY;
	}
	if (!*name)
		snprintf(name, SOM_SOURCE_NAME_LEN, "reserved@%#llx", start);
	return som_source_add(src, name);
}

/**
 * som_reserved_add_list() - add every range of "SIZE@START[,SIZE@START...]"
 * @list: the list
 *
 * The whole list is parsed before anything is added, so a typo adds
 * nothing; ranges are then added in order until one is refused. Each
 * range becomes a movable source named reserved@<start>.
 *
 * Context: Process context, may sleep.
 * Return: 0 if every range was added, else the first error.
 */
int som_reserved_add_list(const char *list)
{
	char name[SOM_SOURCE_NAME_LEN];
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
		name[0] = '\0';
		err = som_reserved_add(start, size, 0, name);
		if (err)
			return err;
	}
	return 0;
}
