# shellcheck shell=bash
# The guest's root file system: a gzip'd newc cpio, unpacked by the kernel.
#
#   /init               vm/guest/init
#   /bin/busybox        busybox-static, plus one symlink per applet
#   /som/som.ko         the module under test
#   /som/*.ko           SOM_EXTRA_MODULES (the debug tier's KUnit module)
#   /som/bin/           qemu-exit and every program from tests/out, demo/out
#   /som/manifest       tests/manifest: the test binaries the guest must run
#   /som/guest/         everything in vm/guest/ (test.sh, demo.sh, ...)
#   /som/somfuzz/       somfuzz's seed corpus (corpus/, from
#                       tests/somfuzz/corpus and the directories of
#                       SOM_FUZZ_CORPUS_EXTRA) and reproducers (repro/)
#   /som/modules/       in-kernel modules som.ko depends on (plus the ones
#                       named in SOM_VM_MODULES), uncompressed, and
#                       `order`, the list init insmods before the guest script
#   /som/test-modules/  SOM_VM_TEST_MODULES with what they need, uncompressed,
#                       and `order`: loaded by the tests themselves (stock
#                       tier only)
#   /usr/bin, /lib*     the host's dynamically linked SOM_VM_PROGRAMS (ndctl,
#                       to make a device DAX instance; memcached, memcaslap,
#                       redis and stress-ng, to run under somrun), SOM_VM_LIBS
#                       (the allocators somrun is tested with), and the
#                       libraries of these and of dynamic /som/bin programs

# The legacy pmem drivers: the stock tier's device DAX (the debug kernel
# has them built in). arm64's virt machine has no legacy pmem: there
# SOM_VM_MODULES_ARM64 (none) is used instead.
SOM_VM_MODULES=${SOM_VM_MODULES-nd_e820 nd_pmem dax_pmem device_dax}
SOM_VM_MODULES_ARM64=${SOM_VM_MODULES_ARM64-}
# Modules the tests load and unload themselves: VFIO's type1 backend, which
# som.ko refuses (kernel/dma_guard.c); the RAM disk, a block device to put
# a swap store on, and device-mapper, to make that device fail
# (tests/som_swap_test.c).
SOM_VM_TEST_MODULES=${SOM_VM_TEST_MODULES-vfio_iommu_type1 brd dm_mod}
SOM_VM_PROGRAMS=${SOM_VM_PROGRAMS-ndctl memcached memcaslap memcping memcstat redis-server redis-cli stress-ng}
SOM_VM_LIBS=${SOM_VM_LIBS-/usr/lib/x86_64-linux-gnu/libjemalloc.so.2 /usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4}

# Copy every library ldd names for an ELF file, loader included.
stage_libraries() {
	local root=$1 elf=$2 lib
	while read -r lib; do
		[[ -n $lib ]] || continue
		[[ -e $root$lib ]] || install -D -m 0755 "$lib" "$root$lib"
	done < <(ldd "$elf" 2>/dev/null | grep -oE '/[^ ]+' | sort -u)
}

# Copy host programs and libraries, with what they link.
stage_programs() {
	local root=$1 name prog lib
	for name in $SOM_VM_PROGRAMS; do
		prog=$(command -v "$name") || die "$name not found (vm/run setup installs it)"
		install -D -m 0755 "$prog" "$root/usr/bin/$name"
		stage_libraries "$root" "$prog"
	done
	for lib in $SOM_VM_LIBS; do
		[[ -f $lib ]] || die "$lib not found (vm/run setup installs it)"
		install -D -m 0755 "$lib" "$root$lib"
		stage_libraries "$root" "$lib"
	done
}

# Print, in load order, the .ko.xz files that must be loaded before the
# modules named as arguments (and those modules themselves).
module_closure() {
	local m
	for m in "$@"; do
		# -C /dev/null: the host's modprobe.d (ndctl's "install
		# libnvdimm" rule, say) must not change what is staged.
		modprobe -C /dev/null -d "$SOM_KROOT" -S "$SOM_KRELEASE" \
			--show-depends "$m" |
			sed -n 's/^insmod \([^ ]*\).*/\1/p'
	done | awk '!seen[$0]++'
}

