# shellcheck shell=bash
# Boot the test VM and judge its console log.
#
# Tunables (environment):
#   SOM_VM_TIMEOUT       seconds before a hung guest is killed (default:
#                        per command: for test 2700 on the stock tier and
#                        5400 on the debug tier (see vm/run), 300 for demo)
#   SOM_VM_MEM           guest RAM (16G: with q35, 0-2 GiB and 4-18 GiB;
#                        on arm64's virt 1-17 GiB)
#   SOM_VM_SMP           guest CPUs (2)
#   SOM_VM_NODES         NUMA nodes (2): RAM and CPUs split evenly, so
#                        node 0 is 0-2 and 4-10 GiB, node 1 10-18 GiB
#                        (arm64: 1-9 and 9-17 GiB)
#   SOM_VM_CPU           -cpu model (qemu64,+pdpe1gb; not `max`: 6.12 under
#                        multi-threaded TCG oopses at boot now and then)
#   SOM_VM_MCE           1: a boot that injects machine checks (see
#                        "Machine checks" below); its CPU is SOM_VM_CPU
#                        with vendor=GenuineIntel
#   SOM_VM_CPU_ARM64     -cpu model on arm64 (max,pauth-impdef=on: every
#                        feature TCG has, with QEMU's cheap pointer
#                        authentication instead of the architected one)
#   SOM_VM_RESERVE_SIZE  size of the memmap= reservation (2G)
#   SOM_VM_RESERVE_BASE  its physical start (4G); the guest gets it as
#                        SOM_RANGES=<size>@<base>
#   SOM_VM_SPARE         more reserved memory that som.ko does not get at
#                        load, for the tests to add at run time (1G@12G,
#                        on node 1); the guest sees SOM_SPARE_RANGES
#   SOM_VM_NOT_RAM       a range reserved with memmap=SIZE$START where the
#                        firmware has no memory (1G@256G): it looks like
#                        any reserved range in /proc/iomem, and som.ko
#                        must refuse it; the guest sees SOM_NOT_RAM, and
#                        SOM_NO_FIRMWARE_MAP=1 if som.ko cannot read the
#                        firmware's E820 map on this kernel
#   SOM_VM_PMEM          legacy persistent memory, memmap=SIZE!START
#                        (3G@14G, node 1), for device DAX; SOM_PMEM (x86
#                        only)
#   SOM_VM_HUGEPAGES     1 GiB hugetlb pages reserved at boot (2)
#   SOM_VM_DIMM          a memory device plugged in at boot (1G), as on a
#                        machine with hot-pluggable memory: the kernel
#                        onlines it into ZONE_MOVABLE (memhp_default_state=
#                        online_movable), where the buddy source can always
#                        find a free 1 GiB run (ZONE_MOVABLE made with
#                        movablecore= holds the kernel's own top-down boot
#                        allocations); on node 0 (x86 only: arm64's virt
#                        machine plugs memory devices through ACPI only)
#   SOM_VM_LOGLEVEL      console loglevel (5: warnings and worse)
#   SOM_VM_APPEND        extra kernel command-line words
#   SOM_VM_LOG_ALLOW     ERE; log lines matching it are not counted as
#                        kernel problems (use sparingly, say why)
#   SOM_GUEST_ENV        VAR=value words exported to the guest's scripts
#                        and tests, e.g. "SOM_FUZZ_ITERATIONS=200000
#                        SOM_STRESS_SECONDS=120" to fuzz and stress longer
#                        (raise SOM_VM_TIMEOUT to match)
#   SOM_VM_TIER          stock (Debian's kernel) or debug (the debug tier's
#                        kernel, SOM_DEBUG_VMLINUX); the guest sees it as
#                        SOM_TIER

SOM_VM_MEM=${SOM_VM_MEM:-16G}
SOM_VM_SMP=${SOM_VM_SMP:-2}
SOM_VM_NODES=${SOM_VM_NODES:-2}
SOM_VM_SPARE=${SOM_VM_SPARE:-1G@12G}
SOM_VM_NOT_RAM=${SOM_VM_NOT_RAM:-1G@256G}
SOM_VM_PMEM=${SOM_VM_PMEM:-3G@14G}
SOM_VM_HUGEPAGES=${SOM_VM_HUGEPAGES:-2}
SOM_VM_DIMM=${SOM_VM_DIMM:-1G}
SOM_VM_CPU=${SOM_VM_CPU:-qemu64,+pdpe1gb}
SOM_VM_CPU_ARM64=${SOM_VM_CPU_ARM64:-max,pauth-impdef=on}
SOM_VM_RESERVE_SIZE=${SOM_VM_RESERVE_SIZE:-2G}
SOM_VM_RESERVE_BASE=${SOM_VM_RESERVE_BASE:-4G}
# Not `quiet`: that is loglevel 4, which hides WARN() splats and lockdep
# reports (printed at KERN_WARNING) from the console we scan. At 5 a boot
# prints only a few mtrr/amd_pstate lines.
SOM_VM_LOGLEVEL=${SOM_VM_LOGLEVEL:-5}

