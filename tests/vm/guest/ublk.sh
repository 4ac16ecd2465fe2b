#!/bin/sh
# SPDX-License-Identifier: MIT
# In the test VM: graid-ublk serves a RAID-6 over five NVMe block devices as /dev/ublkbN;
# fio writes it with crc32c verification and reads it back, runs short passes of the
# BENCHMARKS.md profiles, then a member vanishes while the array is served and fio verifies
# every block again (served from parity), writes degraded, and the server stops cleanly.
# Then discard: the device advertises discard and write-zeroes, fio trims a range it wrote
# and verifies it reads zeroes and the range beside it its checksums, mkfs.ext4 (which
# discards the device) and fstrim on a mounted filesystem succeed.
# usage: ublk.sh GRAID_UBLK GRAIDCTL FIO [MKFS_EXT4 FSTRIM]   (uses NVME0..NVME4 from /init)
# Environment: VM_FIO_RUNTIME (seconds per profile, default 3), FIO_TABLE (a file that
# receives the profile table's rows, for md.sh's comparison).
U=${1:?usage: ublk.sh GRAID_UBLK GRAIDCTL FIO}
G=${2:?usage: ublk.sh GRAID_UBLK GRAIDCTL FIO}
FIO=${3:?usage: ublk.sh GRAID_UBLK GRAIDCTL FIO}
MKFS=${4:-}
FSTRIM=${5:-}
. /vm/fio-lib.sh

M="$NVME0 $NVME1 $NVME2 $NVME3 $NVME4"
SRV='' DEV=''

