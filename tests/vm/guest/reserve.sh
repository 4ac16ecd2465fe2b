#!/bin/busybox sh
# SPDX-License-Identifier: MIT
# The reserve suite (tests/vm/suites; issue 19): the drives themselves fence an old owner.
# docs/REMOTE.md ("Reservations") says what each step shows.
#
# usage: reserve.sh RESERVE_VM PR_PROBE
#
# The bed: LIO (target_core_mod) keeps four 32 MiB RAM disks and exports each through two
# tcm_loop targets with different initiator names, so every disk appears twice, as /dev/sdX
# of host A's initiator and /dev/sdY of host B's: one drive, two hosts' paths, and SPC-3
# persistent reservations that tell them apart (the kernel's PR ioctls, as for NVMe). Hosts
# A and B are mount namespaces with machine ids of their own (reservation keys 0xa, 0xb).
# Steps: A writes with GRAID_OPEN_RESERVE and B's path is refused; a third key preempts one
# drive and A stops as a foreign handle (EBADE, no member failed); A cannot open while a key
# nobody recorded holds a drive; then A writes again, is stopped (SIGSTOP), B takes the array
# over (preempting A's key on every drive), A's own raw write is refused by the target, A
# resumes and stops foreign, and B verifies every block A flushed and scrubs clean.
set -u
RV=${1:?usage: reserve.sh RESERVE_VM PR_PROBE}
P=${2:?}
T=/sys/kernel/config/target
W=/tmp/rs
# Notices too: the takeover names each drive it preempted.
export GRAID_LOG_LEVEL=5
mkdir -p "$W"
failed=0
pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; failed=1; }
log_tail() { [ -f "$1" ] && tail -n "${2:-6}" "$1" | sed 's/^/    /'; }
# Whatever is still running must not outlive the suite (the runner waits for its output).
cleanup() {
	local p
	for p in ${WPID:-} ${BPID:-} ${FPID:-}; do
		kill -CONT $p 2>/dev/null
		kill -9 $p 2>/dev/null
	done
}
die() { echo "FAIL reserve-bed: $*"; cleanup; exit 1; }

# ---- the drives: four backstores, two initiators ------------------------------------------
grep -q " /sys/kernel/config configfs" /proc/mounts || mount -t configfs none /sys/kernel/config
[ -d $T ] || die "no $T (target_core_mod)"
# The kernel's REGISTER asks for persistence through power loss (APTPL): LIO keeps that under
# its dbroot, which must exist.
mkdir -p /tmp/lio/pr
echo /tmp/lio >$T/dbroot || die "cannot set $T/dbroot"
for k in 1 2 3 4; do
	mkdir -p $T/core/rd_mcp_0/disk$k || die "backstore $k"
	echo rd_pages=8192 >$T/core/rd_mcp_0/disk$k/control
	echo 1 >$T/core/rd_mcp_0/disk$k/enable || die "backstore $k not enabled"
done
for h in 1 2; do
	t=$T/loopback/naa.50014050000000a$h/tpgt_1
	mkdir -p $t || die "target $h"
	# The nexus first: each LUN's creation scans the SCSI host, which needs it.
	echo naa.50014050000000b$h >$t/nexus || die "nexus $h"
	for k in 1 2 3 4; do
		mkdir -p $t/lun/lun_$((k - 1)) || die "lun $h/$k"
		ln -s $T/core/rd_mcp_0/disk$k $t/lun/lun_$((k - 1))/disk$k || die "lun $h/$k link"
	done
done
for _ in $(seq 1 100); do
	[ "$(ls /sys/block | grep -c '^sd')" -ge 8 ] && break
	sleep 0.2
done
# H:C:T:L of each disk: the lower SCSI host is A's initiator (made first), L the drive.
hosts=$(for d in $(ls /sys/block | grep '^sd'); do
	basename "$(readlink -f /sys/block/$d/device)" | cut -d: -f1; done | sort -n | uniq)
