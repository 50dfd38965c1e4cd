# shellcheck shell=bash
# The stock tier on arm64: SOM_ARCH=arm64 (`vm/run test --arch arm64`)
# boots Debian's arm64 6.12 kernel in qemu-system-aarch64 (TCG, virt
# machine) instead of the amd64 one. The debug tier, the host checks and
# DKMS stay amd64.
#
# Debian's arm64 packages are read through an apt configuration of its own
# in $SOM_CACHE/apt-arm64 (bookworm and bookworm-security, arm64 only): the
# host's sources and dpkg's architectures are not touched. From there:
#   - the kernel image, of the same version as the amd64 one
#     (SOM_KVERSION), whose boot/vmlinuz QEMU boots as it is (an
#     uncompressed Image);
#   - its headers package, for Module.symvers only (arm64 has MODVERSIONS
#     on): its tools are arm64 programs. som.ko is built against
#     linux-source-6.12 (the tarball setup_source fetched) prepared with
#     the image's config by Debian 12's gcc-aarch64-linux-gnu;
#   - a sysroot: busybox-static, and the programs the guest runs under
#     somrun (SOM_VM_PROGRAMS) with every library they need, whose
#     libjemalloc-dev also serves som_jemalloc_test's link.
#
# Sets, like setup_kernel: SOM_ABI (unchanged), SOM_KRELEASE, SOM_KROOT,
# SOM_KHEADERS, SOM_VMLINUX, and SOM_SYSROOT.

SOM_ARM64_PACKAGES=(qemu-system-arm gcc-aarch64-linux-gnu libc6-dev-arm64-cross
		    binutils-aarch64-linux-gnu device-tree-compiler)