# stage_module_dir DIR NAME...: NAME and what it needs into DIR, in load
# order (DIR/order).
stage_module_dir() {
	local dir=$1 ko name
	shift
	(($#)) || return 0
	mkdir -p "$dir"
	while read -r ko; do
		[[ -n $ko ]] || continue
		name=$(basename "$ko" .xz)
		case $ko in
		*.xz) xz -dc "$ko" >"$dir/$name" ;;
		*) cp "$ko" "$dir/$name" ;;
		esac
		echo "$name" >>"$dir/order"
	done < <(module_closure "$@")
}

stage_modules() {
	local root=$1 deps mods=$SOM_VM_MODULES
	[[ $SOM_ARCH != arm64 ]] || mods=$SOM_VM_MODULES_ARM64
	deps=$(modinfo -F depends "$SOM_MODULE" | tr ',' ' ')
	# shellcheck disable=SC2086  # word splitting wanted: lists of names
	stage_module_dir "$root/som/modules" $deps $mods
	[[ ! -f $root/som/modules/order ]] ||
		log "guest preloads: $(tr '\n' ' ' <"$root/som/modules/order")"
	# shellcheck disable=SC2086
	stage_module_dir "$root/som/test-modules" ${SOM_VM_TEST_MODULES:-}
}

# som_initramfs NAME -> sets SOM_INITRAMFS
som_initramfs() {
	local name=$1 root bb applet f
	root=$SOM_OUT/vm-$name.root
	SOM_INITRAMFS=$SOM_OUT/vm-$name.initramfs.cpio.gz
	rm -rf "$root"
	mkdir -p "$root"/{bin,dev,proc,sys,tmp,som/bin,som/guest}

	# The applets are listed by the host's busybox: Debian 12's, as the
	# arm64 sysroot's.
	bb=$(command -v busybox) || die "busybox not found"
	# arm64's programs come from its sysroot (vm/lib/arm64.sh).
	local guest_bb=$bb stage_programs=stage_programs
	local stage_libraries=stage_libraries
	if [[ $SOM_ARCH == arm64 ]]; then
		guest_bb=$SOM_SYSROOT/bin/busybox
		stage_programs=stage_programs_arm64
		stage_libraries=stage_libraries_arm64
	fi
	cp "$guest_bb" "$root/bin/busybox"
	for applet in $("$bb" --list); do
		[[ -e $root/bin/$applet ]] || ln -s busybox "$root/bin/$applet"
	done

	install -m 0755 "$VM_DIR/guest/init" "$root/init"
	cp -a "$VM_DIR"/guest/. "$root/som/guest/"
	cp "$SOM_MODULE" "$root/som/som.ko"
	for f in ${SOM_EXTRA_MODULES:-}; do
		cp "$f" "$root/som/"
	done
	cp "$SOM_QEMU_EXIT" "$root/som/bin/"
	cp "$SOM_TESTS_DIR/manifest" "$root/som/manifest"
	mkdir -p "$root/som/somfuzz/corpus" "$root/som/somfuzz/repro"
	for f in "$SOM_TESTS_DIR"/somfuzz/corpus/* ${SOM_FUZZ_CORPUS_EXTRA:+"$SOM_FUZZ_CORPUS_EXTRA"/*}; do
		[[ -f $f ]] || continue
		cp "$f" "$root/som/somfuzz/corpus/"
	done
	for f in "$SOM_TESTS_DIR"/somfuzz/repro/*; do
		[[ -f $f ]] || continue
		cp "$f" "$root/som/somfuzz/repro/"
	done
	"$stage_programs" "$root"
	for f in "${SOM_BINARIES[@]}"; do
		cp "$f" "$root/som/bin/"
		"$stage_libraries" "$root" "$f"
	done
	# Debian's in-kernel modules fit the stock kernel only.
	[[ ${SOM_VM_TIER:-stock} != stock ]] || stage_modules "$root"

	(cd "$root" && find . -print0 | LC_ALL=C sort -z |
		cpio --null -o -H newc -R 0:0 --quiet) | gzip -1 >"$SOM_INITRAMFS"
}
