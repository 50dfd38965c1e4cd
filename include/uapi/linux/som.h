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
 * @addr:	in: a virtual address inside any som mapping of the caller
 *		(not necessarily page aligned, not necessarily of the region
 *		the ioctl is issued on)
 * @flags:	in: must be 0
 * @__pad:	must be 0
 * @__reserved:	must be 0
 * @page_size:	out: size in bytes of the entry that maps @addr now:
 *		1 GiB, 2 MiB or 4 KiB, or 0 if nothing is mapped there yet
 *		(the next access faults it in)
 * @offset:	out: the byte offset in the region that @addr maps
 * @node:	out: the NUMA node of the memory behind @addr, or -1 if the
 *		region has no memory there yet
 * @out_flags:	out: SOM_MAPPING_UNMOVABLE if that memory is in an
 *		unmovable chunk, SOM_MAPPING_SLOW if it is of the slow tier
 *
 * smaps does not walk PFN-mapped VMAs, so this is how a process learns the
 * mapping size and placement of its som memory. No physical address is
 * reported.
 */
struct som_mapping {
	__u64 addr;
	__u32 flags;
	__u32 __pad;
	__u64 __reserved[2];
	__u64 page_size;
	__u64 offset;
	__s32 node;
	__u32 out_flags;
};

/* struct som_mapping out_flags */
#define SOM_MAPPING_UNMOVABLE	(1U << 0)
#define SOM_MAPPING_SLOW	(1U << 1)	/* memory of the slow tier */

/*
 * SOM_IOC_MAPPING, on /dev/som or any som file: fill in the out fields of
 * struct som_mapping. @offset is the offset in the region mapped at @addr.
 * Errors: EFAULT (bad argument pointer), EINVAL (flags or reserved fields
 * set, or @addr not in a som mapping of the caller's process).
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

/* Placement policies (struct som_policy mode), as mbind() has them */
#define SOM_POLICY_LOCAL	0	/* the faulting CPU's node first */
#define SOM_POLICY_PREFERRED	1	/* the one node in @nodes first */
#define SOM_POLICY_BIND		2	/* only the nodes in @nodes */
#define SOM_POLICY_INTERLEAVE	3	/* round robin over @nodes */

/* struct som_policy flags */
#define SOM_POLICY_UNMOVABLE	(1U << 0)	/* physically stable memory */
#define SOM_POLICY_INTERLEAVE_1G (1U << 1)	/* interleave by 1 GiB, not 2 MiB */
#define SOM_POLICY_FLAGS	(SOM_POLICY_UNMOVABLE | SOM_POLICY_INTERLEAVE_1G)

#define SOM_MAX_NODES		1024

/**
 * struct som_policy - where a region's memory comes from
 * @mode:	SOM_POLICY_*
 * @flags:	SOM_POLICY_* flags
 * @nodes:	bitmap of NUMA nodes, bit n of @nodes[n / 64] for node n:
 *		exactly one node for PREFERRED, at least one for BIND and
 *		INTERLEAVE, none for LOCAL
 * @__reserved:	must be 0
 *
 * With SOM_POLICY_UNMOVABLE the region's blocks come only from chunks the
 * administrator added as unmovable, and are never moved: for memory whose
 * physical address a device holds.
 */
struct som_policy {
	__u32 mode;
	__u32 flags;
	__u64 nodes[SOM_MAX_NODES / 64];
	__u64 __reserved[2];
};

/*
 * SOM_IOC_POLICY, on a /dev/som or som file descriptor: set the placement
 * of the region's memory. Allowed only while the region holds no memory
 * (before the first mmap() of /dev/som; a som file of size 0), and only to
 * its owner once it has one. Errors: EFAULT, EINVAL (bad mode, flags,
 * reserved fields, or a node that does not exist), EBUSY (the region
 * already holds memory), EPERM (another process owns the region).
 */
#define SOM_IOC_POLICY		_IOW(SOM_IOCTL_BASE, 0x02, struct som_policy)

/* Pool sources (struct som_source_args kind) */
#define SOM_SOURCE_RESERVED	1	/* a boot-reserved range (memmap=) */
#define SOM_SOURCE_HUGETLB	2	/* the 1 GiB pages of a hugetlbfs file */
#define SOM_SOURCE_BUDDY	3	/* 1 GiB runs from the page allocator */
#define SOM_SOURCE_DAX		4	/* a device DAX range (pmem, CXL) */

