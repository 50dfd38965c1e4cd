# shellcheck shell=bash
# The coverage of som.ko over the whole suite, from the debug tier: the
# guest sends the module's gcov counters (.gcda) as hex between
# "SOM-GCOV-FILE name" and "SOM-GCOV-END" lines (vm/guest/test.sh); they
# go next to the .gcno files of the debug build, and lcov (Debian's) makes
#
#   $SOM_OUT/coverage/som.info        lcov's tracefile, lines and branches
#   $SOM_OUT/coverage/summary.txt     per file of kernel/: lines, branches,
#                                     functions (what som_coverage prints)
#   $SOM_OUT/coverage/never-entered.txt  file:function of every function the
#                                     suite never called
#   $SOM_OUT/coverage/html/index.html genhtml's report
#
# Only som.ko's own files count (kernel/*.c, *.h): the kernel headers'
# inline functions it expands are left out. The goal (Documentation/
# coverage.md) is printed next to the figures; it is not a test.

SOM_COVERAGE_GOAL_LINES=90
SOM_COVERAGE_GOAL_BRANCHES=80

# Write the .gcda files a guest log carries into DIR; print how many.
coverage_extract() {
	local log=$1 dir=$2
	# shellcheck disable=SC2016  # perl's variables
	perl -e '
		my ($dir) = @ARGV; my ($out, $name, $size, $n) = (undef, "", 0, 0);
		sub done {
			return unless $out;
			close $out; $out = undef;
			my $got = -s "$dir/$name";
			die "coverage: $name: $got bytes, the guest sent $size\n"
				if $got != $size;
			$n++;
		}
		while (<STDIN>) {
			s/\r?\n$//;
			if (/^SOM-GCOV-FILE ([\w.-]+\.gcda) (\d+)$/) {
				done();
				($name, $size) = ($1, $2);
				open $out, ">", "$dir/$name" or die "$dir/$name: $!";
				binmode $out;
			} elsif (/^SOM-GCOV-END$/) {
				done();
			} elsif ($out && /^[0-9a-f]+$/) {
				print $out pack("H*", $_);
			}
		}
		print "$n\n";
	' "$dir" <"$log"
}

# The figures from an lcov tracefile: one line per source file, then the
# total; and the never-entered functions into FILE.
coverage_summary() {
	local info=$1 never=$2
	awk -v never="$never" -v gl="$SOM_COVERAGE_GOAL_LINES" \
	    -v gb="$SOM_COVERAGE_GOAL_BRANCHES" '
		function pct(h, t) { return t ? sprintf("%5.1f%%", 100 * h / t) : "    -" }
		/^SF:/ { f = substr($0, 4); sub(/.*\//, "", f); lh = lf = bh = bf = fh = ff = 0 }
		/^LH:/ { lh = substr($0, 4) } /^LF:/ { lf = substr($0, 4) }
		/^BRH:/ { bh = substr($0, 5) } /^BRF:/ { bf = substr($0, 5) }
		/^FNH:/ { fh = substr($0, 5) } /^FNF:/ { ff = substr($0, 5) }
		/^FNDA:0,/ { print f ": " substr($0, 8) > never }
		/^end_of_record/ {
			printf "%-18s lines %s (%d/%d)  branches %s (%d/%d)  functions %d/%d\n",
				f, pct(lh, lf), lh, lf, pct(bh, bf), bh, bf, fh, ff
			LH += lh; LF += lf; BH += bh; BF += bf; FH += fh; FF += ff
		}
		END {
			printf "%-18s lines %s (%d/%d)  branches %s (%d/%d)  functions %d/%d\n",
				"total", pct(LH, LF), LH, LF, pct(BH, BF), BH, BF, FH, FF
			met = LF && 100 * LH >= gl * LF && BF && 100 * BH >= gb * BF
			printf "goal: %d%% of lines, %d%% of branches: %s\n", gl, gb,
				met ? "met" : "not met; why each uncovered block is: Documentation/coverage.md"
		}' "$info"
}

# som_coverage LOG: the report from the debug tier's log. Returns non-zero
# (and says why) when the log carries no counters or lcov fails: a debug
# tier that no longer measures is a broken test, not a missing feature.
som_coverage() {
	local log=$1 dir=$SOM_OUT/coverage kdir=$SOM_OUT/debug-build/kernel n
	local rc=(--rc lcov_branch_coverage=1)
	rm -rf "$dir"
	mkdir -p "$dir"
	rm -f "$kdir"/*.gcda
	n=$(coverage_extract "$log" "$kdir" 2>"$dir/extract.log") || n=0
	if ((n == 0)); then
		cat "$dir/extract.log"
		echo "coverage: the debug tier's log carries no gcov counters of som.ko"
		return 1
	fi
	# --no-external: only files under the module's directory, not the
	# kernel headers; pool_kunit.c is not built with gcov.
	if ! lcov --quiet --capture --no-external --directory "$kdir" \
		--base-directory "$kdir" --gcov-tool gcov-12 "${rc[@]}" \
		--output-file "$dir/som.info" >"$dir/lcov.log" 2>&1; then
		echo "coverage: lcov failed (see $dir/lcov.log)"
		return 1
	fi
	# A header's lines come once per file that includes it: add them up.
	if ! lcov --quiet --add-tracefile "$dir/som.info" "${rc[@]}" \
		--output-file "$dir/som.info" >>"$dir/lcov.log" 2>&1; then
		echo "coverage: lcov failed (see $dir/lcov.log)"
		return 1
	fi
	genhtml --quiet --branch-coverage --output-directory "$dir/html" \
		--title "som.ko: vm/run test, debug tier" \
		"$dir/som.info" >>"$dir/lcov.log" 2>&1 ||
		echo "coverage: genhtml failed (see $dir/lcov.log); the figures stand"
	: >"$dir/never-entered.txt"
	coverage_summary "$dir/som.info" "$dir/never-entered.txt" >"$dir/summary.txt"
	echo "==== coverage of som.ko over the suite ($n files; $dir/html/index.html)"
	cat "$dir/summary.txt"
	echo "functions never entered: $(wc -l <"$dir/never-entered.txt") ($dir/never-entered.txt)"
	sed 's/^/  /' "$dir/never-entered.txt"
}
