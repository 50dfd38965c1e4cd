// SPDX-License-Identifier: GPL-2.0
/*
 * Paging out under pressure. An overcommitting pool (pool_overcommit.c)
 * promises blocks it does not have; a fault that needs one when none is
 * unpromised cannot page one out itself, since it holds its mm's
 * mmap_lock (or its VMA's lock) and the region lock that a page-out of
 * its own memory needs. It asks this worker for a pass of reclaim
 * instead (som_reclaim(): the coldest blocks of every movable region),
 * drops its locks, waits for the pass, killably, and faults again.
 * The worker also runs when the pool falls under its low watermark
 * (free_low_bytes) while it overcommits, so that free blocks are at hand
 * before faults have to wait, as kswapd keeps the zones' watermarks.
 *
 * A fault that comes back to find that the last pass paged out nothing
 * (nothing movable is left, or the store is full) gets SIGBUS, as a
 * fault of a full tmpfs would: waiting again would wait for ever.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/delay.h>
#include <linux/minmax.h>
#include <linux/nodemask.h>
#include <linux/sched/signal.h>
#include <linux/spinlock.h>
#include <linux/wait.h>
#include <linux/workqueue.h>

#include "pool.h"
#include "som.h"
#include "swap.h"

/* Blocks a pass pages out at least, when faults wait: 16 MiB. */
#define SOM_PRESSURE_BATCH	8

/**
 * struct som_pressure - the reclaim worker
 * @lock:	protects every field but @wait, @work and @wq
 * @asked:	passes asked for so far
 * @want:	blocks the faults that asked since the last pass began want
 * @nodes:	the nodes they want them on, if they are all bound to some
 * @anywhere:	some want them on any node
 * @done:	the last pass asked for that ended: a pass answers every
 *		request made before it began
 * @fruitless:	whether the last pass paged out nothing
 * @wait:	woken at the end of each pass
 * @work:	the worker
 * @wq:		its queue, which may have to run while memory is short
 */
struct som_pressure {
	spinlock_t lock;		/* see above */
	unsigned long asked;
	unsigned long want;
	nodemask_t nodes;
	bool anywhere;
	unsigned long done;
	bool fruitless;
	wait_queue_head_t wait;
	struct work_struct work;
	struct workqueue_struct *wq;
};

static struct som_pressure som_pressure;

/**
 * struct som_pressure_stats - what pressure has done since load
 * @passes:	passes of the worker
 * @reclaimed_bytes: paged out by them
 * @waits:	faults that waited for a pass
 * @failures:	faults that got SIGBUS because nothing could be paged out
 */
static struct {
	atomic_long_t passes;
	atomic_long_t reclaimed_bytes;
	atomic_long_t waits;
	atomic_long_t failures;
} som_pressure_stats;

/* Tries of a pass that pages out nothing (a region between states). */
#define SOM_PRESSURE_TRIES	3

/*
 * Page out @want blocks (on @nodes, if not NULL) and, for the low
 * watermark, @low (anywhere), a few tries if nothing could be. Returns
 * the bytes paged out for @want; *@all gets them all.
 */
static u64 som_pressure_pass(unsigned long want, unsigned long low,
			     const nodemask_t *nodes, u64 *all)
{
	u64 bytes = 0, more = 0;
	int tries;

	for (tries = 0; tries < SOM_PRESSURE_TRIES; tries++) {
		if (tries)
			msleep(20);
		if (want && !bytes)
			som_reclaim((u64)want << SOM_BLOCK_SHIFT, nodes,
				    &bytes);
		if (low > (bytes + more) >> SOM_BLOCK_SHIFT && !more)
			som_reclaim((u64)(low - (bytes >> SOM_BLOCK_SHIFT)) <<
				    SOM_BLOCK_SHIFT, NULL, &more);
		if ((!want || bytes) && (!low || bytes + more))
			break;
	}
	*all = bytes + more;
	atomic_long_inc(&som_pressure_stats.passes);
	atomic_long_add(*all, &som_pressure_stats.reclaimed_bytes);
	return bytes;
}

static void som_pressure_work(struct work_struct *work)
{
	struct som_pressure *p = &som_pressure;
	unsigned long pass, want, low;
	nodemask_t nodes;
	bool anywhere, more;
	u64 bytes, all;

	for (;;) {
		spin_lock(&p->lock);
		pass = p->asked;
		want = p->want;
		nodes = p->nodes;
		anywhere = p->anywhere;
		p->want = 0;
		nodes_clear(p->nodes);
		p->anywhere = false;
		spin_unlock(&p->lock);
		low = som_pool_low_deficit(&som_pool);
		/* Nothing asked (a request a pass already answered): done. */
		if (!want && !low)
			break;
		if (want)
			want = max(want, SOM_PRESSURE_BATCH);
		/* A mask torn by a policy changing meanwhile: anywhere. */
		if (nodes_empty(nodes))
			anywhere = true;
		bytes = som_pressure_pass(want, low, anywhere ? NULL : &nodes,
					  &all);
		spin_lock(&p->lock);
		if (want) {
			p->done = pass;
			p->fruitless = !bytes;
		}
		more = p->asked != pass;
		spin_unlock(&p->lock);
		wake_up_all(&p->wait);
		/* Under the watermark still: go on while it helps. */
		if (!more && (!all || !som_pool_low_deficit(&som_pool)))
			break;
		cond_resched();
	}
}

