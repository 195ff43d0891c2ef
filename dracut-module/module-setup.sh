#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# dracut module 90hvokit: turn on HugeTLB Vmemmap Optimization (HVO) and
# reserve the 1 GiB huge page pools of /etc/hvokit/hvokit.conf early in the
# initramfs, while memory is least fragmented.  The hook is
# hvokit-early.sh (pre-udev), which runs in both the shell initramfs
# (99base/init.sh) and the systemd one (dracut-pre-udev.service).
#
# Installed as /usr/lib/dracut/modules.d/90hvokit/.

# The configuration the image carries (relative to the sysroot).
hvokit_conf=/etc/hvokit/hvokit.conf

check() {
    # hvoctl does the work; without it there is nothing to include.
    require_binaries hvoctl || return 1
    # Host-only image: include the module only if this host is configured.
    # (255: "only when asked for", e.g. with --add hvokit.)
    if [[ $hostonly ]] && [[ ! -f "${dracutsysrootdir-}$hvokit_conf" ]]; then
        return 255
    fi
    return 0
}

depends() {
    # Nothing: the hook uses only the kernel interfaces (/proc, /sys,
    # /dev/kmsg) that 99base (shell) and 98dracut-systemd (systemd)
    # already provide.
    return 0
}

install() {
    # inst_binary pulls in hvoctl's shared libraries (libc, json-c).
    inst_binary hvoctl

    # The configuration is host specific: with -H it is recorded as a
    # host-only file and dropped by rd.hostonly=0.
    if [[ -f "${dracutsysrootdir-}$hvokit_conf" ]]; then
        if [[ $hostonly ]]; then
            inst_simple -H "$hvokit_conf"
        else
            inst_simple "$hvokit_conf"
        fi
    else
        dwarning "hvokit: $hvokit_conf missing: the initramfs will only log that it has nothing to do"
    fi

    # pre-udev: after the command line is parsed, before udev starts
    # loading drivers and before the root file system is looked for.
    # shellcheck disable=SC2154 # dracut sets moddir
    inst_hook pre-udev 05 "$moddir/hvokit-early.sh"
}
