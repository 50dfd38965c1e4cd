# shellcheck shell=bash
# Host-side checks of what `make install` and DKMS give a real host: run
# by `vm/run test` before the VM tiers, each counted as one test.
#
#   host_install   `make install` into a scratch DESTDIR (PREFIX=/usr), the
#                  module built against the 6.12 headers: every file where
#                  it belongs, a program built from the installed
#                  header, library and pkg-config file, libsom.so.0
#                  exporting exactly libsom.map's symbols (at LIBSOM_0.1),
#                  and the header's version macros equal to the .pc's;
#                  the boot-time setup: som.service passes
#                  `systemd-analyze verify` (pointed at the installed
#                  som-sources), som-sources passes shellcheck; an edited
#                  /etc/som/sources.conf survives a second install and
#                  `make uninstall`, which leaves no other file.
#   host_dkms      the module's DKMS source tree, built by dkms against the
#                  6.12 headers in a private DKMS tree (nothing registered
#                  on this host).

# pass NAME / fail NAME: count one host check.
_host_result() {
	if (($1 == 0)); then
		TOTAL_PASSED=$((TOTAL_PASSED + 1))
		echo "host: $2: ok"
	else
		TOTAL_FAILED=$((TOTAL_FAILED + 1))
		FAILED_NAMES+=("host: $2")
		echo "host: $2: FAILED"
	fi
}

host_install() {
	local dest=$SOM_OUT/install-root log=$SOM_OUT/host-install.log rc=0 f left
	local want=(usr/bin/somrun usr/sbin/somctl usr/lib/libsom.so.0
		    usr/lib/libsom.so usr/lib/libsom.a usr/lib/pkgconfig/libsom.pc
		    usr/lib/som/libsomrun.so usr/include/linux/som.h
		    usr/include/libsom.h usr/share/man/man1/somrun.1
		    usr/share/man/man8/somctl.8 usr/share/man/man3/som_alloc.3
		    usr/share/man/man3/som_jemalloc_arena_create.3
		    etc/udev/rules.d/60-som.rules
		    usr/share/doc/som/modprobe.d/som.conf.example
		    usr/sbin/som-sources usr/share/man/man8/som-sources.8
		    usr/lib/systemd/system/som.service
		    etc/modules-load.d/som.conf etc/som/sources.conf
		    "lib/modules/$SOM_KRELEASE/extra/som.ko*")
	log "make install into $dest (log $log)"
	rm -rf "$dest"
	(
		make -C "$REPO" install PREFIX=/usr DESTDIR="$dest" \
			KDIR="$SOM_KHEADERS" KVER="$SOM_KRELEASE" &&
		for f in "${want[@]}"; do
			# shellcheck disable=SC2086  # the module's name is a glob
			compgen -G "$dest/"$f >/dev/null || { echo "missing: $f"; exit 1; }
		done &&
		# A program built against what was installed, via pkg-config.
		PKG_CONFIG_PATH=$dest/usr/lib/pkgconfig gcc -Wall -Werror \
			-o "$SOM_OUT/install-example" \
			"$REPO/libsom/examples/jemalloc_arena.c" \
			$(PKG_CONFIG_PATH=$dest/usr/lib/pkgconfig pkg-config \
			  --define-variable=prefix="$dest/usr" --cflags --libs libsom) \
			-ljemalloc -ldl -lpthread &&
		# The library's API and nothing else: libsom.map's symbols.
		nm -D --defined-only "$dest/usr/lib/libsom.so.0" |
			awk '$2 == "T" { print $3 }' | sort >"$SOM_OUT/libsom.exported" &&
		sed -n 's/^[[:space:]]*\(som_[a-z_0-9]*\);$/\1@@LIBSOM_0.1/p' \
			"$REPO/libsom/libsom.map" | sort >"$SOM_OUT/libsom.api" &&
		diff -u "$SOM_OUT/libsom.api" "$SOM_OUT/libsom.exported" &&
		# The header's version is the pkg-config file's.
		printf '#include <libsom.h>\nLIBSOM_VERSION_MAJOR.LIBSOM_VERSION_MINOR.LIBSOM_VERSION_PATCH\n' |
			gcc -E -P -I"$dest/usr/include" - | tail -n 1 | tr -d ' ' \
			>"$SOM_OUT/libsom.hversion" &&
		PKG_CONFIG_PATH=$dest/usr/lib/pkgconfig pkg-config --modversion libsom |
			diff -u "$SOM_OUT/libsom.hversion" - &&
		# The unit, run from where the script was installed.
		sed "s|/usr/sbin/|$dest/usr/sbin/|g" "$dest/usr/lib/systemd/system/som.service" \
			>"$SOM_OUT/som.service" &&
		systemd-analyze verify --man=no "$SOM_OUT/som.service" &&
		shellcheck "$dest/usr/sbin/som-sources" &&
		"$dest/usr/sbin/som-sources" check "$dest/etc/som/sources.conf" &&
		# An edited configuration is kept; nothing else is.
		echo "buddy 1" >>"$dest/etc/som/sources.conf" &&
		make -C "$REPO" install-userspace PREFIX=/usr DESTDIR="$dest" &&
		tail -n 1 "$dest/etc/som/sources.conf" | grep -qx "buddy 1" &&
		make -C "$REPO" uninstall PREFIX=/usr DESTDIR="$dest" \
			KVER="$SOM_KRELEASE" &&
		left=$(cd "$dest" && find . -type f) &&
		{ [[ $left == ./etc/som/sources.conf ]] || { echo "left after uninstall: $left"; false; }; }
	) >"$log" 2>&1 || rc=1
	((rc == 0)) || tail -20 "$log"
	_host_result $rc "make install: ${#want[@]} files in place, example built with pkg-config, libsom's symbols and version, boot-time setup; make uninstall"
}

host_dkms() {
	local tree=$SOM_OUT/dkms log=$SOM_OUT/host-dkms.log rc=0 ko version
	version=$(sed -n 's/^VERSION := //p' "$REPO/Makefile")
	log "dkms build against $SOM_KRELEASE headers (log $log)"
	rm -rf "$tree"
	mkdir -p "$tree/dkms"
	ko=$tree/dkms/som/$version/$SOM_KRELEASE/x86_64/module/som.ko
	(
		make -C "$REPO" dkms-source DESTDIR="$tree" &&
		dkms build -m som -v "$version" -k "$SOM_KRELEASE" \
			--kernelsourcedir "$SOM_KHEADERS" --dkmstree "$tree/dkms" \
			--sourcetree "$tree/usr/src" &&
		[[ -f $ko ]] &&
		modinfo -F vermagic "$ko" | grep -q "^$SOM_KRELEASE "
	) >"$log" 2>&1 || rc=1
	((rc == 0)) || tail -20 "$log"
	_host_result $rc "dkms build of som $version for $SOM_KRELEASE"
}
