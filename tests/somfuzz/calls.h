/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The implementations of the description table's calls (calls.c), one
 * per entry of sf_calls[] (desc.c), and what they share with it.
 */
#ifndef SOMFUZZ_CALLS_H
#define SOMFUZZ_CALLS_H

#include "somfuzz.h"

long sf_call_open_dev(struct sf_thread *t, const uint64_t *a);
long sf_call_close(struct sf_thread *t, const uint64_t *a);
long sf_call_file(struct sf_thread *t, const uint64_t *a);
long sf_call_mmap(struct sf_thread *t, const uint64_t *a);
long sf_call_touch(struct sf_thread *t, const uint64_t *a);
long sf_call_munmap(struct sf_thread *t, const uint64_t *a);
long sf_call_mprotect(struct sf_thread *t, const uint64_t *a);
long sf_call_mremap(struct sf_thread *t, const uint64_t *a);
long sf_call_madvise(struct sf_thread *t, const uint64_t *a);
long sf_call_fallocate(struct sf_thread *t, const uint64_t *a);
long sf_call_ftruncate(struct sf_thread *t, const uint64_t *a);
long sf_call_file_op(struct sf_thread *t, const uint64_t *a);
long sf_call_ioc_mapping(struct sf_thread *t, const uint64_t *a);
long sf_call_ioc_policy(struct sf_thread *t, const uint64_t *a);
long sf_call_ioc_source_add(struct sf_thread *t, const uint64_t *a);
long sf_call_ioc_source_remove(struct sf_thread *t, const uint64_t *a);
long sf_call_ioc_proc_usage(struct sf_thread *t, const uint64_t *a);
long sf_call_ioc_cgroup(struct sf_thread *t, const uint64_t *a);
long sf_call_ioc_user(struct sf_thread *t, const uint64_t *a);
long sf_call_ioc_raw(struct sf_thread *t, const uint64_t *a);
long sf_call_ioc_pageout(struct sf_thread *t, const uint64_t *a);
long sf_call_swap_admin(struct sf_thread *t, const uint64_t *a);
long sf_call_sysfs_write(struct sf_thread *t, const uint64_t *a);
long sf_call_sysfs_read(struct sf_thread *t, const uint64_t *a);
long sf_call_background(struct sf_thread *t, const uint64_t *a);

#endif /* SOMFUZZ_CALLS_H */
