#!/bin/sh
# SPDX-License-Identifier: MIT
# In the test VM: finding arrays on the host's devices (no DEVICE line: every block device
# is probed). Arrays A (RAID-5) and B (RAID-1) lie on the six NVMe drives, created
# with their members in no order; C (RAID-1) has one member on a drive and one in a file
# that is then removed. `assemble --scan` assembles A and B and leaves C alone, with
# --degraded C too; `incremental`, one device at a time in random order, and then all at
# once, assembles (and "serves") A and B exactly once each and leaves C waiting.
# usage: scan.sh GRAIDCTL   (uses NVME0..NVME5 from /init)
G=${1:?usage: scan.sh GRAIDCTL}
T=/tmp/scan
rm -rf "$T"
mkdir -p "$T"
cd "$T" || exit 1
# A config of ARRAY lines only: no DEVICE line, so every block device and NVMe generic
# device is probed; C has no line (AUTO yes, the default). The state in our own run
# directory; serve= would start a unit: here each start is a line in a file instead.
export GRAID_CONF=$T/graid.conf GRAID_RUN_DIR=$T/run
export GRAID_SERVE_CMD="echo \"\$GRAID_ARRAY_UUID\" >>$T/served"

pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; }
# run NAME CODE COMMAND...: pass when COMMAND exits CODE; its output in NAME.out.
run() {
	r_name=$1 r_want=$2
	shift 2
	"$@" >"$r_name.out" 2>&1
	r_rc=$?
	if [ "$r_rc" -eq "$r_want" ]; then pass "$r_name"; return 0; fi
	fail "$r_name" "exit $r_rc, not $r_want"
	sed "s/^/    $r_name: /" "$r_name.out" | tail -n 20
	return 1
}
count() { grep -c -- "$2" "$1"; }
uuid_of() { sed -n "s/^created RAID-$1 array \([0-9a-f-]*\):.*/\1/p" "$2"; }

# The drives hold earlier suites' arrays: A, B and C are made with --force.
run create-a 0 "$G" create --force -l 5 "$NVME4" "$NVME0" "$NVME2" || exit 1
UA=$(uuid_of 5 create-a.out)
run create-b 0 "$G" create --force -l 1 "$NVME5" "$NVME1" || exit 1
UB=$(uuid_of 1 create-b.out)
run create-c 0 "$G" create --force -l 1 -s 256M "$NVME3" "$T/c1" || exit 1
UC=$(uuid_of 1 create-c.out)
rm -f "$T/c1" # C's role 1 is not on this host any more
[ -n "$UA" ] && [ -n "$UB" ] && [ -n "$UC" ] || { fail uuids "A $UA B $UB C $UC"; exit 1; }
printf 'ARRAY %s name=alpha serve=ublk\nARRAY %s name=beta serve=ublk\n' "$UA" "$UB" >graid.conf

# --- list --scan: every block device probed -----------------------------------------------
run list 0 "$G" list --scan
grep -Eq "^$UA +alpha +raid5 +3/3 .* complete" list.out && grep -Eq "^$UB +beta +raid1 +2/2 .* complete" list.out &&
	pass list-complete || { fail list-complete "A or B not found whole"; cat list.out; }
grep -Eq "^$UC +- +raid1 +1/2 .*incomplete: role 1 missing" list.out && pass list-c-incomplete ||
	{ fail list-c-incomplete "C not listed incomplete"; cat list.out; }

# --- assemble --scan ------------------------------------------------------------------------
run scan 3 "$G" assemble --scan
grep -q "^$UA (alpha): assembled RAID-5: 3 of 3 roles in sync" scan.out && pass scan-a ||
	fail scan-a "A not assembled"
grep -q "^$UB (beta): assembled RAID-1: 2 of 2 roles in sync" scan.out && pass scan-b ||
	fail scan-b "B not assembled"
if grep -q "^$UC.*assembled" scan.out; then fail scan-c "C, lacking role 1, was assembled"; else
	grep -q "^$UC: RAID-1, role 1 missing (1 of 2 found): left alone; --degraded" scan.out &&
		pass scan-c-left || fail scan-c-left "no word on C"
fi
[ "$(wc -l <"$T/served" 2>/dev/null)" = 2 ] && pass scan-served ||
	fail scan-served "services started: $(cat "$T/served" 2>/dev/null | tr '\n' ' ')"
run scan-degraded 3 "$G" assemble --scan --degraded
grep -q "^$UC: assembled RAID-1: 1 of 2 roles in sync" scan-degraded.out && pass scan-c-degraded ||
	fail scan-c-degraded "C not assembled degraded"

# --- incremental, one device at a time in random order, then all at once -------------------
devs="$NVME0 $NVME1 $NVME2 $NVME3 $NVME4 $NVME5"
for round in seq par; do
	rm -rf "$T/run" "$T/served" inc.*
	# A shuffle without shuf: each device's order key from /dev/urandom.
	order=$(for d in $devs; do echo "$(od -An -N2 -tu2 /dev/urandom | tr -d ' ') $d"; done |
		sort -n | cut -d' ' -f2)
	for d in $order; do
		if [ $round = seq ]; then
			"$G" incremental "$d" >>inc.out 2>>inc.err || echo "$d $?" >>inc.rc
		else
			("$G" incremental "$d" >>inc.out 2>>inc.err || echo "$d $?" >>inc.rc) &
		fi
	done
	wait
	na=$(count inc.out "^$UA (alpha): assembled RAID-5") nb=$(count inc.out "^$UB (beta): assembled RAID-1")
	nc=$(count inc.out "^$UC: assembled")
	ns=$(wc -l <"$T/served" 2>/dev/null || echo 0)
	if [ ! -e inc.rc ] && [ "$na" = 1 ] && [ "$nb" = 1 ] && [ "$nc" = 0 ] && [ "$ns" = 2 ]; then
		pass "incremental-$round"
	else
		fail "incremental-$round" "A $na times, B $nb, C $nc, services $ns, exits: $(cat inc.rc 2>/dev/null)"
		sed 's/^/    out: /' inc.out; sed 's/^/    err: /' inc.err
	fi
	grep -q "^$UC: .* recorded (role 0); waiting for role 1" inc.out && pass "incremental-$round-c-waits" ||
		fail "incremental-$round-c-waits" "C's wait not said"
done

# Leave the drives as the next suites expect them: no superblock.
for d in $devs; do dd if=/dev/zero of="$d" bs=1M count=1 conv=fsync 2>/dev/null; done
exit 0
