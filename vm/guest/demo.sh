#!/bin/sh
# Guest side of `vm/run demo`: load som.ko, run /som/bin/som_demo, unload.

insmod /som/som.ko ranges="${SOM_RANGES:-2G@4G}" || exit 1

status=0
if [ -x /som/bin/som_demo ]; then
	som_demo || status=$?
else
	echo "demo: /som/bin/som_demo is not there"
fi

rmmod som || status=1
exit "$status"
