# SPDX-License-Identifier: GPL-2.0
# som on a host: `make` builds the module for the running kernel and the
# user-space parts; `make install` installs them (DESTDIR, PREFIX honoured)
# with what sets the pool up at boot (som.service, som-sources and
# /etc/som/sources.conf, see som-sources(8)), `make uninstall` removes
# them again; `make dkms-install` registers the module with DKMS so that
# it rebuilds on kernel updates. The test VM does not use this file: see
# vm/run.
VERSION := 0.1.0
PREFIX ?= /usr/local
DESTDIR ?=
KVER ?= $(shell uname -r)
KDIR ?= /lib/modules/$(KVER)/build
BINDIR := $(PREFIX)/bin
SBINDIR := $(PREFIX)/sbin
LIBDIR := $(PREFIX)/lib
INCDIR := $(PREFIX)/include
MANDIR := $(PREFIX)/share/man
DOCDIR := $(PREFIX)/share/doc/som
UDEVDIR ?= /etc/udev/rules.d
SYSCONFDIR ?= /etc
SYSTEMDDIR ?= $(PREFIX)/lib/systemd/system
DKMSDIR := /usr/src/som-$(VERSION)
KERNEL_SRC := $(wildcard kernel/*.c kernel/*.h) kernel/Kbuild

all: module userspace

module:
	$(MAKE) -C $(KDIR) M=$(CURDIR)/kernel modules

userspace:
	rm -f libsom/out/libsom.pc
	$(MAKE) -C libsom PREFIX=$(PREFIX)
	$(MAKE) -C tools
	$(MAKE) -C somrun PREFIX=$(PREFIX)

install: install-module install-userspace

install-module: module
	$(MAKE) -C $(KDIR) M=$(CURDIR)/kernel INSTALL_MOD_DIR=extra \
		$(if $(DESTDIR),INSTALL_MOD_PATH=$(DESTDIR)) modules_install
	$(if $(DESTDIR),,depmod -a $(KVER))

install-userspace: userspace
	install -D -m 0644 include/uapi/linux/som.h $(DESTDIR)$(INCDIR)/linux/som.h
	install -D -m 0644 libsom/libsom.h $(DESTDIR)$(INCDIR)/libsom.h
	install -D -m 0755 libsom/out/libsom.so.0 $(DESTDIR)$(LIBDIR)/libsom.so.0
	ln -sf libsom.so.0 $(DESTDIR)$(LIBDIR)/libsom.so
	install -D -m 0644 libsom/out/libsom.a $(DESTDIR)$(LIBDIR)/libsom.a
	install -D -m 0644 libsom/out/libsom.pc $(DESTDIR)$(LIBDIR)/pkgconfig/libsom.pc
	install -D -m 0755 somrun/out/libsomrun.so $(DESTDIR)$(LIBDIR)/som/libsomrun.so
	install -D -m 0755 somrun/out/somrun $(DESTDIR)$(BINDIR)/somrun
	install -D -m 0755 tools/out/somctl $(DESTDIR)$(SBINDIR)/somctl
	install -D -m 0755 tools/out/som-sources $(DESTDIR)$(SBINDIR)/som-sources
	install -d $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man3 $(DESTDIR)$(MANDIR)/man8
	install -m 0644 somrun/somrun.1 $(DESTDIR)$(MANDIR)/man1/
	install -m 0644 libsom/man/*.3 $(DESTDIR)$(MANDIR)/man3/
	install -m 0644 tools/somctl.8 tools/som-sources.8 $(DESTDIR)$(MANDIR)/man8/
	install -D -m 0644 packaging/60-som.rules $(DESTDIR)$(UDEVDIR)/60-som.rules
	install -d $(DESTDIR)$(SYSTEMDDIR)
	sed 's|@SBINDIR@|$(SBINDIR)|g' packaging/som.service.in \
		>$(DESTDIR)$(SYSTEMDDIR)/som.service
	install -D -m 0644 packaging/modules-load.conf \
		$(DESTDIR)$(SYSCONFDIR)/modules-load.d/som.conf
	# An edited configuration is the administrator's: never overwritten.
	test -e $(DESTDIR)$(SYSCONFDIR)/som/sources.conf || \
		install -D -m 0644 packaging/sources.conf \
			$(DESTDIR)$(SYSCONFDIR)/som/sources.conf
	install -D -m 0644 packaging/som.conf.example $(DESTDIR)$(DOCDIR)/modprobe.d/som.conf.example
	install -m 0644 README.md $(DESTDIR)$(DOCDIR)/
	install -d $(DESTDIR)$(DOCDIR)/Documentation
	install -m 0644 Documentation/*.md $(DESTDIR)$(DOCDIR)/Documentation/
	$(if $(DESTDIR),,getent group som >/dev/null || groupadd --system som)
	$(if $(DESTDIR),,ldconfig)
	$(if $(DESTDIR),,! command -v systemctl >/dev/null || systemctl daemon-reload || true)

# What install put in place, but an edited /etc/som/sources.conf and the
# group som (files may still belong to it).
uninstall:
	$(if $(DESTDIR),,! command -v systemctl >/dev/null || systemctl disable som.service 2>/dev/null || true)
	rm -f $(DESTDIR)$(INCDIR)/linux/som.h $(DESTDIR)$(INCDIR)/libsom.h \
		$(DESTDIR)$(LIBDIR)/libsom.so.0 $(DESTDIR)$(LIBDIR)/libsom.so \
		$(DESTDIR)$(LIBDIR)/libsom.a $(DESTDIR)$(LIBDIR)/pkgconfig/libsom.pc \
		$(DESTDIR)$(LIBDIR)/som/libsomrun.so $(DESTDIR)$(BINDIR)/somrun \
		$(DESTDIR)$(SBINDIR)/somctl $(DESTDIR)$(SBINDIR)/som-sources \
		$(DESTDIR)$(MANDIR)/man1/somrun.1 \
		$(DESTDIR)$(MANDIR)/man8/somctl.8 $(DESTDIR)$(MANDIR)/man8/som-sources.8 \
		$(addprefix $(DESTDIR)$(MANDIR)/man3/,$(notdir $(wildcard libsom/man/*.3))) \
		$(DESTDIR)$(UDEVDIR)/60-som.rules $(DESTDIR)$(SYSTEMDDIR)/som.service \
		$(DESTDIR)$(SYSCONFDIR)/modules-load.d/som.conf
	! cmp -s packaging/sources.conf $(DESTDIR)$(SYSCONFDIR)/som/sources.conf || \
		rm -f $(DESTDIR)$(SYSCONFDIR)/som/sources.conf
	-rmdir $(DESTDIR)$(SYSCONFDIR)/som $(DESTDIR)$(LIBDIR)/som 2>/dev/null
	rm -rf $(DESTDIR)$(DOCDIR)
	rm -f $(DESTDIR)/lib/modules/$(KVER)/extra/som*.ko*
	$(if $(DESTDIR),,depmod -a $(KVER))
	$(if $(DESTDIR),,ldconfig)
	$(if $(DESTDIR),,! command -v systemctl >/dev/null || systemctl daemon-reload || true)

# The module's source as DKMS wants it, in $(DESTDIR)$(DKMSDIR).
dkms-source:
	install -d $(DESTDIR)$(DKMSDIR)/kernel $(DESTDIR)$(DKMSDIR)/include/uapi/linux
	install -m 0644 packaging/dkms.conf $(DESTDIR)$(DKMSDIR)/dkms.conf
	sed -i 's/@VERSION@/$(VERSION)/' $(DESTDIR)$(DKMSDIR)/dkms.conf
	install -m 0644 $(KERNEL_SRC) $(DESTDIR)$(DKMSDIR)/kernel/
	install -m 0644 include/uapi/linux/som.h $(DESTDIR)$(DKMSDIR)/include/uapi/linux/

dkms-install: dkms-source
	dkms add -m som -v $(VERSION)
	dkms install -m som -v $(VERSION)

dkms-uninstall:
	dkms remove -m som -v $(VERSION) --all
	rm -rf $(DKMSDIR)

clean:
	$(MAKE) -C $(KDIR) M=$(CURDIR)/kernel clean || true
	$(MAKE) -C libsom clean
	$(MAKE) -C tools clean
	$(MAKE) -C somrun clean

.PHONY: all module userspace install install-module install-userspace uninstall \
	dkms-source dkms-install dkms-uninstall clean