# start_server LOG MEMBER...: serve; DEV is the /dev/ublkbN it prints, once it exists.
start_server() {
	log=$1
	shift
	rm -f /tmp/ublk.dev
	"$U" --queues 2 --depth 64 --queue-cpus queue "$@" >/tmp/ublk.dev 2>"$log" &
	SRV=$!
	for _ in $(seq 1 300); do
		DEV=$(head -n 1 /tmp/ublk.dev 2>/dev/null)
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
# stop_server: SIGTERM, wait up to 60 s; true if it exited 0 and its device is gone.
stop_server() {
	[ -n "$SRV" ] || return 0
	kill -TERM "$SRV" 2>/dev/null
	for _ in $(seq 1 600); do
		kill -0 "$SRV" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$SRV" 2>/dev/null; then
		echo "  the server did not stop within 60 s"
		kill -KILL "$SRV"
	fi
	wait "$SRV"
	rc=$?
	SRV=''
	for _ in $(seq 1 20); do [ -e "$DEV" ] || break; sleep 0.1; done
	[ "$rc" -eq 0 ] || echo "  the server exited $rc"
	[ ! -e "$DEV" ] || echo "  $DEV is still there"
	[ "$rc" -eq 0 ] && [ ! -e "$DEV" ]
}
trap 'stop_server >/dev/null 2>&1' EXIT

# Two regions hold verified data, the profiles run on a third (they overwrite it):
# [0, 48M) 4 KiB random writes, [64M, 192M) 4K..512K random-size writes, [256M, 512M) profiles.
verify_jobs() { # verify_jobs EXTRA-OPTIONS...: both verified regions, written or checked
	fio_run verify "$@" --filename="$DEV" --ioengine=libaio --direct=1 --verify=crc32c \
		--verify_fatal=1 \
		--name=small --rw=randwrite --bs=4k --offset=0 --size=48M --iodepth=16 \
		--name=large --rw=randwrite --bsrange=4k-512k --offset=64M --size=128M --iodepth=4
}

# --force: earlier suites leave their superblocks on these drives.
if ! "$G" create --force --level 6 --chunk 64K $M >/tmp/create.out 2>&1; then
	sed 's/^/    /' /tmp/create.out
	echo "FAIL create: graidctl create exited non-zero"
	exit 1
fi
sed 's/^/  /' /tmp/create.out

# ---- the whole array ---------------------------------------------------------------------
"$U" --rebuild-busy-rate fast $M >/dev/null 2>/tmp/usage.out
rc=$?
if [ "$rc" -eq 2 ] && grep -q "fast" /tmp/usage.out; then
	echo "PASS usage: a bad --rebuild-busy-rate is refused (exit 2), saying why"
else
	echo "FAIL usage: --rebuild-busy-rate fast gave exit $rc"; sed 's/^/    /' /tmp/usage.out
fi
if start_server /tmp/srv1.log --rebuild-max-rate 1G --rebuild-busy-rate 50M $M; then
	q=/sys/block/${DEV#/dev/}
	echo "PASS start: $DEV ($(cat "$q/size") sectors, $(cat "$q/queue/logical_block_size")-byte blocks)"
	sed 's/^/    srv: /' /tmp/srv1.log
	if grep -q "52428800 B/s while serving" /tmp/srv1.log; then
		echo "PASS rebuild-rates: the server applied --rebuild-max-rate/--rebuild-busy-rate"
	else
		echo "FAIL rebuild-rates: not reported by the server"
	fi
	# Each queue thread (graid-ublk-qN) runs on the CPUs of its hardware queue N.
	cpus() { # a CPU list ("0-2,5" or "0, 1") as "0,1,2,5"
		echo "$1" | tr -d ' ' | awk -F, '{ for (i = 1; i <= NF; i++) { n = split($i, r, "-")
			for (c = r[1]; c <= r[n]; c++) printf "%s%d", (k++ ? "," : ""), c } }'
	}
	aff_ok=0 aff=''
	for t in /proc/"$SRV"/task/*; do
		qn=$(sed -n 's/^graid-ublk-q//p' "$t/comm")
		[ -n "$qn" ] || continue
		got=$(cpus "$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' "$t/status")")
		want=$(cpus "$(cat "$q/mq/$qn/cpu_list")")
		aff="$aff q$qn:$got/$want"
		[ -n "$want" ] && [ "$got" = "$want" ] && aff_ok=$((aff_ok + 1))
	done
	if [ "$aff_ok" -eq 2 ]; then
		echo "PASS queue-affinity: each queue thread on its queue's CPUs (thread/queue:$aff)"
	else
		echo "FAIL queue-affinity: thread/queue CPUs:${aff:- no graid-ublk-qN thread}"
	fi
	if verify_jobs --do_verify=1; then
		echo "PASS write-verify: random writes read back with crc32c"
	else
		echo "FAIL write-verify: fio found a bad block or an error"
	fi
	profiles libgraid-raid6 "$DEV" 256 256
	if stop_server; then echo "PASS stop: SIGTERM, device removed, exit 0"; else
		echo "FAIL stop: not clean"; sed 's/^/    srv: /' /tmp/srv1.log; fi
else
	echo "FAIL start: graid-ublk did not serve $M"
	exit 1
fi

# ---- the protocol: zero copy or batches where the driver has them ----------------------
# VM_UBLK_ZC and VM_UBLK_BATCH (from tests/vm/run): 1 the kernel has zero copy (automatic
# buffer registration, Linux 6.16+) or UBLK_F_BATCH_IO and graid-ublk must use it, 0 it
# must not; unset, either is right. Zero copy comes first where both are there.
proto=$(sed -n 's/.* max I\/O, //p' /tmp/srv1.log)
# Without either, one ring needs a driver with GET_FEATURES (6.5+).
kmaj=$(uname -r | cut -d. -f1) kmin=$(uname -r | cut -d. -f2)
if [ "$kmaj" -gt 6 ] || { [ "$kmaj" -eq 6 ] && [ "$kmin" -ge 5 ]; }; then
	per_tag="a command per request, one ring"
else
	per_tag="a command per request"
fi
case ${VM_UBLK_ZC:-}/${VM_UBLK_BATCH:-} in
1/*) want="zero copy, one ring" ;;
0/) [ "$proto" = "zero copy, one ring" ] && want="no zero copy" || want=$proto ;;
*/1) want="batched fetches and commits" ;;
*/0) want=$per_tag ;;
*) want=$proto ;;
esac
if [ -n "$proto" ] && [ "$proto" = "$want" ]; then
	echo "PASS protocol: $proto"
else
	echo "FAIL protocol: the server used '${proto:-?}', this kernel should give '$want'"
fi
# Zero copy: the read-back went straight into the client's pages, none copied out.
if [ "$proto" = "zero copy, one ring" ]; then
	zc=$(sed -n 's/.*: \([0-9]*\) reads straight into the client.s pages, \([0-9]*\) copied out/\1 \2/p' /tmp/srv1.log |
		awk '{ s += $1; c += $2 } END { print s + 0, c + 0 }')
	set -- $zc
	if [ "$1" -gt 1000 ] && [ "$2" -eq 0 ]; then
		echo "PASS zero-copy-reads: $1 reads straight into the client's pages, none copied"
	else
		echo "FAIL zero-copy-reads: $1 straight, $2 copied out (want many, and none)"
		sed 's/^/    srv: /' /tmp/srv1.log
	fi
