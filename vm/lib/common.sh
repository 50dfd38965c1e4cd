# shellcheck shell=bash
# Shared settings and helpers for vm/run. Sourced, never executed.
#
# Every path the harness uses is derived here, and every one can be
# overridden from the environment:
#   SOM_CACHE       downloaded kernel + kselftest headers (/var/cache/som)
#   SOM_OUT         logs, initramfs, helper binaries      ($REPO/out)
#   SOM_KERNEL_DIR  module source, built with M=          ($REPO/kernel)
#   SOM_TESTS_DIR   selftests; binaries in <dir>/out/      ($REPO/tests)
#   SOM_DEMO_DIR    demo; binaries in <dir>/out/           ($REPO/demo)
#   SOM_TOOLS_DIR   somctl; binaries in <dir>/out/         ($REPO/tools)
#   SOM_SOMRUN_DIR  somrun and its preload, in <dir>/out/  ($REPO/somrun)
#   SOM_UAPI_DIR    -I path for <linux/som.h>              ($REPO/include/uapi)
#   SOM_KERNEL      the stock tier's kernel series         (6.12)
#   SOM_ARCH        the stock tier's architecture          (x86_64)

: "${REPO:?REPO must be set before sourcing common.sh}"

SOM_CACHE=${SOM_CACHE:-/var/cache/som}
SOM_OUT=${SOM_OUT:-$REPO/out}
SOM_KERNEL_DIR=${SOM_KERNEL_DIR:-$REPO/kernel}
SOM_TESTS_DIR=${SOM_TESTS_DIR:-$REPO/tests}
SOM_DEMO_DIR=${SOM_DEMO_DIR:-$REPO/demo}
SOM_TOOLS_DIR=${SOM_TOOLS_DIR:-$REPO/tools}
SOM_SOMRUN_DIR=${SOM_SOMRUN_DIR:-$REPO/somrun}
SOM_UAPI_DIR=${SOM_UAPI_DIR:-$REPO/include/uapi}

# The kernel series we target (see Documentation/kernel-facts.md), and
# the one the stock tier boots: SOM_KERNEL (vm/run --kernel), 6.12 or 7.3
# (Debian's trixie-backports kernel, vm/lib/backports.sh).
SOM_KERNEL_SERIES=6.12
SOM_KERNEL=${SOM_KERNEL:-$SOM_KERNEL_SERIES}
# x86_64, or arm64 (vm/run --arch arm64, vm/lib/arm64.sh): the stock tier
# then boots Debian's arm64 kernel in qemu-system-aarch64.
SOM_ARCH=${SOM_ARCH:-x86_64}

# Progress messages go to stderr so that stdout stays clean for results.
log() { printf 'vm: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

# Number of parallel make jobs.
njobs() { nproc 2>/dev/null || echo 2; }