/* struct som_source_args flags */
#define SOM_SOURCE_UNMOVABLE	(1U << 0)	/* chunks for unmovable claims */
#define SOM_SOURCE_SLOW		(1U << 1)	/* of the slow tier (CXL, far) */
#define SOM_SOURCE_FLAGS	(SOM_SOURCE_UNMOVABLE | SOM_SOURCE_SLOW)

#define SOM_SOURCE_NAME_LEN	32

/**
 * struct som_source_args - add memory to the pool
 * @kind:	SOM_SOURCE_*
 * @flags:	SOM_SOURCE_* flags
 * @fd:		HUGETLB: a file on hugetlbfs with 1 GiB pages, every page
 *		allocated (fallocate), not mapped; som keeps its own reference
 *		and its pages until the source is removed. Otherwise -1.
 * @node:	BUDDY: the node to allocate from, or -1 for any. Otherwise -1.
 * @start:	RESERVED, DAX: physical start, 1 GiB aligned. Otherwise 0.
 * @size:	RESERVED, DAX, BUDDY: bytes, a non-zero multiple of 1 GiB.
 *		HUGETLB: 0 (the whole file).
 * @name:	in: the source's name (letters, digits, '.', '-', '_', ':',
 *		'@'), or empty to let som choose one; out: the name. A DAX
 *		source is named after its device, e.g. "dax0.0".
 * @__reserved:	must be 0
 */
struct som_source_args {
	__u32 kind;
	__u32 flags;
	__s32 fd;
	__s32 node;
	__u64 start;
	__u64 size;
	char name[SOM_SOURCE_NAME_LEN];
	__u64 __reserved[4];
};

/*
 * SOM_IOC_SOURCE_ADD, on /dev/som, CAP_SYS_ADMIN: add a source's chunks
 * to the pool. All or nothing. Errors: EPERM, EFAULT, EINVAL (bad kind,
 * flags, fields, or memory that is not what @kind says), EEXIST (the name
 * is taken), EBUSY (the memory overlaps the pool or is claimed by a
 * driver), EBADF (@fd), ENOMEM (the page allocator could not provide
 * @size), ENODEV (a kind this kernel cannot provide).
 */
#define SOM_IOC_SOURCE_ADD	_IOWR(SOM_IOCTL_BASE, 0x03, struct som_source_args)

/**
 * struct som_source_name - names a source
 * @name:	the name, NUL-terminated
 * @__reserved:	must be 0
 */
struct som_source_name {
	char name[SOM_SOURCE_NAME_LEN];
	__u64 __reserved[2];
};

/*
 * SOM_IOC_SOURCE_REMOVE, on /dev/som, CAP_SYS_ADMIN: take a source's
 * chunks out of the pool and give the memory back to where it came from.
 * Memory of it in use is moved to the rest of the pool first, while its
 * owners run. All or nothing (blocks already moved stay where they went).
 * The memory leaves the pool zeroed. Errors: EPERM, EFAULT, EINVAL,
 * ENOENT (no such source), ENOSPC (the rest of the pool, on the nodes
 * the owners' policies allow, has no room for the memory in use), EBUSY
 * (an unmovable chunk of it is in use; or the pool's other chunks of the
 * same node and kind could not cover what mappings have reserved there;
 * or an owner stayed half way through munmap() for a second), EINTR.
 */
#define SOM_IOC_SOURCE_REMOVE	_IOW(SOM_IOCTL_BASE, 0x04, struct som_source_name)

/**
 * struct som_proc_usage - a process's som memory
 * @pid:	in: the process (thread group id), or 0 for the caller
 * @flags:	in: must be 0
 * @__reserved:	must be 0
 * @mappings:	out: its som mappings (VMAs)
 * @mapped_bytes: out: their total size
 * @entries_1g:	out: 1 GiB page-table entries that map som memory in it now
 * @entries_2m:	out: 2 MiB entries
 * @entries_4k:	out: 4 KiB entries
 *
 * smaps and numa_maps do not walk PFN-mapped VMAs: this is the
 * per-process view, as numastat -p has it for ordinary memory.
 */
struct som_proc_usage {
	__s32 pid;
	__u32 flags;
	__u64 __reserved[2];
	__u64 mappings;
	__u64 mapped_bytes;
	__u64 entries_1g;
	__u64 entries_2m;
	__u64 entries_4k;
};

/*
 * SOM_IOC_PROC_USAGE, on /dev/som: fill in the out fields for @pid. Any
 * process may ask about itself; asking about another one needs
 * CAP_SYS_PTRACE. Errors: EFAULT, EINVAL (flags or reserved fields set,
 * negative @pid), ESRCH (no such process, or it has no memory: a kernel
 * thread or a zombie), EPERM, EINTR.
 */
