#!/bin/busybox sh
# shellcheck shell=dash
# /init of the hvokit boot-test initramfs: run one scenario, then power off.
# The scenario comes from the kernel command line: hvotest=NAME.
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null

# hvostress=SECONDS lengthens the stress and walkers scenarios for soak runs
# (default 20).
# hvofault=SECONDS sets the length of the fault scenario's race (default 15,
# 0 leaves it out).
# hvowatch=SECONDS: a scenario that prints nothing for that long (default
# 120 plus the stress and race times) is a hang: the watchdog below reports it with
# every CPU's backtrace and the blocked tasks, and powers off.
scenario=
stress_seconds=20
fault_seconds=15
watch=
hotplug_mode=
# shellcheck disable=SC2013 # the command line is words
for arg in $(cat /proc/cmdline); do
	case $arg in
	hvotest=*) scenario=${arg#hvotest=} ;;
	hvostress=*) stress_seconds=${arg#hvostress=} ;;
	hvofault=*) fault_seconds=${arg#hvofault=} ;;
	hvowatch=*) watch=${arg#hvowatch=} ;;
	# hvohotplug=free: free pool pages in the offlined blocks (6.1 hangs)
	hvohotplug=*) hotplug_mode=${arg#hvohotplug=} ;;
	# a stock kernel has no HVO counters: hvoprobe assumes every page optimized
	hvostock) export HVOPROBE_STOCK=1 ;;
	esac
done
watch=${watch:-$((120 + stress_seconds + fault_seconds))}
echo "HVOPROBE: begin $scenario $(uname -r)"

watchdog() {
	last=-1 still=0
	while sleep 5; do
		size=$(wc -c < /tmp/probe.out)
		if [ "$size" != "$last" ]; then
			last=$size still=0
			continue
		fi
		still=$((still + 5))
		[ "$still" -ge "$watch" ] || continue
		echo "HVOPROBE: not ok watchdog: $scenario printed nothing for $still s: backtraces follow"
		echo 8 > /proc/sys/kernel/printk
		echo 1 > /proc/sys/kernel/sysrq
		echo l > /proc/sysrq-trigger
		echo w > /proc/sysrq-trigger
		sleep 5
		poweroff -f
	done
}

mount_huge() {
	mkdir -p /mnt && mount -t tmpfs tmpfs /mnt && mkdir -p /mnt/huge &&
		mount -t hugetlbfs -o pagesize=2M none /mnt/huge
}

# The kernel tree's own selftests, built from the same tree (peer suite).
selftests() {
	mount_huge || {
		echo "HVOPROBE: not ok selftest-setup: cannot mount hugetlbfs"
		return
	}
	for t in hugepage-vmemmap map_hugetlb hugepage-mmap; do
		if (cd /mnt && /selftests/$t) > /tmp/$t.log 2>&1; then
			echo "HVOPROBE: ok selftest-$t: exit 0"
		else
			echo "HVOPROBE: not ok selftest-$t: exit $?"
			sed 's/^/HVOPROBE: info   /' /tmp/$t.log
		fi
	done
	umount /mnt/huge; umount /mnt
}

# The fault scenarios: a task blocked for 30 s is a hang worth reporting.
case $scenario in
fault|walkers|restorefail|demote|hotplug|cycle1g|growfail1g|pressure) echo 30 > /proc/sys/kernel/hung_task_timeout_secs ;;
esac

: > /tmp/probe.out
watchdog &
watchdog_pid=$!

case $scenario in
boot-on)
	hvoprobe boot-on 2 512
	# hvoctl must report what the kernel counters say (checked by hvoreport)
	if [ -x /bin/hvoctl ]; then
		if hvoctl status --json > /tmp/status.json 2>/tmp/status.err; then
			echo "HVOPROBE: json hvoctl-status $(tr -d '\n' < /tmp/status.json)"
		else
			echo "HVOPROBE: not ok hvoctl-status: exit $?: $(cat /tmp/status.err)"
		fi
	fi
	selftests
	;;
boot-off)	hvoprobe boot-off 2 512 ;;
runtime)	hvoprobe runtime ;;
shrink)		hvoprobe shrink 2 512 ;;
stress)
	# pools resized from several CPUs while a process maps hugetlbfs files
	mount_huge
	hvoprobe stress "$stress_seconds"
	umount /mnt/huge; umount /mnt
	# the tree's own selftests still pass afterwards
	echo 256 > /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages
	selftests
	;;
fault)
	# hardware errors and soft offlining in free, mapped and changing pools
	mount_huge
	hvoprobe fault "$fault_seconds"
	;;
walkers)
	# pools resized while pfn walkers take references on struct pages
	hvoprobe walkers "$stress_seconds"
	;;
restorefail)
	# the vmemmap of freed pages cannot always be restored
	hvoprobe restorefail
	;;
demote)
	# a 1 GiB HVO page demoted to 512 x 2 MiB pages
	hvoprobe demote
	;;
hotplug)
	# memory blocks holding free and mapped HVO pages go offline, online
	hvoprobe hotplug ${hotplug_mode:+"$hotplug_mode"}
	;;
zones)
	# a 1 GiB page from the command line across the start of ZONE_MOVABLE
	hvoprobe zones
	;;
devdax)
	# device-dax with its memmap in RAM at 4 KiB, 2 MiB and 1 GiB alignment
	hvoprobe devdax
	;;
cycle1g)
	# 1 GiB pages optimized, restored, optimized again, poisoned, offlined
	hvoprobe cycle1g
	;;
growfail1g)
	# a new 1 GiB page whose vmemmap cannot be optimized (no PTE table)
	hvoprobe growfail1g
	;;
pressure)
	# pool pages given back when memory is short: direct reclaims, mmap latency
	hvoprobe pressure
	;;
none)
	# nothing but the boot (hang-matrix)
	echo "HVOPROBE: ok boot: init ran"
	;;
*)		echo "HVOPROBE: not ok scenario: unknown '$scenario'" ;;
esac 2>&1 | tee /tmp/probe.out
kill "$watchdog_pid"
hvoprobe dmesg
echo "HVOPROBE: end $scenario"
poweroff -f
