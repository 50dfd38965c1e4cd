# shellcheck shell=bash
# `vm/run fuzz [MINUTES]`: somfuzz (tests/somfuzz/, Documentation/fuzzing.md)
# for MINUTES (default 10) in the debug tier's VM, where KCOV covers
# som.ko, from the seed corpus in tests/somfuzz/corpus plus what earlier
# runs saved in $SOM_FUZZ_OUT/corpus. The guest prints the programs that
# found new coverage and any reproducer as hex lines between marker lines
# (vm/guest/fuzz.sh; hex, not base64, which could spell a word the log
# scan fails on); they land in
#   $SOM_FUZZ_OUT/corpus/    the corpus, growing run after run
#   $SOM_FUZZ_OUT/crashes/   reproducers: `somfuzz --replay FILE`; commit
#                            one to tests/somfuzz/repro/ to make the suite
#                            replay it
# Exit status: 0 when the run found nothing and the kernel log is clean.
#
# Knobs: SOM_FUZZ_OUT (out/fuzz), SOM_FUZZ_SEED (the guest's clock if
# unset), SOM_VM_TIMEOUT (MINUTES plus 15 minutes), SOM_FUZZ_TIER: debug
# (the default: KCOV guides, the checkers watch, about 4 times slower) or
# stock (Debian's kernel: no feedback and no checkers but the kernel's
# own, the most calls a minute; the corpus does not grow).

SOM_FUZZ_OUT=${SOM_FUZZ_OUT:-$SOM_OUT/fuzz}

# fuzz_extract LOG DIR: the guest's SOMFUZZ-FILE blocks into DIR/corpus
# and DIR/crashes; prints how many files of each kind it saved.
fuzz_extract() {
	tr -d '\r' <"$1" | perl -e '
		my ($dir) = @ARGV;
		my ($name, $size, $data, %count);
		while (<STDIN>) {
			chomp;
			if (/^SOMFUZZ-FILE ((corpus|crashes)\/[A-Za-z0-9._-]+) (\d+)$/) {
				($name, $size, $data) = ($1, $3, "");
			} elsif (defined $name && /^SOMFUZZ-HEX ([0-9a-f]*)$/) {
				$data .= pack("H*", $1);
			} elsif (defined $name && $_ eq "SOMFUZZ-END $name") {
				if (length($data) != $size) {
					print STDERR "fuzz: $name: got ", length($data),
						" of $size bytes (console lines lost?), not saved\n";
				} else {
					open(my $f, ">", "$dir/$name") or die "$dir/$name: $!";
					print $f $data;
					close($f);
					$count{(split m{/}, $name)[0]}++;
				}
				undef $name;
			}
		}
		printf "fuzz: saved %d corpus program(s) and %d reproducer(s)\n",
			$count{corpus} // 0, $count{crashes} // 0;
	' "$2"
}

som_fuzz_run() {
	local minutes=${1:-10}
	[[ $minutes =~ ^[1-9][0-9]*$ ]] ||
		die "vm/run fuzz: MINUTES must be a positive whole number, not '$minutes'"
	local tier=${SOM_FUZZ_TIER:-debug} module
	case $tier in
	debug | stock) ;;
	*) die "vm/run fuzz: SOM_FUZZ_TIER must be debug or stock, not '$tier'" ;;
	esac
	som_build
	module=$SOM_MODULE
	if [[ $tier == debug ]]; then
		som_debug_kernel
		som_debug_build_module
		module=$SOM_DEBUG_MODULE
	fi
	mkdir -p "$SOM_FUZZ_OUT/corpus" "$SOM_FUZZ_OUT/crashes"

	# shellcheck disable=SC2034  # read by som_vm_boot and som_initramfs
	local SOM_VM_TIER=$tier SOM_MODULE=$module SOM_EXTRA_MODULES='' \
		SOM_FUZZ_CORPUS_EXTRA=$SOM_FUZZ_OUT/corpus
	local SOM_GUEST_ENV="${SOM_GUEST_ENV:-} SOM_FUZZ_MINUTES=$minutes"
	[[ -z ${SOM_FUZZ_SEED:-} ]] || SOM_GUEST_ENV+=" SOM_FUZZ_SEED=$SOM_FUZZ_SEED"
	som_initramfs fuzz
	som_vm_boot fuzz $((minutes * 60 + 900))
	som_vm_scan_log "$SOM_VM_LOG"
	fuzz_extract "$SOM_VM_LOG" "$SOM_FUZZ_OUT"

	local status=${SOM_VM_STATUS:-1}
	if [[ -n $SOM_VM_PROBLEM ]]; then
		echo "fuzz: $SOM_VM_PROBLEM"
		((status)) || status=1
	elif ((SOM_VM_LOG_HITS)); then
		echo "fuzz: the kernel reported problems (above)"
		status=1
	fi
	grep -a '^# somfuzz: [0-9]* calls\|^# somfuzz: corpus\|^# somfuzz: [0-9]* finding\|^# finding\|^# reproducer' \
		"$SOM_VM_LOG" | tr -d '\r' || true
	echo "fuzz: guest status ${SOM_VM_STATUS:-none}, exit $status; corpus and reproducers in $SOM_FUZZ_OUT"
	return "$status"
}
