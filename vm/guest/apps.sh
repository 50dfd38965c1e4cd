#!/bin/sh
# Real programs under somrun, sourced by test.sh after the selftests (som.ko
# loaded, `tap` defined): Debian's memcached with a multi-GiB cache, filled
# and read back by Debian's memaslap (libmemcached-tools), Debian's
# redis-server (jemalloc) filled and churned over a unix socket, and
# stress-ng's vm, mmap and madvise stressors. Each checks its own results, that its
# memory came from the pool, and that the pool got every byte back.
#
# SOM_TEST_ONLY selects them as somrun_memcached, somrun_redis and
# somrun_stress_ng.
# Knobs (SOM_GUEST_ENV): SOM_MEMCACHED_MB (cache size, default 2048),
# SOM_MEMCACHED_OPS (memaslap operations, default 32000 of 128 KiB values),
# SOM_STRESS_NG_SECONDS (per stressor, default 15), SOM_REDIS_BIG,
# SOM_REDIS_SMALL and SOM_REDIS_ROUNDS (redis's keys of 8 and 2 KiB and
# rounds of churn: 12000, 20000, 4).

sysfs=/sys/kernel/mm/som

pool_used() {
	echo $(($(cat $sysfs/total_bytes) - $(cat $sysfs/free_bytes) - $(cat $sysfs/reserved_bytes)))
}

# field NAME FILE: the value of NAME=... in a summary line
field() {
	sed -n "s/.* $1=\([^ ]*\).*/\1/p" "$2" | tail -n 1
}

app_memcached() {
	if [ ! -e /proc/net/tcp ]; then
		# The debug tier's kernel is built without networking.
		n=$((n + 1))
		echo "ok $n somrun_memcached # SKIP no TCP/IP in this kernel"
		return
	fi
	mb=${SOM_MEMCACHED_MB:-2048}
	ops=${SOM_MEMCACHED_OPS:-32000}
	# The boot range holds 2 GiB; the spare range makes room for the
	# cache and memcached's other large blocks.
	spare=${SOM_SPARE_RANGES%% *}
	added=
	if [ -n "$spare" ] &&
	   somctl add reserved "$spare" --name memcached-spare >/dev/null; then
		added=1
	fi
	free0=$(cat $sysfs/free_bytes)
	rm -f /tmp/memcached.summary
	memcached_start "$mb" somrun --summary=/tmp/memcached.summary --
	up=$?
	pid=$memcached_pid
	tap $up "memcached -m $mb -L started under somrun"
	if [ $up -ne 0 ]; then
		sed 's/^/# memcached: /' /tmp/memcached.log
		[ -z "$added" ] || somctl remove memcached-spare
		return
	fi

	cat >/tmp/memaslap.cfg <<-CFG
	key
	64 64 1
	value
	131072 131072 1
	cmd
	0 0.7
	1 0.3
	CFG
	start=$(date +%s)
	memcaslap -s 127.0.0.1:11211 -T 2 -c 4 -w 5k -x "$ops" -v 1.0 \
		-F /tmp/memaslap.cfg >/tmp/memaslap.out 2>&1
	rc=$?
	secs=$(($(date +%s) - start))
	grep -E 'cmd_get|cmd_set|get_misses|verify|Run time' /tmp/memaslap.out |
		sed 's/^/# memaslap: /'
	failed=$(sed -n 's/^verify_failed: *//p' /tmp/memaslap.out)
	gets=$(sed -n 's/^cmd_get: *//p' /tmp/memaslap.out)
	misses=$(sed -n 's/^get_misses: *//p' /tmp/memaslap.out)
	[ $rc -eq 0 ] && [ "$failed" = 0 ] && [ "${gets:-0}" -gt "${misses:-0}" ]
	tap $? "memaslap: $ops operations in ${secs}s, $((gets - misses)) values read back and verified, ${failed:-?} wrong"

	memcstat --servers=127.0.0.1:11211 >/tmp/memcstat.out 2>&1
	bytes=$(sed -n 's/^[[:space:]]*bytes: *//p' /tmp/memcstat.out)
	items=$(sed -n 's/^[[:space:]]*curr_items: *//p' /tmp/memcstat.out)
	evictions=$(sed -n 's/^[[:space:]]*evictions: *//p' /tmp/memcstat.out)
	used=$(pool_used)
	rss=$(awk '/^VmRSS/ { print $2 * 1024 }' "/proc/$pid/status")
	echo "# memcached: $items items, $bytes bytes of items"
	echo "# memcached: som pool used $used bytes; ordinary resident (VmRSS) $rss bytes; som share of its memory $((100 * used / (used + rss)))%"
	# Filled: memcached evicted items to make room, and they live in som
	# memory (the process has less ordinary memory than its items).
	[ "${evictions:-0}" -gt 0 ] && [ "$used" -ge "$bytes" ] &&
		[ "$rss" -lt "$bytes" ]
	tap $? "memcached's cache filled ($evictions evictions) and on som: $bytes bytes of items, $used bytes of som"

	# What the administrator sees meanwhile.
	somctl ps >/tmp/somctl-ps.out 2>&1
	somctl status >>/tmp/somctl-ps.out 2>&1
	sed 's/^/# somctl: /' /tmp/somctl-ps.out
	# Two 1 GiB entries; 1024 of 2 MiB where som maps no 1 GiB (arm64).
	if grep -q pdpe1gb /proc/cpuinfo; then
		entries="2 +0 +0" what="two 1 GiB entries"
	else
		entries="0 +1024 +0" what="1024 2 MiB entries (no 1 GiB entries here)"
	fi
	# (then what it owns, its RSS with that, its cgroup)
	grep -qE "^ *$pid memcached +1 +2 GiB +2 GiB +$entries +2 GiB " /tmp/somctl-ps.out
	tap $? "somctl ps shows memcached with 2 GiB on $what"

	memcached_stop
	rc=$?
	cat /tmp/memcached.summary | sed 's/^/# /'
	echo "# memcached: mapping sizes at exit: $(field entries_1g /tmp/memcached.summary) x 1 GiB, $(field entries_2m /tmp/memcached.summary) x 2 MiB, $(field entries_4k /tmp/memcached.summary) x 4 KiB"
	[ $rc -eq 0 ] && [ "$(cat $sysfs/free_bytes)" -eq "$free0" ] &&
		[ "$(cat $sysfs/reserved_bytes)" -eq 0 ]
	tap $? "memcached exited ($rc) and the pool is back to $free0 free bytes ($(cat $sysfs/free_bytes))"
	if [ -n "$added" ]; then
		somctl remove memcached-spare
		tap $? "spare range removed after memcached"
	fi
}