# Kernel log patterns that fail a run wherever they appear in the console log.
SOM_VM_LOG_PATTERNS=(
	'BUG:' 'Oops' 'WARNING:' 'bad pud' 'bad pmd' 'general protection'
	'possible circular locking' 'INFO: ' 'KASAN:' 'UBSAN:' 'kmemleak'
	'Kernel panic'
)

# Machine checks (x86, a boot with SOM_VM_MCE=1): the CPU says GenuineIntel,
# so that the kernel decodes what QEMU's `mce` injects (qemu64 is AMD
# without SUCCOR, whose path panics on any uncorrected record), and its
# TSC counts as synchronised, so that sched_clock is stable and a
# nohz_full CPU can stop its tick (an unstable one keeps
# TICK_DEP_BIT_CLOCK_UNSTABLE set). That stable clock is one more static
# key flipped at late_initcall, in sched_clock_cpu(), which every CPU runs
# all the time: under multi-threaded TCG one boot of the demo in about
# forty hit an int3 Oops there: by all signs a vCPU still running a
# translation made while text_poke_bp()'s int3 was in place, after the
# patch was done (not reproduced on demand: one boot in forty). So
# these boots run TCG
# single-threaded (-accel tcg,thread=single): the vCPUs take turns, and
# no vCPU runs code another is patching. QEMU serves its QMP monitor and the guest's second
# serial port (ttyS1) on Unix sockets next to the log, and
# vm/lib/mce_relay.py turns a test's request on ttyS1 ("srao PHYS", "srar CPU PHYS") into
# the monitor's `mce` command; the guest sees SOM_MCE_TTY=/dev/ttyS1. The
# guest boots with mce=0: an Intel CPU's handler otherwise waits for every
# CPU to enter it, and QEMU's `mce` reaches one, so the guest panicked on
# the timeout (Documentation/kernel-facts.md, "Memory errors").
som_vm_mce_start() {
	local name=$1
	SOM_VM_MCE_REQ=$SOM_OUT/vm-$name.req
	SOM_VM_MCE_MON=$SOM_OUT/vm-$name.mon
	rm -f "$SOM_VM_MCE_REQ" "$SOM_VM_MCE_MON"
	python3 "$VM_DIR/lib/mce_relay.py" "$SOM_VM_MCE_REQ" "$SOM_VM_MCE_MON" \
		2>"$SOM_OUT/vm-$name-mce.log" &
	SOM_VM_MCE_PID=$!
}

som_vm_mce_stop() {
	[[ -n ${SOM_VM_MCE_PID:-} ]] || return 0
	kill "$SOM_VM_MCE_PID" 2>/dev/null || true
	wait "$SOM_VM_MCE_PID" 2>/dev/null || true
	SOM_VM_MCE_PID=
	rm -f "$SOM_VM_MCE_REQ" "$SOM_VM_MCE_MON"
}

# The ranges the guest reserves, SIZE@START a line: for som.ko at load,
# the spare one, the one that is not RAM (memmap= on x86, no-map device
# tree nodes on arm64: som_arm64_dtb).
som_vm_reserved_ranges() {
	printf '%s\n' "${SOM_VM_RESERVE_SIZE}@${SOM_VM_RESERVE_BASE}" \
		${SOM_VM_SPARE:+"$SOM_VM_SPARE"} ${SOM_VM_NOT_RAM:+"$SOM_VM_NOT_RAM"}
}

