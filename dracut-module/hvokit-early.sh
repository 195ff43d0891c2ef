#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# hvokit pre-udev hook (dracut module 90hvokit): turn on HVO and reserve the
# configured huge page pools before udev settles and before the root file
# system is mounted.  Sourced by dracut's shell (99base/init.sh or
# dracut-pre-udev.service), so it must not exit and must never fail the boot:
# everything runs in a subshell and every outcome is only logged.
#
# Every action is one line in the kernel log, prefixed "hvokit: ".  Failures
# are logged at KERN_ERR, which reaches the console even with "quiet".
# (dracut's info and warn are not used for that: in the systemd initramfs
# they write to the journal, not the kernel log, and warn's level is below
# the console's with "quiet".)  The command line is read with dracut-lib's
# getarg/getargbool, so /etc/cmdline.d/*.conf in the image counts too.
#
# Kernel command line:
#   rd.hvokit=0     skip this hook (also "no", "off"; getargbool)
#   hugetlb_free_vmemmap=..., hugepagesz=/hugepages=  already done by the
#                   kernel; hvoctl apply then finds nothing left to do.

hvokit_early() (
    conf=/etc/hvokit/hvokit.conf
    hvoctl=/usr/sbin/hvoctl
    sysctl=/proc/sys/vm/hugetlb_optimize_vmemmap
    state=/run/hvokit

    # $1: syslog level (3 err, 4 warning, 5 notice, 6 info), rest: message
    kmsg() {
        _l=$1
        shift
        if [ -w /dev/kmsg ]; then
            echo "<$_l>hvokit: $*" > /dev/kmsg
        else
            echo "hvokit: $*" >&2
        fi
    }

    pool_1g() {
        _d=hugepages/hugepages-1048576kB
        _s=""
        for _n in /sys/devices/system/node/node[0-9]*; do
            [ -r "$_n/$_d/nr_hugepages" ] || continue
            _s="$_s ${_n##*/}=$(cat "$_n/$_d/nr_hugepages")"
        done
        if [ -z "$_s" ] && [ -r "/sys/kernel/mm/$_d/nr_hugepages" ]; then
            _s=" total=$(cat "/sys/kernel/mm/$_d/nr_hugepages")"
        fi
        echo "${_s# }"
    }

    # The hook runner has sourced dracut-lib.sh; be safe when it has not.
    if ! command -v getargbool > /dev/null 2>&1; then
        # shellcheck source=/dev/null
        . /lib/dracut-lib.sh
    fi
    if ! getargbool 1 rd.hvokit; then
        kmsg 5 "skipped: rd.hvokit=0 on the kernel command line"
        return 0
    fi
    if [ ! -x "$hvoctl" ]; then
        kmsg 3 "ERROR: $hvoctl missing from the initramfs; HVO and pools left to hvokit.service"
        return 0
    fi
    if [ ! -r "$conf" ]; then
        kmsg 4 "no $conf in the initramfs; nothing to do (regenerate it with dracut)"
        return 0
    fi

    hvo_before=$(cat "$sysctl" 2>/dev/null || echo unsupported)
    kmsg 6 "start: initramfs pre-udev, config $conf, HVO=$hvo_before, 1G pool: $(pool_1g)"
    if hvo_arg=$(getarg hugetlb_free_vmemmap=); then
        kmsg 6 "HVO: kernel command line sets hugetlb_free_vmemmap=$hvo_arg (sysctl is $hvo_before)"
    fi

    mkdir -p "$state" 2> /dev/null
    out=$state/initrd-apply.log
    "$hvoctl" apply --config "$conf" > "$out" 2>&1
    rc=$?
    while IFS= read -r line; do
        [ -n "$line" ] || continue
        if [ "$rc" = 0 ]; then
            kmsg 6 "$line"
        else
            kmsg 3 "$line"
        fi
    done < "$out"

    # hvoctl printed each change (HVO, each pool) itself; one verdict line.
    hvo_after=$(cat "$sysctl" 2>/dev/null || echo unsupported)
    case $rc in
    0) kmsg 5 "done: HVO=$hvo_after, 1G pool: $(pool_1g)" ;;
    2) kmsg 3 "ERROR: pools only partly reserved (hvoctl exit 2): HVO=$hvo_after, 1G pool: $(pool_1g); hvokit.service tops up later, the boot goes on" ;;
    *) kmsg 3 "ERROR: hvoctl apply failed (exit $rc): HVO=$hvo_after, 1G pool: $(pool_1g); the boot goes on" ;;
    esac

    # For the real root (/run survives switch_root): what the initramfs did
    # and with which configuration.
    cp "$conf" "$state/initrd-hvokit.conf" 2> /dev/null
    echo "$rc" > "$state/initrd-apply.rc" 2> /dev/null
    return 0
)

hvokit_early
unset -f hvokit_early