set -- $hosts
[ $# -eq 2 ] || die "two SCSI hosts expected, got '$hosts'"
HA=$1 HB=$2
disk() { # disk HOST LUN
	local d a
	for d in $(ls /sys/block | grep '^sd'); do
		a=$(basename "$(readlink -f /sys/block/$d/device)")
		[ "$(echo "$a" | cut -d: -f1)" = "$1" ] && [ "$(echo "$a" | cut -d: -f4)" = "$2" ] &&
			{ echo /dev/$d; return; }
	done
}
A_DEVS="" B_DEVS=""
for l in 0 1 2 3; do
	a=$(disk $HA $l) b=$(disk $HB $l)
	[ -b "$a" ] && [ -b "$b" ] || die "drive $l: no disk of both hosts ($a, $b)"
	A_DEVS="$A_DEVS $a" B_DEVS="$B_DEVS $b"
done
set -- $A_DEVS
A1=$1
set -- $B_DEVS
B1=$1
echo "bed: host A's paths$A_DEVS, host B's$B_DEVS"

# ---- the two hosts: a machine id each (their reservation keys) ----------------------------
mkdir -p /etc
: >>/etc/machine-id
printf '%016x6c69626772616964\n' 10 >"$W/mid-A" # key 0x000000000000000a
printf '%016x6c69626772616964\n' 11 >"$W/mid-B" # key 0x000000000000000b
mkdir -p /run/lock
# on_host H CMD...: CMD in host H's mount namespace, with its own machine id and its own
# /run/lock (the host-wide lock on the array's UUID); exec: its pid is the one $! names
on_host() {
	local h=$1
	shift
	unshare -m sh -c 'mount -t tmpfs tmpfs /run/lock && mount --bind "$0" /etc/machine-id &&
		exec "$@"' "$W/mid-$h" "$@"
}
# probe WANT NAME ARGS...: pr_probe ARGS must succeed (ok) or be refused with EBADE (ebade)
probe() {
	local want=$1 name=$2 out rc
	shift 2
	out=$("$P" "$@" 2>&1)
	rc=$?
	if [ $want = ok ] && [ $rc -eq 0 ]; then
		pass "$name: $out"
	elif [ $want = ebade ] && [ $rc -ne 0 ] && echo "$out" | grep -q 'errno=52'; then
		pass "$name: $out"
	else
		fail "$name: want $want, got rc $rc: $out"
	fi
}
flushed() { sed -n 's/^flushed //p' "$W/$1.status" 2>/dev/null; }
# start_writer TAG: host A writes with GRAID_OPEN_RESERVE; 0 once 16 blocks are flushed
start_writer() {
	on_host A "$RV" writer "$W/$1.status" --reserve $A_DEVS >"$W/$1.out" 2>"$W/$1.err" &
	WPID=$!
	for _ in $(seq 1 300); do
		[ "$(flushed "$1")" -ge 16 ] 2>/dev/null && return 0
		kill -0 $WPID 2>/dev/null || break
		sleep 0.2
	done
	fail "$1-writes: A's writer did not flush 16 blocks"
	log_tail "$W/$1.out"
	log_tail "$W/$1.err"
	return 1
}
# wait_exit PID SECONDS: its exit status, or 124 when it is still running then
wait_exit() {
	local i=0
	while kill -0 "$1" 2>/dev/null; do
		[ $i -ge $(($2 * 5)) ] && return 124
		sleep 0.2
		i=$((i + 1))
	done
	wait "$1"
}

on_host A "$RV" create $A_DEVS >"$W/create.out" 2>&1 || { log_tail "$W/create.out"; die "create"; }

# ---- 1. A holds Write Exclusive: B's path reads, its writes are refused ---------------------
start_writer a1 || { cleanup; exit 1; }
probe ebade b-write-refused-while-a-holds "$B1" write
probe ok b-reads-while-a-holds "$B1" read

# ---- 2. another key takes one drive: A stops as a foreign handle, nothing failed -----------
probe ok other-registers "$B1" register 0x77
probe ok other-preempts-a "$B1" preempt 0x77 0xa
wait_exit $WPID 30
rc=$?
if [ $rc -eq 0 ] && grep -q 'error -52' "$W/a1.out"; then
	pass "a-stops-on-conflict: $(head -n 2 "$W/a1.out" | tail -n 1)"
else
	fail "a-stops-on-conflict: writer exit $rc"
	log_tail "$W/a1.out"
	log_tail "$W/a1.err"
fi
# The member_fail message ("member N (PATH) failed: ...", "; array continues degraded" only
# where the level does without it).
grep -Eq 'member [0-9]+ \(.*\) failed: ' "$W/a1.err" &&
	fail "a-no-member-failed: $(grep -E 'member [0-9]+ \(.*\) failed: ' "$W/a1.err" | head -n 1)" ||
	pass "a-no-member-failed"

# ---- 3. a drive held by a key no owner record names: the open is refused ------------------
on_host A "$RV" writer "$W/x.status" --reserve $A_DEVS >"$W/x.out" 2>"$W/x.err"
rc=$?
if [ $rc -eq 1 ] && grep -q 'none of the array.s owner records' "$W/x.err"; then
	pass "unknown-holder-refused: $(cat "$W/x.out")"
else
	fail "unknown-holder-refused: exit $rc"
	log_tail "$W/x.err"
fi
probe ok other-clears "$B1" clear 0x77

# ---- 4. B takes the array over from a stopped A --------------------------------------------
start_writer a2 || { cleanup; exit 1; }
kill -STOP $WPID
F=$(flushed a2)
rm -f "$W/b.fifo"
mkfifo "$W/b.fifo"
on_host B "$RV" hold "$W/b.fifo" --takeover $B_DEVS >"$W/b.out" 2>"$W/b.err" &
BPID=$!
for _ in $(seq 1 300); do
	grep -q '^held' "$W/b.out" && break
	kill -0 $BPID 2>/dev/null || break
	sleep 0.2
done
if grep -q '^held' "$W/b.out"; then
	n=$(grep -c "reservation taken from the old owner's key 0x000000000000000a" "$W/b.err")
	[ "$n" -eq 4 ] && pass "b-preempts-a: on 4 drives" ||
		{ fail "b-preempts-a: preempted on $n drives of 4"; log_tail "$W/b.err"; }
else
	fail "b-takes-over: B's open did not complete"
	log_tail "$W/b.out"
	log_tail "$W/b.err"
fi
probe ebade a-refused-by-target-after-takeover "$A1" write
kill -CONT $WPID
wait_exit $WPID 30
rc=$?
F=$(flushed a2)
if [ $rc -eq 0 ]; then
	pass "a-foreign-after-takeover: $(grep '^stopped' "$W/a2.out")"
else
	fail "a-foreign-after-takeover: writer exit $rc"
	log_tail "$W/a2.out"
	log_tail "$W/a2.err"
fi
echo "$F" >"$W/b.fifo" &
FPID=$!
wait_exit $BPID 120
grep -q "^verify: $F flushed blocks, 0 wrong" "$W/b.out" &&
	pass "b-verifies-a-flushed: $F blocks" ||
	{ fail "b-verifies-a-flushed"; log_tail "$W/b.out"; }
grep -q '^scrub: done, [1-9][0-9]* stripes, 0 mismatches' "$W/b.out" &&
	pass "b-scrub-clean: $(grep '^scrub' "$W/b.out")" ||
	{ fail "b-scrub-clean"; log_tail "$W/b.out"; log_tail "$W/b.err"; }
grep -q '^close: ok' "$W/b.out" && pass "b-closes" || fail "b-closes: $(grep '^close' "$W/b.out")"
cleanup
exit $failed
