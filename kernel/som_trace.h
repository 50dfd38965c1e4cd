/* SPDX-License-Identifier: GPL-2.0 */
/*
 * som's tracepoints: what a fault mapped and what it cost, reservations,
 * blocks handed out and given back, zeroing, moves, sources and memory
 * errors. Defined in trace.c; Documentation/admin-guide.md shows how to
 * read them. Every event is in the "som" system of tracefs.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM som

#if !defined(_SOM_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _SOM_TRACE_H

#include <linux/tracepoint.h>

/*
 * A fault on a som mapping at @address (page offset @pgoff of its region)
 * that tried an entry of @size bytes: @pfn is what it mapped (0 if none),
 * @ret the vm_fault_t (0x100 NOPAGE: mapped; 0x800 FALLBACK: the core
 * tries a smaller entry), @ns how long it took, reservation, allocation
 * and zeroing included.
 */
TRACE_EVENT(som_fault,
	    TP_PROTO(unsigned long address, unsigned long pgoff,
		     unsigned long size, unsigned long pfn, unsigned int ret, u64 ns),
	    TP_ARGS(address, pgoff, size, pfn, ret, ns),
	    TP_STRUCT__entry(__field(unsigned long, address)
			     __field(unsigned long, pgoff)
			     __field(unsigned long, size)
			     __field(unsigned long, pfn)
			     __field(unsigned int, ret)
			     __field(u64, ns)),
	    TP_fast_assign(__entry->address = address;
			   __entry->pgoff = pgoff;
			   __entry->size = size;
			   __entry->pfn = pfn;
			   __entry->ret = ret;
			   __entry->ns = ns;),
	    TP_printk("address=%#lx pgoff=%#lx size=%lu pfn=%#lx ret=%#x ns=%llu",
		      __entry->address, __entry->pgoff, __entry->size, __entry->pfn,
		      __entry->ret, __entry->ns)
);

/* @nr 2 MiB blocks reserved (@err 0) or refused (@err -ENOMEM). */
TRACE_EVENT(som_reserve,
	    TP_PROTO(unsigned long nr, int err),
	    TP_ARGS(nr, err),
	    TP_STRUCT__entry(__field(unsigned long, nr)
			     __field(int, err)),
	    TP_fast_assign(__entry->nr = nr;
			   __entry->err = err;),
	    TP_printk("blocks=%lu err=%d", __entry->nr, __entry->err)
);

/* @nr reserved 2 MiB blocks given back unused. */
TRACE_EVENT(som_unreserve,
	    TP_PROTO(unsigned long nr),
	    TP_ARGS(nr),
	    TP_STRUCT__entry(__field(unsigned long, nr)),
	    TP_fast_assign(__entry->nr = nr;),
	    TP_printk("blocks=%lu", __entry->nr)
);

/*
 * @nr blocks from block frame number @bfn (physical address >> 21) on
 * node @nid handed to a mapping (1: a block, 512: a whole chunk), @dirty
 * of them zeroed on the way because the worker had not reached them.
 */
TRACE_EVENT(som_alloc,
	    TP_PROTO(unsigned long bfn, unsigned int nr, int nid,
		     unsigned int dirty),
	    TP_ARGS(bfn, nr, nid, dirty),
	    TP_STRUCT__entry(__field(unsigned long, bfn)
			     __field(unsigned int, nr)
			     __field(int, nid)
			     __field(unsigned int, dirty)),
	    TP_fast_assign(__entry->bfn = bfn;
			   __entry->nr = nr;
			   __entry->nid = nid;
			   __entry->dirty = dirty;),
	    TP_printk("bfn=%#lx blocks=%u nid=%d zeroed=%u", __entry->bfn,
		      __entry->nr, __entry->nid, __entry->dirty)
);

/* Block @bfn given back to the pool; @retired: kept out for an error. */
TRACE_EVENT(som_free,
	    TP_PROTO(unsigned long bfn, bool retired),
	    TP_ARGS(bfn, retired),
	    TP_STRUCT__entry(__field(unsigned long, bfn)
			     __field(bool, retired)),
	    TP_fast_assign(__entry->bfn = bfn;
			   __entry->retired = retired;),
	    TP_printk("bfn=%#lx retired=%d", __entry->bfn, __entry->retired)
);

/*
 * Block @bfn zeroed in @ns: @ahead by the zeroing worker (or a source
 * leaving), otherwise by the fault or fallocate() that took it.
 */
