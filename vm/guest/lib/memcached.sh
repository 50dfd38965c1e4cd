#!/bin/sh
# Debian's memcached in the guest, sourced by apps.sh (the tests) and
# bench.sh (the benchmark): one way to start it, wait for it and stop it.
#
#   memcached_net                  loopback up; root, somuser and group som
#   memcached_start MB [PREFIX...] start PREFIX memcached with an MB MiB
#                                  cache (-L: allocated whole, at start) on
#                                  127.0.0.1:11211, output in
#                                  /tmp/memcached.log; sets memcached_pid;
#                                  0 once it answers, 1 if it did not
#                                  within 60 s (it is killed then)
#   memcached_stop                 SIGTERM, wait; memcached's exit status

memcached_net() {
	ip link set lo up 2>/dev/null || ifconfig lo 127.0.0.1 up 2>/dev/null
	mkdir -p /etc
	[ -f /etc/passwd ] || printf '%s\n' 'root:x:0:0:root:/tmp:/bin/sh' \
		'somuser:x:1000:1000::/tmp:/bin/sh' >/etc/passwd
	[ -f /etc/group ] || printf '%s\n' 'root:x:0:' 'som:x:1000:somuser' >/etc/group
}

memcached_start() {
	_mb=$1
	shift
	"$@" memcached -u root -l 127.0.0.1 -p 11211 -U 0 -t 2 -m "$_mb" -L \
		>/tmp/memcached.log 2>&1 &
	memcached_pid=$!
	for _ in $(seq 60); do
		memcping --servers=127.0.0.1:11211 >/dev/null 2>&1 && return 0
		sleep 1
	done
	kill "$memcached_pid" 2>/dev/null
	wait "$memcached_pid"
	return 1
}

memcached_stop() {
	kill -TERM "$memcached_pid"
	wait "$memcached_pid"
}
