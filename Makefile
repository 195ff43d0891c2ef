# hvokit - top-level build.  See README.md.
#
#   make deps     install build and test dependencies (apt-get, idempotent)
#   make          build kernel + tools and run the QEMU savings proof
#   make check    every test; the last line is "N passed, N failed"

HVOKIT_CACHE ?= /var/cache/hvokit
FLAVOR       ?= test
export HVOKIT_CACHE FLAVOR

KBUILD     = kernel/scripts/kbuild
# The newest linux-image .deb of a flavor: linux-image-6.1.N-hvokit (debian,
# the package a provider installs) or linux-image-6.1.N-hvokit-FLAVOR.
kernel_deb = $$(ls -1t $(HVOKIT_CACHE)/linux-image-*-hvokit$(if $(filter debian,$(1)),,-$(1))_*_amd64.deb | head -n 1)
DEB_FLAVOR ?= debian
KBUILD_OUT = $(HVOKIT_CACHE)/build-$(FLAVOR)
TREE       = $(HVOKIT_CACHE)/tree
BOOT       = $(MAKE) -C nested-test/boot HVOKIT_CACHE=$(HVOKIT_CACHE) \
		TREE=$(TREE) KBUILD_OUT=$(HVOKIT_CACHE)/build-test \
		HVOCTL=$(CURDIR)/hvoctl/hvoctl

DEB_PACKAGES = build-essential bc bison flex libssl-dev libelf-dev dwarves \
	ccache cpio kmod rsync xz-utils debhelper fakeroot dpkg-dev \
	linux-source-6.1 linux-config-6.1 \
	qemu-system-x86 busybox-static \
	libcmocka-dev libxml2-dev libjson-c-dev pkg-config man-db python3 \
	gnuplot-nox $(shell cat packaging/DEPS)

all: proof

deps:
	@missing=$$(for p in $(DEB_PACKAGES); do \
		dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' || echo $$p; \
	done); \
	if [ -n "$$missing" ]; then \
		echo "deps: installing $$missing"; \
		apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q $$missing; \
	else echo "deps: all $(words $(DEB_PACKAGES)) packages installed"; fi

kernel:
	$(KBUILD) build $(FLAVOR)

# FLAVOR=debian also checks the package (modules, signatures, depmod,
# enforcement as Debian's config): kernel/scripts/kpkgcheck.
kernel-deb:
	$(KBUILD) deb $(FLAVOR)
	if [ "$(FLAVOR)" = debian ]; then kernel/scripts/kpkgcheck $(call kernel_deb,debian); fi

# The kit package and the production kernel package (DEB_FLAVOR=debian:
# Debian's amd64 config, hours on 2 cores) side by side in out/deb.
deb:
	$(MAKE) kernel-deb FLAVOR=$(DEB_FLAVOR)
	$(MAKE) -C packaging deb KERNEL_DEBS="$(call kernel_deb,$(DEB_FLAVOR))"

hvoctl:
	$(MAKE) -C hvoctl

# The savings proof: boot the test kernel off/on/runtime/shrink, print the table.
proof: hvoctl
	$(KBUILD) build test
	$(BOOT) check

# The nested acceptance test: a hypervisor installed from our packages in
# QEMU runs 1 GiB-backed guests through libvirt (nested-test/acceptance).
# FLAVOR=debian: the production package as the L1 kernel, Debian's own
# kernel installed beside it as the fallback (booted too).
nested-test: hvoctl
	$(MAKE) kernel-deb FLAVOR=$(FLAVOR)
	$(MAKE) -C packaging deb KERNEL_DEBS=
	$(MAKE) -C nested-test/acceptance check FLAVOR=$(FLAVOR) \
		KERNEL_DEB="$(call kernel_deb,$(FLAVOR))"

# What HVO costs when pools change, stock kernel against ours (not a test).
bench:
	PATCHED=0 $(KBUILD) build bench
	$(KBUILD) build bench
	$(MAKE) -C nested-test/bench HVOKIT_CACHE=$(HVOKIT_CACHE)

# Long runs of the racing scenarios on the test kernel (DEBUG_VM) or, with
# FLAVOR=bench, on the production-like kernel without DEBUG_VM.  Not in
# 'make check': three scenarios of SOAK_SECONDS (default 600) under TCG.
SOAK_SECONDS ?= 600
soak: hvoctl
	$(KBUILD) build $(FLAVOR)
	$(BOOT) soak SOAK_SECONDS=$(SOAK_SECONDS) OUT=$(CURDIR)/out/soak-$(FLAVOR) \
		KBUILD_OUT=$(KBUILD_OUT) KERNEL=$(KBUILD_OUT)/arch/x86/boot/bzImage

check:
	scripts/check \
		"kernel=kernel/scripts/kcheck" \
		"hvoctl=$(MAKE) -C hvoctl check" \
		"boot=$(MAKE) hvoctl && $(KBUILD) build test && $(BOOT) clean check" \
		"packaging=$(KBUILD) build test && $(MAKE) -C packaging check" \
		"nested=$(MAKE) nested-test"

clean:
	rm -rf out
	$(MAKE) -C hvoctl clean

.PHONY: all deps kernel kernel-deb deb hvoctl proof nested-test bench soak check clean
