#!/bin/sh
# Guest side of `vm/run test`'s machine-check boot, on x86 on either tier
# (vm/run: test_tier): som.ko loaded with the reserved range, then the
# tests that have QEMU inject real machine checks (tests/manifest, tier
# "mce"), then unload. A guest of its own: a machine check taints the
# kernel, which turns lockdep off for the rest of the boot, and the boot
# isolates CPU 1 (isolcpus=1 nohz_full=1 rcu_nocbs=1) so that an
# action-required machine check aimed at a reader there finds it in user
# mode, not in the kernel, where it would panic the guest.

# shellcheck source=vm/guest/lib/tap.sh
. /som/guest/lib/tap.sh

status=0
echo "# tier: $SOM_TIER ($(uname -r)); machine checks; tickless CPUs: $(cat /sys/devices/system/cpu/nohz_full 2>/dev/null)"
insmod /som/som.ko ranges="${SOM_RANGES:-2G@4G}"
rc=$?
tap "$rc" "machine checks: module_load"
[ "$rc" -eq 0 ] || exit 1

# The manifest names these binaries under the tier "mce" (and only there).
manifest_tier=mce
for name in $(awk '!/^#/ && NF >= 3 && $1 == "mce" { print $2 }' "$manifest"); do
	if [ -x "/som/bin/$name" ]; then
		run_test "/som/bin/$name" || status=1
	else
		tap 1 "$name ran whole: not in /som/bin"
		status=1
	fi
done

rmmod som
rc=$?
tap "$rc" "machine checks: module_unload"
[ "$rc" -eq 0 ] || status=1
exit "$status"
