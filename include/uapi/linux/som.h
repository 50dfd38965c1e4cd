/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * som: single-owner memory.
 *
 * Each open of /dev/som is one empty region. mmap(MAP_SHARED) of it
 * reserves memory from the som pool for the calling process, which becomes
 * the region's only owner; faults map 1 GiB, 2 MiB or 4 KiB entries from
 * pre-zeroed pool memory. The ioctls below inspect such mappings.
 *
 * Every structure has fixed-width fields, explicit padding and reserved
 * space; the driver rejects unknown flags and non-zero reserved fields with
 * EINVAL and unknown commands with ENOTTY.
 */
#ifndef _UAPI_LINUX_SOM_H
#define _UAPI_LINUX_SOM_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define SOM_IOCTL_BASE		0xB9

/**
 * struct som_mapping - which page-table entry maps an address
 * @addr:	in: a virtual address inside one of the caller's mappings of
 *		this region (not necessarily page aligned)
 * @flags:	in: must be 0
 * @__pad:	must be 0
 * @__reserved:	must be 0
 * @page_size:	out: size in bytes of the entry that maps @addr now:
 *		1 GiB, 2 MiB or 4 KiB, or 0 if nothing is mapped there yet
 *		(the next access faults it in)
 * @offset:	out: the byte offset in the region that @addr maps
 *
 * smaps does not walk PFN-mapped VMAs, so this is how a process learns the
 * mapping size of its som memory. No physical address is reported.
 */
struct som_mapping {
	__u64 addr;
	__u32 flags;
	__u32 __pad;
	__u64 __reserved[2];
	__u64 page_size;
	__u64 offset;
};

/*
 * SOM_IOC_MAPPING: fill in @page_size and @offset of struct som_mapping.
 * Errors: EFAULT (bad argument pointer), EINVAL (flags or reserved fields
 * set, or @addr not in a mapping of this region in the caller's process).
 */
#define SOM_IOC_MAPPING		_IOWR(SOM_IOCTL_BASE, 0x00, struct som_mapping)

#endif /* _UAPI_LINUX_SOM_H */
