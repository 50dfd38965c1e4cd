// SPDX-License-Identifier: GPL-2.0
/*
 * som: single-owner memory.
 *
 * A pool of 1 GiB physical chunks that need no struct page, handed to one
 * process at a time through /dev/som. See Documentation/admin-guide.md.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/numa.h>

#include "age.h"
#include "charge.h"
#include "migrate.h"
#include "pack.h"
#include "som.h"
#include "source.h"
#include "swap.h"
#include "table.h"

struct som_pool som_pool;

static char *ranges;
module_param(ranges, charp, 0444);
MODULE_PARM_DESC(ranges,
		 "boot-reserved physical ranges for the pool: SIZE@START[,SIZE@START...], e.g. 2G@4G");

static int __init som_init(void)
{
	struct som_pool_stats stats;
	int err;

	err = som_dma_guard_init();
	if (err)
		return err;
	err = som_table_cache_init();
	if (err)
		goto err_guard_exit;
	err = som_age_cache_init();
	if (err)
		goto err_table_exit;
	err = som_pool_cache_init();
	if (err)
		goto err_age_cache_exit;
	err = som_pool_init(&som_pool);
	if (err)
		goto err_pool_cache_exit;
	som_compact_init();
	som_age_init();
	err = som_sysfs_init();
	if (err)
		goto err_destroy_pool;
	if (ranges) {
		err = som_reserved_add_list(ranges);
		if (err)
			goto err_sysfs_exit;
	}
	som_poison_init();
	err = som_swap_init();
	if (err)
		goto err_poison_exit;
	err = som_dev_register();
	if (err)
		goto err_swap_exit;

	som_pool_get_stats(&som_pool, NUMA_NO_NODE, &stats);
	pr_info("ready: %llu MiB in the pool, %llu bytes of metadata\n",
		stats.total_bytes >> 20, stats.metadata_bytes);
	return 0;

err_swap_exit:
	som_swap_exit();
err_poison_exit:
	som_poison_exit();
err_sysfs_exit:
	som_compact_exit();
	som_sysfs_exit();
	som_age_exit();
err_destroy_pool:
	som_pool_destroy(&som_pool);
err_pool_cache_exit:
	som_pool_cache_exit();
err_age_cache_exit:
	som_age_cache_exit();
err_table_exit:
	som_table_cache_exit();
err_guard_exit:
	som_dma_guard_exit();
	return err;
}
module_init(som_init);

/*
 * Every open file of /dev/som holds a module reference: no region is left.
 * The background compaction pass may still run, though, with a chunk set
 * aside and blocks in flight: stop it (for good: a compact_rate write
 * still under way cannot queue it again) before the sources hand their
 * memory back. Removing sysfs then waits for a pass an administrator
 * started; the pool's removal of each source waits for the zeroing worker.
 */
static void __exit som_exit(void)
{
	som_dev_unregister();
	som_poison_exit();
	som_pack_exit();
	som_compact_exit();
	som_sysfs_exit();
	som_swap_exit();
	som_age_exit();
	som_charges_exit();
	som_pool_destroy(&som_pool);
	som_pool_cache_exit();
	som_age_cache_exit();
	som_table_cache_exit();
	som_dma_guard_exit();
}
module_exit(som_exit);

MODULE_DESCRIPTION("Single-owner memory: pool of 1 GiB chunks without struct page, mapped through /dev/som");
MODULE_LICENSE("GPL");