fi
# The request buffers registered with the array's queues (graid_queue_register_buffers):
# each of the two queue threads says so.
nreg=$(grep -c "request buffers registered with the array's queue" /tmp/srv1.log)
if [ "$nreg" -eq 2 ]; then
	echo "PASS fixed-buffers: both queues' request buffers are registered with the array"
else
	echo "FAIL fixed-buffers: $nreg of 2 queues registered them: $(grep "not registered" /tmp/srv1.log | head -n 1)"
fi
# Each queue thread's ring keeps the kernel's completion work for the thread's waits
# (GRAID_QUEUE_F_ONE_THREAD; the bed's kernels are all 6.1+, which have DEFER_TASKRUN).
ndefer=$(grep -c "completion work deferred to this thread's waits" /tmp/srv1.log)
if [ "$ndefer" -eq 2 ]; then
	echo "PASS defer-taskrun: both queue threads' rings defer their completion work"
else
	echo "FAIL defer-taskrun: $ndefer of 2 queues defer it: $(grep "completion work" /tmp/srv1.log | head -n 1)"
fi
# The other protocols, forced, read back what the first server wrote: batches (with zero
# copy off, where the kernel has both), the per-tag protocol on the array queue's ring
# (where that is not what the first server used) and on a ring of its own (that one also
# with the completion work run at once, --defer-taskrun off).
others="--batch off --zero-copy off|a command per request, one ring|batch-off
--batch off --one-ring off --defer-taskrun off|a command per request|two-rings"
[ "$proto" = "zero copy, one ring" ] && [ "${VM_UBLK_BATCH:-}" = 1 ] &&
	others="--zero-copy off|batched fetches and commits|zero-copy-off
$others"
echo "$others" | while IFS='|' read -r opts want name; do
	[ "$want" = "$proto" ] && continue
	# shellcheck disable=SC2086 # options, split
	if start_server /tmp/srv1b.log $opts $M; then
		if ! grep -q "max I/O, $want\$" /tmp/srv1b.log; then
			echo "FAIL $name: $opts did not give '$want'"; sed 's/^/    srv: /' /tmp/srv1b.log
		elif verify_jobs --verify_only=1 </dev/null; then
			echo "PASS $name: $want, every block read back right"
		else
			echo "FAIL $name: fio found a bad block or an error"
		fi
		stop_server || echo "FAIL stop-$name: not clean"
	else
		echo "FAIL $name: graid-ublk $opts did not serve $M"
	fi
done

# ---- a member vanishes while served ------------------------------------------------------
# The library's fault injection fails every I/O of member 1 after its 200th, in the middle
# of the read-back below: from there the data comes from P and Q.
if start_server /tmp/srv2.log $NVME0 "faulty:vanish-after=200:$NVME1" $NVME2 $NVME3 $NVME4; then
	if verify_jobs --verify_only=1; then
		echo "PASS degraded-verify: every block read back right while member 1 failed"
	else
		echo "FAIL degraded-verify: fio found a bad block or an error"
	fi
	grep -E '^ *(READ|WRITE):' /tmp/fio-verify.out | sed 's/^ */  verify read-back: /'
	if grep -qi "member 1 failed" /tmp/srv2.log; then echo "PASS failure-reported"; else
		echo "FAIL failure-reported: the server did not say member 1 failed"
		sed 's/^/    srv: /' /tmp/srv2.log
	fi
	if fio_run degraded-write --filename="$DEV" --ioengine=libaio --direct=1 \
		--verify=crc32c --verify_fatal=1 --do_verify=1 --name=dw --rw=randwrite \
		--bsrange=4k-256k --offset=256M --size=64M --iodepth=8; then
		echo "PASS degraded-write: written degraded and read back"
	else
		echo "FAIL degraded-write"
	fi
	if stop_server; then echo "PASS stop-degraded"; else
		echo "FAIL stop-degraded: not clean"; sed 's/^/    srv: /' /tmp/srv2.log; fi
	# Zero copy: what member 1 no longer gave was recovered in the server's memory and
	# copied out (the library refuses to recover into pages it cannot touch).
	if grep -q "zero copy, one ring" /tmp/srv2.log || [ "${VM_UBLK_ZC:-}" = 1 ]; then
		copied=$(sed -n 's/.*, \([0-9]*\) copied out/\1/p' /tmp/srv2.log |
			awk '{ c += $1 } END { print c + 0 }')
		if [ "$copied" -gt 0 ]; then
			echo "PASS zero-copy-degraded: $copied degraded reads recovered and copied out"
		else
			echo "FAIL zero-copy-degraded: no read was copied out"
		fi
	fi
	"$G" status $M >/tmp/status.out 2>&1
	rc=$?
	if [ "$rc" -eq 3 ]; then echo "PASS status-degraded: graidctl status exits 3"; else
		echo "FAIL status-degraded: graidctl status exited $rc"; sed 's/^/    /' /tmp/status.out; fi
