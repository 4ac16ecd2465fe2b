#!/bin/sh
# SPDX-License-Identifier: MIT
# In the test VM: a served array changes level while a client writes to it (issue 42). A
# RAID-1 of NVME0 and NVME1 is served by graid-ublk; fio writes random blocks to the raw
# /dev/ublkbN at depth 32 and verifies them (crc32c), in rounds, while `graidctl convert`
# goes through the holder four times (RAID-1 -> RAID-5 of two -> RAID-1 ...). Each change
# quiesces the array: requests in flight drain, new ones on a queue with requests of its
# own are answered "not now" (-EAGAIN, graid.h) until it ends. graid-ublk must hold such a
# request and queue it again (examples/ublk/queue.c uq_serve), never fail it to the client:
# every fio round must end without an I/O error and verify. Then the array's level is the
# last one asked for, and a scrub through the holder finds nothing wrong. Done once for each
# of graid-ublk's loops: one ring (queue_one.c), a ring of its own (queue.c), and batched
# fetches and commits where the kernel has them (VM_UBLK_BATCH=1). Before graid-ublk held
# these requests, fio's rounds failed in both loops of the 6.12 kernel.
# usage: convert.sh GRAID_UBLK GRAIDCTL FIO   (uses NVME0, NVME1 from /init)
U=${1:?usage: convert.sh GRAID_UBLK GRAIDCTL FIO}
G=${2:?usage: convert.sh GRAID_UBLK GRAIDCTL FIO}
FIO=${3:?usage: convert.sh GRAID_UBLK GRAIDCTL FIO}

M="$NVME0 $NVME1"
SRV='' DEV='' BG=''

# start_server LOG MEMBER...: serve; DEV is the /dev/ublkbN it prints, once it exists.
start_server() {
	log=$1
	shift
	rm -f /tmp/convert.dev
	"$U" "$@" >/tmp/convert.dev 2>"$log" &
	SRV=$!
	for _ in $(seq 1 300); do
		DEV=$(head -n 1 /tmp/convert.dev 2>/dev/null)
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
	[ "$rc" -eq 0 ]
}
stop_bg() {
	[ -n "$BG" ] || return 0
	touch /tmp/convert.stop
	wait "$BG"
	BG=''
}
trap 'stop_bg; stop_server >/dev/null 2>&1' EXIT

# Rounds of random 4..64 KiB writes over 32 MiB at depth 32, each verified, until told to
# stop (at least two). Each round's exit status in /tmp/convert-rounds.
bg_rounds() {
	r=0
	while [ "$r" -lt 2 ] || [ ! -e /tmp/convert.stop ]; do
		"$FIO" --thread --filename="$DEV" --ioengine=libaio --direct=1 --name=bg \
			--rw=randwrite --bsrange=4k-64k --offset=$((r % 4 * 32))M --size=32M \
			--iodepth=32 --verify=crc32c --verify_fatal=1 --do_verify=1 \
			>"/tmp/fio-convert-$r.out" 2>&1
		echo "$r $?" >>/tmp/convert-rounds
		r=$((r + 1))
	done
}

# one_case NAME OPTION...: the whole check with graid-ublk given OPTION... (a protocol);
# its PASS/FAIL lines named NAME/...
one_case() {
	case_name=$1
	shift
	# shellcheck disable=SC2086 # the member list
	if ! "$G" create --force --level 1 $M >/tmp/convert-create.out 2>&1; then
		sed 's/^/    /' /tmp/convert-create.out
		echo "FAIL $case_name-create: graidctl create exited non-zero"
		return 1
	fi
	# shellcheck disable=SC2086
	start_server /tmp/convert-srv.log "$@" $M || { echo "FAIL $case_name-start: graid-ublk did not serve $M"; return 1; }
	echo "  $case_name: $DEV: RAID-1 over $M, $(sed -n 's/.* max I\/O, //p' /tmp/convert-srv.log)"

	rm -f /tmp/convert.stop /tmp/convert-rounds
	bg_rounds &
	BG=$!
	sleep 1 # fio's first requests in flight before the first change

	ok=0 want=1
	for level in 5 1 5 1; do
		# shellcheck disable=SC2086
		if "$G" convert --level "$level" $M >/tmp/convert-ctl.out 2>&1; then
			ok=$((ok + 1)) want=$level
		else
			sed 's/^/    convert: /' /tmp/convert-ctl.out | tail -n 5
		fi
		sleep 1
	done
	if [ "$ok" -eq 4 ]; then
		echo "PASS $case_name-convert: four level changes (1 -> 5 -> 1 -> 5 -> 1) through the holder while fio wrote"
	else
		echo "FAIL $case_name-convert: $ok of 4 level changes through the holder succeeded"
	fi

	stop_bg
	n=0 bad=''
	while read -r r st; do
		n=$((n + 1))
		[ "$st" -eq 0 ] || bad="$bad $r"
	done </tmp/convert-rounds
	if [ -z "$bad" ] && [ "$n" -ge 2 ]; then
		echo "PASS $case_name-fio-during: $n rounds of verified writes at depth 32 across the changes, no I/O error"
	else
		for r in $bad; do tail -n 15 "/tmp/fio-convert-$r.out" | sed "s/^/    fio round $r: /"; done
		grep -i 'again\|error' /tmp/convert-srv.log | tail -n 5 | sed 's/^/    srv: /'
		echo "FAIL $case_name-fio-during: rounds that failed:${bad:- none, but only $n ran}"
	fi

	# shellcheck disable=SC2086
	"$G" status --json $M >/tmp/convert-status.out 2>&1
	level=$(sed -n 's/^  "level": \([0-9]*\),*$/\1/p' /tmp/convert-status.out | head -n 1)
	if [ "$level" = "$want" ]; then
		echo "PASS $case_name-level: the served array is a RAID-$level, the last level asked for"
	else
		echo "FAIL $case_name-level: status says RAID-${level:-?}, wanted RAID-$want"
	fi
	# shellcheck disable=SC2086
	if "$G" scrub $M >/tmp/convert-scrub.out 2>&1 && grep -q " 0 mismatches" /tmp/convert-scrub.out; then
		echo "PASS $case_name-scrub: a scrub through the holder finds nothing wrong"
	else
		sed 's/^/    scrub: /' /tmp/convert-scrub.out | tail -n 5
		echo "FAIL $case_name-scrub: graidctl scrub exited non-zero or found mismatches"
	fi
	if stop_server; then echo "PASS $case_name-stop: graid-ublk stopped cleanly"; else
		echo "FAIL $case_name-stop: graid-ublk did not stop cleanly"; fi
}

# The protocols whose loops hold a request differently: the default (one ring: the array
# queue's ring carries the ublk commands too, queue_one.c), a ring of its own (queue.c), and
# where the kernel has them, batched fetches and commits (queue.c with queue_batch.c).
one_case default
one_case two-rings --batch off --one-ring off
[ "${VM_UBLK_BATCH:-}" = 1 ] && one_case batch --zero-copy off
exit 0