# Debian's redis-server (jemalloc) under somrun, filled and churned the
# same way as a plain run on anonymous memory: after rounds of deletes and
# re-sets across the key space and a MEMORY PURGE (jemalloc gives back
# every dirty page at once, the most hole punching its decay could do),
# at least 90% of its mapped som bytes must still be on 2 MiB or 1 GiB
# entries, and the data must hash the same (DEBUG DIGEST) as the plain
# run's. The memory each run uses is printed: som keeps every 2 MiB
# block that has live data in it, anonymous memory every 4 KiB page.
app_redis() {
	big=${SOM_REDIS_BIG:-12000}
	small=${SOM_REDIS_SMALL:-20000}
	rounds=${SOM_REDIS_ROUNDS:-4}
	free0=$(cat $sysfs/free_bytes)
	# The plain run first: its digest and its anonymous memory.
	plain_digest=
	redis_start
	up=$?
	if [ $up -eq 0 ]; then
		redis_fill "$big" "$small"
		ok=$?
		anon_fill=$(anon_bytes "$redis_pid")
		for r in $(seq "$rounds"); do
			redis_churn "$big" "$small" "$r" || ok=1
		done
		redis_purge || ok=1
		anon_end=$(anon_bytes "$redis_pid")
		plain_digest=$(redis_digest)
		redis_stop
	fi
	[ $up -eq 0 ] && [ $ok -eq 0 ] && [ -n "$plain_digest" ]
	tap $? "redis-server on anonymous memory: filled, churned, digest $plain_digest"

	rm -f /tmp/redis.summary
	redis_start somrun --summary=/tmp/redis.summary --
	up=$?
	tap $up "redis-server started under somrun"
	if [ $up -ne 0 ]; then
		sed 's/^/# redis: /' /tmp/redis.log
		return
	fi
	pid=$redis_pid
	redis_fill "$big" "$small"
	rc=$?
	held_fill=$(($(pool_used) + $(anon_bytes "$pid")))
	fill=$(som_entries "$pid")
	share_fill=$(large_share "$pid")
	for r in $(seq "$rounds"); do
		redis_churn "$big" "$small" "$r" || rc=1
	done
	redis_purge || rc=1
	held_end=$(($(pool_used) + $(anon_bytes "$pid")))
	end=$(som_entries "$pid")
	share_end=$(large_share "$pid")
	digest=$(redis_digest)
	redis_cli info memory | grep -E '^(used_memory|allocator_[a-z]*):' |
		tr -d '\r' | sed 's/^/# redis: /'
	somctl ps "$pid" | sed 's/^/# somctl: /'
	echo "# redis: entries 1G 2M 4K, bytes mapped by them, som bytes mapped: after the fill $fill; after the churn and purge $end"
	echo "# redis: used (som blocks allocated + RssAnon) $held_fill after the fill, $held_end after the churn; on anonymous memory (RssAnon) $anon_fill, $anon_end"
	[ $rc -eq 0 ] && [ "$share_fill" -ge 90 ] && [ "$share_end" -ge 90 ]
	tap $? "redis under somrun: ${share_fill}% of the bytes its som entries map on 2 MiB or 1 GiB entries after the fill, ${share_end}% after $rounds rounds of churn and a purge"
	[ -n "$digest" ] && [ "$digest" = "$plain_digest" ]
	tap $? "redis under somrun holds the same data as on anonymous memory (digest $digest)"
	redis_stop
	rc=$?
	sed 's/^/# /' /tmp/redis.summary
	[ $rc -eq 0 ] && [ "$(cat $sysfs/free_bytes)" -eq "$free0" ] &&
		grep -q "comm=redis-server" /tmp/redis.summary
	tap $? "redis exited ($rc), wrote its somrun summary, and the pool is back to $free0 free bytes ($(cat $sysfs/free_bytes))"
}

