# shellcheck shell=bash
# `vm/run bench`: som next to anonymous 4 KiB pages, THP, 1 GiB hugetlb
# pages and memfd, in one boot of a VM of its own; the report goes to
# $SOM_BENCH_OUT (out/bench): table.txt, results.json, results.csv and
# PNG plots, made by bench/report.py from the guest's SOMBENCH lines.
#
# The bench VM is not the test VM: one NUMA node (no balancing between
# nodes in the numbers), SOM_VM_MEM (16G) of RAM, a 4 GiB som pool at
# 4 GiB (memmap=4G$4G), no spare range, pmem, memory device or boot-time
# hugetlb pages (the benchmark allocates its 1 GiB pages at run time), and
#   hugetlb_free_vmemmap=on       HugeTLB vmemmap optimisation (HVO): a
#                                 1 GiB page keeps one 4 KiB page of its
#                                 16 MiB of struct page
#   slab_debug=F,radix_tree_node  consistency checks on xarray nodes, which
#                                 also make /proc/slabinfo count them
#                                 exactly (no per-CPU slabs): som's region
#                                 tables and memfd's page cache are xarrays
#
# Before that boot, a short one of its own measures som's metadata over
# pools of SOM_BENCH_META_POOLS GiB (1 2 4 8): 8 GiB reserved at 4 GiB in
# the same SOM_VM_MEM, so 8 GiB of RAM, which is all it needs (struct
# page and one HugeTLB 1 GiB page with HVO are measured in it too, for
# the comparison). SOM_BENCH_ONLY=metadata makes that boot the whole run
# (a few minutes); SOM_BENCH_ONLY=programs runs only the programs under
# real allocators (vm/guest/bench_programs.sh), in the 4 GiB boot;
# SOM_BENCH_ONLY=swap only som's page-out and read-back next to the
# kernel's swap (bench/swapping.c), in the 4 GiB boot.
#
# After the main boot, a short one of two NUMA nodes measures tiering
# (som_bench tier): the 4 GiB pool on node 0 is the fast tier and a
# spare 1 GiB range on node 1 (1G@12G) is added as the slow one; the
# kernel's own move_pages() of THP between the nodes is measured beside
# it. SOM_BENCH_ONLY=tiers runs only that boot.
#
# Knobs: SOM_BENCH_RUNS, SOM_BENCH_SIZES, SOM_BENCH_BACKINGS,
# SOM_BENCH_CHURN, SOM_BENCH_AGE, SOM_BENCH_GUPS_OPS, SOM_BENCH_MEMCACHED,
# SOM_BENCH_META_POOLS (see vm/guest/bench.sh; lists with commas or
# spaces), SOM_BENCH_ONLY, SOM_VM_MEM, SOM_VM_TIMEOUT (default 3600 s),
# SOM_BENCH_OUT, SOM_BENCH_PYTHON (Debian's python3 with
# python3-matplotlib: /usr/bin/python3).

SOM_BENCH_DIR=${SOM_BENCH_DIR:-$REPO/bench}
SOM_BENCH_OUT=${SOM_BENCH_OUT:-$SOM_OUT/bench}
SOM_BENCH_PYTHON=${SOM_BENCH_PYTHON:-/usr/bin/python3}
SOM_BENCH_KNOBS=(SOM_BENCH_RUNS SOM_BENCH_SIZES SOM_BENCH_BACKINGS
		 SOM_BENCH_CHURN SOM_BENCH_AGE SOM_BENCH_GUPS_OPS SOM_BENCH_MEMCACHED
		 SOM_BENCH_META_POOLS SOM_BENCH_PROGRAMS SOM_BENCH_REDIS
		 SOM_BENCH_PACK_THRESHOLD SOM_BENCH_TIER SOM_BENCH_SWAP
		 SOM_BENCH_ONLY)

# The machine the numbers come from, as key=value lines.
bench_host_info() {
	local model
	model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n1)
	cat <<-EOT
	host_os=Debian $(cat /etc/debian_version 2>/dev/null)
	host_kernel=$(uname -r)
	host_cpu=$model
	host_cpus=$(nproc)
	host_mem_bytes=$(awk '/^MemTotal/ { printf "%.0f\n", $2 * 1024 }' /proc/meminfo)
	qemu=$(qemu-system-x86_64 --version | head -n1)
	vm_mem=${SOM_VM_MEM:-}
	vm_cpus=$SOM_VM_SMP
	vm_cpu_model=$SOM_VM_CPU
	vm_cmdline=$SOM_BENCH_APPEND
	guest_kernel_package=$SOM_STOCK_KVERSION
	commit=$(git -C "$REPO" describe --always --dirty 2>/dev/null)
	EOT
}

