#!/bin/sh
# Guest side of `vm/run test`. First the tests that load som.ko themselves
# (/som/bin/*_load_test, run with the module not loaded), then load som.ko
# with the reserved range, run every other /som/bin/*_test one after the
# other, and unload. The host counts the TAP lines ("ok N name",
# "not ok N name", "... # SKIP") that the tests and this script print.
# A non-zero exit status with no failed line is counted as a failure too.

n=0
tap() { # tap STATUS NAME
	n=$((n + 1))
	if [ "$1" -eq 0 ]; then echo "ok $n $2"; else echo "not ok $n $2"; fi
}

status=0
for t in /som/bin/*_load_test; do
	[ -x "$t" ] || continue
	echo "# ==== $t"
	SOM_KO=/som/som.ko "$t" || status=1
done

insmod /som/som.ko ranges="${SOM_RANGES:-2G@4G}"
rc=$?
tap "$rc" module_load
[ "$rc" -eq 0 ] || exit 1

for t in /som/bin/*_test; do
	case "$t" in *_load_test) continue ;; esac
	[ -x "$t" ] || continue
	echo "# ==== $t"
	"$t" || status=1
done

rmmod som
rc=$?
tap "$rc" module_unload
[ "$rc" -eq 0 ] || status=1
exit "$status"
