#!/bin/bash
# SPDX-License-Identifier: MIT
# Finding and starting arrays: graid.conf, assemble --scan, list --scan, incremental, on files.
# usage: test_graidctl_scan.sh PATH/TO/graidctl
set -u
# The shared helpers: counts, ok, bad, expect, has, hasnt, json, check, workdir (lib.sh).
. "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"

G=${1:?usage: test_graidctl_scan.sh PATH/TO/graidctl}
[ -x "$G" ] || { echo "SKIP: $G is not an executable"; exit 77; }
G=$(readlink -f "$G")
PY=$(command -v python3) || { echo "SKIP: python3 is needed to check the JSON"; exit 77; }

T=$(mktemp -d "${TMPDIR:-/tmp}/graidctl-scan.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
# Nothing of the host's: no /etc/graid/graid.conf, no /run/graid.
export GRAID_CONF=$T/none.conf GRAID_RUN_DIR=$T/run
# serve= starts a service through this instead of systemctl: one line per start.
export GRAID_SERVE_CMD="echo \"\$GRAID_ARRAY_UUID \$GRAID_SERVE\" >>$T/served"

# events FILE [CONF]: the event count of a member's superblock, as list --scan prints it
# (CONF: the config whose DEVICE lines find it; probe.conf's by default).
events() {
	"$G" list --scan --config "${2:-$T/probe.conf}" --json 2>/dev/null | "$PY" -c "
import json,sys
for a in json.load(sys.stdin)['arrays']:
    for d in a['devices']:
        if d['path'] == '$T/$1': print(d['events'])"
}
count() { grep -Ec -- "$2" "$1"; }

# --- arrays: A (RAID-6) and B (RAID-1) on d0..d5 in no order; C (RAID-5) on c0..c2 -------
expect 0 "create A, RAID-6 on d3 d0 d5 d1" -- "$G" create -l 6 --file-size 8M d3 d0 d5 d1
UA=$(sed -n 's/^created RAID-6 array \([0-9a-f-]*\):.*/\1/p' out)
expect 0 "create B, RAID-1 on d4 d2" -- "$G" create -l 1 --file-size 8M d4 d2
UB=$(sed -n 's/^created RAID-1 array \([0-9a-f-]*\):.*/\1/p' out)
expect 0 "create C, RAID-5 on c0 c1 c2" -- "$G" create -l 5 --file-size 8M c0 c1 c2
UC=$(sed -n 's/^created RAID-5 array \([0-9a-f-]*\):.*/\1/p' out)
[ -n "$UA" ] && [ -n "$UB" ] && [ -n "$UC" ] || { echo "Bail out! no UUIDs"; exit 1; }
mkdir away && mv c1 away/ # C's role 1 is not on this host
head -c 1M /dev/zero >zero
echo "DEVICE $T/d* $T/c* $T/away/*" >probe.conf

cat >graid.conf <<CONF
# two arrays found by DEVICE, the third by its members
DEVICE $T/d*   # d0..d5

ARRAY $UA name=alpha serve=ublk
ARRAY $UC name=third members=$T/c0,$T/c1,$T/c2
CONF

# --- help -------------------------------------------------------------------------------
expect 0 "assemble --help" -- "$G" assemble --help
has out "--scan" "assemble --help describes --scan"
expect 0 "incremental --help" -- "$G" incremental --help
has out "^usage: graidctl incremental" "incremental --help starts with its usage line"
expect 2 "assemble --scan with members is a usage error" -- "$G" assemble --scan d0
expect 2 "incremental without a device" -- "$G" incremental

# --- list --scan -----------------------------------------------------------------------
expect 0 "list --scan" -- "$G" list --scan --config graid.conf
has out "^$UA +alpha +raid6 +4/4 .* complete" "A: 4 of 4 found, complete"
has out "^$UB +- +raid1 +2/2 .* complete" "B: found with no ARRAY line (AUTO yes)"
has out "^$UC +third +raid5 +2/3 .*incomplete: role 1 missing" "C: role 1 missing"
expect 0 "list --scan --json" -- "$G" list --scan --json --config graid.conf
json "JSON: three arrays, A and B complete, C lacks role 1" "
{a['uuid']: (a['found'], a['nmembers'], a['complete'], a['missing_roles']) for a in d['arrays']}
== {'$UA': (4, 4, True, []), '$UB': (2, 2, True, []), '$UC': (2, 3, False, [1])}"
json "JSON: A's devices are d0 d1 d3 d5, roles as created" "
sorted((x['path'].rsplit('/',1)[1], x['role']) for a in d['arrays'] if a['uuid']=='$UA'
for x in a['devices']) == [('d0',1),('d1',3),('d3',0),('d5',2)]"
expect 0 "list --scan --members-of C" -- "$G" list --scan --config graid.conf --members-of "$UC"
[ "$(sort out | tr '\n' ' ')" = "$T/c0 $T/c2 " ] && ok "--members-of prints C's two paths" ||
	bad "--members-of: $(cat out)"
has err "role 1 not found" "--members-of says the role not found"

# --- bad config lines: named by file and line, and nothing assembled -------------------
ea=$(events d0)
badconf() { # badconf WHAT LINE-TEXT PATTERN
	printf '# a comment\nDEVICE %s/d*\n%s\n' "$T" "$2" >bad.conf
	expect 1 "bad config: $1" -- "$G" assemble --scan --config bad.conf
	has err "bad.conf:3: $3" "the error names bad.conf, line 3, and $1"
	hasnt out "assembled" "a bad config assembles nothing ($1)"
}
badconf "an unknown keyword" "ARRAYS $UA" "unknown keyword 'ARRAYS'"
badconf "a UUID that is not one" "ARRAY 1234-abcd name=x" "ARRAY: '1234-abcd' is not a UUID"
badconf "ARRAY without a UUID" "ARRAY" "ARRAY needs the array's UUID"
badconf "an unknown field" "ARRAY $UA level=6" "ARRAY: unknown field 'level=6'"
badconf "serve= of no known kind" "ARRAY $UA serve=iscsi" "serve=iscsi: 'ublk', 'nbdkit' or 'none'"
badconf "a relative members= path" "ARRAY $UA members=d0,d1" "members=: 'd0' is not an absolute path"
badconf "an empty members= entry" "ARRAY $UA members=$T/d0,,$T/d1" "members=$T/d0,,$T/d1: an empty path between commas"
badconf "a relative DEVICE" "DEVICE d*" "DEVICE: 'd\\*' is neither an absolute path"
badconf "AUTO with no word" "AUTO" "AUTO takes one word"
printf 'ARRAY %s\n\nARRAY %s name=again\n' "$UA" "$UA" >bad.conf
expect 1 "bad config: an array listed twice" -- "$G" assemble --scan --config bad.conf
has err "bad.conf:3: ARRAY $UA is listed twice \(first at line 1\)" "the duplicate's lines are named"
printf 'ARRAY %s serve=frob\n' "$UA" >bad.conf
GRAID_CONF=$T/bad.conf expect 1 "GRAID_CONF names the config" -- "$G" list --scan
has err "$T/bad.conf:1: serve=frob" "the file from GRAID_CONF is the one read"
expect 1 "--config of a file that does not exist" -- "$G" assemble --scan --config nosuch.conf
has err "nosuch.conf: No such file or directory" "the missing config is named"
[ "$(events d0)" = "$ea" ] && ok "no bad config touched A's members (events $ea)" ||
	bad "A's events went from $ea to $(events d0)"

# --- assemble --scan --------------------------------------------------------------------
ea=$(events d0) eb=$(events d4) ec=$(events c0)
expect 3 "assemble --scan: A and B assembled, C left (exit 3)" -- "$G" assemble --scan --config graid.conf
has out "^$UA \(alpha\): assembled RAID-6: 4 of 4 roles in sync" "A assembled whole"
has out "^$UB: assembled RAID-1: 2 of 2 roles in sync" "B assembled whole"
has out "^$UC \(third\): RAID-5, role 1 missing \(2 of 3 found\): left alone; --degraded" \
	"C left alone, its missing role named"
[ "$(events d0)" -gt "$ea" ] && [ "$(events d4)" -gt "$eb" ] && ok "A and B were opened (events up)" ||
	bad "A's or B's events did not move: $ea -> $(events d0), $eb -> $(events d4)"
[ "$(events c0)" = "$ec" ] && ok "C was not touched (events $ec)" || bad "C's events moved: $ec -> $(events c0)"
[ "$(cat served 2>/dev/null)" = "$UA ublk" ] && ok "A's serve=ublk service started, only A's" ||
	bad "services started: $(cat served 2>/dev/null)"
rm -f served

printf 'AUTO no\nDEVICE %s/d*\nARRAY %s\n' "$T" "$UA" >auto.conf
eb=$(events d4)
expect 0 "AUTO no: only A, which is listed" -- "$G" assemble --scan --config auto.conf
has out "^$UB: no ARRAY line in auto.conf, and AUTO is no: left alone" "B left alone, said why"
[ "$(events d4)" = "$eb" ] && ok "AUTO no: B not touched" || bad "B's events moved: $eb -> $(events d4)"

# --- incremental, one device at a time in random order ---------------------------------
inc_all() { # the nine paths (c1 away), in random order; $1: "seq" or "par"
	local f
	# zero: no superblock; graid.conf: too short for one. Both are ignored.
	for f in $(printf '%s\n' d0 d1 d2 d3 d4 d5 c0 c2 zero graid.conf | shuf); do
		if [ "$1" = seq ]; then
			"$G" incremental --config graid.conf "$T/$f" >>inc.out 2>>inc.err || echo "$f $?" >>inc.rc
		else
			("$G" incremental --config graid.conf "$T/$f" >>inc.out 2>>inc.err || echo "$f $?" >>inc.rc) &
		fi
	done
	wait
}
rm -rf run inc.*
inc_all seq
[ ! -e inc.rc ] && ok "incremental, in order: every call exits 0" || bad "incremental exits: $(cat inc.rc)"
[ "$(count inc.out "^$UA \(alpha\): assembled RAID-6: 4 of 4")" = 1 ] && ok "A assembled once" ||
	bad "A assembled $(count inc.out "$UA.*assembled RAID") times"; 
[ "$(count inc.out "^$UB: assembled RAID-1: 2 of 2")" = 1 ] && ok "B assembled once" ||
	bad "B assembled $(count inc.out "$UB.*assembled RAID") times"
hasnt inc.out "$UC.*assembled RAID" "C, lacking role 1, not assembled"
has inc.out "$UC \(third\): .* recorded \(role [02]\); waiting for role 1$" "C waits for role 1"
[ "$(cat served)" = "$UA ublk" ] && ok "A's service started once" || bad "services: $(cat served)"
grep -qx "assembled 1" "run/incremental/$UA" && ok "A's state file: assembled 1" ||
	bad "A's state: $(cat "run/incremental/$UA")"
ea=$(events d3)
expect 0 "incremental again for a member of A" -- "$G" incremental --config graid.conf "$T/d3"
has out "^$UA: $T/d3 recorded; the array was assembled already" "a later call says A is assembled"
[ "$(events d3)" = "$ea" ] && [ "$(wc -l <served)" = 1 ] && ok "and opens nothing, starts nothing" ||
	bad "a later call for A changed it: events $ea -> $(events d3), served $(wc -l <served)"
# udev's remove event: the device leaves C's record, and is judged afresh when it comes back.
grep -qx "device $T/c2" "run/incremental/$UC" || bad "c2 not in C's record before --remove"
expect 0 "incremental --remove c2" -- "$G" incremental --remove "$T/c2"
has out "^$UC: $T/c2 removed from its record$" "--remove says which record it left"
grep -qx "device $T/c2" "run/incremental/$UC" && bad "c2 still in C's record" ||
	ok "c2 no longer in C's record"
grep -qx "device $T/c0" "run/incremental/$UC" && ok "c0 still in it" || bad "c0 lost from C's record"
expect 0 "incremental --remove of a device nobody recorded" -- "$G" incremental --remove "$T/none"
has out "not recorded: nothing to do" "it says there was nothing to do"
expect 0 "incremental c2 again (it came back)" -- "$G" incremental --config graid.conf "$T/c2"
has out "^$UC \(third\): .* recorded \(role [02]\); waiting for role 1$" "C recorded it again, waits for role 1"
mv away/c1 c1
expect 0 "incremental c1: C's last member" -- "$G" incremental --config graid.conf "$T/c1"
has out "^$UC \(third\): assembled RAID-5: 3 of 3 roles in sync" "C assembled when c1 came"
mv c1 away/
# Every device of B gone (udev's remove events): its record starts afresh, and B is
# assembled again when its devices come back.
expect 0 "incremental --remove d4 (B)" -- "$G" incremental --remove "$T/d4"
grep -qx "assembled 1" "run/incremental/$UB" && ok "B's record still says assembled (d2 is there)" ||
	bad "B's record: $(cat "run/incremental/$UB")"
expect 0 "incremental --remove d2 (B's last)" -- "$G" incremental --remove "$T/d2"
grep -q "assembled" "run/incremental/$UB" && bad "B's empty record still says assembled" ||
	ok "B's record, empty, starts afresh"
expect 0 "incremental d4 (back)" -- "$G" incremental --config graid.conf "$T/d4"
expect 0 "incremental d2 (back): B assembled again" -- "$G" incremental --config graid.conf "$T/d2"
has out "^$UB: assembled RAID-1: 2 of 2 roles in sync" "B assembled again once its devices came back"

for round in 1 2 3 4 5; do
	rm -rf run inc.* served
	inc_all par
	na=$(count inc.out "^$UA \(alpha\): assembled RAID-6") nb=$(count inc.out "^$UB: assembled RAID-1")
	if [ ! -e inc.rc ] && [ "$na" = 1 ] && [ "$nb" = 1 ] && [ "$(cat served)" = "$UA ublk" ]; then
		ok "incremental, all at once (round $round): A and B each assembled and served once"
	else
		bad "round $round: A $na times, B $nb times, exits: $(cat inc.rc 2>/dev/null), served: $(cat served 2>/dev/null)"
		sed 's/^/     out: /' inc.out; sed 's/^/     err: /' inc.err
	fi
done

# --- --degraded ---------------------------------------------------------------------------
ec=$(events c0)
expect 3 "assemble --scan --degraded: C too, degraded (exit 3)" -- "$G" assemble --scan --degraded --config graid.conf
has out "^$UC \(third\): assembled RAID-5: 2 of 3 roles in sync" "C assembled without role 1"
[ "$(events c0)" -gt "$ec" ] && ok "C was opened (events up)" || bad "C's events did not move"

# --- an assembly that fails is not retried on the same devices ------------------------------
# Each failed writable open closes every member written-to in udev's eyes (IN_CLOSE_WRITE), so
# udev's watch sends a change event per member, and the rule runs incremental again: tried on
# and on, it would loop. The array here belongs to another host (made under another machine
# id), so its open fails with EBUSY every time. Needs root (a mount namespace).
if [ "$(id -u)" = 0 ] && command -v unshare >/dev/null &&
   echo 0123456789abcdef0123456789abcdef >other-mid &&
   unshare -m sh -c "mount --bind '$T/other-mid' /etc/machine-id &&
	'$G' create -l 1 -s 17M '$T/h0' '$T/h1' >/dev/null 2>&1 &&
	'$G' assemble '$T/h0' '$T/h1' >/dev/null 2>&1"; then
	printf 'DEVICE %s/h0 %s/h1\n' "$T" "$T" >other.conf
	rm -rf run
	expect 0 "incremental h0 (another host's array)" -- "$G" incremental --config other.conf "$T/h0"
	expect 1 "incremental h1: the assembly fails (another host's)" -- \
		"$G" incremental --config other.conf "$T/h1"
	grep -q '^failed [0-9a-f]\{16\}$' run/incremental/* && ok "the state records the failed attempt" ||
		bad "no failed attempt recorded: $(cat run/incremental/*)"
	ev=$(events h0 other.conf)
	[ -n "$ev" ] || bad "h0's event count not read"
	expect 1 "incremental h0 again, as udev's change event would" -- \
		"$G" incremental --config other.conf "$T/h0"
	has out "failed before on these same devices: not tried again" "it is not tried again"
	hasnt err "belongs to another host" "and no open was tried (no refusal this time)"
	[ "$(events h0 other.conf)" = "$ev" ] && ok "h0's superblock untouched" || bad "h0's events moved"
	# A changed member (here: the superblocks rewritten by the other host) is tried again.
	unshare -m sh -c "mount --bind '$T/other-mid' /etc/machine-id &&
		'$G' assemble '$T/h0' '$T/h1' >/dev/null 2>&1"
	expect 1 "after the other host wrote them: tried again, and refused again" -- \
		"$G" incremental --config other.conf "$T/h0"
	has err "another host" "this time the open ran and was refused"
else
	echo "# not root, or no unshare: a failed incremental assembly not tested"
fi

# --- an assembly whose service fails to start is not retried either ------------------------
# The open and close ran (events up), then serve= failed: the same devices, changed only by
# that attempt, must not make udev's next change event assemble it again, and again.
expect 0 "create S, RAID-1 on s0 s1" -- "$G" create -l 1 --file-size 8M s0 s1
US=$(sed -n 's/^created RAID-1 array \([0-9a-f-]*\):.*/\1/p' out)
printf 'DEVICE %s/s0 %s/s1\nARRAY %s serve=ublk\n' "$T" "$T" "$US" >serve.conf
rm -rf run
expect 0 "incremental s0" -- "$G" incremental --config serve.conf "$T/s0"
expect 1 "incremental s1: assembled, its service fails to start" -- \
	env GRAID_SERVE_CMD="exit 5" "$G" incremental --config serve.conf "$T/s1"
ev=$(events s0 serve.conf)
expect 1 "incremental s0 again, as the close's change event would" -- \
	env GRAID_SERVE_CMD="exit 5" "$G" incremental --config serve.conf "$T/s0"
[ "$(events s0 serve.conf)" = "$ev" ] && ok "not assembled again (s0's events stay)" ||
	bad "assembled again on the devices only its own attempt changed: a loop with udev"

# --- block devices: loop devices where this host lets us make them (root, loop driver) ----
LOOPS=
trap 'for l in $LOOPS; do losetup -d "$l"; done; rm -rf "$T"' EXIT
if [ "$(id -u)" = 0 ] && command -v losetup >/dev/null &&
   "$G" create -l 1 --file-size 8M l0 l1 >out 2>&1 &&
   l0=$(losetup --find --show l0 2>/dev/null) && LOOPS=$l0 &&
   l1=$(losetup --find --show l1 2>/dev/null) && LOOPS="$l0 $l1"; then
	UL=$(sed -n 's/^created RAID-1 array \([0-9a-f-]*\):.*/\1/p' out)
	# The sweep of /sys/class/block only looks (other arrays of this host may be there).
	printf 'DEVICE partitions\nAUTO no\n' >loop.conf
	expect 0 "list --scan, DEVICE partitions" -- "$G" list --scan --json --config loop.conf
	json "the sweep finds the array on $l0 and $l1" "
sorted(x['path'] for a in d['arrays'] if a['uuid']=='$UL' for x in a['devices'])
== sorted(['$l0', '$l1'])"
	printf 'DEVICE %s %s\n' "$l1" "$l0" >loop.conf
	expect 0 "assemble --scan on two loop devices" -- "$G" assemble --scan --config loop.conf
	has out "^$UL: assembled RAID-1: 2 of 2 roles in sync" "the loop devices' array assembled"
	rm -rf run served
	"$G" incremental --config loop.conf "$l1" >inc.out 2>&1 && "$G" incremental --config loop.conf "$l0" >>inc.out 2>&1
	has inc.out "^$UL: assembled RAID-1: 2 of 2" "incremental on the loop devices assembles it"
else
	echo "# no loop devices here (not root, or no loop driver): block devices not tested"
fi

echo "# $pass passed, $fail failed"
[ "$fail" -eq 0 ]
