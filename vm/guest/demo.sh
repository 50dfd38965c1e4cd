#!/bin/sh
# Guest side of `vm/run demo`: load som.ko, run /som/bin/som_demo, unload.
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

rmmod som || status=1
exit "$status"
