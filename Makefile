# SPDX-License-Identifier: GPL-2.0
# som on a host: `make` builds the module for the running kernel and the
# user-space parts; `make install` installs them (DESTDIR, PREFIX honoured);
# `make dkms-install` registers the module with DKMS so that it rebuilds
# on kernel updates. The test VM does not use this file: see vm/run.
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
	install -d $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man3 $(DESTDIR)$(MANDIR)/man8
	install -m 0644 somrun/somrun.1 $(DESTDIR)$(MANDIR)/man1/
	install -m 0644 libsom/man/*.3 $(DESTDIR)$(MANDIR)/man3/
	install -m 0644 tools/somctl.8 $(DESTDIR)$(MANDIR)/man8/
	install -D -m 0644 packaging/60-som.rules $(DESTDIR)$(UDEVDIR)/60-som.rules
	install -D -m 0644 packaging/som.conf.example $(DESTDIR)$(DOCDIR)/modprobe.d/som.conf.example
	install -m 0644 README.md $(DESTDIR)$(DOCDIR)/
	install -d $(DESTDIR)$(DOCDIR)/Documentation
	install -m 0644 Documentation/*.md $(DESTDIR)$(DOCDIR)/Documentation/
	$(if $(DESTDIR),,getent group som >/dev/null || groupadd --system som)
	$(if $(DESTDIR),,ldconfig)

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

.PHONY: all module userspace install install-module install-userspace \
	dkms-source dkms-install dkms-uninstall clean