#define SOM_IOC_PROC_USAGE	_IOWR(SOM_IOCTL_BASE, 0x05, struct som_proc_usage)

/* struct som_poison flags */
#define SOM_POISON_ADDR		(1U << 0)	/* the page at @addr */
#define SOM_POISON_LOOKUP	(1U << 1)	/* report @phys, poison nothing */
#define SOM_POISON_FORGET	(1U << 2)	/* forget @phys .. + @len */
#define SOM_POISON_FLAGS	(SOM_POISON_ADDR | SOM_POISON_LOOKUP | \
				 SOM_POISON_FORGET)

/**
 * struct som_poison - declare a page of som memory bad, as a memory error
 *	would
 * @addr:	in, with SOM_POISON_ADDR: an address in a som mapping of the
 *		caller, whose page holds memory already (it was touched)
 * @phys:	in, without SOM_POISON_ADDR: a physical address in the pool;
 *		out: the physical address of the page
 * @flags:	in: SOM_POISON_* flags
 * @__pad:	must be 0
 * @len:	in, with SOM_POISON_FORGET: the length of the range at @phys;
 *		otherwise must be 0
 * @__reserved:	must be 0
 */
struct som_poison {
	__u64 addr;
	__u64 phys;
	__u32 flags;
	__u32 __pad;
	__u64 len;
	__u64 __reserved;
};

/*
 * SOM_IOC_POISON, on /dev/som, CAP_SYS_ADMIN: handle the 4 KiB page at
 * @addr or @phys as a machine check reporting an uncorrected error there
 * would (Documentation/admin-guide.md, "Memory errors"): its 2 MiB block
 * never leaves the pool again, and if a mapping holds it, the page becomes
 * a hole that signals SIGBUS (BUS_MCEERR_AR) while the rest of the block's
 * data moves to a healthy block. With SOM_POISON_LOOKUP only @phys is
 * reported, for a test that injects a real machine check there.
 *
 * The pool remembers the poisoned pages of memory that leaves it (a
 * source removed), and retires their blocks again if the same memory is
 * added back. With SOM_POISON_FORGET (alone), for memory that was
 * replaced, the remembered pages in @phys .. @phys + @len - 1 are
 * forgotten; none of that range may be in the pool.
 *
 * Errors: EPERM, EFAULT, EINVAL (flags, reserved fields, @addr not in a
 * som mapping of the caller, @phys not in the pool, or with
 * SOM_POISON_FORGET: another flag, @len 0, @phys or @len not a multiple
 * of 4096, or the range wraps), ENODATA (nothing backs @addr yet),
 * EHWPOISON (@addr is a hole an error left already), EBUSY (with
 * SOM_POISON_FORGET: part of the range is in the pool), ENOMEM, EINTR.
 */
#define SOM_IOC_POISON		_IOWR(SOM_IOCTL_BASE, 0x06, struct som_poison)

/* Ages a struct som_proc_ages reports: 0 .. SOM_AGE_NR - 1 scans idle. */
#define SOM_AGE_NR		15
#define SOM_AGE_NONE		0xff	/* in @map: no som block there */

/**
 * struct som_proc_ages - how long a process's som memory has gone unused
 * @pid:	in: the process (thread group id), or 0 for the caller
 * @flags:	in: must be 0
 * @addr:	in: with @len, a range of the process's addresses to report
 *		2 MiB at a time in @map; both multiples of 2 MiB
 * @len:	in: the range's size, or 0 for no @map
 * @map:	in: the address of @len / 2 MiB bytes of the caller's: out,
 *		the age of the 2 MiB index of a som mapping that backs the
 *		first byte of each 2 MiB of the range, or SOM_AGE_NONE where
 *		no som mapping or no block of memory is
 * @scans:	out: aging scans since som.ko was loaded
 * @idle_bytes: out: of the som memory the process owns (the regions whose
 *		first mapping it made), bytes idle for N scans, N the index;
 *		the last counts that many or more
 * @__reserved:	must be 0
 *
 * The age of 2 MiB of memory is the number of aging scans
 * (/sys/kernel/mm/som/aging/) since the owner last touched it through a
 * page-table entry of its own: a scan unmaps the owner's entries, and the
 * fault that maps one again tells that it was used.
 */
struct som_proc_ages {
	__s32 pid;
	__u32 flags;
	__u64 addr;
	__u64 len;
	__u64 map;
	__u64 scans;
	__u64 idle_bytes[SOM_AGE_NR];
	__u64 __reserved[2];
};

