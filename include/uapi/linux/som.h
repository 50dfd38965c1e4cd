/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * som: single-owner memory.
 *
 * Each open of /dev/som is one empty region. mmap(MAP_SHARED) of it
 * reserves memory from the som pool for the calling process, which becomes
 * the region's only owner; faults map 1 GiB, 2 MiB or 4 KiB entries from
 * pre-zeroed pool memory, and the memory goes back to the pool when it is
 * unmapped.
 *
 * SOM_IOC_FILE makes a som file instead: a regular file, like a memfd,
 * whose memory lives as long as the file and follows its size
 * (ftruncate), and that fallocate() and madvise(MADV_REMOVE) can allocate
 * and punch holes in. The same single-owner rules apply to its mappings.
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

/* struct som_file_args flags */
#define SOM_FILE_CLOEXEC	(1U << 0)	/* the new fd is close-on-exec */
#define SOM_FILE_FLAGS		(SOM_FILE_CLOEXEC)

/**
 * struct som_file_args - make a som file
 * @flags:	SOM_FILE_* flags
 * @__pad:	must be 0
 * @size:	initial size in bytes, as if set with ftruncate(); its memory
 *		is reserved from the pool now
 * @__reserved:	must be 0
 */
struct som_file_args {
	__u32 flags;
	__u32 __pad;
	__u64 size;
	__u64 __reserved[2];
};

/*
 * SOM_IOC_FILE: make a som file; the ioctl returns its new file
 * descriptor, open for reading and writing. Errors: EFAULT (bad argument
 * pointer), EINVAL (unknown flags or reserved fields set), EFBIG (@size
 * too large for a file), ENOSPC (the pool cannot reserve @size), EMFILE,
 * ENFILE, ENOMEM. The /dev/som descriptor is only the factory: the som
 * file does not depend on it staying open.
 */
#define SOM_IOC_FILE		_IOW(SOM_IOCTL_BASE, 0x01, struct som_file_args)

#endif /* _UAPI_LINUX_SOM_H */
