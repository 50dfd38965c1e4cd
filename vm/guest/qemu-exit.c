// SPDX-License-Identifier: GPL-2.0
/*
 * qemu-exit: report a status byte to QEMU through isa-debug-exit.
 *
 *   qemu-exit [STATUS]     STATUS 0..255, default 0
 *
 * QEMU must run with -device isa-debug-exit,iobase=0xf4,iosize=4. Writing
 * the byte V to port 0xf4 makes QEMU exit at once with status (V << 1) | 1,
 * so 0 gives 1, 1 gives 3 and so on; the host side (vm/lib/qemu.sh) maps it
 * back. Busybox has no outb, hence this helper. Returns only on failure.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/io.h>

#define DEBUG_EXIT_PORT 0xf4

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
	if (ioperm(DEBUG_EXIT_PORT, 1, 1)) {
		fprintf(stderr, "qemu-exit: ioperm: %s\n", strerror(errno));
		return 1;
	}
	outb((unsigned char)status, DEBUG_EXIT_PORT);

	/* Still here: there is no isa-debug-exit device at that port. */
	fprintf(stderr, "qemu-exit: no isa-debug-exit device at 0x%x\n",
		DEBUG_EXIT_PORT);
	return 1;
}