# som_vm_boot NAME DEFAULT_TIMEOUT
# Boots with somvm.guest=NAME (the guest runs /som/guest/NAME.sh), echoes
# the console live and tees it to $SOM_OUT/vm-NAME.log. The guest's /init
# ends with the line "SOM-GUEST-DONE status=N", N its script's exit
# status, and then makes QEMU exit with that status (isa-debug-exit, or
# semihosting on arm64):
# the line is what counts, QEMU's exit status only backs it up. Sets:
#   SOM_VM_LOG      the log file
#   SOM_VM_STATUS   the guest script's exit status from that line, or ""
#                   if the guest never printed it (it died, hung or
#                   panicked before its end)
#   SOM_VM_PROBLEM  what went wrong with the guest ("" if nothing): no
#                   line, or QEMU's status disagreeing with it
som_vm_boot() {
	local name=$1 timeout=${SOM_VM_TIMEOUT:-$2} rc
	SOM_VM_LOG=$SOM_OUT/vm-$name${SOM_VM_TIER:+-$SOM_VM_TIER}.log
	SOM_VM_STATUS=
	SOM_VM_PROBLEM=

	local tier=${SOM_VM_TIER:-stock} kernel=$SOM_VMLINUX
	[[ $tier == stock ]] || kernel=$SOM_DEBUG_VMLINUX
	local append="panic=-1 loglevel=$SOM_VM_LOGLEVEL somvm.ranges=${SOM_VM_RESERVE_SIZE}@${SOM_VM_RESERVE_BASE} somvm.guest=$name somvm.tier=$tier"
	local env="${SOM_GUEST_ENV:-}" range
	[[ -z $SOM_VM_SPARE ]] || env+=" SOM_SPARE_RANGES=$SOM_VM_SPARE"
	[[ -z $SOM_VM_NOT_RAM ]] || env+=" SOM_NOT_RAM=$SOM_VM_NOT_RAM"
	local cpu_model=$SOM_VM_CPU
	if [[ $SOM_ARCH == x86_64 ]]; then
		append="console=ttyS0 $append"
		if ((${SOM_VM_MCE:-0})); then
			# tsc=reliable: no clocksource watchdog on the TSC. On a
			# busy host the watchdog's read-back of single-threaded
			# TCG takes long, it marks the TSC unstable, and then
			# no tick stops (TICK_DEP_BIT_CLOCK_UNSTABLE): the SRAR
			# case waited for CPU 1 until its timeout (one debug
			# boot, 2026-12-08). QEMU's TSC follows the host's
			# monotonic clock.
			append="console=ttyS0 mce=0 tsc=reliable ${append#console=ttyS0 }"
			env+=" SOM_MCE_TTY=/dev/ttyS1"
			cpu_model+=,vendor=GenuineIntel
		fi
		# `$` must reach the kernel literally: it is a plain array
		# element, never re-evaluated by a shell.
		while read -r range; do
			append+=" memmap=${range%@*}\$${range#*@}"
		done < <(som_vm_reserved_ranges)
		# A kernel that exports the firmware's map to KVM only (7.3)
		# leaves som.ko the kernel's map: see source_reserved.c.
		if [[ -n $SOM_VM_NOT_RAM ]] &&
		   ! grep -qa e820__mapped_raw_any "$SOM_MODULE"; then
			env+=" SOM_NO_FIRMWARE_MAP=1"
		fi
		if [[ -n $SOM_VM_PMEM ]]; then
			append+=" memmap=${SOM_VM_PMEM%@*}!${SOM_VM_PMEM#*@}"
			env+=" SOM_PMEM=$SOM_VM_PMEM"
		fi
	else
		# The reserved ranges are no-map /reserved-memory nodes in the
		# device tree (som_arm64_dtb); the one that is not RAM is
		# reserved where the machine has no memory, so the kernel's
		# map leaves it out. virt has no legacy pmem.
		append="console=ttyAMA0 $append"
	fi
	if ((SOM_VM_HUGEPAGES)); then
		append+=" hugepagesz=1G hugepages=$SOM_VM_HUGEPAGES"
		env+=" SOM_HUGEPAGES=$SOM_VM_HUGEPAGES"
	fi
	local dimm=()
	if [[ -n $SOM_VM_DIMM && $SOM_ARCH == x86_64 ]]; then
		append+=" memhp_default_state=online_movable"
		dimm=(-object "memory-backend-ram,id=dimm0,size=$SOM_VM_DIMM"
		      -device "pc-dimm,id=dimm0,memdev=dimm0,node=0")
	fi
	append+=${SOM_VM_APPEND:+ $SOM_VM_APPEND}
	local word words
	read -ra words <<<"$env"
	for word in "${words[@]}"; do
		[[ $word =~ ^[A-Z_][A-Z0-9_]*=[^[:space:]]*$ ]] ||
			die "SOM_GUEST_ENV: '$word' is not VAR=value"
		append+=" somvm.env=$word"
	done

	# NUMA: equal memory backends, CPUs dealt out round robin. Each CPU is
	# a socket of its own: CPUs of one socket share a cache, and the
	# kernel warns when such CPUs sit on different nodes.
	local numa=() node cpu mem_mib
	mem_mib=$(numfmt --from=iec "$SOM_VM_MEM")
	mem_mib=$((mem_mib >> 20))
	if ((SOM_VM_NODES > 1)); then
		((mem_mib % SOM_VM_NODES == 0)) ||
			die "SOM_VM_MEM=$SOM_VM_MEM does not split into $SOM_VM_NODES nodes"
		for ((node = 0; node < SOM_VM_NODES; node++)); do
			numa+=(-object "memory-backend-ram,id=ram$node,size=$((mem_mib / SOM_VM_NODES))M")
			local spec="node,nodeid=$node,memdev=ram$node"
			for ((cpu = node; cpu < SOM_VM_SMP; cpu += SOM_VM_NODES)); do
				spec+=",cpus=$cpu"
			done
			numa+=(-numa "$spec")
		done
	fi

	# shellcheck disable=SC2054  # the commas belong to qemu's options
	local qemu
	if [[ $SOM_ARCH == x86_64 ]]; then
		local accel=tcg
		((${SOM_VM_MCE:-0})) && accel=tcg,thread=single
		qemu=(qemu-system-x86_64
			-machine q35 -accel "$accel" -cpu "$cpu_model"
			-m "$SOM_VM_MEM,slots=2,maxmem=$((mem_mib + 4096))M"
			"${numa[@]}" "${dimm[@]}"
			-device isa-debug-exit,iobase=0xf4,iosize=4)
	else
		qemu=(qemu-system-aarch64
			-machine virt,gic-version=3 -accel tcg -cpu "$SOM_VM_CPU_ARM64"
			-m "$SOM_VM_MEM" "${numa[@]}"
			-semihosting-config enable=on,target=native,userspace=on)
	fi
	qemu+=(-smp "$SOM_VM_SMP,sockets=$SOM_VM_SMP,cores=1,threads=1"
		-nodefaults -display none -serial stdio -no-reboot)
	if [[ $SOM_ARCH == x86_64 ]] && ((${SOM_VM_MCE:-0})); then
		som_vm_mce_start "$name"
		qemu+=(-serial "unix:$SOM_VM_MCE_REQ,server=on,wait=off"
		       -qmp "unix:$SOM_VM_MCE_MON,server=on,wait=off")
	fi
	if [[ $SOM_ARCH == arm64 ]]; then
		local dtb=$SOM_OUT/vm-$name.dtb
		som_arm64_dtb "$dtb" "${qemu[@]}"
		qemu+=(-dtb "$dtb")
	fi
	qemu+=(-kernel "$kernel" -initrd "$SOM_INITRAMFS" -append "$append")

	log "booting '$name' (timeout ${timeout}s, log $SOM_VM_LOG)"
	log "kernel command line: $append"
	set +e
	timeout -k 10 "$timeout" "${qemu[@]}" </dev/null 2>&1 | tee "$SOM_VM_LOG"
	rc=${PIPESTATUS[0]}
	set -e
	som_vm_mce_stop

	# isa-debug-exit makes QEMU exit with (byte << 1) | 1; arm64's
	# semihosting exit with the byte itself.
	local how qemu_status=
	if ((rc == 124 || rc == 137)); then
		how="timed out after ${timeout}s, guest killed"
	elif [[ $SOM_ARCH == arm64 ]]; then
		qemu_status=$rc
		how="QEMU exited with status $rc"
	elif ((rc == 0)); then
		how="QEMU exited without a status (poweroff, or a panic's reboot)"
	elif ((rc % 2)); then
		qemu_status=$((rc >> 1))
		how="QEMU exited with the guest's status $qemu_status"
	else
		how="QEMU failed with status $rc"
	fi
	SOM_VM_STATUS=$(som_vm_done_status "$SOM_VM_LOG")
	if [[ -z $SOM_VM_STATUS ]]; then
		SOM_VM_PROBLEM="no SOM-GUEST-DONE line: the guest died, hung or panicked before its end; $how"
	elif [[ -n $qemu_status && $qemu_status != "$SOM_VM_STATUS" ]]; then
		SOM_VM_PROBLEM="the guest printed status $SOM_VM_STATUS but $how"
	fi
	[[ -z $SOM_VM_PROBLEM ]] || log "$SOM_VM_PROBLEM"
}