/* The pool went under its low watermark while it overcommits. */
static void som_pressure_low(struct som_pool *pool)
{
	queue_work(som_pressure.wq, &som_pressure.work);
}

/**
 * som_pressure_kick() - ask for a pass of reclaim
 * @blocks: blocks the caller needs
 * @claim: the claim they are for: a claim bound to some nodes needs them
 *	there (read without its lock: a policy changing meanwhile costs a
 *	pass that pages out in the wrong place)
 *
 * Return: the pass that answers the request, for som_pressure_wait().
 */
unsigned long som_pressure_kick(unsigned long blocks,
				const struct som_claim *claim)
{
	struct som_pressure *p = &som_pressure;
	unsigned long pass;
	nodemask_t nodes;
	bool bound;

	bound = READ_ONCE(claim->mode) == SOM_CLAIM_BIND;
	if (bound)
		nodes = claim->nodes;
	spin_lock(&p->lock);
	p->want += blocks;
	if (bound)
		nodes_or(p->nodes, p->nodes, nodes);
	else
		p->anywhere = true;
	pass = ++p->asked;
	spin_unlock(&p->lock);
	queue_work(p->wq, &p->work);
	return pass;
}

static bool som_pressure_answered(unsigned long pass)
{
	return (long)(READ_ONCE(som_pressure.done) - pass) >= 0;
}

/**
 * som_pressure_wait() - wait for a pass of reclaim to end
 * @pass: what som_pressure_kick() returned
 *
 * Context: Process context, holding no som lock, no mmap_lock and no VMA
 * lock. Sleeps killably.
 */
void som_pressure_wait(unsigned long pass)
{
	atomic_long_inc(&som_pressure_stats.waits);
	wait_event_killable(som_pressure.wait, som_pressure_answered(pass));
}

/**
 * som_pressure_hopeless() - did the last pass page out nothing?
 *
 * For a fault that already waited for a pass (FAULT_FLAG_TRIED) and
 * still finds no block: counted as a failure when it is. A pass tries a
 * few times before it gives up, so that a region between states (an
 * munmap() half done) does not make it fruitless.
 */
bool som_pressure_hopeless(void)
{
	bool hopeless;

	spin_lock(&som_pressure.lock);
	hopeless = som_pressure.fruitless;
	spin_unlock(&som_pressure.lock);
	if (hopeless)
		atomic_long_inc(&som_pressure_stats.failures);
	return hopeless;
}

#define SOM_PRESSURE_STAT(name)						\
static ssize_t pressure_##name##_show(struct kobject *kobj,		\
				      struct kobj_attribute *attr,	\
				      char *buf)			\
{									\
	return sysfs_emit(buf, "%ld\n",					\
			  atomic_long_read(&som_pressure_stats.name));	\
}									\
struct kobj_attribute som_pressure_##name##_attr =			\
	__ATTR_RO(pressure_##name)

SOM_PRESSURE_STAT(passes);
SOM_PRESSURE_STAT(reclaimed_bytes);
SOM_PRESSURE_STAT(waits);
SOM_PRESSURE_STAT(failures);

/**
 * som_pressure_init() - start the worker
 *
 * Return: 0 or -ENOMEM.
 */
int som_pressure_init(void)
{
	struct som_pressure *p = &som_pressure;

	spin_lock_init(&p->lock);
	init_waitqueue_head(&p->wait);
	INIT_WORK(&p->work, som_pressure_work);
	p->wq = alloc_workqueue("som_reclaim", WQ_UNBOUND | WQ_MEM_RECLAIM,
				1);
	if (!p->wq)
		return -ENOMEM;
	spin_lock(&som_pool.lock);
	som_pool.pressure = som_pressure_low;
	spin_unlock(&som_pool.lock);
	return 0;
}

/**
 * som_pressure_exit() - stop it
 *
 * Context: No region is left, so no fault waits.
 */
void som_pressure_exit(void)
{
	spin_lock(&som_pool.lock);
	som_pool.pressure = NULL;
	spin_unlock(&som_pool.lock);
	destroy_workqueue(som_pressure.wq);
}