SOM_ARM64_MIRROR=${SOM_ARM64_MIRROR:-http://deb.debian.org/debian}
SOM_ARM64_SECURITY=${SOM_ARM64_SECURITY:-http://deb.debian.org/debian-security}
SOM_CROSS=aarch64-linux-gnu-
# What the guest's sysroot holds (with everything they depend on).
SOM_ARM64_SYSROOT_PACKAGES=(libc6 busybox-static libjemalloc2 libjemalloc-dev
			    libtcmalloc-minimal4 memcached libmemcached-tools
			    redis-server redis-tools stress-ng)

SOM_ARM64_APT_OPTIONS=(-o APT::Architecture=arm64 -o APT::Architectures=arm64)

# apt-get or apt-cache on Debian 12's arm64 archive alone (setup.sh).
arm64_apt() {
	local cmd=$1
	shift
	private_apt arm64 "$cmd" "${SOM_ARM64_APT_OPTIONS[@]}" "$@"
}

arm64_update() {
	private_apt_update arm64 \
		"deb [arch=arm64] $SOM_ARM64_MIRROR bookworm main
deb [arch=arm64] $SOM_ARM64_SECURITY bookworm-security main" \
		"${SOM_ARM64_APT_OPTIONS[@]}"
}

# Every package SOM_ARM64_SYSROOT_PACKAGES needs, without recommends.
arm64_sysroot_closure() {
	arm64_apt apt-cache depends --recurse --no-recommends --no-suggests \
		--no-conflicts --no-breaks --no-replaces --no-enhances \
		"${SOM_ARM64_SYSROOT_PACKAGES[@]}" 2>/dev/null |
		grep -v -e '^ ' -e '^<' | sort -u
}

setup_arm64() {
	local kdir deb src pkgs=()
	# One dpkg-query for all, as setup_packages does.
	local p missing=() installed
	installed=$(dpkg-query -W -f='${Package} ${Status}\n' "${SOM_ARM64_PACKAGES[@]}" 2>/dev/null |
		    awk '/ ok installed$/ { print $1 }' || true)
	for p in "${SOM_ARM64_PACKAGES[@]}"; do
		grep -qx -- "$p" <<<"$installed" || missing+=("$p")
	done
	if ((${#missing[@]})); then
		log "installing: ${missing[*]}"
		local install=(apt-get install -y -q --no-install-recommends "${missing[@]}")
		{ apt_env "${install[@]}" || { apt_update_once && apt_env "${install[@]}"; }; } >&2
	fi

	SOM_KRELEASE=$SOM_ABI-arm64
	kdir=$SOM_CACHE/kernel/$SOM_KRELEASE
	SOM_KROOT=$kdir/root
	SOM_KHEADERS=$kdir/src
	SOM_VMLINUX=$SOM_KROOT/boot/vmlinuz-$SOM_KRELEASE
	SOM_SYSROOT=$kdir/sysroot
	[[ -f $kdir/.complete ]] && return 0

	arm64_update
	log "fetching arm64 kernel $SOM_KRELEASE ($SOM_KVERSION) and the guest's sysroot into $kdir"
	rm -rf "$kdir"
	mkdir -p "$kdir/debs" "$kdir/sysdebs" "$SOM_KROOT" "$SOM_KHEADERS" "$SOM_SYSROOT"
	(cd "$kdir/debs" && arm64_apt apt-get download \
		"linux-image-$SOM_KRELEASE-unsigned=$SOM_KVERSION" \
		"linux-headers-$SOM_KRELEASE=$SOM_KVERSION" >&2)
	for deb in "$kdir"/debs/*.deb; do
		dpkg-deb -x "$deb" "$SOM_KROOT"
	done
	mapfile -t pkgs < <(arm64_sysroot_closure)
	((${#pkgs[@]} > 10)) || die "arm64: cannot resolve the sysroot's packages"
	(cd "$kdir/sysdebs" && arm64_apt apt-get download "${pkgs[@]}" >&2)
	for deb in "$kdir"/sysdebs/*.deb; do
		dpkg-deb -x "$deb" "$SOM_SYSROOT"
	done
	rm -rf "$kdir/debs" "$kdir/sysdebs"
	[[ -f $SOM_VMLINUX ]] || die "no $SOM_VMLINUX in the arm64 image package"
	depmod -b "$SOM_KROOT" "$SOM_KRELEASE"

	log "preparing linux-source-$SOM_KERNEL_SERIES for arm64 module builds"
	tar -xJf "$SOM_KSOURCE_TAR" -C "$SOM_KHEADERS" --strip-components=1
	cp "$SOM_KROOT/boot/config-$SOM_KRELEASE" "$SOM_KHEADERS/.config"
	arm64_make -C "$SOM_KHEADERS" -s olddefconfig >&2
	arm64_make -C "$SOM_KHEADERS" -s -j"$(njobs)" \
		KERNELRELEASE="$SOM_KRELEASE" modules_prepare >&2
	src=$SOM_KROOT/usr/src/linux-headers-$SOM_KRELEASE
	cp "$src/Module.symvers" "$SOM_KHEADERS/"
	printf '%s %s\n' "$SOM_ABI" "$SOM_KVERSION" >"$kdir/.complete"
}

arm64_make() {
	make ARCH=arm64 CROSS_COMPILE="$SOM_CROSS" "$@"
}

# The C compiler for the guest's programs: the cross compiler, finding
# jemalloc's header and library in the sysroot.
arm64_cc() {
	printf '%sgcc -idirafter %s/usr/include -L%s/usr/lib/aarch64-linux-gnu' \
		"$SOM_CROSS" "$SOM_SYSROOT" "$SOM_SYSROOT"
}

# Copy every library an arm64 ELF file needs from SOM_SYSROOT, its loader
# included, to the same place under ROOT (ldd cannot run it here); nothing
# for a file that is not ELF.
stage_libraries_arm64() {
	local root=$1 elf=$2 need lib dir interp
	# A script (som-sources) needs nothing; readelf would fail on it.
	"${SOM_CROSS}readelf" -h "$elf" >/dev/null 2>&1 || return 0
	interp=$("${SOM_CROSS}readelf" -lW "$elf" 2>/dev/null |
		 sed -n 's/.*Requesting program interpreter: \(.*\)]/\1/p')
	if [[ -n $interp && ! -e $root$interp ]]; then
		lib=$(readlink -f "$SOM_SYSROOT$interp")
		[[ -f $lib ]] || die "arm64: no loader $interp in $SOM_SYSROOT"
		install -D -m 0755 "$lib" "$root$interp"
	fi
	while read -r need; do
		for dir in lib/aarch64-linux-gnu usr/lib/aarch64-linux-gnu; do
			lib=$SOM_SYSROOT/$dir/$need
			[[ -e $lib ]] || continue
			if [[ ! -e $root/$dir/$need ]]; then
				install -D -m 0755 "$(readlink -f "$lib")" "$root/$dir/$need"
				stage_libraries_arm64 "$root" "$lib"
			fi
			continue 2
		done
		die "arm64: $elf needs $need, which $SOM_SYSROOT lacks"
	done < <("${SOM_CROSS}readelf" -dW "$elf" 2>/dev/null |
		 sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
}

# The guest's programs and allocators from the sysroot, like
# stage_programs does from the host.
stage_programs_arm64() {
	local root=$1 name prog lib
	for name in $SOM_VM_PROGRAMS; do
		[[ $name != ndctl ]] || continue	# no legacy pmem on virt
		prog=$SOM_SYSROOT/usr/bin/$name
		[[ -f $prog ]] || die "arm64: $name is not in $SOM_SYSROOT"
		install -D -m 0755 "$prog" "$root/usr/bin/$name"
		stage_libraries_arm64 "$root" "$prog"
	done
	for lib in $SOM_VM_LIBS; do
		lib=${lib//x86_64-linux-gnu/aarch64-linux-gnu}
		[[ -f $SOM_SYSROOT$lib ]] || die "arm64: $lib is not in $SOM_SYSROOT"
		install -D -m 0755 "$SOM_SYSROOT$lib" "$root$lib"
		stage_libraries_arm64 "$root" "$root$lib"
	done
}

# som_arm64_dtb OUT: the virt machine's device tree (as QEMU makes it for
# the machine options in the arguments after OUT) with a no-map
# /reserved-memory node for each of som_vm_reserved_ranges: arm64's way to keep memory from the kernel (memmap=
# is x86 only). Where the machine has no memory (SOM_VM_NOT_RAM) the
# kernel reserves nothing, and /proc/iomem shows nothing.
som_arm64_dtb() {
	local out=$1 range size base node=
	shift
	"$@" -machine dumpdtb="$out.qemu" >/dev/null 2>&1 ||
		die "arm64: QEMU could not dump the virt machine's device tree"
	while read -r range; do
		size=$(numfmt --from=iec "${range%@*}")
		base=$(numfmt --from=iec "${range#*@}")
		node+=$(printf '\t\tsom@%x {\n\t\t\treg = <0x%x 0x%x 0x%x 0x%x>;\n\t\t\tno-map;\n\t\t};\n' \
			"$base" $((base >> 32)) $((base & 0xffffffff)) \
			$((size >> 32)) $((size & 0xffffffff)))
		node+=$'\n'
	done < <(som_vm_reserved_ranges)
	# Before the root node's closing brace: properties precede subnodes.
	dtc -q -I dtb -O dts "$out.qemu" |
		awk -v node="$node" '
			{ lines[NR] = $0 }
			END {
				for (last = NR; lines[last] != "};"; last--) ;
				for (i = 1; i < last; i++) print lines[i]
				print "\treserved-memory {"
				print "\t\t#address-cells = <0x02>;"
				print "\t\t#size-cells = <0x02>;"
				print "\t\tranges;"
				printf "%s", node
				print "\t};"
				for (i = last; i <= NR; i++) print lines[i]
			}' | dtc -q -I dts -O dtb -o "$out"
	rm -f "$out.qemu"
}
