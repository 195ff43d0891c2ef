#!/bin/sh
# Runs at pre-mount: the root file system is not mounted yet.
hvokit_test() (
    o=/dev/console
    say() { echo "HVOKIT-TEST: $*" > $o; }
    say "begin"
    if grep -q " /sysroot " /proc/mounts; then say "sysroot-mounted=yes"; else say "sysroot-mounted=no"; fi
    say "hvo-sysctl=$(cat /proc/sys/vm/hugetlb_optimize_vmemmap)"
    g=/sys/kernel/mm/hugepages/hugepages-1048576kB
    say "global nr=$(cat $g/nr_hugepages) optimized=$(cat $g/vmemmap_optimized_pages) freed=$(cat $g/vmemmap_freed_pages) pgtable=$(cat $g/vmemmap_pgtable_pages)"
    for n in /sys/devices/system/node/node[0-9]*; do
        d=$n/hugepages/hugepages-1048576kB
        say "${n##*/} nr=$(cat "$d/nr_hugepages") optimized=$(cat "$d/vmemmap_optimized_pages") freed=$(cat "$d/vmemmap_freed_pages")"
    done
    say "meminfo $(grep HugetlbVmemmapSaved /proc/meminfo)"
    dmesg | grep 'hvokit: ' | while IFS= read -r l; do say "kmsg $l"; done
    say "end"
    echo o > /proc/sysrq-trigger
    sleep 30
)
hvokit_test
