#!/bin/sh
# SPDX-License-Identifier: MIT
# In the test VM: graidctl over NVMe block devices, as an administrator would use it:
# create a RAID-6, status (text and JSON), fail a member, replace it with a fresh drive and
# rebuild, scrub. usage: graidctl.sh PATH/TO/graidctl  (uses NVME0..NVME4 from /init)
G=${1:?usage: graidctl.sh GRAIDCTL}
M="$NVME0 $NVME1 $NVME2 $NVME3"
why=
step() { # step WANT_EXIT DESCRIPTION -- COMMAND...
	want=$1 what=$2
	shift 3
	"$@" > /tmp/g.out 2> /tmp/g.err
	rc=$?
	if [ "$rc" -ne "$want" ]; then
		[ -n "$why" ] || why="$what: exit $rc, expected $want"
		echo "  NOT OK $what: exit $rc, expected $want"
		head -n 12 /tmp/g.out | sed 's/^/    out: /'; sed 's/^/    err: /' /tmp/g.err
		return 1
	fi
	echo "  ok $what"
}
has() { # has PATTERN DESCRIPTION: grep -E in the last command's stdout
	if grep -Eq -- "$1" /tmp/g.out; then echo "  ok $2"; else
		[ -n "$why" ] || why="$2: no /$1/ in the output"
		echo "  NOT OK $2"; head -n 12 /tmp/g.out | sed 's/^/    out: /' 
	fi
}

step 0 "create RAID-6 over four NVMe namespaces" -- "$G" create --force --level 6 --chunk 16K $M
has "created RAID-6 array .*: 4 members, chunk 16 KiB" "create reports the array"
step 0 "status --json of the new array" -- "$G" status --json $M
has '"state": "clean"' "the array is clean"
[ -n "${VM_ALLOW_FILES:-}" ] ||
	has '"identity": "block [0-9]+:[0-9]+"' "members are block devices"
step 0 "status (text)" -- "$G" status $M
cat /tmp/g.out | sed 's/^/    /'
step 0 "fail member 1" -- "$G" fail 1 $M
step 3 "status of the degraded array exits 3" -- "$G" status --json $M
has '"nfailed": 1' "one member failed"
# The fresh drive may carry a superblock of an earlier suite: wipe it (docs/FORMAT.md: the
# superblock is member bytes 0..4095).
dd if=/dev/zero of="$NVME4" bs=4096 count=1 conv=notrunc,fsync 2>/dev/null
step 0 "replace member 1 with a fifth drive, rebuilt" -- "$G" replace 1 "$NVME4" $M
M="$NVME0 $NVME4 $NVME2 $NVME3"
step 0 "status after the rebuild" -- "$G" status --json $M
has '"state": "clean"' "the array is clean again"
step 0 "scrub" -- "$G" scrub $M
step 0 "status with the old member offered too (it is stale and left out)" -- \
	"$G" status --json $M "$NVME1"
has '"nfailed": 0' "no member missing"
if [ -z "$why" ]; then echo "PASS cli"; else echo "FAIL cli: $why"; exit 1; fi
