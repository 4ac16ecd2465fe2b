#!/bin/sh
# SPDX-License-Identifier: MIT
# In the test VM: a drive that predicts its own failure is replaced before it fails, with
# the array's redundancy kept all along. graid-ublk serves a RAID-5 over NVME0..NVME3 with
# NVME4 as its hot spare and samples the drives' health every 500 ms; graidctl monitor
# follows it (its --program records each event); fio writes and verifies in the background;
# redundancy_probe asks the holder's status every 10 ms. Then the host raises the critical
# warning of role 1's drive (QEMU's smart_critical_warning, through its monitor): the
# monitor must print health-critical for that drive within 10 s and run the program with
# it; a replace in service onto the spare must start and end with role 1 on NVME4; no sample
# may show a role out or nfailed > 0; every fio round must verify, and data written before
# the warning read back after the swap. The warning is cleared at the end, and the drives'
# first MiB zeroed.
# usage: watch.sh GRAID_UBLK GRAIDCTL FIO PROBE   (uses NVME0..NVME4 from /init)
U=${1:?usage: watch.sh GRAID_UBLK GRAIDCTL FIO PROBE}
G=${2:?usage: watch.sh GRAID_UBLK GRAIDCTL FIO PROBE}
FIO=${3:?usage: watch.sh GRAID_UBLK GRAIDCTL FIO PROBE}
P=${4:?usage: watch.sh GRAID_UBLK GRAIDCTL FIO PROBE}
. /vm/fio-lib.sh

M="$NVME0 $NVME1 $NVME2 $NVME3"
SPARE=$NVME4
# How long the copy of one 256 MiB drive may take under TCG, with fio writing meanwhile.
REPLACE_WAIT_S=${VM_WATCH_REPLACE_WAIT_S:-240}
SRV='' DEV='' BG='' MON='' PRB='' WARNED=''

# host_warn BITS: ask the host to set role 1's drive's critical warning (serial graid1 is
# QEMU's controller nvmectl1). Straight to the console: /init's pipes hold lines back.
host_warn() {
	echo "VM: HOST qom-set nvmectl1 smart_critical_warning $1" >/dev/console
}
stop_pid() { # stop_pid PID: SIGTERM, wait up to 30 s, then SIGKILL; its exit status
	kill -TERM "$1" 2>/dev/null
	for _ in $(seq 1 300); do
		kill -0 "$1" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$1" 2>/dev/null
	wait "$1"
}
cleanup() {
	[ -n "$BG" ] && { touch /tmp/watch.stop; wait "$BG"; }
	[ -n "$PRB" ] && stop_pid "$PRB" >/dev/null 2>&1
	[ -n "$MON" ] && stop_pid "$MON" >/dev/null 2>&1
	[ -n "$SRV" ] && stop_pid "$SRV" >/dev/null 2>&1
	[ -n "$WARNED" ] && host_warn 0
}
trap cleanup EXIT

