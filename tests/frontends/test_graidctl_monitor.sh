#!/bin/bash
# SPDX-License-Identifier: MIT
# graidctl monitor: a served array's events through its holder's endpoint (within 1 s, with
# --program run), an unserved array's changes found in its superblocks, --oneshot, --test,
# a monitor restarted mid-way (nothing missed), a holder's missed line, a holder going away.
# usage: test_graidctl_monitor.sh PATH/TO/graidctl PATH/TO/graid_fill [graid-monitor.service
#        [syslog_shim.so]]
set -u
# The shared helpers: counts, ok, bad, expect, has, hasnt, json, check, workdir (lib.sh).
. "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"

G=${1:?usage: test_graidctl_monitor.sh PATH/TO/graidctl PATH/TO/graid_fill}
[ -x "$G" ] || { echo "SKIP: $G is not an executable"; exit 77; }
G=$(readlink -f "$G")
FILL=$(readlink -f "${2:?usage: test_graidctl_monitor.sh PATH/TO/graidctl PATH/TO/graid_fill}")
UNIT=${3:+$(readlink -f "$3")}
SHIM=${4:+$(readlink -f "$4")}
PY=$(command -v python3) || { echo "SKIP: python3 is needed for the scripted endpoint"; exit 77; }

workdir graidctl-monitor
export GRAID_RUN_DIR=$T/run GRAID_CONF=$T/graid.conf
mkdir -m 700 run

# wait_for FILE PATTERN SECONDS: until a line of FILE matches; 0 found, 1 not in time.
wait_for() {
	local i n=$(($3 * 20))
	for ((i = 0; i < n; i++)); do grep -Eq -- "$2" "$1" 2>/dev/null && return 0; sleep 0.05; done
	grep -Eq -- "$2" "$1" 2>/dev/null
}
# monitor OUT ARGS...: a following monitor in the background, its pid in mon.
monitor() {
	local o=$1
	shift
	"$G" monitor "$@" >"$o" 2>"$o.err" &
	mon=$!
	pids+=($mon)
}
stop_monitor() {
	kill -TERM "$mon"
	wait "$mon"
	mon_rc=$?
}

cat >prog.sh <<EOF
#!/bin/sh
echo "\$# \$*" >>$T/prog.log
[ -e $T/prog.hang ] && exec sleep 100
[ -e $T/prog.fail ] && exit 7
exit 0
EOF
chmod +x prog.sh

