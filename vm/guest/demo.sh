#!/bin/sh
# Guest side of `vm/run demo`: load som.ko, run /som/bin/som_demo, show
# an operator limiting two containers' som memory, then adding slower
# memory as a slow tier that cold memory moves to, unload.
#
# som_demo measures som cold first, so it runs right after som.ko is
# loaded, while the worker has most of the pool still to zero. QEMU backs
# guest memory with host memory at first use, which hardware does not:
# a first load lets the worker zero the pool once (the host backs it
# then), and the reload leaves it dirty again for som_demo, as
# `vm/run bench` does for its som-cold runs.

sysfs=/sys/kernel/mm/som

load_som() {
	insmod /som/som.ko ranges="${SOM_RANGES:-2G@4G}"
}

load_som || exit 1
tries=0
while [ "$(cat $sysfs/zeroed_bytes)" != "$(cat $sysfs/total_bytes)" ]; do
	tries=$((tries + 1))
	if [ $tries -gt 60 ]; then
		echo "demo: the pool was not zeroed after 60 s"
		exit 1
	fi
	sleep 1
done
rmmod som && load_som || exit 1

status=0
if [ -x /som/bin/som_demo ]; then
	som_demo || status=$?
else
	echo "demo: /som/bin/som_demo is not there"
fi

# An operator limits two containers (cgroups "web" and "db") and reads
# their usage: each runs som_hold, whose memory is charged to its cgroup.
# Every command is shown as typed, then what it printed.
run() {
	echo "# $*"
	"$@" || status=1
}

# som_hold SIZE in cgroup $1, in the background: it enters the cgroup
# first, so that its mmap() is charged there. Its line goes to
# /tmp/hold.$1, shown once it is there (up to 60 s).
hold_in() {
	cg=$1
	shift
	echo "# (in $cg) som_hold $*"
	sh -c 'echo 0 > /sys/fs/cgroup/'"$cg"'/cgroup.procs && exec som_hold "$@"' \
		som_hold "$@" > "/tmp/hold.$cg" &
	tries=0
	while [ ! -s "/tmp/hold.$cg" ] && [ $tries -lt 60 ]; do
		sleep 1
		tries=$((tries + 1))
	done
	cat "/tmp/hold.$cg"
}

echo
echo "== an operator limits two containers"
grep -q ' /sys/fs/cgroup cgroup2 ' /proc/mounts ||
	mount -t cgroup2 none /sys/fs/cgroup || status=1
mkdir -p /sys/fs/cgroup/web /sys/fs/cgroup/db
run somctl limit /web 256M
run somctl limit /db 1G
hold_in web 192M
web=$!
hold_in db 768M
db=$!
echo "# (in web) som_hold 128M 1: past web's limit"
sh -c 'echo 0 > /sys/fs/cgroup/web/cgroup.procs && exec som_hold 128M 1'
[ $? -eq 1 ] || status=1
run somctl cgroups
echo "# somctl status --prometheus | grep '^som_cgroup_.*/'"
somctl status --prometheus | grep '^som_cgroup_.*/'
kill "$web" "$db"
wait "$web" "$db" 2>/dev/null
run somctl cgroups
rmdir /sys/fs/cgroup/web /sys/fs/cgroup/db || status=1

# Tiers: the spare range of node 1 stands for CXL memory. A hot and a
# cold holder of 256 MiB each; aging scans every half second, each
# followed by a tiering pass, until the cold one is on the slow tier and
# the hot one on the fast tier (up to 120 s).
# Write VALUE into som's sysfs FILE, shown as typed.
put() {
	echo "# echo $1 > $sysfs/$2"
	echo "$1" > "$sysfs/$2" || status=1
}

tier_used() {
	echo $(($(cat "$sysfs/tiering/$1_bytes") - $(cat "$sysfs/tiering/$1_free_bytes")))
}

echo
echo "== an operator adds slower memory as a slow tier"
spare=${SOM_SPARE_RANGES%% *}
if [ -n "$spare" ]; then
	run somctl add reserved "$spare" --slow --name cxl0
	echo "# som_hold 256M -1 hot &    # touches its memory every 100 ms"
	som_hold 256M -1 hot > /tmp/hold.hot &
	hot=$!
	echo "# som_hold 256M &           # touches it once"
	som_hold 256M > /tmp/hold.cold &
	cold=$!
	put 2 tiering/demote_age
	put 500 aging/interval_ms
	tries=0
	while [ "$(tier_used slow)" != $((256 << 20)) ] ||
	      [ "$(tier_used fast)" != $((256 << 20)) ]; do
		tries=$((tries + 1))
		if [ $tries -gt 120 ]; then
			echo "demo: the cold holder did not reach the slow tier in 120 s"
			status=1
			break
		fi
		sleep 1
	done
	put 0 aging/interval_ms
	echo "# somctl status | grep -E 'tier|^source|^cxl0'"
	somctl status | grep -E 'tier|^source|^cxl0'
	echo "# (hot: pid $hot, cold: pid $cold)"
	run somctl ages "$hot" "$cold"
	kill "$hot" "$cold"
	wait "$hot" "$cold" 2>/dev/null
	run somctl remove cxl0
else
	echo "demo: no spare range (SOM_SPARE_RANGES) to be the slow tier"
	status=1
fi

rmmod som || status=1
exit "$status"