/*
 * SOM_IOC_PROC_AGES, on /dev/som: fill in the out fields for @pid. Any
 * process may ask about itself; asking about another one needs
 * CAP_SYS_PTRACE. Errors: EFAULT, EINVAL (flags or reserved fields set,
 * negative @pid, @addr or @len not a multiple of 2 MiB, or a range that
 * wraps), ESRCH, EPERM, EINTR.
 */
#define SOM_IOC_PROC_AGES	_IOWR(SOM_IOCTL_BASE, 0x07, struct som_proc_ages)

/* struct som_cgroup flags */
#define SOM_CGROUP_SET_LIMIT	(1U << 0)	/* set the limit to @limit */
#define SOM_CGROUP_FLAGS	SOM_CGROUP_SET_LIMIT
#define SOM_CGROUP_NO_LIMIT	(~(__u64)0)	/* @limit: none of its own */

/**
 * struct som_cgroup - a cgroup's som memory and its limit
 * @cgroup_fd:	in: a file descriptor of a cgroup v2 directory
 * @flags:	in: SOM_CGROUP_* flags
 * @limit:	in, with SOM_CGROUP_SET_LIMIT (ignored without): the most
 *		som memory, in bytes, that the cgroup and its descendants may
 *		hold (rounded down to a multiple of 2 MiB), or
 *		SOM_CGROUP_NO_LIMIT; out: the limit, or SOM_CGROUP_NO_LIMIT
 *		if the cgroup has none of its own (its ancestors' still apply)
 * @usage:	out: bytes of som memory charged to the cgroup and its
 *		descendants now
 * @peak:	out: the most @usage has been since som.ko was loaded (or
 *		since it was 0 with no limit set)
 * @failures:	out: reservations refused because they would have taken
 *		@usage past @limit
 * @__reserved:	must be 0
 *
 * som memory is charged to the cgroup of the task that makes a region's
 * first reservation (the first mmap() of /dev/som, or a som file's
 * creation or first growth), 2 MiB per index the region holds, reserved
 * or backed. The region stays bound to that cgroup: what it reserves
 * later (another mmap() of the same open /dev/som, a som file grown or
 * its holes filled, by whichever task) is charged there too, after the
 * task moved or in another task's hands. The charge goes when the memory
 * goes back to the pool.
 */
struct som_cgroup {
	__s32 cgroup_fd;
	__u32 flags;
	__u64 limit;
	__u64 usage;
	__u64 peak;
	__u64 failures;
	__u64 __reserved[2];
};

/*
 * SOM_IOC_CGROUP, on /dev/som: fill in the out fields for the cgroup at
 * @cgroup_fd, after setting its limit with SOM_CGROUP_SET_LIMIT
 * (CAP_SYS_ADMIN). A reservation that would take any cgroup on the way
 * to the root past its limit fails whole, with ENOMEM (mmap()) or ENOSPC
 * (a som file's growth; a fault that fills a hole of a som file gets
 * SIGBUS), and counts as a failure of that cgroup. A limit below the usage
 * takes nothing away; it stops new reservations. Errors: EFAULT, EINVAL
 * (unknown flags or reserved fields set), EBADF (@cgroup_fd is not a
 * cgroup v2 directory), ENOENT (the cgroup was removed), EPERM, ENOMEM,
 * EOPNOTSUPP (a kernel without cgroups).
 */
#define SOM_IOC_CGROUP		_IOWR(SOM_IOCTL_BASE, 0x08, struct som_cgroup)

/* struct som_user flags */
#define SOM_USER_NEXT		(1U << 0)	/* the first user from @uid on */
#define SOM_USER_FLAGS		SOM_USER_NEXT

/**
 * struct som_user - a user's som memory
 * @uid:	in: a user id, in the caller's user namespace; out, with
 *		SOM_USER_NEXT: the lowest user id from @uid on that holds som
 *		memory (the next call asks from @uid + 1)
 * @flags:	in: SOM_USER_* flags
 * @limit:	out: the limit each user's som memory has
 *		(/sys/kernel/mm/som/uid_limit_bytes), or SOM_CGROUP_NO_LIMIT
 * @usage:	out: bytes of som memory charged to the user now
 * @peak:	out: the most @usage has been while the user held som memory
 * @failures:	out: reservations refused because of @limit, likewise
 * @__reserved:	must be 0
 *
 * som memory is charged to the user (real uid) of the task that makes a
 * region's first reservation, as it is to the task's cgroup
 * (struct som_cgroup), and stays there.
 */
struct som_user {
	__u32 uid;
	__u32 flags;
	__u64 limit;
	__u64 usage;
	__u64 peak;
	__u64 failures;
	__u64 __reserved[2];
};

