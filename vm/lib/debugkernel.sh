# shellcheck shell=bash
# The debug tier's kernel: Debian's linux-source-6.12 (the same version as
# the stock kernel) built with `make tinyconfig` plus
# vm/config/debug-kernel.config (KASAN, lockdep, DEBUG_VM, kmemleak,
# PAGE_TABLE_CHECK, KUnit, fault injection).
#
# Patches in vm/config/debug-kernel-patches/ (fixes of kernel bugs the
# checkers trip over, each saying which) are applied in name order.
#
# Built once per (source version, fragment, patches, compiler) and cached as
#   $SOM_CACHE/debug-kernel/<key>/src     the unpacked source
#   $SOM_CACHE/debug-kernel/<key>/build   O= build tree: `make -C` it, M=...
#   $SOM_CACHE/debug-kernel/<key>/bzImage  what qemu -kernel boots (the
#                                         PVH entry cannot run KASAN)
# where <key> hashes the three and the recipe below. A machine that has it
# reuses it.
#
# Results (globals, valid after som_debug_kernel):
#   SOM_DEBUG_KBUILD   the build tree
#   SOM_DEBUG_VMLINUX  the image to boot

SOM_DEBUG_CONFIG=${SOM_DEBUG_CONFIG:-$VM_DIR/config/debug-kernel.config}
SOM_DEBUG_PATCHES=${SOM_DEBUG_PATCHES:-$VM_DIR/config/debug-kernel-patches}
# Bump when debug_kernel_build() changes what it produces.
SOM_DEBUG_RECIPE=3

debug_kernel_key() {
	{
		printf 'recipe %s\n%s\n' "$SOM_DEBUG_RECIPE" "$SOM_KVERSION"
		cat "$SOM_DEBUG_CONFIG"
		cat "$SOM_DEBUG_PATCHES"/*.patch 2>/dev/null
		gcc-12 --version | head -1
	} | sha256sum | cut -c1-16
}

# Every CONFIG_ line of the fragment must be in the final .config as is.
debug_kernel_check_config() {
	local config=$1 line missing=0
	while IFS= read -r line; do
		case $line in
		CONFIG_*=* | "# CONFIG_"*" is not set") ;;
		*) continue ;;
		esac
		grep -qxF -- "$line" "$config" && continue
		log "debug kernel: '$line' did not make it into .config"
		missing=1
	done <"$SOM_DEBUG_CONFIG"
	return "$missing"
}

debug_kernel_build() {
	local dir=$1 start=$SECONDS
	local src=$dir/src build=$dir/build
	local mk=(make -C "$src" O="$build" CC=gcc-12 HOSTCC=gcc-12)

	log "building the debug kernel in $dir (once per machine; see vm/config/debug-kernel.config)"
	rm -rf "$dir"
	mkdir -p "$src" "$build"
	tar -xJf "$SOM_KSOURCE_TAR" -C "$src" --strip-components=1
	local p
	for p in "$SOM_DEBUG_PATCHES"/*.patch; do
		[[ -f $p ]] || continue
		log "applying ${p##*/}"
		patch -p1 -s -d "$src" <"$p" || die "$p does not apply"
	done
	"${mk[@]}" -s tinyconfig
	"$src/scripts/kconfig/merge_config.sh" -m -O "$build" \
		"$build/.config" "$SOM_DEBUG_CONFIG" >/dev/null
	"${mk[@]}" -s olddefconfig
	debug_kernel_check_config "$build/.config" ||
		die "the debug kernel's config lacks options it needs"
	"${mk[@]}" -s -j"$(njobs)" bzImage modules
	cp "$build/arch/x86/boot/bzImage" "$dir/bzImage"
	printf 'built in %ss\n' "$((SECONDS - start))" >"$dir/.complete"
	log "debug kernel built in $((SECONDS - start))s"
}

som_debug_kernel() {
	local key dir
	key=$(debug_kernel_key)
	dir=$SOM_CACHE/debug-kernel/$key
	SOM_DEBUG_KBUILD=$dir/build
	SOM_DEBUG_VMLINUX=$dir/bzImage
	exec {dklock}>"$SOM_CACHE/.debug-kernel.lock"
	flock "$dklock"
	# Builds only happen under this lock: an incomplete one is a failed
	# build. Complete builds of other keys stay (2 GB each; delete by hand).
	local d
	for d in "${dir%/*}"/*/; do
		[[ -d $d && ! -f $d/.complete && ${d%/} != "$dir" ]] && rm -rf "$d"
	done
	[[ -f $dir/.complete ]] || debug_kernel_build "$dir"
	flock -u "$dklock"
	exec {dklock}>&-
	log "debug kernel $key ready ($(cat "$dir/.complete"))"
}

# som.ko (and the KUnit module) for the debug kernel, built from a copy of
# the module source so that the stock build in $SOM_KERNEL_DIR stays.
# Sets SOM_DEBUG_MODULE and SOM_DEBUG_KUNIT.
som_debug_build_module() {
	local top=$SOM_OUT/debug-build dir=$SOM_OUT/debug-build/kernel
	rm -rf "$top"
	mkdir -p "$dir"
	cp "$SOM_KERNEL_DIR"/Kbuild "$SOM_KERNEL_DIR"/*.[ch] "$dir/"
	rm -f "$dir"/*.mod.c
	cp -r "$SOM_KERNEL_DIR/../include" "$top/include"
	log "building module for the debug kernel in $dir"
	make -C "$SOM_DEBUG_KBUILD" M="$dir" CC=gcc-12 HOSTCC=gcc-12 SOM_COVERAGE=1 \
		-j"$(njobs)" modules
	SOM_DEBUG_MODULE=$dir/som.ko
	SOM_DEBUG_KUNIT=$dir/som_pool_kunit.ko
	[[ -f $SOM_DEBUG_MODULE && -f $SOM_DEBUG_KUNIT ]] ||
		die "the debug module build did not produce som.ko and som_pool_kunit.ko"
}
