# shellcheck shell=bash
# `vm/run build`: the module, the user-space programs and the guest helper.
#
# Results (globals, valid after som_build):
#   SOM_MODULE     path of the built som.ko
#   SOM_BINARIES   array: every executable in $SOM_TESTS_DIR/out,
#                  $SOM_TOOLS_DIR/out, $SOM_SOMRUN_DIR/out and
#                  $SOM_DEMO_DIR/out (they become /som/bin/* in the guest;
#                  libsomrun.so too, next to somrun)
#   SOM_QEMU_EXIT  the static qemu-exit helper

build_module() {
	[[ -f $SOM_KERNEL_DIR/Makefile || -f $SOM_KERNEL_DIR/Kbuild ]] ||
		die "no module source (Makefile/Kbuild) in $SOM_KERNEL_DIR"
	if [[ $SOM_ARCH == arm64 ]]; then
		# Kbuild builds M= in place: an arm64 build gets a copy of
		# its own, the uapi header next to it as Kbuild expects.
		# cp -p keeps the times, so that make rebuilds only what
		# changed.
		local copy=$SOM_OUT/arm64/src
		mkdir -p "$copy/kernel" "$copy/include"
		find "$SOM_KERNEL_DIR" -maxdepth 1 \( -name '*.[ch]' -o -name Kbuild \
			-o -name Makefile \) -exec cp -p -t "$copy/kernel/" {} +
		cp -pR "$SOM_UAPI_DIR" "$copy/include/"
		log "building module for arm64 in $copy/kernel"
		arm64_make -C "$SOM_KHEADERS" M="$copy/kernel" -j"$(njobs)" modules
		SOM_MODULE=$copy/kernel/som.ko
	else
		log "building module in $SOM_KERNEL_DIR"
		make -C "$SOM_KHEADERS" M="$SOM_KERNEL_DIR" -j"$(njobs)" modules
		SOM_MODULE=$SOM_KERNEL_DIR/som.ko
	fi
	[[ -f $SOM_MODULE ]] || die "the module build did not produce $SOM_MODULE"
}

# make -C <dir> if it has a Makefile; the programs it builds are the
# executables it leaves in <dir>/out/ (for arm64, cross-compiled into
# $SOM_OUT/arm64/<name of dir>/, libsom's archive next to them).
build_userspace() {
	local dir=$1 out=$1/out f args=()
	if [[ $SOM_ARCH == arm64 ]]; then
		out=$SOM_OUT/arm64/${dir##*/}
		args=(CC="$(arm64_cc)" AR="${SOM_CROSS}ar" OUT="$out"
		      LIBSOM_OUT="$SOM_OUT/arm64/libsom")
	fi
	if [[ -f $dir/Makefile ]]; then
		log "building $dir${args[*]:+ for arm64}"
		make -C "$dir" -j"$(njobs)" "${args[@]}" \
			KSELFTEST_DIR="$SOM_KSELFTEST_DIR" UAPI_DIR="$SOM_UAPI_DIR"
	fi
	[[ -d $out ]] || return 0
	for f in "$out"/*; do
		[[ -f $f && -x $f ]] && SOM_BINARIES+=("$f")
	done
	return 0
}

# The guest's way to report its status: a write to isa-debug-exit.
build_qemu_exit() {
	local src=$VM_DIR/guest/qemu-exit.c cc=gcc
	SOM_QEMU_EXIT=$SOM_OUT/guest-bin/qemu-exit
	if [[ $SOM_ARCH == arm64 ]]; then
		SOM_QEMU_EXIT=$SOM_OUT/arm64/guest-bin/qemu-exit
		cc=${SOM_CROSS}gcc
	fi
	[[ $SOM_QEMU_EXIT -nt $src ]] && return 0
	mkdir -p "${SOM_QEMU_EXIT%/*}"
	"$cc" -static -O2 -Wall -Wextra -Werror -o "$SOM_QEMU_EXIT" "$src"
}

som_build() {
	som_setup
	SOM_BINARIES=()
	build_module
	build_userspace "$SOM_TESTS_DIR"
	build_userspace "$SOM_DEMO_DIR"
	build_userspace "$SOM_TOOLS_DIR"
	build_userspace "$SOM_SOMRUN_DIR"
	build_qemu_exit
	log "built $SOM_MODULE and ${#SOM_BINARIES[@]} program(s)"
}
