#!/bin/sh
# SPDX-License-Identifier: MIT
# In the test VM: an array served by graid-ublk grows online under a mounted ext4 (issue 42).
# The array over NVME0..NVME4 is served with its control endpoint, ext4 made and mounted on
# /dev/ublkbN, files written with fio's crc32c verification; while fio writes and verifies
# more files in rounds, `graidctl grow --add NVME5` goes through the holder and waits for the
# move's end; then /sys/block/ublkbN/size must have become the array's new size (graid-ublk
# sends UBLK_U_CMD_UPDATE_SIZE), resize2fs grows the mounted filesystem, df shows it larger,
# every fio round verified, the files written before the grow read back, a file written
# after verifies, and after umount e2fsck finds the filesystem clean. The device is also
# exported over NVMe-oF (graid-nvmet, nvmet-tcp on the loopback) and connected to from this
# same guest: after `graid-nvmet resize` the connected namespace has the new size too.
#
# A kernel that cannot resize a ublk device (no UBLK_F_UPDATE_SIZE: before 6.16, the 6.12
# of the `vm` test) gets a short check instead, on small array files in the guest's tmpfs:
# graid-ublk must say that the device keeps its old size until it is restarted, the device
# keep it, and a restarted server offer the new size.
#
# usage: grow.sh GRAID_UBLK GRAIDCTL FIO MKFS_EXT4 RESIZE2FS E2FSCK GRAID_NVMET IP  (uses NVME0..NVME5)
# Environment: VM_UBLK_RESIZE (1: the kernel must resize the device, 0: must not; unset:
# from the kernel's version, 6.16+).
U=${1:?usage: grow.sh GRAID_UBLK GRAIDCTL FIO MKFS_EXT4 RESIZE2FS E2FSCK GRAID_NVMET IP}
G=${2:?usage: grow.sh GRAID_UBLK GRAIDCTL FIO MKFS_EXT4 RESIZE2FS E2FSCK GRAID_NVMET IP}
FIO=${3:?usage: grow.sh GRAID_UBLK GRAIDCTL FIO MKFS_EXT4 RESIZE2FS E2FSCK GRAID_NVMET IP}
MKFS=${4:?usage: grow.sh GRAID_UBLK GRAIDCTL FIO MKFS_EXT4 RESIZE2FS E2FSCK GRAID_NVMET IP}
RESIZE2FS=${5:?usage: grow.sh GRAID_UBLK GRAIDCTL FIO MKFS_EXT4 RESIZE2FS E2FSCK GRAID_NVMET IP}
E2FSCK=${6:?usage: grow.sh GRAID_UBLK GRAIDCTL FIO MKFS_EXT4 RESIZE2FS E2FSCK GRAID_NVMET IP}
GNVMET=${7:?usage: grow.sh GRAID_UBLK GRAIDCTL FIO MKFS_EXT4 RESIZE2FS E2FSCK GRAID_NVMET IP}
IP=${8:?usage: grow.sh GRAID_UBLK GRAIDCTL FIO MKFS_EXT4 RESIZE2FS E2FSCK GRAID_NVMET IP}
. /vm/fio-lib.sh

# The level grown, and the drives before and after: the issue's "Done when", a RAID-6 from
# 5 to 6 drives (nothing else here depends on the level; RAID-0 grows the same way).
LEVEL=6
OLD="$NVME0 $NVME1 $NVME2 $NVME3 $NVME4"
NEW=$NVME5
MNT=/mnt/grow
SRV='' DEV='' BG='' UUID='' NQN=''

