#!/bin/busybox sh
# /init of the hvokit benchmark initramfs: one measurement per boot.
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
scenario=
for arg in $(cat /proc/cmdline); do
	case $arg in hvotest=*) scenario=${arg#hvotest=} ;; esac
done
rounds=${BENCH_ROUNDS:-5}
for arg in $(cat /proc/cmdline); do
	case $arg in hvorounds=*) rounds=${arg#hvorounds=} ;; esac
done
case $scenario in
pool2m)		hvobench pool 2048 3072 "$rounds" ;;
pool1g)		hvobench pool 1048576 4 "$rounds" ;;
boot-on)	hvobench uptime boot-4x1GiB on ;;
boot-off)	hvobench uptime boot-4x1GiB off ;;
*)		echo "HVOBENCH: error unknown scenario '$scenario'" ;;
esac
echo "HVOPROBE: end $scenario"
poweroff -f
