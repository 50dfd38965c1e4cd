#!/bin/sh
# Guest side of `vm/run bench`: SOM next to anonymous 4 KiB pages, THP,
# 1 GiB hugetlb pages and memfd (bench/som_bench.c), run after run: run 1
# of every measurement, then run 2, and so on, so that a slow spell of the
# host spreads over all of them. Then memcached under a fixed load
# (bench/memload.c), with glibc's malloc and under somrun. Every result is
# one "SOMBENCH ..." line on the console; the host collects them
# (vm/lib/bench.sh) and bench/report.py makes the table and the plots.
#
# Knobs (through SOM_GUEST_ENV; vm/lib/bench.sh passes the host's, with
# commas for spaces):
#   SOM_BENCH_RUNS       runs of each measurement (5)
#   SOM_BENCH_SIZES      GiB per mapping ("1 2 4")
#   SOM_BENCH_BACKINGS   ("anon4k thp hugetlb memfd som som-cold")
#   SOM_BENCH_CHURN      allocate/free loops, KIND:OPS ("som-2m:256
#                        som-2m:16384 som-1g:4 som-1g:32 thp-2m:256
#                        hugetlb-1g:2"; the long som loops outrun the
#                        zeroing worker, the short ones do not)
#   SOM_BENCH_AGE        entry sizes whose aging scan is measured ("1g 2m
#                        4k mglru-thp mglru-4k": som's, bench/aging.c, then
#                        the kernel's MGLRU on anonymous memory,
#                        bench/aging_mglru.c); "none" skips it
#   SOM_BENCH_GUPS_OPS   updates of the random-access loop (4194304)
#   SOM_BENCH_MEMCACHED  memcached's load: "MB CONNS KEYS VALUE OPS GET%"
#                        ("1024 4 8192 4096 16384 90"); "none" skips it
#   SOM_BENCH_META_POOLS pool sizes in GiB for the metadata fit ("1 2 4 8")
#   SOM_BENCH_PROGRAMS   programs whose entries are measured under real
#                        allocators ("redis memcached stress-glibc
#                        stress-tcmalloc"; vm/guest/bench_programs.sh);
#                        "none" skips them. SOM_BENCH_REDIS: their sizes;
#                        SOM_BENCH_PACK_THRESHOLD: packing's threshold in
#                        the som+pack rows (256)
#   SOM_BENCH_TIER       what moves between tiers ("2m 1g kernel-thp":
#                        som's demotion and promotion, bench/tiering.c,
#                        then the kernel's move_pages() of THP)
#   SOM_BENCH_SWAP       what pages out and back, and runs 1.5 times its
#                        memory (bench/pressure.c) ("som kernel": som's
#                        SOM_IOC_PAGEOUT to a store on a RAM disk, then
#                        the kernel's MADV_PAGEOUT to a swap area on one,
#                        bench/swapping.c); "none" skips it
#   SOM_BENCH_PART       "metadata": only that, in a boot of its own with
#                        8 GiB reserved (vm/lib/bench.sh sets it);
#                        "programs": only the programs; "swap": only
#                        the swap measurements; "tiers": only
#                        the tiers, in a boot of two nodes with a spare
#                        range on node 1

# Lists may come with commas for spaces (SOM_GUEST_ENV words have none).
words() {
	echo "$1" | tr , ' '
}

runs=${SOM_BENCH_RUNS:-5}
sizes=$(words "${SOM_BENCH_SIZES:-1 2 4}")
backings=$(words "${SOM_BENCH_BACKINGS:-anon4k thp hugetlb memfd som som-cold}")
churn=$(words "${SOM_BENCH_CHURN:-som-2m:256 som-2m:16384 som-1g:4 som-1g:32 thp-2m:256 hugetlb-1g:2}")
mc=$(words "${SOM_BENCH_MEMCACHED:-1024 4 8192 4096 16384 90}")
ages=$(words "${SOM_BENCH_AGE:-1g 2m 4k mglru-thp mglru-4k}")
[ "$ages" != none ] || ages=
swaps=$(words "${SOM_BENCH_SWAP:-som kernel}")
[ "$swaps" != none ] || swaps=
sysfs=/sys/kernel/mm/som
status=0

load_som() {
	insmod /som/som.ko ranges="${SOM_RANGES:-4G@4G}"
}

