#!/bin/sh
# SPDX-License-Identifier: MIT
# In the test VM, for reference: Linux md RAID-6 (mdadm) over the same five emulated NVMe
# drives, chunk and fio profiles as ublk.sh's libgraid RAID-6, and a table of the two side by
# side (when the ublk suite ran before it in this boot). Under TCG with emulated drives the
# absolute figures mean nothing; only the two lines of one run compare.
# usage: md.sh MDADM FIO   (uses NVME0..NVME4 from /init)
MDADM=${1:?usage: md.sh MDADM FIO}
FIO=${2:?usage: md.sh MDADM FIO}
. /vm/fio-lib.sh

M="$NVME0 $NVME1 $NVME2 $NVME3 $NVME4"
MD=/dev/md0
export MDADM_NO_UDEV=1 # no udev here: mdadm makes /dev/md0 itself
mkdir -p /run/mdadm

# What earlier suites left (libgraid superblocks, data) must not look like anything to mdadm.
for d in $M; do dd if=/dev/zero of="$d" bs=1M count=4 conv=notrunc,fsync 2>/dev/null; done
# --assume-clean: no initial resync (minutes under TCG); the profiles do not care what the
# parity holds, and md computes parity on every write either way.
if ! "$MDADM" --create "$MD" --run --force --metadata=1.2 --level=6 --raid-devices=5 \
	--chunk=64 --assume-clean $M >/tmp/md.out 2>&1; then
	sed 's/^/    /' /tmp/md.out
	echo "FAIL create: mdadm --create exited non-zero"
	exit 1
fi
for _ in $(seq 1 50); do [ -b "$MD" ] && break; sleep 0.1; done
echo "PASS create: md RAID-6, 5 drives, chunk 64K ($(cat /sys/block/md0/size) sectors)"
sed 's/^/  /' /proc/mdstat

if profiles md-raid6 "$MD" 256 256; then echo "PASS profiles"; else
	echo "FAIL profiles: a fio profile failed on $MD"; fi

"$MDADM" --stop "$MD" >/tmp/md.out 2>&1 || sed 's/^/    /' /tmp/md.out
"$MDADM" --zero-superblock $M >/dev/null 2>&1

# The comparison, from the rows this boot collected (ublk.sh's libgraid-raid6 rows).
if grep -q ' libgraid-raid6 ' "$FIO_TABLE" 2>/dev/null; then
	echo "  libgraid RAID-6 through ublk vs md RAID-6, same drives (TCG: ratios only):"
	printf '  %-14s %12s %12s %8s %14s %14s\n' profile "graid IOPS" "md IOPS" "ratio" \
		"graid avg us" "md avg us"
	for p in $FIO_PROFILES; do
		g=$(awk -v p="$p" '$1 == p && $2 == "libgraid-raid6" { print $3, $5 }' "$FIO_TABLE")
		m=$(awk -v p="$p" '$1 == p && $2 == "md-raid6" { print $3, $5 }' "$FIO_TABLE")
		[ -n "$g" ] && [ -n "$m" ] || continue
		# shellcheck disable=SC2086
		set -- $g $m
		printf '  %-14s %12s %12s %8s %14s %14s\n' "$p" "$1" "$3" \
			"$(awk -v a="$1" -v b="$3" 'BEGIN { if (b > 0) printf "%.2fx", a / b; else print "-" }')" \
			"$2" "$4"
	done
fi
exit 0
