#!/bin/sh
# hvokit libvirt hook acceptance test, for a disposable (nested) test VM with
# a real libvirtd, hvoctl installed and 1G pages obtainable at runtime
# (hugetlb_cma= at boot).  Changes the machine's pools and libvirt's
# hooks: refuses to run unless HVOKIT_ACCEPTANCE=1.
#
#   HVOKIT_ACCEPTANCE=1 sh libvirt-hooks/acceptance.sh [HOOK]
#
# HOOK defaults to this directory's "hvokit".  Prints one "ok"/"FAIL" line
# per check and "acceptance: N passed, N failed"; exit 0 only if all pass.
# Checks are strings evaluated when each check runs, hence single quotes.
# shellcheck disable=SC2016
set -u
[ "${HVOKIT_ACCEPTANCE:-}" = 1 ] || { echo "acceptance.sh: set HVOKIT_ACCEPTANCE=1 (disposable VM only)" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
hook=${1:-$here/hvokit}
hookdir=/etc/libvirt/hooks/qemu.d
pool=/sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages
name=hvokit-acc
uuid=6b1c7b4e-8a51-4a4e-9d7a-0acce55e0001
pass=0 fail=0
check() { if eval "$2"; then echo "ok: $1"; pass=$((pass + 1)); else echo "FAIL: $1"; fail=$((fail + 1)); fi; }
xml() { # $1 = GiB of 1G-backed memory
	cat <<XML
<domain type='kvm'>
  <name>$name</name><uuid>$uuid</uuid>
  <memory unit='GiB'>$1</memory>
  <memoryBacking><hugepages><page size='1' unit='G'/></hugepages></memoryBacking>
  <vcpu>1</vcpu>
  <os><type arch='x86_64'>hvm</type></os>
  <devices><serial type='pty'/><console type='pty'/></devices>
</domain>
XML
}
restart_libvirtd() {
	systemctl restart libvirtd 2>/dev/null || systemctl restart virtqemud
	for _ in 1 2 3 4 5 6 7 8 9 10; do virsh -c qemu:///system version >/dev/null 2>&1 && return; sleep 1; done
}
cleanup() { virsh destroy $name >/dev/null 2>&1; virsh undefine $name >/dev/null 2>&1; }

install -d -m 0755 $hookdir
install -m 0755 "$hook" $hookdir/hvokit
restart_libvirtd # libvirtd sees new hooks only after a restart
cleanup
echo 0 >"$pool"
# shellcheck disable=SC2034 # used in check strings (eval)
before=$(cat $pool)

tmp=$(mktemp) && xml 2 >"$tmp" && virsh define "$tmp" >/dev/null
check "start grows the 1G pool by 2" 'virsh start $name >/dev/null && [ "$(cat $pool)" -eq $((before + 2)) ]'
check "ledger entry by UUID" '[ -f /run/hvokit/guest-$uuid.ledger ]'
check "started marks it running" 'grep -q "^state running" /run/hvokit/guest-$uuid.ledger'
restart_libvirtd
check "libvirtd restart (reconnect) keeps the guest" '[ "$(virsh domstate $name)" = running ]'
check "reconnect keeps the ledger entry" '[ -f /run/hvokit/guest-$uuid.ledger ]'
virsh destroy $name >/dev/null
check "stop gives the pages back" '[ "$(cat $pool)" -eq "$before" ]'
check "stop removes the ledger entry" '[ ! -f /run/hvokit/guest-$uuid.ledger ]'

xml 100000 >"$tmp" && virsh define "$tmp" >/dev/null
# shellcheck disable=SC2034
out=$(virsh start $name 2>&1)
check "impossible guest is refused" '[ "$(virsh domstate $name)" != running ]'
check "refusal names the guest's and the host's size" 'echo "$out" | grep -q "could ever hold"'
check "pool restored after refusal" '[ "$(cat $pool)" -eq "$before" ]'
check "decisions in the journal" 'journalctl -q -t hvoctl-libvirt-hook --since "-10 min" | grep -q "granted"'

cleanup
rm -f "$tmp"
echo "acceptance: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