truncate -s 17M c0 c1 c2 c3 n1 d0 d1 d2 n2
expect 0 "create RAID-5 on c0..c3" -- "$G" create -l 5 -s 16M c0 c1 c2 c3
expect 0 "create RAID-5 on d0..d2" -- "$G" create -l 5 -s 16M d0 d1 d2
echo "DEVICE $T/c? $T/d? $T/n? $T/e?" >graid.conf
CU=$("$G" list --scan --json | "$PY" -c "import json,sys; d=json.load(sys.stdin)
print([a['uuid'] for a in d['arrays'] if any(m['path'].endswith('/c0') for m in a['devices'])][0])")
DU=$("$G" list --scan --json | "$PY" -c "import json,sys; d=json.load(sys.stdin)
print([a['uuid'] for a in d['arrays'] if any(m['path'].endswith('/d0') for m in a['devices'])][0])")
[ -n "$CU" ] && [ -n "$DU" ] && ok "both arrays found by list --scan" || bad "list --scan: '$CU' '$DU'"

# --- usage, --oneshot and --test on clean arrays ------------------------------------------
expect 0 "monitor --help" -- "$G" monitor --help
has out "^usage: graidctl monitor" "monitor --help starts with its usage line"
has out "--oneshot" "the help names --oneshot"
expect 2 "monitor with an argument" -- "$G" monitor c0
expect 2 "monitor --delay 0" -- "$G" monitor --delay 0
expect 2 "monitor --program relative" -- "$G" monitor --program prog.sh
expect 0 "--oneshot, both arrays clean: nothing to report" -- "$G" monitor --oneshot
[ ! -s out ] && ok "--oneshot printed nothing" || { bad "--oneshot printed"; cat out; }
expect 0 "--oneshot --test --program" -- "$G" monitor --oneshot --test --program "$T/prog.sh"
has out "^[0-9T:.+-]+ test-message $CU - " "a test-message line for the RAID-5 on c"
has out "^[0-9T:.+-]+ test-message $DU - " "a test-message line for the RAID-5 on d"
has prog.log "^2 test-message $CU$" "--program ran as PATH test-message UUID (no member)"
has prog.log "^2 test-message $DU$" "--program ran for the other array too"
# A program that hangs is killed at its timeout; the next run still happens.
rm -f prog.log
touch prog.hang
t0=$(date +%s)
expect 0 "--test with a --program that hangs (--program-timeout 1)" -- \
	"$G" monitor --oneshot --test --program "$T/prog.sh" --program-timeout 1
[ $(($(date +%s) - t0)) -lt 10 ] && ok "each hanging run was killed after its timeout" ||
	bad "the monitor waited $(($(date +%s) - t0)) s"
has err "still running after 1 s: killed" "the killed run is said on stderr"
[ "$(grep -c test-message prog.log)" -eq 2 ] && ok "the second run came after the first was killed" ||
	{ bad "runs: $(cat prog.log)"; }
rm -f prog.hang prog.log
touch prog.fail
expect 0 "--test with a --program that fails" -- "$G" monitor --oneshot --test --program "$T/prog.sh"
has err "--program $T/prog.sh test-message $CU: exit 7" "its failure is said on stderr, with its arguments"
[ "$(grep -c test-message prog.log)" -eq 2 ] && ok "and the next run happened" || bad "runs: $(cat prog.log)"
rm -f prog.fail prog.log

# --- --oneshot on an array that needs a resync (its writer killed mid-work) -----------------
truncate -s 17M u0 u1 u2
expect 0 "create RAID-5 on u0..u2" -- "$G" create -l 5 -s 16M u0 u1 u2
echo "DEVICE $T/u?" >unclean.conf
UU=$("$G" list --scan --config "$T/unclean.conf" --json | "$PY" -c "import json,sys
print(json.load(sys.stdin)['arrays'][0]['uuid'])")
"$FILL" --hold-after 2M "$T/u0" "$T/u1" "$T/u2" >ufill.out 2>&1 &
ufill=$!
pids+=($ufill)
wait_for ufill.out holding 60 || bad "graid_fill never held the u array: $(cat ufill.out)"
kill -9 "$ufill"
wait "$ufill" 2>/dev/null
expect 3 "--oneshot with an array not closed cleanly: exit 3" -- \
	"$G" monitor --oneshot --config "$T/unclean.conf"
has out "^[0-9T:.+-]+ resync-needed $UU - regions=[1-9][0-9]* source=look$" \
	"--oneshot names it, with the regions to resync"
# The same superblocks naming another host as their writer: that host may be using the
# array now (shared storage), and this host cannot tell; not this monitor's to report.
for u in u0 u1 u2; do cp "$u" "$u.keep"; done
"$PY" - u0 u1 u2 <<'PYEOF'
import struct, sys
def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
    return crc ^ 0xFFFFFFFF
for path in sys.argv[1:]:
    with open(path, "r+b") as f:
        sb = bytearray(f.read(4096))
        sb[0xb00:0xb40] = b"another-host".ljust(64, b"\0")
        sb[0xc8:0xd8] = b"\x5a" * 16  # its boot id, not this host's
        sb[0xf8:0x100] = b"\0" * 8    # no machine id: hosts are told apart by boot id, name
        sb[0x0c:0x10] = b"\0" * 4
        sb[0x0c:0x10] = struct.pack("<I", crc32c(bytes(sb)))
        f.seek(0)
        f.write(sb)
PYEOF
expect 0 "--oneshot, the unclean array's owner record naming another host: exit 0" -- \
	"$G" monitor --oneshot --config "$T/unclean.conf"
hasnt out "resync-needed" "no resync-needed for an array another host may hold"
for u in u0 u1 u2; do mv "$u.keep" "$u"; done
expect 0 "assemble resyncs it" -- "$G" assemble u0 u1 u2
expect 0 "--oneshot after the resync: nothing to report" -- \
	"$G" monitor --oneshot --config "$T/unclean.conf"
[ ! -s out ] && ok "--oneshot printed nothing" || { bad "--oneshot printed"; cat out; }

# --- a served array: the monitor runs first, the endpoint appears later --------------------
monitor m1.out --delay 1 --program "$T/prog.sh"
"$FILL" --control --hold-after 4M "$T/c0" "$T/c1" "$T/c2" "$T/c3" >fill.out 2>&1 &
holder=$!
pids+=($holder)
wait_for fill.out holding 60 && ok "graid_fill holds the c array with its endpoint" ||
	bad "graid_fill never held the array: $(cat fill.out)"
wait_for run/monitor.state "^$CU $holder " 10 && ok "the monitor subscribed to the endpoint that appeared" ||
	{ bad "no subscription in the state file"; cat run/monitor.state m1.out.err; }
expect 0 "fail role 1 through the holder" -- "$G" fail 1 c0 c1 c2 c3
# Timed by the clock from the moment fail returned (the event was sent before), not by
# counting polls, which a loaded machine would stretch.
t0=$(date +%s%N)
until grep -Eq " member-failed $CU $T/c1 .*role=1 seq=1$" m1.out ||
	[ $(($(date +%s%N) - t0)) -gt 5000000000 ]; do sleep 0.02; done
t1=$(date +%s%N)
if grep -Eq " member-failed $CU $T/c1 .*role=1 seq=1$" m1.out && [ $((t1 - t0)) -lt 1000000000 ]; then
	ok "member-failed (role 1, its device, seq 1) printed within 1 s ($(((t1 - t0) / 1000000)) ms)"
else
	bad "no member-failed line within 1 s ($(((t1 - t0) / 1000000)) ms)"; cat m1.out m1.out.err
fi
has m1.out "source=holder" "the line says it came from the holder"
wait_for prog.log "^3 member-failed $CU $T/c1$" 5 && ok "--program ran: member-failed UUID DEVICE" ||
	{ bad "--program: $(cat prog.log 2>&1)"; }

# --- restarted mid-way: the events while it was down are reported once, in order ----------
stop_monitor
[ "$mon_rc" -eq 0 ] && ok "SIGTERM stops the monitor with exit 0" || bad "monitor exit $mon_rc"
expect 0 "replace role 1 with n1 through the holder, rebuilt, while no monitor runs" -- \
	"$G" replace 1 n1 c0 c1 c2 c3
monitor m2.out --delay 1
wait_for m2.out " rebuild-done $CU " 10 && ok "the restarted monitor reports the rebuild done meanwhile" ||
	{ bad "no rebuild-done after the restart"; cat m2.out m2.out.err; }
"$PY" - "$CU" <<'EOF' && ok "numbered on from the first monitor's last with no gap, none again, rebuild-started on n1 first" || { bad "the restarted monitor's lines"; cat m2.out; }
import sys
def seqs_of(path):
    lines = [l.split() for l in open(path) if " " + sys.argv[1] + " " in l]
    return lines, [int(w[4:]) for l in lines for w in l if w.startswith("seq=")]
_, before = seqs_of("m1.out")
lines, seqs = seqs_of("m2.out")
names = [l[1] for l in lines]
first = max(before) + 1 if before else 1
ok = seqs and seqs[0] == first and seqs == list(range(first, first + len(seqs)))
ok = ok and names[0] == "rebuild-started" and lines[0][3].endswith("/n1")
ok = ok and "rebuild-done" in names and "member-failed" not in names
sys.exit(0 if ok else 1)
EOF

# --- the holder goes away: the array is followed through its superblocks ------------------
kill -9 "$holder"
wait "$holder" 2>/dev/null
wait_for m2.out.err "$CU: its holder closed its endpoint" 5 && ok "the monitor saw the holder go" ||
	{ bad "the holder's end unseen"; cat m2.out.err; }
sleep 1.5 # its first look, the base the next is compared with
expect 0 "fail role 2 of the c array, now unserved, by graidctl" -- "$G" fail 2 c0 n1 c2 c3
wait_for m2.out " member-failed $CU $T/c2 .*source=look role=2$" 10 &&
	ok "member-failed found in the superblocks once the holder was gone" ||
	{ bad "no derived member-failed for c2"; cat m2.out m2.out.err; }
has m2.out " degraded $CU - .*source=look" "and degraded"
hasnt m2.out " new-array $CU " "the array is not new to the monitor"
stop_monitor

# --- an unserved array: a member failed by another process ---------------------------------
monitor m3.out --delay 1 --test --program "$T/prog.sh"
wait_for m3.out " test-message $DU " 20 && ok "--test goes on following after its test-messages" ||
	{ bad "no test-message"; cat m3.out m3.out.err; }
hasnt m3.out " degraded $DU " "the clean d array is not reported degraded"
rm -f prog.log
expect 0 "fail role 1 of the d array by graidctl (another process)" -- "$G" fail 1 d0 d1 d2
wait_for m3.out " member-failed $DU $T/d1 was=active source=look role=1$" 10 &&
	ok "the derived member-failed appears" || { bad "no derived member-failed"; cat m3.out m3.out.err; }
wait_for m3.out " degraded $DU - source=look$" 5 && ok "then degraded" || bad "no degraded"
wait_for prog.log "^3 member-failed $DU $T/d1$" 5 && ok "--program ran for the derived event" ||
	bad "--program: $(cat prog.log 2>&1)"
hasnt m3.out " degraded $CU " "the c array, degraded when the last monitor stopped (its saved look), is not again"

"$G" create -l 1 --file-size 8M e0 e1 >out 2>&1
EU=$(sed -n 's/^created RAID-1 array \([0-9a-f-]*\):.*/\1/p' out)
[ -n "$EU" ] && ok "a RAID-1 on e0, e1 created while the monitor runs" || { bad "create e"; cat out; }
wait_for m3.out " new-array $EU - source=look$" 10 && ok "it is reported as new-array" ||
	{ bad "no new-array for $EU"; cat m3.out; }
# A hot spare that takes a role between two looks: the failure and the spare both reported.
truncate -s 8M e2
expect 0 "spare add e2 to the RAID-1" -- "$G" spare add e2 e0 e1
sleep 1.5 # a look with the spare
expect 0 "fail role 0 of the RAID-1: the spare takes it" -- "$G" fail 0 e0 e1 e2
wait_for m3.out " member-failed $EU $T/e0 was=active source=look role=0$" 10 &&
	ok "member-failed for the device the spare replaced" || { bad "no member-failed e0"; cat m3.out; }
wait_for m3.out " spare-activated $EU $T/e2 spares=0 was=1 source=look role=0$" 5 &&
	ok "spare-activated names the spare and its role" || { bad "no spare-activated e2"; cat m3.out; }

# --- --syslog: facility daemon, priority by the event (syslog(3) caught by the shim) --------
if [ -n "$SHIM" ] && [ -z "${GRAID_SANITIZED:-}" ]; then
	# LOG_DAEMON is 24 (3 << 3); crit 2, info 6.
	GRAID_TEST_SYSLOG=$T/syslog LD_PRELOAD=$SHIM "$G" monitor --oneshot --test --syslog >out 2>err
	has syslog "^2 24 .* degraded $DU - source=look$" "--syslog: degraded at priority crit, facility daemon"
	has syslog "^6 24 .* test-message $DU - source=look$" "--syslog: test-message at priority info"
	[ "$(grep -c . syslog)" -eq "$(grep -c . out)" ] && ok "--syslog: every line of stdout is logged" ||
		{ bad "syslog has $(grep -c . syslog) lines, stdout $(grep -c . out)"; cat syslog out; }
fi

# --- --oneshot on a degraded array -----------------------------------------------------------
expect 3 "--oneshot with a degraded array: exit 3" -- "$G" monitor --oneshot
has out " degraded $DU - source=look$" "--oneshot names the degraded array"
has out " degraded $CU - source=look$" "and the other (--oneshot reports how they are, saved state or not)"

expect 0 "replace role 1 of the d array with n2 (rebuilt)" -- "$G" replace 1 n2 d0 d1 d2
wait_for m3.out " rebuild-done $DU $T/n2 " 10 && ok "the derived rebuild-done names the new device" ||
	{ bad "no derived rebuild-done"; cat m3.out; }
wait_for m3.out " optimal $DU - " 5 && ok "then optimal" || bad "no optimal"
stop_monitor

# --- an unserved array changed while no monitor ran: compared with the saved look -----------
expect 0 "fail role 0 of the d array while no monitor runs" -- "$G" fail 0 d0 n2 d2
monitor m5.out --delay 1
wait_for m5.out " member-failed $DU $T/d0 was=active source=look role=0$" 10 &&
	ok "the restarted monitor reports the member failed meanwhile" ||
	{ bad "no member-failed after the restart"; cat m5.out m5.out.err; }
wait_for m5.out " degraded $DU " 5 && ok "and degraded" || bad "no degraded after the restart"
sleep 1.5
[ "$(grep -c " degraded $DU " m5.out)" -eq 1 ] && ok "degraded reported once" ||
	{ bad "degraded lines: $(grep -c " degraded $DU " m5.out)"; cat m5.out; }
hasnt m5.out " degraded $CU " "the c array, degraded when the last monitor stopped, is not again"
stop_monitor

# --- a holder's missed line: scripted endpoint, since from the saved number ----------------
mkdir -m 700 run2
FU=0f0f0f0f-0000-4000-8000-000000000001
"$PY" - "$T/run2/$FU.ctl" "$T/fake.log" <<'EOF' &
import json, os, socket, sys, threading
path, log = sys.argv[1:3]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(path)
s.listen(4)
open(path + ".pid", "w").write(str(os.getpid()))
status = {"nmembers": 2, "members": [{"role": 0, "state": "active", "path": "/x0"},
                                     {"role": 1, "state": "active", "path": "/x1"}]}
# A connection each in a thread of its own, as a holder serves them: a status while
# another connection is subscribed.
def serve(c):
    f = c.makefile("rwb", buffering=0)
    for line in f:
        req = json.loads(line)
        open(log, "a").write(json.dumps(req) + "\n")
        op = req.get("op")
        if op == "subscribe":
            f.write(b'{"ok": true, "seq": 300}\n')
            f.write(b'{"event": "missed", "seq": 290, "missed": 10}\n')
            for n in range(291, 301):
                f.write(json.dumps({"event": "member-failed" if n == 300 else
                                    "checksum-error" if n == 299 else "bad-block",
                                    "seq": n, "time_ns": 0, "member": 1, "error": 5,
                                    "stripe": n, "count": 1}).encode() + b"\n")
            continue
        r = {"id": req.get("id"), "ok": True}
        if op == "hello":
            r.update(protocol=1, version="0.0.1-fake")
        else:
            r.update(status)
        f.write(json.dumps(r).encode() + b"\n")
while True:
    threading.Thread(target=serve, args=(s.accept()[0],), daemon=True).start()
EOF
pids+=($!)
wait_for run2/$FU.ctl.pid . 10
echo "$FU $(cat run2/$FU.ctl.pid) 280" >m4.state
monitor m4.out --run-dir "$T/run2" --state-file "$T/m4.state" --delay 60
wait_for m4.out " member-failed $FU /x1 .*seq=300$" 10 && ok "the scripted holder's events reported" ||
	{ bad "scripted events"; cat m4.out m4.out.err; }
has fake.log '"op": "subscribe", "since": 280' "subscribe asked since the saved number"
has m4.out " missed $FU - missed=10 first=281 last=290 source=holder$" \
	"the missed line is reported as such, with the numbers lost"
has m4.out " bad-block $FU /x1 error=EIO count=1 stripe=291 source=holder role=1 seq=291$" \
	"an event's fields are on its line"
stop_monitor
has m4.state "^$FU [0-9]+ 300 " "the state file keeps the last number"
# A block lost to silent corruption (checksum-error, error=EIO) is no info-level line.
if [ -n "$SHIM" ] && [ -z "${GRAID_SANITIZED:-}" ]; then
	GRAID_TEST_SYSLOG=$T/syslog4 LD_PRELOAD=$SHIM "$G" monitor --run-dir "$T/run2" \
		--state-file none --delay 60 --syslog >m5.out 2>m5.out.err &
	mon=$!
	pids+=($mon)
	wait_for m5.out " member-failed $FU /x1 .*seq=300$" 10 || { bad "m5: no events"; cat m5.out.err; }
	stop_monitor
	# LOG_DAEMON 24; warning 4.
	has syslog4 "^4 24 .* checksum-error $FU /x1 error=EIO count=1 stripe=299 " \
		"--syslog: checksum-error at priority warning"
fi

# --- three endpoints that appear in one pass, a monitor with no state ------------------------
# Followed all three (under valgrind where there is one: its poll set was sized before the
# pass added them); --test while following reports them, but not as new-array.
mkdir -m 700 run3
truncate -s 8M g0 g1 h0 h1 k0 k1
for x in g h k; do
	expect 0 "create RAID-1 on ${x}0 ${x}1" -- "$G" create -l 1 -s 4M ${x}0 ${x}1
done
echo "DEVICE $T/g? $T/h? $T/k?" >conf3
for x in g h k; do
	GRAID_RUN_DIR=$T/run3 "$FILL" --control --hold-after 1M "$T/${x}0" "$T/${x}1" >fill.$x 2>&1 &
	pids+=($!)
done
for x in g h k; do
	wait_for fill.$x holding 60 || bad "graid_fill never held ${x}0 ${x}1: $(cat fill.$x)"
done
[ "$(ls run3/*.ctl 2>/dev/null | wc -l)" -eq 3 ] && ok "three served arrays in run3" || bad "run3: $(ls run3)"
VG=()
if command -v valgrind >/dev/null && [ -z "${GRAID_SANITIZED:-}" ]; then
	VG=(valgrind -q --error-exitcode=99)
fi
"${VG[@]}" "$G" monitor --run-dir "$T/run3" --config "$T/conf3" --state-file "$T/m6.state" \
	--delay 60 >m6.out 2>m6.out.err &
mon=$!
pids+=($mon)
for u in $(cd run3 && ls *.ctl | sed 's/\.ctl$//'); do
	wait_for m6.state "^$u [0-9]+ " 30 && ok "the monitor with no state follows $u" ||
		{ bad "$u not followed"; cat m6.state m6.out.err; }
done
stop_monitor
[ "$mon_rc" -eq 0 ] && ok "and stopped clean (exit 0${VG:+, valgrind had nothing})" ||
	{ bad "monitor exit $mon_rc"; cat m6.out.err; }
monitor m7.out --run-dir "$T/run3" --config "$T/conf3" --state-file none --delay 60 --test
wait_for m7.out "test-message" 10
sleep 2 # its subscriptions
stop_monitor
[ "$(grep -c ' test-message .* source=holder$' m7.out)" -eq 3 ] &&
	ok "--test (following): a test-message per served array" || { bad "--test lines"; cat m7.out; }
hasnt m7.out " new-array " "--test (following): the arrays it reported are not new-array"

# The devices of served arrays are not read by the look (their holders say how they are).
if command -v strace >/dev/null && strace -f -o /dev/null true 2>/dev/null; then
	strace -f -e trace=open,openat -o strace.out "$G" monitor --oneshot --run-dir "$T/run3" \
		--config "$T/conf3" >out 2>err
	hasnt strace.out "\"$T/[ghk][01]\"" "--oneshot: no device of a served array opened by the look"
	has strace.out "/proc/|\.ctl|graid" "(strace saw the monitor's opens)"
	monitor m7b.out --run-dir "$T/run3" --config "$T/conf3" --state-file none --delay 1
	sleep 2 # subscribed
	strace -f -e trace=open,openat -o strace2.out -p "$mon" 2>/dev/null &
	st=$!
	sleep 3 # two looks at least
	kill "$st"
	wait "$st" 2>/dev/null
	stop_monitor
	hasnt strace2.out "\"$T/[ghk][01]\"" "following: no device of a followed array opened by the looks"
	has strace2.out "conf3" "(strace saw the looks: graid.conf read)"
fi

# --- one following monitor per state file -------------------------------------------------
monitor m8.out --run-dir "$T/run3" --config "$T/conf3" --state-file "$T/m8.state" --delay 60
sleep 1
expect 2 "a second monitor on the same state file exits 2" -- timeout 5 "$G" monitor \
	--run-dir "$T/run3" --config "$T/conf3" --state-file "$T/m8.state" --delay 60
has err "another monitor \(pid $mon\)" "its message names the one that follows"
stop_monitor

# --- SIGCHLD ignored by the parent; stdout's reader gone ----------------------------------
touch prog.fail
expect 0 "--program's exit seen with SIGCHLD ignored at start" -- "$PY" -c '
import os, signal, sys
signal.signal(signal.SIGCHLD, signal.SIG_IGN)
os.execv(sys.argv[1], sys.argv[1:])' "$G" monitor --oneshot --test --run-dir "$T/run3" \
	--config "$T/conf3" --program "$T/prog.sh" --program-timeout 5
has err "--program $T/prog.sh test-message .*: exit 7" "the run's exit 7 is said"
hasnt err "still running" "no run taken for hung"
rm -f prog.fail prog.log
expect 0 "graidctl monitor | head -n 1 ends" -- timeout 20 bash -c \
	"'$G' monitor --run-dir '$T/run3' --config '$T/conf3' --state-file none --test | head -n 1"

# --- --oneshot on a served array that failed: array-failed -------------------------------
mkdir -m 700 run4
XU=0f0f0f0f-0000-4000-8000-000000000002
"$PY" - "$T/run4/$XU.ctl" <<'EOF2' &
import json, os, socket, sys
path = sys.argv[1]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(path)
s.listen(4)
open(path + ".pid", "w").write(str(os.getpid()))
st = {"level": 5, "nmembers": 3, "members": [{"role": 0, "state": "active", "path": "/y0"},
      {"role": 1, "state": "failed", "path": "/y1"}, {"role": 2, "state": "failed", "path": "/y2"}]}
while True:
    c, _ = s.accept()
    f = c.makefile("rwb", buffering=0)
    for line in f:
        req = json.loads(line)
        r = {"id": req.get("id"), "ok": True}
        r.update(protocol=1, version="0.0.1-fake") if req.get("op") == "hello" else r.update(st)
        f.write(json.dumps(r).encode() + b"\n")
EOF2
pids+=($!)
wait_for run4/$XU.ctl.pid . 10
echo "DEVICE $T/none-at-all" >conf4
expect 3 "--oneshot on a served RAID-5 with two roles failed: exit 3" -- "$G" monitor --oneshot \
	--run-dir "$T/run4" --config "$T/conf4"
has out " array-failed $XU - source=holder$" "reported array-failed"
hasnt out " degraded $XU " "not merely degraded"

# --- a replace in service on a served array: its device and states from the holder --------
# (docs/REPLACE.md: the role stays active; the swap at the end sends rebuild-done.)
mkdir -m 700 run5
truncate -s 17M p0 p1 p2 q1 r0 r1 r2 s0
expect 0 "create RAID-5 on p0..p2" -- "$G" create -l 5 -s 16M p0 p1 p2
expect 0 "create RAID-5 on r0..r2" -- "$G" create -l 5 -s 16M r0 r1 r2
echo "DEVICE $T/p? $T/q? $T/r? $T/s?" >conf5
uuid_of() {
	"$G" list --scan --json --config "$T/conf5" | "$PY" -c "import json,sys; d=json.load(sys.stdin)
print([a['uuid'] for a in d['arrays'] if any(m['path'].endswith('/$1') for m in a['devices'])][0])"
}
PU=$(uuid_of p0) RU=$(uuid_of r0)
GRAID_RUN_DIR=$T/run5 "$FILL" --control --hold-after 4M "$T/p0" "$T/p1" "$T/p2" >fill.p 2>&1 &
pids+=($!)
GRAID_RUN_DIR=$T/run5 "$FILL" --control --hold-after 4M "$T/r0" "$T/r1" "$T/r2" >fill.r 2>&1 &
rholder=$!
pids+=($rholder)
wait_for fill.p holding 60 && wait_for fill.r holding 60 && ok "the p and r arrays are held" ||
	bad "graid_fill: $(cat fill.p fill.r)"
monitor m9.out --run-dir "$T/run5" --config "$T/conf5" --state-file none --delay 1
sleep 2 # subscribed, and its first look
expect 0 "replace role 1 of the p array in service with q1" -- env GRAID_RUN_DIR="$T/run5" \
	"$G" replace --keep-in-service 1 q1 p0 p1 p2
wait_for m9.out " rebuild-done $PU " 10 && ok "rebuild-done of the replace in service" ||
	{ bad "no rebuild-done"; cat m9.out m9.out.err; }
expect 0 "fail role 1 of the p array (now q1) through its holder" -- env GRAID_RUN_DIR="$T/run5" \
	"$G" fail 1 p0 q1 p2
wait_for m9.out " member-failed $PU .*role=1 " 10
has m9.out " member-failed $PU $T/q1 .*role=1 " "member-failed names q1, the role's device since the swap"
# A replace in service whose holder dies mid-copy: the role was active all along.
GRAID_RUN_DIR=$T/run5 "$G" replace --keep-in-service --max-rate 512K 0 s0 r0 r1 r2 >rep.out 2>&1 &
rep=$!
pids+=($rep)
wait_for m9.out " rebuild-started $RU " 10 && ok "rebuild-started of the slow replace in service" ||
	{ bad "no rebuild-started for r"; cat m9.out rep.out; }
sleep 0.5
kill -9 "$rholder" "$rep"
wait "$rholder" "$rep" 2>/dev/null
wait_for m9.out.err "$RU: its holder closed" 5 || bad "the r holder's end unseen"
sleep 3 # looks at the r array, unserved now
stop_monitor
hasnt m9.out " rebuild-done $RU " "no false rebuild-done once the holder died mid-replace"
hasnt m9.out " optimal $RU " "no false optimal either"

# --- a replay named only where sure; a holder known by its pid and its start -------------
# A scripted holder whose role 1 was replaced (failed, rebuilt onto /z3) and whose role 2 was
# replaced in service (the swap at its rebuild-done), all before the monitor subscribed: its
# status names the devices now, which were not those of the earlier events.
cat >fake2.py <<'EOF2'
import json, os, socket, sys, threading
path, log = sys.argv[1:3]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(path)
s.listen(4)
open(path + ".pid", "w").write(str(os.getpid()))
status = {"level": 5, "nmembers": 3, "holder_pid": os.getpid(),
          "holder": "pid %d (python3) on host h since 2026-12-06 10:00:00 UTC" % os.getpid(),
          "members": [{"role": 0, "state": "active", "path": "/z0"},
                      {"role": 1, "state": "active", "path": "/z3"},
                      {"role": 2, "state": "active", "path": "/z4"}]}
events = [("member-failed", 1), ("rebuild-started", 1), ("rebuild-done", 1),
          ("bad-block", 2), ("rebuild-started", 2), ("rebuild-done", 2)]
def serve(c):
    f = c.makefile("rwb", buffering=0)
    for line in f:
        req = json.loads(line)
        open(log, "a").write(json.dumps(req) + "\n")
        if req.get("op") == "subscribe":
            f.write(json.dumps({"ok": True, "seq": len(events)}).encode() + b"\n")
            for n, (name, role) in enumerate(events, 1):
                if n > req["since"]:
                    f.write(json.dumps({"event": name, "seq": n, "time_ns": 0, "member": role,
                                        "stripe": 7}).encode() + b"\n")
            continue
        r = {"id": req.get("id"), "ok": True}
        r.update(protocol=1, version="0.0.1-fake") if req.get("op") == "hello" else r.update(status)
        f.write(json.dumps(r).encode() + b"\n")
while True:
    threading.Thread(target=serve, args=(s.accept()[0],), daemon=True).start()
EOF2
mkdir -m 700 run6
ZU=0f0f0f0f-0000-4000-8000-000000000003
"$PY" fake2.py "$T/run6/$ZU.ctl" "$T/fake2.log" &
pids+=($!)
wait_for run6/$ZU.ctl.pid . 10
zpid=$(cat run6/$ZU.ctl.pid)
monitor m10.out --run-dir "$T/run6" --config "$T/conf4" --state-file "$T/m10.state" --delay 60
wait_for m10.out " rebuild-done $ZU .*seq=6$" 10 || { bad "the replay"; cat m10.out m10.out.err; }
stop_monitor
has m10.out " member-failed $ZU role:1 .*seq=1$" "a replayed member-failed before the role's rebuild names role:1, not the device that replaced it"
has m10.out " rebuild-started $ZU /z3 .*seq=2$" "its rebuild-started (a plain rebuild: no swap after it) names the role's device"
has m10.out " rebuild-done $ZU /z3 .*seq=3$" "and its rebuild-done"
has m10.out " bad-block $ZU role:2 .*seq=4$" "an event before a replace in service's end names role:2"
has m10.out " rebuild-started $ZU role:2 .*seq=5$" "and that replace's rebuild-started (the swap after it)"
has m10.out " rebuild-done $ZU /z4 .*seq=6$" "its rebuild-done names the device after the swap"
has m10.state "^$ZU $zpid 6 2026-12-06_10:00:00_UTC 000$" "the state file keeps the holder's pid, its start and the roles"
# The same pid, another start: another holder (the pid reused); its events from the first.
rm -f fake2.log
echo "$ZU $zpid 6 2026-12-06_09:00:00_UTC 000" >m10.state
monitor m11.out --run-dir "$T/run6" --config "$T/conf4" --state-file "$T/m10.state" --delay 60
wait_for fake2.log subscribe 10
sleep 0.5
stop_monitor
has fake2.log '"op": "subscribe", "since": 0}' "a holder with the saved pid but another start: subscribed from its first event"
has m11.out " member-failed $ZU role:1 .*seq=1$" "and its first event reported"
rm -f fake2.log
echo "$ZU $zpid 4 2026-12-06_10:00:00_UTC 000" >m10.state
monitor m12.out --run-dir "$T/run6" --config "$T/conf4" --state-file "$T/m10.state" --delay 60
wait_for m12.out " rebuild-done $ZU .*seq=6$" 10
stop_monitor
has fake2.log '"op": "subscribe", "since": 4}' "the same pid and start: subscribed from the saved number"
hasnt m12.out "seq=[1-4]$" "and nothing reported again"

# --- the unit: systemd-analyze verify, and its ExecStart's options are graidctl's ----------
if [ -n "$UNIT" ] && command -v systemd-analyze >/dev/null; then
	# The installed graidctl is not where the tests run: the built one in its place.
	sed "s|^ExecStart=[^ ]*/graidctl |ExecStart=$G |" "$UNIT" >graid-monitor.service
	if systemd-analyze verify --man=no "$T/graid-monitor.service" >out 2>&1 && [ ! -s out ]; then
		ok "systemd-analyze verify graid-monitor.service: no complaint"
	else
		bad "systemd-analyze verify graid-monitor.service"; sed 's/^/     /' out
	fi
	opts=$(sed -n 's/^ExecStart=[^ ]*graidctl monitor//p' "$UNIT")
	expect 3 "the unit's options ($opts) with --oneshot (the c array is degraded)" -- "$G" monitor $opts --oneshot \
		--run-dir "$T/run2"
fi

echo "# $pass passed, $fail failed"
[ "$fail" -eq 0 ]
