#!/bin/sh
# Entries under real allocators, sourced by bench.sh (som.ko loaded,
# `words` and `status` defined): each program fills its memory, then
# churns it (frees and allocates again), under somrun and on anonymous
# memory with THP. After each phase one line:
#
#   SOMBENCH program name=N alloc=som|som+pack|anon-thp|anon phase=fill|churn
#            e1g= e2m= e4k=     som entries of its processes (somctl ps)
#            som_used=          pool bytes allocated (total - free - reserved)
#            som_held=          pool bytes allocated or reserved
#            rss_anon=          its ordinary anonymous memory (RssAnon)
#            thp_bytes=         of which on THP (AnonHugePages)
#            pte_bytes=         its page tables (VmPTE)
#            app_bytes=         what the program says it uses (0: nothing)
#            ops_per_s=         throughput of the phase (churn only)
#            blk_regions=       anonymous memory only: 2 MiB regions of its
#                               heaps (mappings of 2 MiB or more but
#                               thread stacks, and brk) with a page present
#                               (som_bench regions); blk_sparse= of them
#                               at most half full, blk_sparse_bytes= their
#                               pages; blk_thp_unmapped= the bytes of
#                               THPs they map in part that are not mapped
#                               (held until reclaim splits them);
#                               blk_fill= the regions by how full they
#                               are, in eighths (som_bench regions)
#
# som+pack is som with packing on (packing/threshold SOM_BENCH_PACK_THRESHOLD,
# 256 unless set; admin-guide.md,
# section 11): after the churn of redis and memcached a pass runs
# (packing/run) before the sample, and a line
#
#   SOMBENCH program_pack name=N threshold= packed= densified= sparse= pack_blocks=
#            pack_pages= compacted= the packing counters then
#
# The programs (SOM_BENCH_PROGRAMS, "redis memcached stress-glibc
# stress-tcmalloc"):
#   redis            Debian's redis-server (jemalloc): SOM_BENCH_REDIS
#                    ("BIG SMALL SECONDS": 24000 keys of 8 KiB, 40000 of
#                    2 KiB, churned for 15 s, longer than jemalloc's 10 s
#                    decay, which its background thread applies, and
#                    11 s idle, then MEMORY PURGE), then redis-benchmark's SET and GET of
#                    4 KiB values over the unix socket (its ops_per_s). anon-thp is
#                    --disable-thp no; anon is redis's default, which turns
#                    THP off for itself (PR_SET_THP_DISABLE).
#   memcached        Debian's memcached -m 1024 -L (glibc's malloc; somrun
#                    serves the cache's one large malloc): som_memload's
#                    8192 keys of 4 KiB, then 16384 keys of 16 KiB (the
#                    cache evicts), set-heavy.
#   stress-glibc     stress-ng --malloc with 8 threads (glibc's arenas),
#                    blocks up to 4 MiB, 32 live per thread, touched
#                    (about 1 GiB live at most, within the 4 GiB pool),
#                    seed 1, 40 s; sampled after about 8 s (fill) and
#                    18 s (churn).
#   stress-tcmalloc  the same with libtcmalloc_minimal preloaded.

bench_sysfs=/sys/kernel/mm/som

# pack_set ALLOC: packing on for som+pack, off for everything else.
pack_set() {
	case $1 in
	som+pack) echo "${SOM_BENCH_PACK_THRESHOLD:-256}" >$bench_sysfs/packing/threshold || status=1 ;;
	*) echo 0 >$bench_sysfs/packing/threshold || status=1 ;;
	esac
}

# pack_line NAME: a pass now, then the packing counters (som+pack only).
pack_line() {
	echo 1 >$bench_sysfs/packing/run || status=1
	echo "SOMBENCH program_pack name=$1 threshold=$(cat $bench_sysfs/packing/threshold) packed=$(cat $bench_sysfs/packing/packed) densified=$(cat $bench_sysfs/packing/densified) sparse=$(cat $bench_sysfs/packing/sparse_indices) pack_blocks=$(cat $bench_sysfs/packing/pack_blocks) pack_pages=$(cat $bench_sysfs/packing/pack_pages) compacted=$(cat $bench_sysfs/packing/compacted)"
}

# The sum of FIELD (kB) of /proc/PID/status over PIDS, in bytes.
status_bytes() {
	_f=$1
	shift
	for _p in "$@"; do
		awk -v f="$_f:" '$1 == f { print $2 * 1024 }' "/proc/$_p/status" 2>/dev/null
	done | awk '{ s += $1 } END { print s + 0 }'
}

