#!/bin/sh
# Guest side of `vm/run fuzz` (vm/lib/fuzz.sh): load som.ko, run somfuzz
# for SOM_FUZZ_MINUTES from the seed corpus in /som/somfuzz/corpus, then
# print the programs that found new coverage and any reproducer as hex
# lines for the host (somfuzz --dump-hex). Exit status: somfuzz's (0
# nothing found, 1 a finding).

minutes=${SOM_FUZZ_MINUTES:-10}
seed=${SOM_FUZZ_SEED:-$(date +%s)}
out=/tmp/somfuzz
mkdir -p "$out/corpus" "$out/crashes"

insmod /som/som.ko ranges="${SOM_RANGES:-2G@4G}" || exit 1
echo "# somfuzz: $minutes minute(s) from seed $seed"
somfuzz --seconds $((minutes * 60)) --seed "$seed" \
	--corpus /som/somfuzz/corpus --corpus-out "$out/corpus" \
	--crashes "$out/crashes"
rc=$?
somfuzz --dump-hex "$out/corpus" corpus
somfuzz --dump-hex "$out/crashes" crashes
rmmod som || echo "# somfuzz: som.ko did not unload"
exit "$rc"