else
	echo "FAIL start-degraded: graid-ublk did not serve with a faulty member"
fi

# ---- discard: fio trims and verifies zeroes; a filesystem is made and trimmed ------------
if [ -z "$MKFS" ] || [ -z "$FSTRIM" ]; then
	echo "SKIP discard: mkfs.ext4 and fstrim were not given"
	exit 0
fi
if ! "$G" create --force --level 6 --chunk 64K $M >/tmp/create3.out 2>&1; then
	echo "FAIL discard-create"; sed 's/^/    /' /tmp/create3.out
	exit 0
fi
if start_server /tmp/srv3.log $M; then
	q=/sys/block/${DEV#/dev/}/queue
	dmax=$(cat "$q/discard_max_bytes") wzmax=$(cat "$q/write_zeroes_max_bytes")
	if [ "$dmax" -gt 0 ] && [ "$wzmax" -gt 0 ]; then
		echo "PASS discard-advertised: discard up to $dmax, write-zeroes up to $wzmax bytes, granularity $(cat "$q/discard_granularity")"
	else
		echo "FAIL discard-advertised: discard_max_bytes $dmax, write_zeroes_max_bytes $wzmax"
	fi
	# fio writes two ranges with crc32c, trims the first (192 KiB = one stripe a request),
	# then wants the first to read zeroes and the second still its checksums. (fio's own
	# trim_percentage asserts on a write-only job in fio 3.33; trims need a sync engine.)
	tv() { # tv NAME OFFSET EXTRA...: the write job of one range
		n=$1 o=$2
		shift 2
		fio_run "$n" --filename="$DEV" --ioengine=libaio --direct=1 --name="$n" \
			--rw=randwrite --bs=192k --offset="$o" --size=48M --iodepth=8 \
			--verify=crc32c --verify_fatal=1 "$@"
	}
	if tv tv-a 0 --do_verify=1 && tv tv-b 48M --do_verify=1 &&
	   fio_run tv-trim --filename="$DEV" --ioengine=psync --direct=1 --name=trim \
		--rw=trim --bs=192k --offset=0 --size=48M &&
	   fio_run tv-zero --filename="$DEV" --ioengine=libaio --direct=1 --name=zero \
		--rw=write --bs=192k --offset=0 --size=48M --verify=pattern \
		--verify_pattern=0x00 --verify_only=1 --verify_fatal=1 &&
	   tv tv-b 48M --verify_only=1; then
		echo "PASS fio-trim-verify: the trimmed range reads zeroes, the range beside it verifies"
	else
		echo "FAIL fio-trim-verify"
	fi
	if "$MKFS" -t ext4 -F -q "$DEV" >/tmp/mkfs.out 2>&1; then
		echo "PASS mkfs: mkfs.ext4 on $DEV (it discards the device first)"
	else
		echo "FAIL mkfs"; sed 's/^/    /' /tmp/mkfs.out
	fi
	mkdir -p /mnt/t
	if mount -t ext4 "$DEV" /mnt/t 2>/tmp/mount.out; then
		dd if=/dev/urandom of=/mnt/t/f bs=1M count=64 2>/dev/null && sync
		rm -f /mnt/t/f && sync
		if "$FSTRIM" -v /mnt/t >/tmp/fstrim.out 2>&1; then
			echo "PASS fstrim: $(cat /tmp/fstrim.out)"
		else
			echo "FAIL fstrim"; sed 's/^/    /' /tmp/fstrim.out
		fi
		umount /mnt/t
	else
		echo "FAIL mount: $(cat /tmp/mount.out)"
	fi
	if stop_server; then echo "PASS stop-discard"; else
		echo "FAIL stop-discard: not clean"; sed 's/^/    srv: /' /tmp/srv3.log; fi
	"$G" status $M 2>/dev/null | grep "used :" | sed 's/^ */  after fstrim: /'
else
	echo "FAIL discard-start: graid-ublk did not serve $M"
fi
exit 0
