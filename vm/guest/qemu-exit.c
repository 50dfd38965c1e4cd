// SPDX-License-Identifier: GPL-2.0
/*
 * qemu-exit: report a status byte to QEMU and make it exit.
 *
 *   qemu-exit [STATUS]     STATUS 0..255, default 0
 *
 * x86: QEMU must run with -device isa-debug-exit,iobase=0xf4,iosize=4.
 * Writing the byte V to port 0xf4 makes QEMU exit at once with status
 * (V << 1) | 1, so 0 gives 1, 1 gives 3 and so on; the host side
 * (vm/lib/qemu.sh) maps it back. Busybox has no outb, hence this helper.
 *
 * arm64: the virt machine has no such device; QEMU must run with
 * -semihosting-config enable=on,target=native,userspace=on, and the
 * semihosting call SYS_EXIT with ADP_Stopped_ApplicationExit makes it exit
 * with status V itself.
 *
 * Returns only on failure.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__) || defined(__i386__)
#include <sys/io.h>

#define DEBUG_EXIT_PORT 0xf4

static int qemu_exit(unsigned char status)
{
	if (ioperm(DEBUG_EXIT_PORT, 1, 1)) {
		fprintf(stderr, "qemu-exit: ioperm: %s\n", strerror(errno));
		return 1;
	}
	outb(status, DEBUG_EXIT_PORT);

	/* Still here: there is no isa-debug-exit device at that port. */
	fprintf(stderr, "qemu-exit: no isa-debug-exit device at 0x%x\n",
		DEBUG_EXIT_PORT);
	return 1;
}
#elif defined(__aarch64__)
#define SEMIHOSTING_SYS_EXIT		0x18
#define ADP_STOPPED_APPLICATION_EXIT	0x20026

static int qemu_exit(unsigned char status)
{
	uint64_t block[2] = { ADP_STOPPED_APPLICATION_EXIT, status };
	register uint64_t op __asm__("x0") = SEMIHOSTING_SYS_EXIT;
	register uint64_t arg __asm__("x1") = (uint64_t)(uintptr_t)block;

	/* Without semihosting for user space this traps: SIGILL. */
	__asm__ volatile("hlt #0xf000" : "+r"(op) : "r"(arg) : "memory");
	fprintf(stderr, "qemu-exit: semihosting SYS_EXIT returned\n");
	return 1;
}
#else
#error "qemu-exit: no way to make QEMU exit on this architecture"
#endif

int main(int argc, char **argv)
{
	unsigned long status = 0;
	char *end;

	if (argc > 2) {
		fprintf(stderr, "usage: qemu-exit [STATUS]\n");
		return 2;
	}
	if (argc == 2) {
		errno = 0;
		status = strtoul(argv[1], &end, 0);
		if (errno || *end || end == argv[1] || status > 255) {
			fprintf(stderr, "qemu-exit: bad status '%s'\n", argv[1]);
			return 2;
		}
	}
	return qemu_exit((unsigned char)status);
}