# The command line that reproduces this run.
bench_command() {
	local knob cmd=
	for knob in "${SOM_BENCH_KNOBS[@]}" SOM_VM_MEM; do
		[[ -z ${!knob:-} ]] || cmd+="$knob='${!knob}' "
	done
	echo "${cmd}vm/run bench"
}

# One boot of the bench VM with RESERVE bytes reserved for som at 4 GiB
# and EXTRA words for the guest's environment: its SOMBENCH lines go to
# the end of $raw, its log to $SOM_BENCH_OUT/LOGNAME. Sets boot_status.
# NODES (1) NUMA nodes, and a SPARE range (none) for the guest to add.
som_bench_boot() {
	local reserve=$1 extra=$2 logname=$3 nodes=${4:-1} spare=${5:-}
	# The VM's settings (vm/lib/qemu.sh, vm/lib/initramfs.sh), for this
	# boot only.
	# shellcheck disable=SC2034  # read by som_vm_boot and som_initramfs
	local SOM_VM_NODES=$nodes SOM_VM_SPARE=$spare SOM_VM_PMEM='' SOM_VM_HUGEPAGES=0 \
		SOM_VM_DIMM='' SOM_VM_RESERVE_SIZE=$reserve SOM_VM_RESERVE_BASE=4G \
		SOM_VM_MODULES='' \
		SOM_VM_PROGRAMS="memcached memcping memcstat redis-server redis-cli redis-benchmark stress-ng" \
		SOM_VM_LIBS=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4
	local SOM_VM_APPEND="$SOM_BENCH_APPEND${SOM_VM_APPEND:+ $SOM_VM_APPEND}"
	local SOM_GUEST_ENV="${SOM_GUEST_ENV:-}$extra" knob

	for knob in "${SOM_BENCH_KNOBS[@]}"; do
		[[ -z ${!knob:-} ]] || SOM_GUEST_ENV+=" $knob=${!knob// /,}"
	done
	som_initramfs bench
	som_vm_boot bench 3600
	som_vm_scan_log "$SOM_VM_LOG"
	cp "$SOM_VM_LOG" "$SOM_BENCH_OUT/$logname"
	tr -d '\r' <"$SOM_VM_LOG" | grep '^SOMBENCH ' >>"$raw" || true
	boot_status=${SOM_VM_STATUS:-1}
	if [[ -z $SOM_VM_STATUS ]]; then
		echo "bench: $SOM_VM_PROBLEM"
	elif ((SOM_VM_LOG_HITS)); then
		echo "bench: the kernel reported problems (above); the numbers are suspect"
		boot_status=1
	fi
}

som_bench_run() {
	local SOM_BENCH_APPEND="hugetlb_free_vmemmap=on slab_debug=F,radix_tree_node"
	local raw=$SOM_BENCH_OUT/raw.txt status=0 boot_status

	if ! "$SOM_BENCH_PYTHON" -c 'import matplotlib' 2>/dev/null; then
		die "$SOM_BENCH_PYTHON with matplotlib is missing (vm/run setup installs python3-matplotlib)"
	fi
	build_userspace "$SOM_BENCH_DIR"
	mkdir -p "$SOM_BENCH_OUT"
	: >"$raw"
	if [[ ${SOM_BENCH_ONLY:-} != @(programs|tiers|swap) ]]; then
		som_bench_boot 8G " SOM_BENCH_PART=metadata" vm-bench-metadata.log
		((boot_status == 0)) || status=1
	fi
	case ${SOM_BENCH_ONLY:-} in
	metadata|tiers) ;;
	programs|swap)
		som_bench_boot 4G " SOM_BENCH_PART=$SOM_BENCH_ONLY" vm-bench.log
		((boot_status == 0)) || status=1 ;;
	*)
		som_bench_boot 4G "" vm-bench.log
		((boot_status == 0)) || status=1 ;;
	esac
	if [[ ${SOM_BENCH_ONLY:-} != @(metadata|programs|swap) ]]; then
		som_bench_boot 4G " SOM_BENCH_PART=tiers" vm-bench-tiers.log 2 1G@12G
		((boot_status == 0)) || status=1
	fi

	bench_host_info >"$SOM_BENCH_OUT/host.txt"
	log "results: $(wc -l <"$raw") lines in $raw"
	"$SOM_BENCH_PYTHON" "$SOM_BENCH_DIR/report.py" --raw "$raw" \
		--host "$SOM_BENCH_OUT/host.txt" --command "$(bench_command)" \
		--out "$SOM_BENCH_OUT" || return 1
	echo "bench: exit $status; report in $SOM_BENCH_OUT"
	return "$status"
}