# start_server LOG MEMBER...: serve; DEV is the /dev/ublkbN it prints, once it exists.
start_server() {
	log=$1
	shift
	rm -f /tmp/grow.dev
	"$U" "$@" >/tmp/grow.dev 2>"$log" &
	SRV=$!
	for _ in $(seq 1 300); do
		DEV=$(head -n 1 /tmp/grow.dev 2>/dev/null)
		[ -n "$DEV" ] && [ -b "$DEV" ] && return 0
		kill -0 "$SRV" 2>/dev/null || break
		sleep 0.1
	done
	echo "  the server did not come up:"
	sed 's/^/    srv: /' "$log"
	kill -KILL "$SRV" 2>/dev/null
	SRV=''
	return 1
}
# stop_server: SIGTERM, wait up to 60 s; true if it exited 0.
stop_server() {
	[ -n "$SRV" ] || return 0
	kill -TERM "$SRV" 2>/dev/null
	for _ in $(seq 1 600); do
		kill -0 "$SRV" 2>/dev/null || break
		sleep 0.1
	done
	kill -0 "$SRV" 2>/dev/null && { echo "  the server did not stop within 60 s"; kill -KILL "$SRV"; }
	wait "$SRV"
	rc=$?
	SRV=''
	[ "$rc" -eq 0 ] || echo "  the server exited $rc"
	[ "$rc" -eq 0 ]
}
stop_bg() {
	[ -n "$BG" ] || return 0
	touch /tmp/grow.stop
	wait "$BG"
	BG=''
}
# nvmf_off: the loopback client's controllers of the export deleted, the export removed
# (nvmet holds the device open while its namespace is enabled: graid-ublk's exit waits).
nvmf_off() {
	[ -n "$NQN" ] || return 0
	for c in /sys/class/nvme/*; do
		[ "$(cat "$c/subsysnqn" 2>/dev/null)" = "$NQN" ] && echo 1 >"$c/delete_controller"
	done
	"$GNVMET" unexport "$UUID" >/dev/null 2>&1
	NQN=''
}
trap 'stop_bg; nvmf_off; umount "$MNT" 2>/dev/null; stop_server >/dev/null 2>&1' EXIT

# sectors DEV: the block device's size in 512-byte sectors, from sysfs.
sectors() { cat "/sys/block/${1#/dev/}/size" 2>/dev/null || echo 0; }
# json_size FILE: the "size" of the array in a status --json.
json_size() { sed -n 's/^  "size": \([0-9]*\),*$/\1/p' "$1" | head -n 1; }
# wait_sectors DEV OLD: up to 10 s for the device's size to leave OLD; the size then.
wait_sectors() {
	for _ in $(seq 1 100); do
		[ "$(sectors "$1")" != "$2" ] && break
		sleep 0.1
	done
	sectors "$1"
}

# Whether this kernel's ublk driver resizes a live device (UBLK_F_UPDATE_SIZE, 6.16+).
resize=${VM_UBLK_RESIZE:-}
if [ -z "$resize" ]; then
	kv=$(uname -r | sed 's/^\([0-9]*\)\.\([0-9]*\).*/\1 \2/')
	# shellcheck disable=SC2086 # two numbers
	set -- $kv
	if [ "$1" -gt 6 ] || { [ "$1" -eq 6 ] && [ "$2" -ge 16 ]; }; then resize=1; else resize=0; fi
fi

# ---- a kernel without UPDATE_SIZE: the device keeps its size, a restart gives the new one --
if [ "$resize" = 0 ]; then
	# Small files in tmpfs: what is checked is what graid-ublk says and offers, not the move.
	F="/tmp/g0 /tmp/g1"
	rm -f /tmp/g0 /tmp/g1 /tmp/g2
	dd if=/dev/zero of=/tmp/g2 bs=1M count=0 seek=32 2>/dev/null
	# shellcheck disable=SC2086 # the member list
	# RAID-0 of two: the quickest grow (what it checks does not depend on the level).
	if ! "$G" create --level 0 --chunk 64K --file-size 32M $F >/tmp/grow-create.out 2>&1; then
		sed 's/^/    /' /tmp/grow-create.out
		echo "FAIL create: graidctl create exited non-zero"
		exit 1
	fi
	# shellcheck disable=SC2086
	start_server /tmp/grow-old.log $F || { echo "FAIL start: graid-ublk did not serve $F"; exit 1; }
	before=$(sectors "$DEV")
	# shellcheck disable=SC2086
	if "$G" grow --add /tmp/g2 $F >/tmp/grow-grow.out 2>&1; then
		echo "PASS grow: graidctl grow --add through the holder ended"
	else
		sed 's/^/    /' /tmp/grow-grow.out
		echo "FAIL grow: graidctl grow exited non-zero"
	fi
	for _ in $(seq 1 50); do grep -q 'keeps its' /tmp/grow-old.log && break; sleep 0.1; done
	sed 's/^/    srv: /' /tmp/grow-old.log
	now=$(sectors "$DEV")
	if grep -q "keeps its $((before * 512)) bytes until graid-ublk is restarted" /tmp/grow-old.log &&
		[ "$now" = "$before" ]; then
		echo "PASS keeps-size: $DEV keeps $before sectors, and graid-ublk says so (no UPDATE_SIZE here)"
	else
		echo "FAIL keeps-size: $DEV has $now sectors (was $before); graid-ublk said: $(grep -i 'size\|grow' /tmp/grow-old.log | tail -n 3)"
	fi
	stop_server || echo "FAIL stop: graid-ublk did not stop cleanly"
	# shellcheck disable=SC2086
	start_server /tmp/grow-restart.log $F /tmp/g2 || { echo "FAIL restart: graid-ublk did not serve the grown array"; exit 1; }
	now=$(sectors "$DEV")
	if [ "$now" -gt "$before" ]; then
		echo "PASS restart: a new graid-ublk serves $DEV with the new size ($before -> $now sectors)"
	else
		echo "FAIL restart: $DEV has $now sectors after the restart (was $before)"
	fi
	stop_server || echo "FAIL stop: graid-ublk did not stop cleanly"
	rm -f /tmp/g0 /tmp/g1 /tmp/g2
	exit 0
fi

# ---- a kernel with UPDATE_SIZE: the whole grow under a mounted filesystem ----------------
# Earlier suites leave their superblocks on these drives (--force); the added one must be
# blank to graid_array_grow() (no other array's superblock: docs/FORMAT.md, bytes 0..4095).
dd if=/dev/zero of="$NEW" bs=1M count=1 conv=notrunc,fsync 2>/dev/null
# shellcheck disable=SC2086 # the member list
if ! "$G" create --force --level "$LEVEL" --chunk 64K $OLD >/tmp/grow-create.out 2>&1; then
	sed 's/^/    /' /tmp/grow-create.out
	echo "FAIL create: graidctl create exited non-zero"
	exit 1
fi
sed 's/^/  /' /tmp/grow-create.out
# shellcheck disable=SC2086
start_server /tmp/grow-srv.log $OLD || { echo "FAIL start: graid-ublk did not serve $OLD"; exit 1; }
before=$(sectors "$DEV")
echo "  $DEV: $before sectors, RAID-$LEVEL over $(echo "$OLD" | wc -w) drives"

mkdir -p "$MNT"
if ! "$MKFS" -t ext4 -F -q "$DEV" >/tmp/grow-mkfs.out 2>&1 ||
	! mount -t ext4 "$DEV" "$MNT" 2>/tmp/grow-mount.out; then
	sed 's/^/    /' /tmp/grow-mkfs.out /tmp/grow-mount.out
	echo "FAIL mount: mkfs.ext4 or mount of $DEV failed"
	exit 1
fi
# df -k: "Filesystem 1K-blocks Used Available Use% Mounted"; the size in KiB.
df_kib() { df -k "$MNT" | awk 'NR == 2 { print $2 }'; }
fs_before=$(df_kib)
echo "PASS mount: ext4 on $DEV mounted at $MNT, ${fs_before} KiB"

# Files written and verified before the grow, read back after it (--verify_only).
pre_files() {
	fio_run "grow-pre" --directory="$MNT" --ioengine=libaio --direct=1 --verify=crc32c \
		--verify_fatal=1 --name=pre --rw=write --bs=64k --nrfiles=4 --size=64M \
		--iodepth=8 "$@"
}
if pre_files --do_verify=1; then echo "PASS before: 64 MiB of files written and verified"; else
	echo "FAIL before: fio could not write the files"; fi

# ---- the device exported over NVMe-oF and connected to from this guest (loopback) ------
# nvmf_dev: the connected namespace's block device (its NGUID is the array's UUID).
nvmf_dev() {
	want=$(echo "$UUID" | tr -d '-')
	for b in /sys/block/nvme*; do
		case ${b##*/} in *c*) continue ;; esac # hidden per-path disks nvmeXcYnZ
		[ -r "$b/nguid" ] && [ "$(tr -d '\n-' <"$b/nguid")" = "$want" ] && { echo "/dev/${b##*/}"; return 0; }
	done
	return 1
}
# shellcheck disable=SC2086
UUID=$("$G" status --json $OLD 2>/dev/null | sed -n 's/.*"uuid": "\([^"]*\)".*/\1/p' | head -n 1)
"$IP" link set lo up
NQN=$("$GNVMET" export --host-id 1 "$UUID" "$DEV" 127.0.0.1 2>/tmp/grow-nvmet.err)
NDEV=''
if [ -n "$NQN" ]; then
	echo "transport=tcp,traddr=127.0.0.1,trsvcid=4420,nqn=$NQN" >/dev/nvme-fabrics 2>/tmp/grow-connect.err
	for _ in $(seq 1 100); do NDEV=$(nvmf_dev) && break; sleep 0.1; done
fi
if [ -n "$NDEV" ] && [ "$(sectors "$NDEV")" = "$before" ]; then
	echo "PASS nvmf-export: $DEV exported as $NQN, connected over the loopback as $NDEV ($before sectors)"
else
	sed 's/^/    /' /tmp/grow-nvmet.err /tmp/grow-connect.err 2>/dev/null
	echo "FAIL nvmf-export: no connected namespace of the array (export '${NQN:-none}', device '${NDEV:-none}')"
fi

# The background writer: rounds of random writes of 4..128 KiB to a 32 MiB file (one of
# two, in turn), each verified with crc32c, until told to stop; at least two rounds. Each
# round's exit status in /tmp/grow-rounds.
bg_rounds() {
	r=0
	while [ "$r" -lt 2 ] || [ ! -e /tmp/grow.stop ]; do
		"$FIO" --thread --filename="$MNT/bg-$((r % 2))" --ioengine=libaio --direct=1 \
			--name=bg --rw=randwrite --bsrange=4k-128k --size=32M --iodepth=8 \
			--verify=crc32c --verify_fatal=1 --do_verify=1 >"/tmp/fio-grow-bg-$r.out" 2>&1
		echo "$r $?" >>/tmp/grow-rounds
		r=$((r + 1))
	done
}
rm -f /tmp/grow.stop /tmp/grow-rounds
bg_rounds &
BG=$!

# ---- the grow, through the holder, while fio writes ------------------------------------
t0=$(date +%s)
# shellcheck disable=SC2086
"$G" grow --add "$NEW" $OLD >/tmp/grow-grow.out 2>&1
rc=$?
t1=$(date +%s)
tail -n 5 /tmp/grow-grow.out | sed 's/^/    grow: /'
if [ "$rc" -eq 0 ]; then
	echo "PASS grow: graidctl grow --add $NEW through the holder ended in $((t1 - t0)) s"
else
	echo "FAIL grow: graidctl grow exited $rc"
fi
after=$(wait_sectors "$DEV" "$before")
# shellcheck disable=SC2086
"$G" status --json $OLD "$NEW" >/tmp/grow-status.out 2>&1
size=$(json_size /tmp/grow-status.out)
grep -E 'grow|resiz|UPDATE_SIZE|keeps' /tmp/grow-srv.log | sed 's/^/    srv: /'
if [ -n "$size" ] && [ "$after" -gt "$before" ] && [ "$((after * 512))" = "$size" ] &&
	grep -q "resized from $((before * 512)) to $size bytes" /tmp/grow-srv.log; then
	echo "PASS device-size: /sys/block/${DEV#/dev/}/size $before -> $after sectors, the array's new size (UPDATE_SIZE)"
else
	echo "FAIL device-size: $DEV has $after sectors (was $before), the array ${size:-?} bytes"
fi

# The NVMe-oF client sees the new size once nvmet revalidates it (and tells the hosts).
if [ -n "$NDEV" ]; then
	echo "NOTE nvmf-size: before graid-nvmet resize the connected $NDEV has $(sectors "$NDEV") sectors"
	if "$GNVMET" resize "$UUID" 2>/tmp/grow-nvmet-resize.err; then
		nafter=$(wait_sectors "$NDEV" "$before")
		if [ "$nafter" = "$after" ]; then
			echo "PASS nvmf-size: after graid-nvmet resize the connected $NDEV has $nafter sectors, the device's new size"
		else
			echo "FAIL nvmf-size: the connected $NDEV has $nafter sectors, the device $after"
		fi
	else
		sed 's/^/    /' /tmp/grow-nvmet-resize.err
		echo "FAIL nvmf-size: graid-nvmet resize failed"
	fi
	nvmf_off
fi

stop_bg
n=0 bad=''
while read -r r st; do
	n=$((n + 1))
	[ "$st" -eq 0 ] || bad="$bad $r"
done </tmp/grow-rounds
if [ -z "$bad" ] && [ "$n" -ge 2 ]; then
	echo "PASS fio-during: $n rounds of verified writes across the grow"
else
	for r in $bad; do tail -n 15 "/tmp/fio-grow-bg-$r.out" | sed "s/^/    fio round $r: /"; done
	echo "FAIL fio-during: rounds that failed:${bad:- none, but only $n ran}"
fi

# ---- the filesystem grows online -------------------------------------------------------
if "$RESIZE2FS" "$DEV" >/tmp/grow-resize2fs.out 2>&1; then
	fs_after=$(df_kib)
	if [ "$fs_after" -gt "$fs_before" ]; then
		echo "PASS resize2fs: $MNT grew online from $fs_before to $fs_after KiB"
	else
		echo "FAIL resize2fs: df shows $fs_after KiB, was $fs_before"
	fi
else
	sed 's/^/    /' /tmp/grow-resize2fs.out
	echo "FAIL resize2fs: resize2fs $DEV exited non-zero"
fi
if pre_files --verify_only=1; then echo "PASS after: the files written before the grow read back"; else
	echo "FAIL after: the files written before the grow did not verify"; fi
if fio_run "grow-post" --directory="$MNT" --ioengine=libaio --direct=1 --verify=crc32c \
	--verify_fatal=1 --name=post --rw=randwrite --bsrange=4k-128k --size=32M --iodepth=8 \
	--do_verify=1; then
	echo "PASS write-after: a new file written and verified on the grown filesystem"
else
	echo "FAIL write-after: fio on the grown filesystem"
fi

if ! umount "$MNT"; then echo "FAIL umount: $MNT"; fi
if "$E2FSCK" -fn "$DEV" >/tmp/grow-fsck.out 2>&1; then
	echo "PASS fsck: e2fsck -fn finds $DEV clean"
else
	sed 's/^/    /' /tmp/grow-fsck.out | tail -n 15
	echo "FAIL fsck: e2fsck -fn on $DEV"
fi
if stop_server; then echo "PASS stop: graid-ublk stopped cleanly"; else
	echo "FAIL stop: graid-ublk did not stop cleanly"; fi