/*
 * SOM_IOC_USER, on /dev/som: fill in the out fields for @uid, or with
 * SOM_USER_NEXT for the first user from @uid on that holds som memory.
 * Anyone may ask about any user. Errors: EFAULT, EINVAL (unknown flags,
 * reserved fields set, without SOM_USER_NEXT: @uid not mapped in the
 * caller's user namespace),
 * ENOENT (with SOM_USER_NEXT: no such user), EOPNOTSUPP (a kernel without
 * cgroups, which som's accounting is built on).
 */
#define SOM_IOC_USER		_IOWR(SOM_IOCTL_BASE, 0x09, struct som_user)

/**
 * struct som_swap_args - a backing store for som memory paged out
 * @fd:		a regular file or a block device, open for reading and
 *		writing (som opens it again for itself: what is done with
 *		@fd afterwards changes nothing)
 * @flags:	must be 0
 * @size:	bytes of it to use, from offset 0: a multiple of 2 MiB, at
 *		least 2 MiB and at most 64 TiB (a block device must hold it;
 *		a regular file grows as it is written)
 * @__reserved:	must be 0
 */
struct som_swap_args {
	__s32 fd;
	__u32 flags;
	__u64 size;
	__u64 __reserved[2];
};

/*
 * SOM_IOC_SWAP_ADD, on /dev/som, CAP_SYS_ADMIN: make @fd the store that
 * som memory is paged out to, 2 MiB at a time. The store holds the data
 * of every owner that pages out: give it to root alone (mode 0600 on a
 * file system only root can write, or a block device). A block device is
 * held exclusively while it is the store. Errors: EPERM, EFAULT, EINVAL
 * (flags, reserved fields, @size; a file that is not a regular file or
 * block device, is a som file, is on neither tmpfs nor a file system on a
 * block device (FUSE included), or was opened without read and write
 * access; a block device smaller than @size), EPERM (an append-only or
 * immutable file), EBADF (@fd), EBUSY
 * (a store is in place already; the file is a kernel swap file; the
 * block device is mounted or held exclusively), ENOSPC (the file system
 * cannot allocate @size), ENOMEM.
 */
#define SOM_IOC_SWAP_ADD	_IOW(SOM_IOCTL_BASE, 0x0a, struct som_swap_args)

/*
 * SOM_IOC_SWAP_REMOVE, on /dev/som, CAP_SYS_ADMIN: read every block paged
 * out back into the pool, then let the store go. Errors: EPERM, ENOENT
 * (no store), EIO (a block could not be read back: the store stays, and
 * so does every block not read yet; the owners get SIGBUS where they
 * touch the block until they unmap or punch it), EBUSY (a region being
 * closed held slots for more than a second), EINTR (a fatal signal: what
 * was read back stays in the pool).
 */
#define SOM_IOC_SWAP_REMOVE	_IO(SOM_IOCTL_BASE, 0x0b)

/**
 * struct som_pageout - page a range of a region out to the store
 * @offset:	in: byte offset in the region (the file's offset of a
 *		mapping), a multiple of 2 MiB
 * @length:	in: bytes, a multiple of 2 MiB
 * @flags:	in: must be 0
 * @paged_out:	out: bytes paged out by this call
 * @__reserved:	must be 0
 */
struct som_pageout {
	__u64 offset;
	__u64 length;
	__u64 flags;
	__u64 paged_out;
	__u64 __reserved[2];
};

/*
 * SOM_IOC_PAGEOUT, on /dev/som or a som file, by the process that owns
 * the region (any holder of a som file nobody maps yet): write the 2 MiB
 * blocks of the range that hold memory to the store and give them back
 * to the pool, like MADV_PAGEOUT. The range keeps its reservation: the
 * next touch of a block reads it back into a new block (the fault may
 * sleep; a fatal signal stops it; a read that fails is SIGBUS), and
 * munmap(), punching or truncating it frees its place in the store.
 * Errors: EFAULT, EINVAL (alignment, flags, reserved fields, a range
 * that wraps), EPERM (not the owner), ENODEV (no store, or it is being
 * removed), ENOSPC (the store is full), EIO (a write failed), EBUSY (the
 * region's memory is unmovable, or stayed half way through munmap()),
 * ENOMEM, EINTR. @paged_out counts what was paged out before an error.
 */
#define SOM_IOC_PAGEOUT		_IOWR(SOM_IOCTL_BASE, 0x0c, struct som_pageout)

#endif /* _UAPI_LINUX_SOM_H */
