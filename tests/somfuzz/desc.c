// SPDX-License-Identifier: GPL-2.0
/*
 * The description table: every call somfuzz makes, with its arguments and
 * their kinds. Generation and mutation (prog.c) know only this table;
 * calls.c implements each entry. tests/somfuzz/dev_som.txt describes the
 * same interface in syzkaller's language.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <linux/falloc.h>
#include <linux/som.h>

#include "somfuzz.h"
#include "calls.h"

#define N(a)	((int)(sizeof(a) / sizeof((a)[0])))
#define RES(nm, r)	{ .name = nm, .kind = SF_A_RES, .res = r }
#define ENUM(nm, v)	{ .name = nm, .kind = SF_A_ENUM, .vals = v, .nvals = N(v) }
#define FLAGS(nm, v)	{ .name = nm, .kind = SF_A_FLAGS, .vals = v, .nvals = N(v) }
#define LEN(nm)		{ .name = nm, .kind = SF_A_LEN }
#define OFF(nm)		{ .name = nm, .kind = SF_A_OFF }
#define INT(nm, lo, hi)	{ .name = nm, .kind = SF_A_INT, .min = lo, .max = hi }
#define PTR(nm)		{ .name = nm, .kind = SF_A_PTR }
#define RSVD(nm)	{ .name = nm, .kind = SF_A_RSVD }

static const uint64_t open_flags[] = {
	O_RDWR, O_RDONLY, O_WRONLY, O_RDWR | O_CLOEXEC, O_RDWR | O_NONBLOCK,
};
/*
 * An enum's first value is generated half the time, a flags argument's
 * first value alone half the time (prog.c): the common case comes first.
 */
static const uint64_t file_flags[] = { 0, SOM_FILE_CLOEXEC, 1U << 1, 1U << 31 };
static const uint64_t prot_flags[] = {
	PROT_READ | PROT_WRITE, PROT_READ, PROT_WRITE, PROT_EXEC,
};
static const uint64_t map_flags[] = {
	MAP_SHARED, MAP_SHARED | MAP_POPULATE, MAP_SHARED | MAP_NORESERVE,
	MAP_SHARED_VALIDATE, MAP_SHARED | MAP_LOCKED, MAP_PRIVATE,
	MAP_SHARED | MAP_SYNC, MAP_SHARED_VALIDATE | MAP_SYNC,
	MAP_SHARED | MAP_HUGETLB, MAP_SHARED | MAP_POPULATE | MAP_LOCKED,
};
/* Where in the arena's slot a mapping starts. */
static const uint64_t misalign[] = {
	0, 4096, 1UL << 20, 2UL << 20, (1UL << 30) - (2UL << 20), 1UL << 30,
	(2UL << 20) - 4096,
};
static const uint64_t strides[] = {
	8, 4096, 64UL << 10, 2UL << 20, 1UL << 30, 4096 + 8,
};
static const uint64_t touch_modes[] = { 0, 1, 2 };	/* read, write, both */
static const uint64_t remap_flags[] = {
	0, MREMAP_MAYMOVE, MREMAP_MAYMOVE | MREMAP_FIXED,
	MREMAP_MAYMOVE | MREMAP_DONTUNMAP, MREMAP_FIXED, 8,
};
static const uint64_t remap_old[] = { 0, 1, 2 };	/* whole, 0, half */
static const uint64_t advice[] = {
	MADV_DONTNEED, MADV_NORMAL, MADV_RANDOM, MADV_SEQUENTIAL, MADV_WILLNEED, MADV_FREE, MADV_REMOVE, MADV_DONTFORK, MADV_DOFORK,
	MADV_MERGEABLE, MADV_UNMERGEABLE, MADV_HUGEPAGE, MADV_NOHUGEPAGE,
	MADV_DONTDUMP, MADV_DODUMP, MADV_WIPEONFORK, MADV_KEEPONFORK,
	MADV_COLD, MADV_PAGEOUT, MADV_POPULATE_READ, MADV_POPULATE_WRITE,
	MADV_DONTNEED_LOCKED, 25 /* MADV_COLLAPSE */, 26, 99,
};
static const uint64_t falloc_modes[] = {
	0, FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
	FALLOC_FL_PUNCH_HOLE, FALLOC_FL_ZERO_RANGE,
	FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, FALLOC_FL_COLLAPSE_RANGE,
	FALLOC_FL_INSERT_RANGE, FALLOC_FL_UNSHARE_RANGE,
	FALLOC_FL_NO_HIDE_STALE, 0x80,
};
/* calls.c: sf_file_op() */
static const uint64_t file_ops[] = { 0, 1, 2, 3, 4, 5, 6, 7, 8 };
static const uint64_t policy_modes[] = {
	SOM_POLICY_LOCAL, SOM_POLICY_PREFERRED, SOM_POLICY_BIND,
	SOM_POLICY_INTERLEAVE, 4, ~0U,
};
static const uint64_t policy_flags[] = {
	0, SOM_POLICY_UNMOVABLE, SOM_POLICY_INTERLEAVE_1G, 1U << 2,
};
static const uint64_t node_masks[] = { 0, 1, 2, 3, 4, 1ULL << 63, 7 };
static const uint64_t node_high[] = { 0, 1, 1ULL << 63 };
static const uint64_t source_kinds[] = {
	SOM_SOURCE_RESERVED, SOM_SOURCE_BUDDY, SOM_SOURCE_DAX,
	SOM_SOURCE_HUGETLB, 0, 5,
};
static const uint64_t source_flags[] = { 0, SOM_SOURCE_UNMOVABLE, 1U << 1 };
static const uint64_t nodes[] = { (uint64_t)-1, 0, 1, 2, 1023, 1024, (uint64_t)-2 };
/* calls.c: sf_source_range() and sf_source_name() */
static const uint64_t source_ranges[] = { 0, 1, 2, 3, 4, 5, 6, 7 };
static const uint64_t source_names[] = { 0, 1, 2, 3, 4, 5, 6 };
static const uint64_t remove_names[] = { 0, 1, 2, 3, 4 };
/* calls.c: sf_usage_pid() */
static const uint64_t usage_pids[] = { 0, 1, 2, 3, 4, 5, 6, 7 };
/* calls.c: sf_call_ioc_cgroup(): which fd, and limits around the pool's */
static const uint64_t cgroup_targets[] = { 0, 1, 2, 3, 4 };
static const uint64_t cgroup_flags[] = { 0, SOM_CGROUP_SET_LIMIT, 1U << 1 };
static const uint64_t cgroup_limits[] = {
	0, SOM_CGROUP_NO_LIMIT, 2UL << 20, (2UL << 20) + 4095, 64UL << 20,
	1UL << 30, 3UL << 30, 1,
};
/* calls.c: sf_call_ioc_user() */
static const uint64_t user_uids[] = { 0, 1, 2, 3 };
static const uint64_t user_flags[] = { 0, SOM_USER_NEXT, 1U << 1 };
/* calls.c: sf_raw_cmd() */
static const uint64_t raw_cmds[] = { 0, 1, 2, 3, 4, 5, 6, 7, 8 };
/* calls.c: sf_sysfs_files and their values */
static const uint64_t sysfs_files[] = { 0, 1, 2, 3 };
static const uint64_t sysfs_reads[] = {
	0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13,
};
static const uint64_t fork_waits[] = { 0, 1 };	/* wait now, at the end */
/* calls.c: sf_call_ioc_pageout() */
static const uint64_t pageout_flags[] = { 0, 1 };
/* calls.c: sf_call_swap_admin() */
static const uint64_t swap_ops[] = { 0, 1, 2, 3 };
/* calls.c: sf_call_background() */
static const uint64_t background_ops[] = { 0, 1, 2, 3, 4 };

