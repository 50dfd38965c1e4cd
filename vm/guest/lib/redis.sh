#!/bin/sh
# Debian's redis-server (jemalloc) in the guest, sourced by apps.sh (the
# test) and bench.sh (the benchmark): start, fill, churn and stop it the
# same way with and without somrun, over a unix socket (the debug tier's
# kernel has no TCP/IP).
#
#   redis_start [PREFIX...]  start PREFIX redis-server on /tmp/redis.sock,
#                            output in /tmp/redis.log; sets redis_pid; 0
#                            once it answers, 1 if not within 60 s;
#                            $redis_args: more options
#   redis_cli ARGS...        one command
#   redis_fill BIG SMALL     BIG keys big:1.. of 8 KiB (EVAL) and SMALL
#                            keys key:0.. of 2 KiB (DEBUG POPULATE), the same
#                            bytes every time
#   redis_churn BIG SMALL R  round R of deletes and re-sets across the key
#                            space: a fifth of the keys deleted, a third or
#                            a quarter set again at another size (4 to
#                            10 KiB, 1 to 3 KiB), so that the allocator
#                            frees and reuses pages of several size classes
#   redis_purge              MEMORY PURGE: jemalloc gives back every dirty
#                            page now, as its decay would over time
#   redis_stop               SHUTDOWN NOSAVE, wait (SIGKILL after 60 s);
#                            redis's exit status
#   redis_digest             DEBUG DIGEST; fails for an empty database or
#                            an error
#   som_entries PID          "1G 2M 4K ENTRY_BYTES SOM_BYTES" of somctl ps
#   large_share PID          percent of the bytes PID's som entries map
#                            that 2 MiB and 1 GiB entries map
#   anon_bytes PID           RssAnon of PID in bytes

redis_sock=/tmp/redis.sock
redis_args=${redis_args:-}

# -e: an error reply is a failure (exit 1), not text on standard output.
# A server that stopped answering fails the call after 120 s.
redis_cli() {
	timeout 120 redis-cli -e -s "$redis_sock" "$@"
}

redis_start() {
	rm -f "$redis_sock"
	# shellcheck disable=SC2086  # options are words
	"$@" redis-server --port 0 --unixsocket "$redis_sock" --save '' \
		--appendonly no --daemonize no --dir /tmp \
		--enable-debug-command yes $redis_args >/tmp/redis.log 2>&1 &
	redis_pid=$!
	for _ in $(seq 60); do
		[ "$(redis_cli ping 2>/dev/null)" = PONG ] && return 0
		sleep 1
	done
	kill "$redis_pid" 2>/dev/null
	wait "$redis_pid"
	return 1
}

redis_fill() {
	[ "$(redis_cli eval "for i = 1, tonumber(ARGV[1]) do
		redis.call('set', 'big:' .. i, string.rep(string.char(97 + i % 26), 8192))
	end return 1" 0 "$1")" = 1 ] &&
	[ "$(redis_cli debug populate "$2" key 2048)" = OK ]
}

redis_churn() {
	[ "$(redis_cli eval "local big, small, round = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
	for i = 1, big do
		local k = 'big:' .. i
		if (i * 7 + round) % 5 == 0 then redis.call('del', k)
		elseif (i + round) % 3 == 0 then
			redis.call('set', k, string.rep(string.char(65 + (i + round) % 26), 4096 + 2048 * ((i + round) % 4)))
		end
	end
	for i = 0, small - 1 do
		local k = 'key:' .. i
		if (i * 3 + round) % 5 == 0 then redis.call('del', k)
		elseif (i + round) % 4 == 0 then
			redis.call('set', k, string.rep(string.char(97 + i % 26), 1024 + 1024 * ((i + round) % 3)))
		end
	end
	return 1" 0 "$1" "$2" "$3")" = 1 ]
}

redis_purge() {
	[ "$(redis_cli memory purge)" = OK ]
}

redis_stop() {
	redis_cli shutdown nosave >/dev/null 2>&1
	# A server that ignored the shutdown is killed after 60 s.
	for _ in $(seq 60); do
		[ -r "/proc/$redis_pid/status" ] &&
			! grep -q '^State:.*Z' "/proc/$redis_pid/status" || break
		sleep 1
	done
	kill -9 "$redis_pid" 2>/dev/null
	wait "$redis_pid"
}

# The digest of a non-empty database: 40 hex digits, not all zeros.
redis_digest() {
	_d=$(redis_cli debug digest | tr -d '\r')
	case $_d in
	*[!0-9a-f]* | 0000000000000000000000000000000000000000) return 1 ;;
	esac
	[ ${#_d} -eq 40 ] && echo "$_d"
}

som_entries() {
	somctl ps "$1" --json | tr -d ' \n' |
		sed -n 's/.*"som_bytes":\([0-9]*\),"entry_bytes":\([0-9]*\),"entries":{"1g":\([0-9]*\),"2m":\([0-9]*\),"4k":\([0-9]*\)}.*/\3 \4 \5 \2 \1/p'
}

large_share() {
	# shellcheck disable=SC2046  # five numbers
	set -- $(som_entries "$1")
	[ "${4:-0}" -gt 0 ] || { echo 0; return; }
	echo $((($1 * 1073741824 + $2 * 2097152) * 100 / $4))
}

anon_bytes() {
	# 0 for a process that is gone (or a zombie: no RssAnon line).
	cat "/proc/$1/status" 2>/dev/null |
		awk '/^RssAnon/ { s = $2 * 1024 } END { print s + 0 }'
}
