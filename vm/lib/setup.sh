# shellcheck shell=bash
# `vm/run setup`: host packages, the Debian 6.12 kernel (headers, kbuild,
# image, modules) unpacked into the cache, the ELF vmlinux that QEMU boots,
# and the kselftest harness headers. Nothing is installed system-wide except
# the tool packages below; the kernel packages are only `apt-get download`ed
# and unpacked with `dpkg-deb -x`.
#
# Results (globals, valid after som_setup):
#   SOM_ABI           e.g. 6.12.118+deb12 (package ABI name)
#   SOM_KVERSION      e.g. 6.12.118-1~deb12u1 (Debian package version)
#   SOM_KRELEASE      e.g. 6.12.118+deb12-amd64 (uname -r in the guest)
#   SOM_KROOT         unpacked packages (usr/src, lib/modules, boot)
#   SOM_KHEADERS      directory for `make -C`
#   SOM_VMLINUX       ELF kernel image for qemu -kernel
#   SOM_KSELFTEST_DIR directory holding kselftest_harness.h, kselftest.h

# Host tools the harness needs.
SOM_HOST_PACKAGES=(qemu-system-x86 busybox-static cpio dwarves gcc-12 gcc make
		   libc6-dev zstd xz-utils kmod
		   flex bison bc libelf-dev libssl-dev patch	# the debug tier's kernel
		   clang libclang-rt-14-dev		# tests/fuzz (libFuzzer)
		   ndctl				# the guest makes a device DAX instance
		   memcached libmemcached-tools redis-server redis-tools stress-ng # somrun's real programs
		   libjemalloc2 libjemalloc-dev libtcmalloc-minimal4	# and allocators
		   dkms pkg-config systemd shellcheck	# the packaging checks
		   lcov					# the debug tier's coverage report
		   python3 python3-matplotlib)		# mce_relay.py; vm/run bench's plots

apt_env() { DEBIAN_FRONTEND=noninteractive "$@"; }

# `apt-get update` at most once per run, and only when something was not
# found: a stale package list is the usual reason, since security updates
# replace the kernel packages on the mirror.
_som_apt_updated=0
apt_update_once() {
	((_som_apt_updated)) && return 0
	log "apt-get update"
	apt_env apt-get update -qq >&2
	_som_apt_updated=1
}

