# shellcheck shell=bash
# The guest's root file system: a gzip'd newc cpio, unpacked by the kernel.
#
#   /init               vm/guest/init
#   /bin/busybox        busybox-static, plus one symlink per applet
#   /som/som.ko         the module under test
#   /som/*.ko           SOM_EXTRA_MODULES (the debug tier's KUnit module)
#   /som/bin/           qemu-exit and every program from tests/out, demo/out
#   /som/guest/         everything in vm/guest/ (test.sh, demo.sh, ...)
#   /som/modules/       in-kernel modules som.ko depends on (plus the ones
#                       named in SOM_VM_MODULES), uncompressed, and
#                       `order`, the list init insmods before the guest script

# Print, in load order, the .ko.xz files that must be loaded before the
# modules named as arguments (and those modules themselves).
module_closure() {
	local m
	for m in "$@"; do
		modprobe -d "$SOM_KROOT" -S "$SOM_KRELEASE" --show-depends "$m" |
			sed -n 's/^insmod \([^ ]*\).*/\1/p'
	done | awk '!seen[$0]++'
}

stage_modules() {
	local root=$1 deps ko name
	deps=$(modinfo -F depends "$SOM_MODULE" | tr ',' ' ')
	# shellcheck disable=SC2086  # word splitting wanted: lists of names
	set -- $deps ${SOM_VM_MODULES:-}
	(($#)) || return 0
	mkdir -p "$root/som/modules"
	while read -r ko; do
		[[ -n $ko ]] || continue
		name=$(basename "$ko" .xz)
		case $ko in
		*.xz) xz -dc "$ko" >"$root/som/modules/$name" ;;
		*) cp "$ko" "$root/som/modules/$name" ;;
		esac
		echo "$name" >>"$root/som/modules/order"
	done < <(module_closure "$@")
	log "guest preloads: $(tr '\n' ' ' <"$root/som/modules/order")"
}

# som_initramfs NAME -> sets SOM_INITRAMFS
som_initramfs() {
	local name=$1 root bb applet f
	root=$SOM_OUT/vm-$name.root
	SOM_INITRAMFS=$SOM_OUT/vm-$name.initramfs.cpio.gz
	rm -rf "$root"
	mkdir -p "$root"/{bin,dev,proc,sys,tmp,som/bin,som/guest}

	bb=$(command -v busybox) || die "busybox not found"
	cp "$bb" "$root/bin/busybox"
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
	for f in "${SOM_BINARIES[@]}"; do
		cp "$f" "$root/som/bin/"
	done
	# Debian's in-kernel modules fit the stock kernel only.
	[[ ${SOM_VM_TIER:-stock} != stock ]] || stage_modules "$root"

	(cd "$root" && find . -print0 | LC_ALL=C sort -z |
		cpio --null -o -H newc -R 0:0 --quiet) | gzip -1 >"$SOM_INITRAMFS"
}