# role_is FILE ROLE: "STATE PATH" of role ROLE in the members of a status --json in FILE.
role_is() {
	awk -v r="$2" '/"given"/ { exit }
		/"role": / { gsub(/[",]/, ""); cur = $2 }
		cur == r && /"state": / { gsub(/[",]/, ""); st = $2 }
		cur == r && /"path": / { gsub(/[",]/, ""); p = $2 }
		END { print st, p }' "$1"
}
# since START: whole seconds since the uptime START (two decimals) as "S.SS".
uptime_s() { cut -d' ' -f1 /proc/uptime; }
since() { awk -v a="$1" -v b="$(uptime_s)" 'BEGIN { printf "%.2f", b - a }'; }

# ---- the array: RAID-5 over four drives, the fifth its hot spare --------------------------
# --force: earlier suites leave their superblocks; the spare is wiped so that it is blank.
dd if=/dev/zero of="$SPARE" bs=4096 count=1 conv=notrunc,fsync 2>/dev/null
if ! "$G" create --force --level 5 --chunk 64K $M >/tmp/watch-create.out 2>&1 ||
	! "$G" spare add "$SPARE" $M >>/tmp/watch-create.out 2>&1; then
	sed 's/^/    /' /tmp/watch-create.out
	echo "FAIL create: graidctl create or spare add exited non-zero"
	exit 1
fi
UUID=$(sed -n 's/^created RAID-5 array \([0-9a-f-]*\):.*/\1/p' /tmp/watch-create.out)
CTL=${GRAID_RUN_DIR:-/run/graid}/$UUID.ctl
echo "PASS create: RAID-5 $UUID over $M, hot spare $SPARE"

# ---- served, the health watch every 500 ms; the monitor; the probe -------------------------
rm -f /tmp/watch.dev
"$U" --health-interval 500 $M "$SPARE" >/tmp/watch.dev 2>/tmp/watch-srv.log &
SRV=$!
for _ in $(seq 1 300); do
	DEV=$(head -n 1 /tmp/watch.dev 2>/dev/null)
	[ -n "$DEV" ] && [ -b "$DEV" ] && [ -S "$CTL" ] && break
	kill -0 "$SRV" 2>/dev/null || break
	sleep 0.1
done
sed 's/^/    srv: /' /tmp/watch-srv.log
if [ -z "$DEV" ] || [ ! -b "$DEV" ] || [ ! -S "$CTL" ] ||
	! grep -q "drive health sampled every 500 ms" /tmp/watch-srv.log; then
	echo "FAIL start: graid-ublk did not serve $M with its endpoint and a 500 ms health watch"
	exit 1
fi
echo "PASS start: $DEV served, endpoint $CTL, drive health sampled every 500 ms"

# The program: each run's arguments, one line each.
printf '#!/bin/sh\necho "$@" >>/tmp/watch-rec.out\n' >/tmp/rec.sh
chmod 755 /tmp/rec.sh
rm -f /tmp/watch-rec.out /tmp/watch-mon.state
"$G" monitor --program /tmp/rec.sh --state-file /tmp/watch-mon.state --delay 3600 \
	>/tmp/watch-mon.out 2>/tmp/watch-mon.err &
MON=$!

rm -f /tmp/watch.probe-stop
"$P" --interval-ms 10 --stop-file /tmp/watch.probe-stop "$CTL" >/tmp/watch-probe.out 2>&1 &
PRB=$!
for _ in $(seq 1 100); do
	grep -q "^probe: sampling" /tmp/watch-probe.out && break
	kill -0 "$PRB" 2>/dev/null || break
	sleep 0.1
done
if grep -q "^probe: sampling" /tmp/watch-probe.out; then
	echo "PASS probe-start: $(head -n 1 /tmp/watch-probe.out)"
else
	echo "FAIL probe-start: the probe did not sample the holder's status"
	sed 's/^/    probe: /' /tmp/watch-probe.out
fi

# ---- fio: region A before, then rounds in the background ---------------------------------
# Region A, [0, 16M): written before the warning, read back after the swap.
region_a() {
	fio_run "watch-a" --filename="$DEV" --ioengine=libaio --direct=1 --verify=crc32c \
		--verify_fatal=1 --name=a --rw=randwrite --bs=64k --offset=0 --size=16M \
		--iodepth=8 "$@"
}
if region_a --do_verify=1; then echo "PASS before: 16 MiB written and verified"; else
	echo "FAIL before: fio could not write region A"; fi
# Rounds of random writes of 4..128 KiB over 16 MiB, each verified (crc32c, verify_fatal),
# at four offsets in turn in [32M, 96M), until told to stop; at least two rounds. Each
# round's "number exit-status start end" (uptime seconds) in /tmp/watch-rounds.
bg_rounds() {
	r=0
	while [ "$r" -lt 2 ] || [ ! -e /tmp/watch.stop ]; do
		t0=$(uptime_s)
		"$FIO" --thread --filename="$DEV" --ioengine=libaio --direct=1 --name=bg \
			--rw=randwrite --bsrange=4k-128k --offset=$((32 + r % 4 * 16))M --size=16M \
			--iodepth=8 --verify=crc32c --verify_fatal=1 --do_verify=1 \
			>"/tmp/watch-fio-$r.out" 2>&1
		echo "$r $? $t0 $(uptime_s)" >>/tmp/watch-rounds
		r=$((r + 1))
	done
}
rm -f /tmp/watch.stop /tmp/watch-rounds
bg_rounds &
BG=$!

"$G" status --json $M "$SPARE" >/tmp/watch-st0.out 2>&1
r1=$(role_is /tmp/watch-st0.out 1)
sp=$(role_is /tmp/watch-st0.out 4)
if [ "$r1" = "active $NVME1" ] && [ "$sp" = "spare $SPARE" ]; then
	echo "PASS layout: role 1 active on $NVME1, $SPARE the hot spare"
else
	echo "FAIL layout: role 1 '$r1', role 4 '$sp'; wanted 'active $NVME1', 'spare $SPARE'"
fi

# ---- the warning, from outside the guest --------------------------------------------------
sleep 1
T0=$(uptime_s)
WARNED=1
host_warn 4
# mon_has EVENT MEMBER: the monitor printed EVENT for this array and MEMBER.
mon_has() {
	awk -v e="$1" -v u="$UUID" -v m="$2" '$2 == e && $3 == u && $4 == m { f = 1 }
		END { exit !f }' /tmp/watch-mon.out
}
for _ in $(seq 1 100); do
	mon_has health-critical "$NVME1" && break
	sleep 0.1
done
if mon_has health-critical "$NVME1"; then
	echo "PASS monitor-event: graidctl monitor printed health-critical for $NVME1 $(since "$T0") s after the host raised the warning"
	grep -F " health-critical " /tmp/watch-mon.out | sed 's/^/    monitor: /'
else
	echo "FAIL monitor-event: no health-critical line for $NVME1 within 10 s"
	sed 's/^/    monitor: /' /tmp/watch-mon.out /tmp/watch-mon.err | tail -n 15
	sed 's/^/    srv: /' /tmp/watch-srv.log | tail -n 10
fi
for _ in $(seq 1 100); do
	grep -qxF "health-critical $UUID $NVME1" /tmp/watch-rec.out 2>/dev/null && break
	sleep 0.1
done
if grep -qxF "health-critical $UUID $NVME1" /tmp/watch-rec.out 2>/dev/null; then
	echo "PASS monitor-program: --program ran as 'rec.sh health-critical $UUID $NVME1'"
else
	echo "FAIL monitor-program: no run of the program with health-critical $UUID $NVME1"
	sed 's/^/    rec: /' /tmp/watch-rec.out 2>/dev/null | tail -n 10
fi

# ---- the replace in service onto the spare -------------------------------------------------
# Started: the probe saw role 1 being replaced, or the monitor the spare taken for role 1
# (a copy too fast for 10 ms samples still sends its events).
started() {
	grep -q "^probe: role 1 being replaced in service" /tmp/watch-probe.out ||
		mon_has spare-activated "$NVME1" || mon_has rebuild-started "$NVME1" ||
		awk -v u="$UUID" '($2 == "spare-activated" || $2 == "rebuild-started") &&
			$3 == u && / role=1 / { f = 1 } END { exit !f }' /tmp/watch-mon.out
}
for _ in $(seq 1 200); do
	started && break
	sleep 0.1
done
T_RS='' T_RD=''
if started; then
	T_RS=$(uptime_s)
	echo "PASS replace-started: a replace of role 1 in service began $(since "$T0") s after the warning"
	grep -E "^probe: role 1 being" /tmp/watch-probe.out | sed 's/^/    /'
	awk -v u="$UUID" '$3 == u && ($2 ~ /^(spare-activated|rebuild-started)$/)' \
		/tmp/watch-mon.out | sed 's/^/    monitor: /'
	# Ended: the holder's status has role 1 active on the spare, nothing replacing.
	ok=''
	for _ in $(seq 1 "$REPLACE_WAIT_S"); do
		"$G" status --json $M "$SPARE" >/tmp/watch-st1.out 2>&1
		if [ "$(role_is /tmp/watch-st1.out 1)" = "active $SPARE" ] &&
			! grep -q '"replacing": true' /tmp/watch-st1.out; then
			ok=1
			break
		fi
		kill -0 "$SRV" 2>/dev/null || break
		sleep 1
	done
	T_RD=$(uptime_s)
	if [ -n "$ok" ] && grep -q '"nfailed": 0' /tmp/watch-st1.out; then
		echo "PASS replace-done: role 1 is active on $SPARE $(since "$T0") s after the warning, the array clean"
		grep -E "^probe: role 1's device" /tmp/watch-probe.out | sed 's/^/    /'
	else
		echo "FAIL replace-done: role 1 '$(role_is /tmp/watch-st1.out 1)' after ${REPLACE_WAIT_S} s; wanted 'active $SPARE'"
		grep -E '"(replacing|replace_done|replace_total)"' /tmp/watch-st1.out | head -n 8 |
			sed 's/^/    status: /'
	fi
else
	echo "FAIL replace-started: no replace of role 1 in 20 s after the warning (no replacing in the holder's status, no spare-activated or rebuild-started event)"
	echo "FAIL replace-done: no replace started"
	sed 's/^/    monitor: /' /tmp/watch-mon.out | tail -n 10
fi

# ---- what the probe saw ------------------------------------------------------------------
touch /tmp/watch.probe-stop
wait "$PRB"
prc=$?
PRB=''
sum=$(grep "^probe: samples=" /tmp/watch-probe.out)
grep -E "^probe: REDUNDANCY" /tmp/watch-probe.out | sed 's/^/    /'
echo "    $sum"
# field NAME: the value of NAME=... in the summary.
field() { echo "$sum" | tr ' ' '\n' | sed -n "s/^$1=//p"; }
if [ "$prc" -eq 0 ] && [ "$(field redundancy)" = kept ] && [ "$(field nfailed_samples)" = 0 ] &&
	[ "$(field fewest_active)" = 4 ] && [ "$(field samples)" -ge 100 ]; then
	echo "PASS redundancy: $(field samples) samples (every $(field mean_gap_ms) ms on average, at most $(field max_gap_ms) ms apart), every one with 4 of 4 roles active and nfailed 0"
else
	echo "FAIL redundancy: probe exit $prc; $sum"
	tail -n 5 /tmp/watch-probe.out | sed 's/^/    probe: /'
fi
if [ "$(field replacing_samples)" -gt 0 ] 2>/dev/null || [ "$(field swaps)" -gt 0 ] 2>/dev/null; then
	echo "PASS probe-saw-replace: $(field replacing_samples) samples with role 1 replacing, $(field swaps) device swap(s)"
else
	echo "FAIL probe-saw-replace: no sample showed a replace or a swap"
fi

# ---- fio ---------------------------------------------------------------------------------
touch /tmp/watch.stop
wait "$BG"
BG=''
rounds=$(wc -l </tmp/watch-rounds 2>/dev/null || echo 0)
bad=$(awk '$2 != 0 { print $1 }' /tmp/watch-rounds 2>/dev/null | head -n 1)
if [ -z "$bad" ] && [ "$rounds" -ge 2 ]; then
	echo "PASS fio-background: $rounds rounds written and verified across the warning and the replace, no I/O error"
else
	echo "FAIL fio-background: round ${bad:-?} of $rounds failed"
	[ -n "$bad" ] && tail -n 20 "/tmp/watch-fio-$bad.out" | sed 's/^/    fio: /'
fi
# The replace ran under fio's writes: some round was writing between its start and its end
# (seen by this script within a second of each).
if [ -n "$T_RD" ]; then
	during=$(awk -v a="$T_RS" -v b="$T_RD" '$3 < b && $4 > a { n++ } END { print n + 0 }' \
		/tmp/watch-rounds)
	if [ "$during" -ge 1 ]; then
		echo "PASS fio-during: $during fio round(s) wrote and verified while the replace ran"
	else
		echo "FAIL fio-during: no fio round overlapped the replace ($T_RS .. $T_RD s)"
		sed 's/^/    rounds: /' /tmp/watch-rounds
	fi
fi
if region_a --verify_only=1; then
	echo "PASS after: the data written before the warning reads back"
else
	echo "FAIL after: region A does not verify"
fi

# ---- the end: the warning cleared, everything stopped --------------------------------------
host_warn 0
WARNED=''
stop_pid "$MON" >/dev/null 2>&1
MON=''
stop_pid "$SRV"
rc=$?
SRV=''
if [ "$rc" -eq 0 ]; then echo "PASS stop: the server stopped cleanly, the warning cleared"; else
	echo "FAIL stop: the server exited $rc"; sed 's/^/    srv: /' /tmp/watch-srv.log | tail -n 10; fi
# The drives left blank, as scan.sh leaves them: a later suite (health adds one as a spare)
# must not find this array's superblocks on them.
for d in $M "$SPARE"; do dd if=/dev/zero of="$d" bs=1M count=1 conv=fsync 2>/dev/null; done
exit 0
