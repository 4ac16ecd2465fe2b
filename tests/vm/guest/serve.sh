#!/bin/sh
# SPDX-License-Identifier: MIT
# In the test VM: a served array managed through its holder. graid-ublk serves a RAID-6
# over five NVMe drives with its control endpoint (/run/graid/UUID.ctl, the default), fio
# writes and verifies in rounds in the background, and meanwhile graidctl, with the same
# commands as on an unserved array, goes through the holder: status --json (live counters),
# fail a member, replace it with the sixth drive (the rebuild's progress shown), add a hot
# spare (the failed drive, wiped, as an operator re-adds a drive found good), scrub. Every
# fio round must end without an I/O error and verify; data written before the failure reads
# back after the rebuild. Then the holder is killed (kill -9) in the middle of a request
# (a rebuild onto the spare, slowed to 1 MiB/s, that graidctl follows): graidctl must end
# with an error, not hang; a new server replaces the dead one's socket and serves again; the
# rebuild left resumes and ends, and a scrub finds nothing wrong.
# usage: serve.sh GRAID_UBLK GRAIDCTL FIO   (uses NVME0..NVME5 from /init)
U=${1:?usage: serve.sh GRAID_UBLK GRAIDCTL FIO}
G=${2:?usage: serve.sh GRAID_UBLK GRAIDCTL FIO}
FIO=${3:?usage: serve.sh GRAID_UBLK GRAIDCTL FIO}
. /vm/fio-lib.sh

M="$NVME0 $NVME1 $NVME2 $NVME3 $NVME4"
# After the replace: role 1 on the sixth drive.
M2="$NVME0 $NVME5 $NVME2 $NVME3 $NVME4"
SRV='' DEV='' BG=''

# start_server LOG MEMBER...: serve; DEV is the /dev/ublkbN it prints, once it exists.
start_server() {
	log=$1
	shift
	rm -f /tmp/serve.dev
	"$U" --rebuild-busy-rate 32M "$@" >/tmp/serve.dev 2>"$log" &
	SRV=$!
	for _ in $(seq 1 300); do
		DEV=$(head -n 1 /tmp/serve.dev 2>/dev/null)
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
	touch /tmp/serve.stop
	wait "$BG"
	BG=''
}
trap 'stop_bg; stop_server >/dev/null 2>&1' EXIT