# The N of the guest's last "SOM-GUEST-DONE status=N" line in LOG; empty
# without one (and a success: under pipefail grep's 1 would end vm/run
# before it counts the boot as failed). Kernel messages may share its
# line on the serial console.
som_vm_done_status() {
	{ tr -d '\r' <"$1" | grep -o 'SOM-GUEST-DONE status=[0-9]*' || true; } |
		tail -n 1 | sed 's/.*=//'
}

# som_vm_scan_log LOG: print every line with a forbidden pattern; sets
# SOM_VM_LOG_HITS to their number.
som_vm_scan_log() {
	local log=$1 p hits line
	local args=()
	for p in "${SOM_VM_LOG_PATTERNS[@]}"; do
		args+=(-e "$p")
	done
	hits=$(tr -d '\r' <"$log" | grep -n -F "${args[@]}" |
	       { if [[ -n ${SOM_VM_LOG_ALLOW:-} ]]; then grep -v -E "$SOM_VM_LOG_ALLOW"; else cat; fi; } || true)
	SOM_VM_LOG_HITS=0
	[[ -n $hits ]] || return 0
	SOM_VM_LOG_HITS=$(wc -l <<<"$hits")
	echo "kernel problems in $log ($SOM_VM_LOG_HITS line(s)):"
	while IFS= read -r line; do
		printf '    line %s\n' "$line"
	done <<<"$hits"
}
