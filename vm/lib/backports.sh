# shellcheck shell=bash
# The stock tier on a kernel newer than Debian 12's: SOM_KERNEL=7.3 (or
# `vm/run test --kernel 7.3`) boots Debian's 7.3 from trixie-backports
# instead of 6.12. The debug tier, the kselftest headers and the packaging
# checks stay on 6.12 (setup.sh).
#
# trixie-backports is read through an apt configuration of its own in
# $SOM_CACHE/apt-trixie-backports: the host's sources are not touched.
# Its headers package cannot build modules on Debian 12 (its tools need
# gcc-14 and glibc 2.38), so the module is built against the kernel's
# source instead: linux-source-SERIES with the image's own config,
# `olddefconfig` and `modules_prepare` with the host's gcc-12, and the
# headers package's Module.symvers (plain data). Vermagic then matches
# Debian's own modules (Documentation/kernel-facts.md).
#
# Sets, like setup_kernel: SOM_ABI, SOM_KRELEASE, SOM_KROOT (lib/modules/
# and boot/ of the image), SOM_KHEADERS (the prepared source tree, for
# make -C) and SOM_VMLINUX; SOM_KVERSION stays 6.12's (the debug kernel's
# source), and SOM_STOCK_KVERSION is the package version of this one.

SOM_BACKPORTS_URI=${SOM_BACKPORTS_URI:-http://deb.debian.org/debian}

# apt-get or apt-cache on trixie-backports alone (setup.sh).
backports_apt() {
	private_apt trixie-backports "$@"
}

backports_update() {
	private_apt_update trixie-backports \
		"deb $SOM_BACKPORTS_URI trixie-backports main"
}

# The ABI that trixie-backports' linux-headers-amd64 depends on today; it
# must be of the series asked for.
backports_resolve() {
	local series=$1 abi
	abi=$(backports_apt apt-cache depends linux-headers-amd64 2>/dev/null |
	      sed -n 's/^ *Depends: linux-headers-\(.*\)-amd64$/\1/p' |
	      head -n1) || true
	[[ -n $abi ]] || die "trixie-backports: cannot resolve linux-headers-amd64"
	[[ $abi == "$series".* ]] ||
		die "trixie-backports has kernel $abi now, not $series (SOM_KERNEL)"
	SOM_ABI=$abi
	SOM_KRELEASE=$abi-amd64
	SOM_STOCK_KVERSION=$(backports_apt apt-cache show --no-all-versions \
			     "linux-headers-$abi-amd64" |
			     sed -n 's/^Version: //p' | head -n1) || true
	[[ -n $SOM_STOCK_KVERSION ]] ||
		die "no version for linux-headers-$abi-amd64"
}

setup_backports_kernel() {
	local series=$1 kdir deb src v
	backports_update
	backports_resolve "$series"
	kdir=$SOM_CACHE/kernel/$SOM_ABI
	SOM_KROOT=$kdir/root
	SOM_KHEADERS=$kdir/src
	SOM_VMLINUX=$kdir/vmlinux
	[[ -f $kdir/.complete ]] && return 0

	v=$SOM_STOCK_KVERSION
	log "fetching kernel $SOM_ABI ($v) into $kdir"
	rm -rf "$kdir"
	mkdir -p "$kdir/debs" "$SOM_KROOT" "$SOM_KHEADERS"
	(cd "$kdir/debs" && backports_apt apt-get download \
		"linux-source-$series=$v" "linux-binary-unsigned-$SOM_KRELEASE=$v" \
		"linux-modules-$SOM_KRELEASE=$v" "linux-base-$SOM_KRELEASE=$v" \
		"linux-headers-$SOM_KRELEASE=$v" >&2)
	for deb in "$kdir"/debs/*.deb; do
		dpkg-deb -x "$deb" "$SOM_KROOT"
	done
	rm -rf "$kdir/debs"

	# The image's modules live in usr/lib; depmod and modprobe -d look
	# in lib.
	ln -s usr/lib "$SOM_KROOT/lib"
	mkdir -p "$SOM_KROOT/boot"
	mv "$SOM_KROOT/usr/lib/modules/$SOM_KRELEASE/vmlinuz.unsigned" \
		"$SOM_KROOT/boot/vmlinuz-$SOM_KRELEASE"
	depmod -b "$SOM_KROOT" "$SOM_KRELEASE"
	extract_vmlinux "$SOM_KROOT/boot/vmlinuz-$SOM_KRELEASE" "$SOM_VMLINUX"

	src=$SOM_KROOT/usr/src
	log "preparing linux-source-$series for module builds"
	tar -xJf "$src/linux-source-$series.tar.xz" -C "$SOM_KHEADERS" \
		--strip-components=1
	rm -f "$src/linux-source-$series.tar.xz"
	cp "$SOM_KROOT/usr/lib/modules/$SOM_KRELEASE/config" "$SOM_KHEADERS/.config"
	make -C "$SOM_KHEADERS" -s olddefconfig >&2
	make -C "$SOM_KHEADERS" -s -j"$(njobs)" KERNELRELEASE="$SOM_KRELEASE" \
		modules_prepare >&2
	cp "$src/linux-headers-$SOM_KRELEASE/Module.symvers" "$SOM_KHEADERS/"
	printf '%s %s\n' "$SOM_ABI" "$v" >"$kdir/.complete"
}