const struct sf_call_desc sf_calls[] = {
	{ "open_dev", sf_call_open_dev, SF_CTL_NONE, SF_R_DEV, 4, 1,
	  { ENUM("flags", open_flags) } },
	{ "close", sf_call_close, SF_CTL_NONE, -1, 2, 1,
	  { RES("fd", SF_R_FD) } },
	{ "som_file", sf_call_file, SF_CTL_NONE, SF_R_FILE, 5, 6,
	  { RES("dev", SF_R_DEV), LEN("size"), FLAGS("flags", file_flags),
	    RSVD("pad"), RSVD("reserved"), PTR("ptr") } },
	{ "mmap", sf_call_mmap, SF_CTL_NONE, SF_R_MAP, 10, 7,
	  { RES("fd", SF_R_FD), LEN("len"), OFF("off"),
	    FLAGS("prot", prot_flags), ENUM("flags", map_flags),
	    INT("slot", 0, 7), ENUM("misalign", misalign) } },
	{ "touch", sf_call_touch, SF_CTL_NONE, -1, 14, 5,
	  { RES("map", SF_R_MAP), OFF("off"), LEN("len"),
	    ENUM("stride", strides), ENUM("mode", touch_modes) } },
	{ "munmap", sf_call_munmap, SF_CTL_NONE, -1, 3, 3,
	  { RES("map", SF_R_MAP), OFF("off"), LEN("len") } },
	{ "mprotect", sf_call_mprotect, SF_CTL_NONE, -1, 3, 4,
	  { RES("map", SF_R_MAP), OFF("off"), LEN("len"),
	    FLAGS("prot", prot_flags) } },
	{ "mremap", sf_call_mremap, SF_CTL_NONE, -1, 3, 5,
	  { RES("map", SF_R_MAP), LEN("new_len"), ENUM("flags", remap_flags),
	    INT("slot", 0, 7), ENUM("old", remap_old) } },
	{ "madvise", sf_call_madvise, SF_CTL_NONE, -1, 5, 4,
	  { RES("map", SF_R_MAP), OFF("off"), LEN("len"),
	    ENUM("advice", advice) } },
	{ "fallocate", sf_call_fallocate, SF_CTL_NONE, -1, 5, 4,
	  { RES("fd", SF_R_FILE), ENUM("mode", falloc_modes), OFF("off"),
	    LEN("len") } },
	{ "ftruncate", sf_call_ftruncate, SF_CTL_NONE, -1, 4, 2,
	  { RES("fd", SF_R_FD), LEN("len") } },
	{ "file_op", sf_call_file_op, SF_CTL_NONE, -1, 2, 3,
	  { RES("fd", SF_R_FD), ENUM("op", file_ops), OFF("off") } },
	{ "ioc_mapping", sf_call_ioc_mapping, SF_CTL_NONE, -1, 6, 8,
	  { RES("fd", SF_R_FD), RES("map", SF_R_MAP), OFF("off"),
	    RSVD("flags"), RSVD("pad"), RSVD("reserved0"),
	    RSVD("reserved1"), PTR("ptr") } },
	{ "ioc_policy", sf_call_ioc_policy, SF_CTL_NONE, -1, 4, 7,
	  { RES("fd", SF_R_FD), ENUM("mode", policy_modes),
	    FLAGS("flags", policy_flags), ENUM("nodes", node_masks),
	    ENUM("nodes_high", node_high), RSVD("reserved"), PTR("ptr") } },
	{ "ioc_source_add", sf_call_ioc_source_add, SF_CTL_NONE, SF_R_SRC, 1, 8,
	  { RES("dev", SF_R_DEV), ENUM("kind", source_kinds),
	    FLAGS("flags", source_flags), ENUM("node", nodes),
	    ENUM("range", source_ranges), ENUM("name", source_names),
	    RSVD("reserved"), PTR("ptr") } },
	{ "ioc_source_remove", sf_call_ioc_source_remove, SF_CTL_NONE, -1, 1, 5,
	  { RES("dev", SF_R_DEV), RES("src", SF_R_SRC),
	    ENUM("name", remove_names), RSVD("reserved"), PTR("ptr") } },
	{ "ioc_proc_usage", sf_call_ioc_proc_usage, SF_CTL_NONE, -1, 3, 5,
	  { RES("fd", SF_R_FD), ENUM("pid", usage_pids), RSVD("flags"),
	    RSVD("reserved"), PTR("ptr") } },
	{ "ioc_cgroup", sf_call_ioc_cgroup, SF_CTL_NONE, -1, 2, 6,
	  { RES("dev", SF_R_DEV), ENUM("target", cgroup_targets),
	    FLAGS("flags", cgroup_flags), ENUM("limit", cgroup_limits),
	    RSVD("reserved"), PTR("ptr") } },
	{ "ioc_user", sf_call_ioc_user, SF_CTL_NONE, -1, 1, 5,
	  { RES("dev", SF_R_DEV), ENUM("uid", user_uids),
	    FLAGS("flags", user_flags), RSVD("reserved"), PTR("ptr") } },
	{ "ioc_pageout", sf_call_ioc_pageout, SF_CTL_NONE, -1, 4, 6,
	  { RES("fd", SF_R_FD), OFF("off"), LEN("len"),
	    FLAGS("flags", pageout_flags), RSVD("reserved"), PTR("ptr") } },
	{ "swap_admin", sf_call_swap_admin, SF_CTL_NONE, -1, 1, 1,
	  { ENUM("op", swap_ops) } },
	{ "ioc_raw", sf_call_ioc_raw, SF_CTL_NONE, -1, 1, 3,
	  { RES("fd", SF_R_FD), ENUM("cmd", raw_cmds), PTR("ptr") } },
	{ "sysfs_write", sf_call_sysfs_write, SF_CTL_NONE, -1, 2, 3,
	  { ENUM("file", sysfs_files), INT("value", 0, 7),
	    RES("src", SF_R_SRC) } },
	{ "sysfs_read", sf_call_sysfs_read, SF_CTL_NONE, -1, 2, 1,
	  { ENUM("file", sysfs_reads) } },
	{ "fork", NULL, SF_CTL_FORK, -1, 1, 2,
	  { INT("calls", 1, 4), ENUM("wait", fork_waits) } },
	{ "thread", NULL, SF_CTL_THREAD, -1, 2, 1,
	  { INT("calls", 1, 5) } },
	{ "background", sf_call_background, SF_CTL_NONE, -1, 1, 3,
	  { ENUM("op", background_ops), RES("fd", SF_R_FD),
	    INT("rounds", 1, 8) } },
};

const int sf_ncalls = N(sf_calls);
_Static_assert(N(sf_calls) <= SF_MAX_DESCS, "raise SF_MAX_DESCS");

int sf_call_lookup(const char *name)
{
	int i;

	for (i = 0; i < sf_ncalls; i++)
		if (!strcmp(sf_calls[i].name, name))
			return i;
	return -1;
}