# THP bytes of PIDS.
thp_bytes() {
	for _p in "$@"; do
		awk '/^AnonHugePages/ { print $2 * 1024 }' "/proc/$_p/smaps_rollup" 2>/dev/null
	done | awk '{ s += $1 } END { print s + 0 }'
}

# som entries of every process using som: "1G 2M 4K".
som_entries_all() {
	somctl ps --json | tr -d ' \n' | tr '{' '\n' |
		sed -n 's/^"1g":\([0-9]*\),"2m":\([0-9]*\),"4k":\([0-9]*\)}.*/\1 \2 \3/p' |
		awk '{ a += $1; b += $2; c += $3 } END { print a + 0, b + 0, c + 0 }'
}

# program_line NAME ALLOC PHASE APP_BYTES OPS_PER_S PIDS...
program_line() {
	_name=$1 _alloc=$2 _phase=$3 _app=$4 _ops=$5
	shift 5
	# shellcheck disable=SC2046  # three numbers
	set -- $(som_entries_all) "$@"
	_e1g=$1 _e2m=$2 _e4k=$3
	shift 3
	_total=$(cat $bench_sysfs/total_bytes)
	_free=$(cat $bench_sysfs/free_bytes)
	_res=$(cat $bench_sysfs/reserved_bytes)
	# Anonymous memory counted in whole 2 MiB blocks (som_bench regions).
	_blk="blk_regions=0 blk_sparse=0 blk_sparse_bytes=0"
	[ "$_alloc" = som ] ||
		_blk=$(som_bench regions "$@" | sed -n 's/^SOMBENCH regions \(blk_.*\) bytes=[0-9]* fill=\(.*\)/\1 blk_fill=\2/p')
	echo "SOMBENCH program name=$_name alloc=$_alloc phase=$_phase e1g=$_e1g e2m=$_e2m e4k=$_e4k som_used=$((_total - _free - _res)) som_held=$((_total - _free)) rss_anon=$(status_bytes RssAnon "$@") thp_bytes=$(thp_bytes "$@") pte_bytes=$(status_bytes VmPTE "$@") app_bytes=$_app $_blk ops_per_s=$_ops"
}

redis_program() {
	# shellcheck disable=SC2046  # the knob is a list of words
	set -- $(words "${SOM_BENCH_REDIS:-24000 40000 15}")
	rbig=$1 rsmall=$2 rsecs=$3
	for alloc in som som+pack anon-thp anon; do
		redis_args=
		[ $alloc = anon-thp ] && redis_args="--disable-thp no"
		pack_set $alloc
		if [ "${alloc%+pack}" = som ]; then
			redis_start somrun --
		else
			redis_start
		fi || {
			sed 's/^/# redis: /' /tmp/redis.log
			echo "SOMBENCH skip what=program name=redis alloc=$alloc reason=did_not_start"
			status=1
			continue
		}
		redis_fill "$rbig" "$rsmall" || status=1
		app=$(redis_cli info memory | tr -d '\r' | sed -n 's/^used_memory://p')
		program_line redis $alloc fill "$app" 0 "$redis_pid"
		rstart=$(date +%s)
		r=0
		while [ $(($(date +%s) - rstart)) -lt "$rsecs" ] || [ $r -lt 4 ]; do
			r=$((r + 1))
			redis_churn "$rbig" "$rsmall" "$r" || status=1
		done
		# Idle past the decay time, where jemalloc's background thread
		# purges, then MEMORY PURGE: whatever the timing, every dirty
		# page is given back before the sample.
		sleep 11
		redis_purge || status=1
		[ $alloc = som+pack ] && pack_line redis
		# Every value read (DEBUG DIGEST), so that the sample maps every
		# live page: a packed page counts on its 4 KiB entry.
		redis_digest >/dev/null || status=1
		app=$(redis_cli info memory | tr -d '\r' | sed -n 's/^used_memory://p')
		churn=$(program_line redis $alloc churn "$app" 0 "$redis_pid")
		out=$(redis-benchmark -s "$redis_sock" -t set,get -n 40000 -r 20000 \
			-d 4096 -P 16 -c 4 -q 2>/dev/null | tr '\r' '\n')
		set_rps=$(echo "$out" | sed -n 's/^SET: \([0-9.]*\) requests.*/\1/p' | tail -n 1)
		get_rps=$(echo "$out" | sed -n 's/^GET: \([0-9.]*\) requests.*/\1/p' | tail -n 1)
		echo "$churn" | sed "s/ops_per_s=0\$/ops_per_s=${set_rps:-0}/"
		echo "SOMBENCH program_ops name=redis alloc=$alloc rounds=$r set_per_s=${set_rps:-0} get_per_s=${get_rps:-0}"
		redis_stop || status=1
	done
}