TRACE_EVENT(som_zero,
	    TP_PROTO(unsigned long bfn, u64 ns, bool ahead),
	    TP_ARGS(bfn, ns, ahead),
	    TP_STRUCT__entry(__field(unsigned long, bfn)
			     __field(u64, ns)
			     __field(bool, ahead)),
	    TP_fast_assign(__entry->bfn = bfn;
			   __entry->ns = ns;
			   __entry->ahead = ahead;),
	    TP_printk("bfn=%#lx bytes=2097152 ns=%llu ahead=%d", __entry->bfn,
		      __entry->ns, __entry->ahead)
);

/*
 * The data of 2 MiB index @idx of a region moved from block @from to
 * block @to (migration, compaction, evacuation, a memory error).
 */
TRACE_EVENT(som_move,
	    TP_PROTO(unsigned long idx, unsigned long from, unsigned long to),
	    TP_ARGS(idx, from, to),
	    TP_STRUCT__entry(__field(unsigned long, idx)
			     __field(unsigned long, from)
			     __field(unsigned long, to)),
	    TP_fast_assign(__entry->idx = idx;
			   __entry->from = from;
			   __entry->to = to;),
	    TP_printk("idx=%#lx from=%#lx to=%#lx", __entry->idx, __entry->from,
		      __entry->to)
);

/* Source @name of @gib GiB added to the pool, or removed (@err). */
TRACE_EVENT(som_source,
	    TP_PROTO(const char *name, bool add, unsigned long gib, int err),
	    TP_ARGS(name, add, gib, err),
	    TP_STRUCT__entry(__string(name, name)
			     __field(bool, add)
			     __field(unsigned long, gib)
			     __field(int, err)),
	    TP_fast_assign(__assign_str(name);
			   __entry->add = add;
			   __entry->gib = gib;
			   __entry->err = err;),
	    TP_printk("name=%s %s gib=%lu err=%d", __get_str(name),
		      __entry->add ? "add" : "remove", __entry->gib, __entry->err)
);

/*
 * A memory error at page @pfn reported by @how: @state is what the pool
 * found (som_pool_poison()), @err what handling it came to.
 */
TRACE_EVENT(som_poison,
	    TP_PROTO(unsigned long pfn, const char *how, int state, int err),
	    TP_ARGS(pfn, how, state, err),
	    TP_STRUCT__entry(__field(unsigned long, pfn)
			     __string(how, how)
			     __field(int, state)
			     __field(int, err)),
	    TP_fast_assign(__entry->pfn = pfn;
			   __assign_str(how);
			   __entry->state = state;
			   __entry->err = err;),
	    TP_printk("pfn=%#lx how=%s state=%d err=%d", __entry->pfn,
		      __get_str(how), __entry->state, __entry->err)
);

/*
 * An aging scan (age_scan.c) went over @regions regions and @gibs GiBs
 * holding memory, in @ns; @err is why it stopped early (-EINTR, -ENOMEM).
 */
TRACE_EVENT(som_age_scan,
	    TP_PROTO(unsigned long regions, unsigned long gibs, u64 ns,
		     int err),
	    TP_ARGS(regions, gibs, ns, err),
	    TP_STRUCT__entry(__field(unsigned long, regions)
			     __field(unsigned long, gibs)
			     __field(u64, ns)
			     __field(int, err)),
	    TP_fast_assign(__entry->regions = regions;
			   __entry->gibs = gibs;
			   __entry->ns = ns;
			   __entry->err = err;),
	    TP_printk("regions=%lu gibs=%lu ns=%llu err=%d", __entry->regions,
		      __entry->gibs, __entry->ns, __entry->err)
);

TRACE_EVENT(som_tier_pass,
	    TP_PROTO(unsigned long demoted, unsigned long promoted,
		     unsigned long short_of_room, u64 ns, int err),
	    TP_ARGS(demoted, promoted, short_of_room, ns, err),
	    TP_STRUCT__entry(__field(unsigned long, demoted)
			     __field(unsigned long, promoted)
			     __field(unsigned long, short_of_room)
			     __field(u64, ns)
			     __field(int, err)),
	    TP_fast_assign(__entry->demoted = demoted;
			   __entry->promoted = promoted;
			   __entry->short_of_room = short_of_room;
			   __entry->ns = ns;
			   __entry->err = err;),
	    TP_printk("demoted=%lu promoted=%lu short=%lu ns=%llu err=%d",
		      __entry->demoted, __entry->promoted,
		      __entry->short_of_room, __entry->ns, __entry->err)
);

#endif /* _SOM_TRACE_H */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE som_trace
#include <trace/define_trace.h>
