#!/bin/sh
# SPDX-License-Identifier: MIT
# In the test VM: the emulated drives are there, one per serial, each with its namespace as
# a block device (/dev/nvmeXn1) and a generic char device (/dev/ngXn1) of the expected size.
# Uses what /init exported: VM_DRIVES, VM_DRIVE_BYTES, VM_SERIAL_PREFIX, NVME<k>, NG<k>.
why=
bad() { [ -n "$why" ] || why=$*; echo "  $*"; }

n=$(ls -d /sys/class/nvme/nvme* 2>/dev/null | wc -l)
[ "$n" -eq "$VM_DRIVES" ] || bad "$n NVMe controllers, expected $VM_DRIVES"
seen=
for c in /sys/class/nvme/nvme*; do
	[ -e "$c" ] || continue
	s=$(tr -d ' ' < "$c/serial")
	m=$(sed 's/ *$//' "$c/model")
	echo "  ${c##*/}: serial $s, model '$m', firmware $(tr -d ' ' < "$c/firmware_rev"), state $(cat "$c/state")"
	case " $seen " in *" $s "*) bad "serial $s appears twice" ;; esac
	seen="$seen $s"
	case $m in *QEMU*) ;; *) bad "${c##*/}: model '$m' is not QEMU's" ;; esac
done
k=0
while [ "$k" -lt "$VM_DRIVES" ]; do
	b="" g=""
	eval "b=\${NVME$k:-} g=\${NG$k:-}"
	if [ -z "$b" ]; then
		bad "no drive with serial $VM_SERIAL_PREFIX$k"
	else
		[ -b "$b" ] || bad "$b is not a block device"
		[ -c "$g" ] || bad "$g is not a character device"
		sectors=$(cat "/sys/block/${b#/dev/}/size")
		lbs=$(cat "/sys/block/${b#/dev/}/queue/logical_block_size")
		[ "$((sectors * 512))" -eq "$VM_DRIVE_BYTES" ] ||
			bad "$b has $((sectors * 512)) bytes, expected $VM_DRIVE_BYTES"
		echo "  $VM_SERIAL_PREFIX$k: $b $g, $((sectors * 512)) bytes, logical block $lbs"
	fi
	k=$((k + 1))
done
if [ -z "$why" ]; then echo "PASS drives"; else echo "FAIL drives: $why"; exit 1; fi