# ctl NAME COMMAND...: graidctl's output in /tmp/ctl-NAME.out (both streams); its exit status.
ctl() {
	c_name=$1
	shift
	"$@" >"/tmp/ctl-$c_name.out" 2>&1
	c_rc=$?
	sed "s/^/    $c_name: /" "/tmp/ctl-$c_name.out" | tail -n 15
	return $c_rc
}
# role_is FILE ROLE: "STATE PATH" of role ROLE in the members of a status --json in FILE.
role_is() {
	awk -v r="$2" '/"given"/ { exit }
		/"role": / { gsub(/[",]/, ""); cur = $2 }
		cur == r && /"state": / { gsub(/[",]/, ""); st = $2 }
		cur == r && /"path": / { gsub(/[",]/, ""); p = $2 }
		END { print st, p }' "$1"
}
# result NAME RC WANT TEXT: PASS when RC is WANT; FAIL naming what came instead.
result() {
	if [ "$2" -eq "$3" ]; then echo "PASS $1: $4"; else
		echo "FAIL $1: $4: graidctl exited $2, wanted $3"; fi
}

# The background writer: rounds of random writes of 4..128 KiB over 32 MiB, each verified
# with crc32c (verify_fatal), at four offsets in turn in [64M, 192M), until told to stop;
# at least two rounds. Each round's exit status in /tmp/serve-rounds.
bg_rounds() {
	r=0
	while [ "$r" -lt 2 ] || [ ! -e /tmp/serve.stop ]; do
		"$FIO" --thread --filename="$DEV" --ioengine=libaio --direct=1 --name=bg \
			--rw=randwrite --bsrange=4k-128k --offset=$((64 + r % 4 * 32))M --size=32M \
			--iodepth=8 --verify=crc32c --verify_fatal=1 --do_verify=1 \
			>"/tmp/fio-bg-$r.out" 2>&1
		echo "$r $?" >>/tmp/serve-rounds
		r=$((r + 1))
	done
}
# Region A, [0, 32M): written before the failure, read back after the rebuild.
region_a() { # region_a EXTRA...
	fio_run "region-a" --filename="$DEV" --ioengine=libaio --direct=1 --verify=crc32c \
		--verify_fatal=1 --name=a --rw=randwrite --bs=64k --offset=0 --size=32M \
		--iodepth=8 "$@"
}

# --force: earlier suites leave their superblocks on these drives; the sixth is wiped so
# that it is a blank drive to the replace (docs/FORMAT.md: the superblock is bytes 0..4095).
dd if=/dev/zero of="$NVME5" bs=4096 count=1 conv=notrunc,fsync 2>/dev/null
if ! "$G" create --force --level 6 --chunk 64K $M >/tmp/serve-create.out 2>&1; then
	sed 's/^/    /' /tmp/serve-create.out
	echo "FAIL create: graidctl create exited non-zero"
	exit 1
fi
UUID=$(sed -n 's/^created RAID-6 array \([0-9a-f-]*\):.*/\1/p' /tmp/serve-create.out)
CTL=${GRAID_RUN_DIR:-/run/graid}/$UUID.ctl

# ---- the endpoint, served by default ----------------------------------------------------
if ! start_server /tmp/serve1.log $M; then
	echo "FAIL start: graid-ublk did not serve $M"
	exit 1
fi
sed 's/^/    srv: /' /tmp/serve1.log
mode=$(ls -l "$CTL" 2>/dev/null | cut -c1-10)
if grep -qF "control endpoint $CTL" /tmp/serve1.log && [ -S "$CTL" ] && [ "$mode" = srw------- ]; then
	echo "PASS endpoint: $DEV served, control socket $CTL (mode 0600), said at start"
else
	echo "FAIL endpoint: socket $CTL: '${mode:-missing}'; the server said: $(grep control /tmp/serve1.log)"
fi
if region_a --do_verify=1; then echo "PASS before: 32 MiB written and verified"; else
	echo "FAIL before: fio could not write region A"; fi
rm -f /tmp/serve.stop /tmp/serve-rounds
bg_rounds &
BG=$!

# ---- through the holder, while fio writes -----------------------------------------------
ctl status "$G" status --json $M
rc=$?
# A look from outside counts only its own I/O (none written); the holder's counters carry
# fio's writes.
if [ "$rc" -eq 0 ] && grep -Eq '"writes": [1-9]' /tmp/ctl-status.out; then
	echo "PASS status-live: graidctl status --json gives the holder's live state (members' writes counted)"
else
	echo "FAIL status-live: exit $rc; no member with writes counted (a look, not the holder's state)"
fi
ctl fail "$G" fail 1 $M
result fail $? 0 "graidctl fail 1 through the holder"
ctl degraded "$G" status --json $M
rc=$?
r1=$(role_is /tmp/ctl-degraded.out 1)
if [ "$rc" -eq 3 ] && grep -q '"nfailed": 1' /tmp/ctl-degraded.out && [ "${r1%% *}" = failed ]; then
	echo "PASS fail-seen: status says role 1 failed (exit 3)"
else
	echo "FAIL fail-seen: status exit $rc, role 1 '$r1'; wanted exit 3, role 1 failed"
fi
ctl replace "$G" replace --max-rate 4M 1 "$NVME5" $M
result replace $? 0 "graidctl replace 1 with the sixth drive, rebuilt through the holder"
# At 4 MiB/s (the holder's limit from then on) it takes some seconds; lines below 100 %:
# the rebuild was followed as it went, not only seen to have ended.
np=$(grep -cE '^rebuild: ([0-9]|[1-9][0-9])\.[0-9]%' /tmp/ctl-replace.out)
if [ "$np" -ge 2 ]; then
	echo "PASS rebuild-progress: $np progress lines below 100% while the holder rebuilt"
else
	echo "FAIL rebuild-progress: graidctl replace showed $np progress lines below 100%"
fi
ctl clean "$G" status --json $M2
rc=$?
r1=$(role_is /tmp/ctl-clean.out 1)
if [ "$rc" -eq 0 ] && grep -q '"nfailed": 0' /tmp/ctl-clean.out && [ "$r1" = "active $NVME5" ]; then
	echo "PASS rebuilt: the array is clean again, role 1 active on the sixth drive"
else
	echo "FAIL rebuilt: status exit $rc, role 1 '$r1'; wanted exit 0, role 1 'active $NVME5'"
fi
# The failed drive, out of the array since the replace, wiped and given back as a spare.
dd if=/dev/zero of="$NVME1" bs=4096 count=1 conv=notrunc,fsync 2>/dev/null
ctl spare "$G" spare add "$NVME1" $M2
result spare $? 0 "graidctl spare add (the failed drive, wiped) through the holder"
ctl spares "$G" status --json $M2 "$NVME1"
if [ "$(role_is /tmp/ctl-spares.out 5)" = "spare $NVME1" ]; then
	echo "PASS spare-seen: status lists the hot spare"
else
	echo "FAIL spare-seen: no member in state spare"
fi
ctl scrub "$G" scrub $M2
rc=$?
if [ "$rc" -eq 0 ] && grep -q " 0 mismatches" /tmp/ctl-scrub.out; then
	echo "PASS scrub: graidctl scrub through the holder, no mismatch"
else
	echo "FAIL scrub: exit $rc, wanted 0 and '0 mismatches'"
fi

# ---- fio: every round verified, and what was written before the failure ------------------
stop_bg
rounds=$(wc -l </tmp/serve-rounds 2>/dev/null || echo 0)
bad=$(awk '$2 != 0 { print $1 }' /tmp/serve-rounds 2>/dev/null | head -n 1)
if [ -z "$bad" ] && [ "$rounds" -ge 2 ]; then
	echo "PASS fio-background: $rounds rounds written and verified while the array was managed, no I/O error"
else
	echo "FAIL fio-background: round ${bad:-?} of $rounds failed"
	[ -n "$bad" ] && tail -n 20 "/tmp/fio-bg-$bad.out" | sed 's/^/    fio: /'
fi
if region_a --verify_only=1; then
	echo "PASS after: the data written before the failure reads back after the rebuild"
else
	echo "FAIL after: region A does not verify"
fi

# ---- the holder killed in the middle of a request ---------------------------------------
# A rebuild slow enough to be followed for minutes: the server again, its rebuilds limited
# to 1 MiB/s; role 2 failed, the hot spare takes it and rebuilds in the holder; graidctl
# rebuild follows it, and the holder dies under it (kill -9).
M3="$NVME0 $NVME5 $NVME1 $NVME3 $NVME4"
stop_server || echo "FAIL stop: the server did not stop cleanly"
if ! start_server /tmp/serve-slow.log --rebuild-max-rate 1M $M2 "$NVME1"; then
	echo "FAIL kill-mid-request: the server did not start again"
else
	ctl fail2 "$G" fail 2 $M2 "$NVME1"
	result fail2 $? 0 "graidctl fail 2: the hot spare takes role 2 in the holder"
	"$G" rebuild $M3 >/tmp/ctl-killed.out 2>&1 &
	CP=$!
	# Killed once graidctl shows the rebuild under way (its first progress line).
	for _ in $(seq 1 300); do
		grep -qE '[0-9]\.[0-9]%' /tmp/ctl-killed.out && break
		kill -0 "$CP" 2>/dev/null || break
		sleep 0.1
	done
	if ! kill -0 "$CP" 2>/dev/null; then
		wait "$CP"
		echo "FAIL kill-mid-request: graidctl rebuild ended (exit $?) before the holder was killed"
	else
		kill -KILL "$SRV"
		wait "$SRV" 2>/dev/null
		SRV=''
		for _ in $(seq 1 300); do kill -0 "$CP" 2>/dev/null || break; sleep 0.1; done
		if kill -0 "$CP" 2>/dev/null; then
			echo "FAIL kill-mid-request: graidctl still runs 30 s after the holder died"
			kill -KILL "$CP"
			wait "$CP" 2>/dev/null
		else
			wait "$CP"
			rc=$?
			if [ "$rc" -ne 0 ] && [ -s /tmp/ctl-killed.out ]; then
				echo "PASS kill-mid-request: graidctl ended with exit $rc when the holder died: $(tail -n 1 /tmp/ctl-killed.out)"
			else
				echo "FAIL kill-mid-request: graidctl exited $rc"
			fi
		fi
	fi
	sed 's/^/    killed: /' /tmp/ctl-killed.out | tail -n 5
fi
# The dead holder's socket is still there; a new server replaces it.
if start_server /tmp/serve2.log $M3 && grep -qF "control endpoint $CTL" /tmp/serve2.log; then
	ctl restarted "$G" status --json $M3
	rc=$?
	if [ "$rc" -eq 0 ] || [ "$rc" -eq 3 ]; then
		echo "PASS restart: a new server replaced the dead one's socket and answers (status exit $rc)"
	else
		echo "FAIL restart: status through the new server exited $rc"
	fi
	stop_server || echo "FAIL stop-restarted: the server did not stop cleanly"
else
	echo "FAIL restart: no server with an endpoint after the kill"
	sed 's/^/    srv: /' /tmp/serve2.log
	stop_server >/dev/null 2>&1
fi
# As after any crash: the rebuild the dead holder left resumes and ends, nothing is wrong.
ctl finish "$G" assemble $M3
result finish $? 0 "graidctl assemble finishes the rebuild the dead holder left"
ctl final-scrub "$G" scrub $M3
result final-scrub $? 0 "a scrub after it finds nothing wrong"
ctl final "$G" status --json $M3
rc=$?
if [ "$rc" -eq 0 ] && [ "$(role_is /tmp/ctl-final.out 1)" = "active $NVME5" ] &&
	[ "$(role_is /tmp/ctl-final.out 2)" = "active $NVME1" ]; then
	echo "PASS final: the array is clean, role 1 on the sixth drive, role 2 on the spare that took it"
else
	echo "FAIL final: status exit $rc, role 1 '$(role_is /tmp/ctl-final.out 1)', role 2 '$(role_is /tmp/ctl-final.out 2)'"
fi
exit 0