memcached_program() {
	for alloc in som som+pack anon-thp; do
		pack_set $alloc
		if [ "${alloc%+pack}" = som ]; then
			memcached_start 1024 somrun --
		else
			memcached_start 1024
		fi || {
			sed 's/^/# memcached: /' /tmp/memcached.log
			echo "SOMBENCH skip what=program name=memcached alloc=$alloc reason=did_not_start"
			status=1
			continue
		}
		som_memload -c 4 -k 8192 -v 4096 -n 16384 -g 90 -S 1 >/dev/null || status=1
		app=$(memcstat --servers=127.0.0.1:11211 | sed -n 's/^[[:space:]]*bytes: *//p')
		program_line memcached $alloc fill "${app:-0}" 0 "$memcached_pid"
		out=$(som_memload -c 4 -k 16384 -v 16384 -n 16384 -g 10 -S 2) || status=1
		ops=$(echo "$out" | sed -n 's/.* ops_per_s=\([0-9.]*\).*/\1/p')
		[ $alloc = som+pack ] && pack_line memcached
		app=$(memcstat --servers=127.0.0.1:11211 | sed -n 's/^[[:space:]]*bytes: *//p')
		program_line memcached $alloc churn "${app:-0}" "${ops:-0}" "$memcached_pid"
		memcached_stop
	done
}

# stress_program NAME PRELOAD: stress-ng --malloc, sampled while it runs.
stress_program() {
	name=$1 preload=$2
	for alloc in som som+pack anon-thp; do
		pre=
		pack_set $alloc
		[ "${alloc%+pack}" = som ] && pre="somrun --"
		# shellcheck disable=SC2086  # the prefix is words or nothing
		env ${preload:+LD_PRELOAD=$preload} $pre stress-ng --malloc 1 \
			--malloc-pthreads 8 --malloc-bytes 4M --malloc-max 32 \
			--malloc-touch --seed 1 --timeout 40s --metrics-brief \
			>/tmp/stress-program.out 2>&1 &
		spid=$!
		sleep 8
		# shellcheck disable=SC2046  # the pids
		program_line "$name" $alloc fill 0 0 $(pidof stress-ng)
		sleep 10
		# shellcheck disable=SC2046  # the pids
		churn=$(program_line "$name" $alloc churn 0 0 $(pidof stress-ng))
		# Samples of a run that ended early would not be of its heap.
		[ "$(pidof stress-ng | wc -w)" -ge 2 ] || {
			echo "SOMBENCH skip what=program name=$name alloc=$alloc reason=ended_before_sample"
			status=1
		}
		wait $spid || status=1
		# "stress-ng: info: [PID] malloc OPS REAL USR SYS OPS/S ...":
		# bogo operations per second of wall-clock time.
		ops=$(awk '$4 == "malloc" && $5 ~ /^[0-9]+$/ { print $9 }' /tmp/stress-program.out | tail -n 1)
		sed 's/^/# stress-ng: /' /tmp/stress-program.out | tail -n 3
		echo "$churn" | sed "s/ops_per_s=0\$/ops_per_s=${ops:-0}/"
	done
}

programs_bench() {
	# shellcheck source=vm/guest/lib/memcached.sh
	. /som/guest/lib/memcached.sh
	# shellcheck source=vm/guest/lib/redis.sh
	. /som/guest/lib/redis.sh
	memcached_net
	for p in $(words "${SOM_BENCH_PROGRAMS:-redis memcached stress-glibc stress-tcmalloc}"); do
		case $p in
		redis) redis_program ;;
		memcached) memcached_program ;;
		stress-glibc) stress_program stress-glibc "" ;;
		stress-tcmalloc)
			stress_program stress-tcmalloc /usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4 ;;
		*) echo "SOMBENCH skip what=program name=$p reason=unknown"; status=1 ;;
		esac
	done
	pack_set off
}