# What the processes named $1 are waiting for, when a run hangs.
stuck() {
	for p in $(pidof "$1"); do
		echo "# stuck: $p $(cat /proc/$p/wchan 2>/dev/null)"
		sed "s/^/# stuck: $p /" /proc/$p/stack 2>/dev/null
	done
}

# Is process $1 running (not gone, and not a zombie waiting for `wait`)?
running() {
	[ -r "/proc/$1/status" ] && ! grep -q '^State:.*Z' "/proc/$1/status"
}

# The most pool memory in use while process $1 runs, every second.
peak_while() {
	peak=0
	while running "$1"; do
		u=$(pool_used)
		[ "$u" -gt "$peak" ] && peak=$u
		sleep 1
	done
	echo "$peak"
}

# An unprivileged user in the group som, which owns /dev/som the way the
# udev rule installed with som sets it up (root:som 0660).
som_user() {
	chgrp som /dev/som && chmod 0660 /dev/som
}

# stress-ng runs as that user: as root, its madvise stressor poisons pages
# (MADV_HWPOISON) and is killed by the SIGBUS that follows, with or without
# som. Its workers leave with _exit(), so the shim's summary would speak
# only for the parent; the pool's fault counters and usage show the
# workers' som memory.
app_stress_ng() {
	secs=${SOM_STRESS_NG_SECONDS:-15}
	som_user
	for s in vm mmap madvise; do
		free0=$(cat $sysfs/free_bytes)
		faults0=$(($(cat $sysfs/faults_pud) + $(cat $sysfs/faults_pmd) + $(cat $sysfs/faults_pte)))
		case $s in
		vm) args="--vm 2 --vm-bytes 256M --vm-keep --verify" ;;
		# 16 MiB rounds: on the debug tier a 64 MiB round (ordinary
		# mappings included, each page checked) outlasts 15 s.
		mmap) args="--mmap 2 --mmap-bytes 16M --verify" ;;
		# Each round maps a file or anonymous memory at random: seed 1
		# starts with anonymous memory, which the debug tier's few
		# rounds need.
		madvise) args="--madvise 2 --seed 1" ;;
		esac
		timeout $((secs + 120)) su -s /bin/sh somuser -c \
			"somrun -- stress-ng $args --timeout ${secs}s --metrics-brief --temp-path /tmp" \
			>/tmp/stress.out 2>&1 &
		pid=$!
		peak=$(peak_while $pid)
		wait $pid
		rc=$?
		sed 's/^/# stress-ng: /' /tmp/stress.out
		[ $rc -eq 124 ] && stuck stress-ng
		faults=$(($(cat $sysfs/faults_pud) + $(cat $sysfs/faults_pmd) + $(cat $sysfs/faults_pte) - faults0))
		echo "# stress-ng --$s: $faults som faults, up to $peak bytes of som in use"
		[ $rc -eq 0 ] && [ "$faults" -gt 0 ] &&
			[ "$(cat $sysfs/free_bytes)" -eq "$free0" ]
		tap $? "stress-ng --$s ${secs}s under somrun as a som group member: exit $rc, on som, pool back to $free0 free bytes"
	done
	chgrp root /dev/som && chmod 0600 /dev/som
}

# The loopback interface, for memcached; users and groups, for memcached's
# -u root and for running stress-ng as a member of the group som.
# shellcheck source=vm/guest/lib/memcached.sh
. /som/guest/lib/memcached.sh
memcached_net
# shellcheck source=vm/guest/lib/redis.sh
. /som/guest/lib/redis.sh

# shellcheck disable=SC2254  # the glob is the point
case somrun_memcached in ${SOM_TEST_ONLY:-*})
	echo "# ==== memcached under somrun"
	app_memcached ;;
esac
# shellcheck disable=SC2254
case somrun_redis in ${SOM_TEST_ONLY:-*})
	echo "# ==== redis under somrun"
	app_redis ;;
esac
# shellcheck disable=SC2254
case somrun_stress_ng in ${SOM_TEST_ONLY:-*})
	echo "# ==== stress-ng under somrun"
	app_stress_ng ;;
esac