setup_packages() {
	local missing=() p
	# One dpkg-query for all: prints "<name> <status>" per known package.
	local installed
	installed=$(dpkg-query -W -f='${Package} ${Status}\n' "${SOM_HOST_PACKAGES[@]}" 2>/dev/null |
		    awk '/ ok installed$/ { print $1 }' || true)
	for p in "${SOM_HOST_PACKAGES[@]}"; do
		grep -qx -- "$p" <<<"$installed" || missing+=("$p")
	done
	((${#missing[@]})) || return 0
	log "installing: ${missing[*]}"
	local install=(apt-get install -y -q --no-install-recommends "${missing[@]}")
	{ apt_env "${install[@]}" || { apt_update_once && apt_env "${install[@]}"; }; } >&2
}

# apt-get download into the current directory. The sandbox option keeps apt
# from warning that user _apt cannot write here.
apt_download() {
	local dl=(apt-get download -q -o APT::Sandbox::User=root "$@")
	{ "${dl[@]}" || { apt_update_once && "${dl[@]}"; }; } >&2
}

# An archive read through an apt configuration of its own in
# $SOM_CACHE/apt-NAME (its sources.list, lists and package cache): the
# host's sources and dpkg's state are left alone.
# private_apt NAME CMD ARGS...: apt-get or apt-cache on that archive alone.
private_apt() {
	local dir=$SOM_CACHE/apt-$1 cmd=$2
	shift 2
	"$cmd" -q -o Dir::Etc::SourceList="$dir/sources.list" \
		-o Dir::Etc::SourceParts=/dev/null \
		-o Dir::State::Lists="$dir/lists" \
		-o Dir::State::status=/dev/null \
		-o Dir::Cache="$dir/cache" \
		-o APT::Sandbox::User=root "$@"
}

# private_apt_update NAME SOURCES [OPTION...]: write its sources.list
# (SOURCES: its lines) and update its lists, passing OPTIONs to apt-get.
# Offline, the lists of an earlier run do: they name what is cached.
private_apt_update() {
	local name=$1 dir=$SOM_CACHE/apt-$1 sources=$2
	shift 2
	mkdir -p "$dir/lists/partial" "$dir/cache/archives/partial"
	printf '%s\n' "$sources" >"$dir/sources.list"
	log "apt-get update ($name)"
	private_apt "$name" apt-get "$@" update -qq >&2 && return 0
	compgen -G "$dir/lists/*_Packages*" >/dev/null ||
		die "apt-get update ($name) failed"
	log "apt-get update ($name) failed: using the lists of an earlier run"
}

# The ABI name is whatever linux-headers-6.12-amd64 depends on today.
# SOM_KERNEL_ABI pins it (e.g. to reproduce an old run).
resolve_abi() {
	local meta="linux-headers-$SOM_KERNEL_SERIES-amd64" abi=${SOM_KERNEL_ABI:-}
	if [[ -z $abi ]]; then
		abi=$(apt-cache depends "$meta" 2>/dev/null |
		      sed -n 's/^ *Depends: linux-headers-\(.*\)-amd64$/\1/p' | head -n1)
		if [[ -z $abi ]]; then
			apt_update_once
			abi=$(apt-cache depends "$meta" |
			      sed -n 's/^ *Depends: linux-headers-\(.*\)-amd64$/\1/p' | head -n1)
		fi
	fi
	[[ -n $abi ]] || die "cannot resolve the ABI of $meta"
	SOM_ABI=$abi
	SOM_KRELEASE=$abi-amd64
	SOM_KVERSION=$(apt-cache show --no-all-versions "linux-headers-$abi-amd64" |
		       sed -n 's/^Version: //p' | head -n1)
	[[ -n $SOM_KVERSION ]] || die "no version for linux-headers-$abi-amd64"
}

# The bzImage carries a zstd-compressed ELF vmlinux. Try every zstd frame
# magic (28 b5 2f fd) and keep the first one that decompresses to an ELF.
# zstd complains about the trailing bytes after the frame: ignore that.
extract_vmlinux() {
	local bz=$1 out=$2 off
	while read -r off; do
		tail -c "+$((off + 1))" "$bz" | zstd -dcq 2>/dev/null >"$out.tmp" || true
		if [[ $(head -c4 "$out.tmp" | od -An -tx1 | tr -d ' \n') == 7f454c46 ]]; then
			mv "$out.tmp" "$out"
			return 0
		fi
	done < <(LC_ALL=C grep -obUaP '\x28\xb5\x2f\xfd' "$bz" | cut -d: -f1)
	rm -f "$out.tmp"
	die "no zstd-compressed ELF found in $bz"
}

setup_kernel() {
	local kdir=$SOM_CACHE/kernel/$SOM_ABI
	SOM_KROOT=$kdir/root
	SOM_KHEADERS=$SOM_KROOT/usr/src/linux-headers-$SOM_KRELEASE
	SOM_VMLINUX=$kdir/vmlinux
	[[ -f $kdir/.complete ]] && return 0

	log "fetching kernel $SOM_ABI ($SOM_KVERSION) into $kdir"
	rm -rf "$kdir"
	mkdir -p "$kdir/debs" "$SOM_KROOT"
	local p pkgs=()
	for p in "linux-headers-$SOM_ABI-amd64" "linux-headers-$SOM_ABI-common" \
		 "linux-image-$SOM_ABI-amd64-unsigned" "linux-kbuild-$SOM_ABI"; do
		pkgs+=("$p=$SOM_KVERSION")
	done
	(cd "$kdir/debs" && apt_download "${pkgs[@]}")
	local deb
	for deb in "$kdir"/debs/*.deb; do
		dpkg-deb -x "$deb" "$SOM_KROOT"
	done
	rm -rf "$kdir/debs"

	# The arch headers' Makefile includes the common one by absolute
	# path (/usr/src/...): point it into the cache instead.
	local mk=$SOM_KHEADERS/Makefile
	grep -q '^include /usr/src/' "$mk" || die "unexpected $mk"
	sed -i "s|^include /usr/src/|include $SOM_KROOT/usr/src/|" "$mk"

	# modules.dep, so that som.ko's in-kernel dependencies can be found.
	depmod -b "$SOM_KROOT" "$SOM_KRELEASE"

	extract_vmlinux "$SOM_KROOT/boot/vmlinuz-$SOM_KRELEASE" "$SOM_VMLINUX"
	printf '%s %s\n' "$SOM_ABI" "$SOM_KVERSION" >"$kdir/.complete"
}

# Debian's linux-source-6.12 tarball of the same version as the kernel,
# kept in the cache: the kselftest headers and the debug tier's kernel
# (vm/lib/debugkernel.sh) come from it. Sets SOM_KSOURCE_TAR.
setup_source() {
	local dir=$SOM_CACHE/src
	SOM_KSOURCE_TAR=$dir/linux-source-$SOM_KERNEL_SERIES-$SOM_KVERSION.tar.xz
	[[ -f $SOM_KSOURCE_TAR ]] && return 0

	log "fetching linux-source-$SOM_KERNEL_SERIES $SOM_KVERSION"
	local tmp
	mkdir -p "$dir"
	tmp=$(mktemp -d "$SOM_CACHE/tmp.XXXXXX")
	(cd "$tmp" && apt_download "linux-source-$SOM_KERNEL_SERIES=$SOM_KVERSION")
	dpkg-deb --fsys-tarfile "$tmp"/linux-source-*.deb |
		tar -xf - -C "$tmp" --wildcards "*/linux-source-$SOM_KERNEL_SERIES.tar.xz"
	mv "$tmp/usr/src/linux-source-$SOM_KERNEL_SERIES.tar.xz" "$SOM_KSOURCE_TAR"
	rm -rf "$tmp"
}

# kselftest_harness.h and kselftest.h from linux-source-6.12 of the same
# version. Only those two members are unpacked from the source tarball.
setup_kselftest() {
	local dir=$SOM_CACHE/kselftest
	local sub=linux-source-$SOM_KERNEL_SERIES/tools/testing/selftests
	SOM_KSELFTEST_DIR=$dir
	if [[ $(cat "$dir/.version" 2>/dev/null) == "$SOM_KVERSION" ]]; then
		return 0
	fi

	local tmp
	tmp=$(mktemp -d "$SOM_CACHE/tmp.XXXXXX")
	tar -xJf "$SOM_KSOURCE_TAR" -C "$tmp" \
		"$sub/kselftest_harness.h" "$sub/kselftest.h"
	mkdir -p "$dir"
	mv "$tmp/$sub/kselftest_harness.h" "$tmp/$sub/kselftest.h" "$dir/"
	rm -rf "$tmp"
	printf '%s\n' "$SOM_KVERSION" >"$dir/.version"
}

# Everything above, serialised with a lock so concurrent runs share one cache.
som_setup() {
	[[ $(id -u) -eq 0 ]] || die "setup needs root (apt-get, $SOM_CACHE)"
	mkdir -p "$SOM_CACHE"
	exec {lockfd}>"$SOM_CACHE/.lock"
	flock "$lockfd"
	setup_packages
	resolve_abi
	setup_kernel
	setup_source
	setup_kselftest
	SOM_STOCK_KVERSION=$SOM_KVERSION
	if [[ $SOM_KERNEL != "$SOM_KERNEL_SERIES" ]]; then
		setup_backports_kernel "$SOM_KERNEL"
	elif [[ $SOM_ARCH == arm64 ]]; then
		setup_arm64
	fi
	flock -u "$lockfd"
	exec {lockfd}>&-
	log "kernel $SOM_KRELEASE ready"
}

som_setup_report() {
	cat <<-EOT
	kernel release    $SOM_KRELEASE (package $SOM_STOCK_KVERSION)
	headers (make -C) $SOM_KHEADERS
	vmlinux (ELF)     $SOM_VMLINUX
	modules           $SOM_KROOT/lib/modules/$SOM_KRELEASE
	kselftest headers $SOM_KSELFTEST_DIR
	EOT
}
