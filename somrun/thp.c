// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * prctl(PR_SET_THP_DISABLE): a program that turns transparent huge pages
 * off for itself (redis does, when THP is "always") turns them off for
 * som's mappings too, since the kernel then skips ->huge_fault() for
 * every VMA of the process: som maps 2 MiB from ->fault() instead, but a
 * 1 GiB entry cannot be had that way.
 *
 * Kernels that know PR_THP_DISABLE_EXCEPT_ADVISED (Debian's 7.3 does)
 * spare the VMAs advised MADV_HUGEPAGE, and som's VMAs carry that advice
 * (VM_HUGEPAGE). There the shim asks for that form: the program's own
 * memory has THP off as it wanted, unless it advised MADV_HUGEPAGE on it
 * itself, and som keeps its 1 GiB entries. PR_GET_THP_DISABLE then says
 * 1, what the program set. On kernels without it (6.12) the call goes
 * through as it is.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "shim.h"

#ifndef PR_THP_DISABLE_EXCEPT_ADVISED
#define PR_THP_DISABLE_EXCEPT_ADVISED	(1 << 1)
#endif

/* Did the shim turn the program's PR_SET_THP_DISABLE into the milder one? */
static bool thp_spared;

SHIM_EXPORT int prctl(int option, ...)
{
	unsigned long a2, a3, a4, a5;
	va_list ap;
	long ret;

	va_start(ap, option);
	a2 = va_arg(ap, unsigned long);
	a3 = va_arg(ap, unsigned long);
	a4 = va_arg(ap, unsigned long);
	a5 = va_arg(ap, unsigned long);
	va_end(ap);

	if (option == PR_SET_THP_DISABLE && !a3 && !a4 && !a5) {
		if (a2 && !syscall(SYS_prctl, option, 1UL,
				   (unsigned long)PR_THP_DISABLE_EXCEPT_ADVISED,
				   0UL, 0UL)) {
			__atomic_store_n(&thp_spared, true, __ATOMIC_RELAXED);
			return 0;
		}
		ret = syscall(SYS_prctl, option, a2, a3, a4, a5);
		if (!ret)
			__atomic_store_n(&thp_spared, false, __ATOMIC_RELAXED);
		return ret;
	}
	ret = syscall(SYS_prctl, option, a2, a3, a4, a5);
	if (option == PR_GET_THP_DISABLE &&
	    ret == (1 | PR_THP_DISABLE_EXCEPT_ADVISED) &&
	    __atomic_load_n(&thp_spared, __ATOMIC_RELAXED))
		return 1;
	return ret;
}