# som's metadata with pools of each size: empty, mapped whole by 1 GiB
# entries, split into 2 MiB blocks (som_bench meta); then struct page and
# HVO for the comparison.
metadata_bench() {
	base=${SOM_RANGES#*@}
	for gib in $(words "${SOM_BENCH_META_POOLS:-1 2 4 8}"); do
		if ! insmod /som/som.ko ranges="${gib}G@$base"; then
			echo "SOMBENCH error what=meta pool_gib=$gib"
			status=1
			continue
		fi
		for layout in empty whole split; do
			bench meta $layout
		done
		rmmod som || status=1
	done
	bench meta hvo
}

# A fresh som.ko: its whole pool waits for the zeroing worker.
reload_som() {
	rmmod som && load_som
}

# One som_bench call; a failure is reported and the rest goes on.
bench() {
	som_bench "$@" || {
		echo "SOMBENCH error what=$1 args=$(echo "$*" | tr ' ' ,)"
		status=1
	}
}

memcached_bench() {
	# shellcheck disable=SC2086  # the knob is a list of words
	set -- $mc
	mb=$1 conns=$2 keys=$3 value=$4 ops=$5 get=$6
	# shellcheck source=vm/guest/lib/memcached.sh
	. /som/guest/lib/memcached.sh
	memcached_net
	for run in $(seq "$runs"); do
		for alloc in glibc som; do
			if [ $alloc = som ]; then
				memcached_start "$mb" somrun --
			else
				memcached_start "$mb"
			fi || {
				sed 's/^/# memcached: /' /tmp/memcached.log
				echo "SOMBENCH skip what=memcached alloc=$alloc run=$run reason=did_not_start"
				status=1
				continue
			}
			used=$(($(cat $sysfs/total_bytes) - $(cat $sysfs/free_bytes)))
			thp=$(awk '/^AnonHugePages/ { print $2 * 1024 }' "/proc/$memcached_pid/smaps_rollup")
			out=$(som_memload -c "$conns" -k "$keys" -v "$value" -n "$ops" -g "$get" -S "$run")
			rc=$?
			memcached_stop
			echo "SOMBENCH memcached alloc=$alloc run=$run cache_mb=$mb som_bytes=$used thp_bytes=$thp rc=$rc $out"
			[ $rc -eq 0 ] || status=1
		done
	done
}

echo "# bench: $(uname -r), $(nproc) CPUs, runs=$runs sizes='$sizes'"
echo "SOMBENCH config runs=$runs sizes=$(echo "$sizes" | tr ' ' ,) backings=$(echo "$backings" | tr ' ' ,) churn=$(echo "$churn" | tr ' ' ,) gups_ops=${SOM_BENCH_GUPS_OPS:-4194304} memcached=$(echo "$mc" | tr ' ' ,)"
# The same address layout every run: with ASLR a mapping now and then
# starts a 512 GiB slot of its own and adds a PUD table (4 KiB) that says
# nothing about the entries that map it.
echo 0 >/proc/sys/kernel/randomize_va_space
if [ "${SOM_BENCH_PART:-}" = metadata ]; then
	echo "# bench: metadata, pools of $(words "${SOM_BENCH_META_POOLS:-1 2 4 8}") GiB"
	metadata_bench
	exit "$status"
fi
load_som || exit 1
if [ "${SOM_BENCH_PART:-}" = tiers ]; then
	for run in $(seq "$runs"); do
		for t in $(words "${SOM_BENCH_TIER:-2m 1g kernel-thp}"); do
			bench tier "$t" "$run"
		done
	done
	rmmod som || status=1
	exit "$status"
fi
if [ "${SOM_BENCH_PART:-}" = swap ]; then
	for run in $(seq "$runs"); do
		for s in $swaps; do
			bench swap "$s" "$run"
			bench pressure "$s" "$run"
		done
	done
	rmmod som || status=1
	exit "$status"
fi
if [ "${SOM_BENCH_PART:-}" = programs ]; then
	# shellcheck source=vm/guest/bench_programs.sh
	. /som/guest/bench_programs.sh
	programs_bench
	rmmod som || status=1
	exit "$status"
fi
# The memmap per GiB of RAM before HVO gives some of it back (som_bench).
info=$(som_bench info) || status=1
echo "$info"
SOM_BENCH_MEMMAP_PER_GIB=$(echo "$info" | sed -n 's/.* memmap_per_gib=\([0-9]*\).*/\1/p')
export SOM_BENCH_MEMMAP_PER_GIB
som_bench warmup || status=1
start=$(date +%s)

for run in $(seq "$runs"); do
	for gib in $sizes; do
		for b in $backings; do
			[ "$b" != som-cold ] || reload_som || exit 1
			bench touch "$b" "$gib" "$run"
		done
	done
	for c in $churn; do
		bench churn "${c%%:*}" "${c#*:}" "$run"
	done
	for e in $ages; do
		bench age "$e" "$run"
	done
	for s in $swaps; do
		bench swap "$s" "$run"
		bench pressure "$s" "$run"
	done
	echo "# bench: run $run done after $(($(date +%s) - start)) s"
done

[ "$mc" = none ] || memcached_bench
if [ "${SOM_BENCH_PROGRAMS:-}" != none ]; then
	# shellcheck source=vm/guest/bench_programs.sh
	. /som/guest/bench_programs.sh
	programs_bench
fi
echo "# bench: done after $(($(date +%s) - start)) s"

rmmod som || status=1
exit "$status"
