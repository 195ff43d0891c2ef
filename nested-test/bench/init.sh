#!/bin/busybox sh
# shellcheck shell=dash
# /init of the hvokit benchmark initramfs: one measurement per boot.
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mkdir -p /tmp
read -r cmdline < /proc/cmdline
scenario=
for arg in $cmdline; do
	case $arg in hvotest=*) scenario=${arg#hvotest=} ;; esac
done
rounds=${BENCH_ROUNDS:-5}
# hvowatch=SECONDS: a measurement that prints nothing for that long is a
# hang: print every CPU's backtrace and the blocked tasks (sysrq l and w),
# report it and power off, so that the run fails with its evidence.
watch=120
for arg in $cmdline; do
	case $arg in
	hvorounds=*) rounds=${arg#hvorounds=} ;;
	hvowatch=*) watch=${arg#hvowatch=} ;;
	esac
done

watchdog() {
	last=-1 still=0
	while sleep 5; do
		size=$(wc -c < /tmp/bench.out)
		if [ "$size" != "$last" ]; then
			last=$size still=0
			continue
		fi
		still=$((still + 5))
		[ "$still" -ge "$watch" ] || continue
		echo "HVOBENCH: error no progress for $still s: backtraces follow"
		echo 1 > /proc/sys/kernel/sysrq
		echo l > /proc/sysrq-trigger
		echo w > /proc/sysrq-trigger
		sleep 5
		poweroff -f
	done
}
: > /tmp/bench.out
watchdog &

case $scenario in
pool2m)		hvobench pool 2048 3072 "$rounds" ;;
pool2m-off)	hvobench pool 2048 3072 "$rounds" off ;;
pool1g)		hvobench pool 1048576 4 "$rounds" ;;
boot-on)	hvobench uptime boot-4x1GiB on ;;
boot-off)	hvobench uptime boot-4x1GiB off ;;
boot16-on|boot16-off)
	m=${scenario#boot16-}
	hvobench uptime boot-16x1GiB "$m"
	hvobench initcall hugetlb_init-16x1GiB "$m" hugetlb_init
	;;
*)		echo "HVOBENCH: error unknown scenario '$scenario'" ;;
esac 2>&1 | tee /tmp/bench.out
echo "HVOPROBE: end $scenario"
poweroff -f
