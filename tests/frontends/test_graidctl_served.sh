#!/bin/bash
# SPDX-License-Identifier: MIT
# graidctl on a served array: its commands go through the holder's control endpoint.
# usage: test_graidctl_served.sh PATH/TO/graidctl PATH/TO/graid_fill PATH/TO/fake_control.py
set -u
# The shared helpers: counts, ok, bad, expect, has, hasnt, json, check, workdir (lib.sh).
. "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"

G=${1:?usage: test_graidctl_served.sh PATH/TO/graidctl PATH/TO/graid_fill}
[ -x "$G" ] || { echo "SKIP: $G is not an executable"; exit 77; }
G=$(readlink -f "$G") # meson passes it relative to the build folder; we work elsewhere
FILL=$(readlink -f "${2:?usage: test_graidctl_served.sh PATH/TO/graidctl PATH/TO/graid_fill}")
# A scripted endpoint: graidctl's side of ops the holder's library may not have yet.
FAKE=$(readlink -f "${3:?usage: test_graidctl_served.sh ... PATH/TO/fake_control.py}")
PY=$(command -v python3) || { echo "SKIP: python3 is needed to check the JSON"; exit 77; }

workdir graidctl-served
# The holders serve their endpoints here, and graidctl looks for them here.
export GRAID_RUN_DIR=$T/run

skip=0

# interrupt_when_following PID START POLL: once the graidctl PID has sent a POLL request
# after its START request (it follows the holder's work: its SIGINT handler is in place),
# Ctrl-C it; its exit status, or 124 when it did not follow within 60 s or did not end 30 s
# after the SIGINT (then killed).
following() { sed -n "/$1/,\$p" requests | grep -qF "$2"; }
interrupt_when_following() {
	local pid=$1 i
	for i in $(seq 600); do following "$2" "$3" && break; sleep 0.1; done
	if ! following "$2" "$3"; then kill -KILL "$pid"; wait "$pid"; return 124; fi
	kill -INT "$pid"
	for i in $(seq 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	if kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid"; wait "$pid"; return 124; fi
	wait "$pid"
}
# run CODE... like expect, but keeps the exit code in rc_last and does not judge it.
run() { "$@" >out 2>err; rc_last=$?; }
# hold WHERE ARGS...: start graid_fill holding an array, wait until it has written.
hold() {
	local where=$1
	shift
	"$FILL" "$@" >"$where" 2>&1 &
	pids+=($!)
	holder=$!
	for i in $(seq 600); do grep -q holding "$where" && break; sleep 0.1; done
	grep -q holding "$where" && ok "graid_fill $* holds the array" ||
		bad "graid_fill $* never held the array: $(cat "$where")"
}

truncate -s 17M c0 c1 c2 c3 s0 s1 n2 n3 d0 d1 d2
expect 0 "create RAID-5 on c0..c3" -- "$G" create -l 5 -s 16M c0 c1 c2 c3
expect 0 "create RAID-5 on d0..d2" -- "$G" create -l 5 -s 16M d0 d1 d2
C="c0 c1 c2 c3"

# --- a holder serving its endpoint: status is its live state -----------------------------
hold fill.out --control --hold-after 4M $C
served=$holder
expect 0 "status of the served array" -- "$G" status $C
has out "held by : pid $served \(graid_fill\).*\(live state, from its control endpoint\)" \
	"status names the holder and says the state is its live one"
has out "state : clean" "the served array is clean"
expect 0 "status --json of the served array" -- "$G" status --json $C
# A look writes nothing: only the holder's counters show graid_fill's 4 MiB of writes.
json "status --json has the holder's live counters (its writes), holder named" \
	"d['holder_pid'] == $served and d['state'] == 'clean' and \
	 sum(m['write_bytes'] for m in d['members']) >= 4 << 20 and \
	 all(m['writes'] > 0 for m in d['members'][:4]) and len(d['given']) == 4"
json "status --json has the holder's I/O statistics: its writes, per role" \
	"d['stats']['array']['write']['bytes'] >= 4 << 20 and len(d['stats']['members']) == 4 and \
	 all(m['write']['ops'] > 0 for m in d['stats']['members'])"

# --- iostat: the holder's counters, as rates -----------------------------------------------
expect 0 "iostat of the served array" -- "$G" iostat $C
has out "^ +read/s +write/s +flush/s +disc/s +rd B/s +wr B/s +errors$" "iostat prints its header"
has out "^array +[0-9.]+[KMG]? +[1-9][0-9.]*[KMG]? " "the array's row shows its writes"
has out "^  role 3 c3 +[0-9.]+[KMG]? +[0-9.]+[KMG]? +[0-9.]+[KMG]? +[0-9.]+[KMG]? +[0-9.]+[KMG]? +[1-9][0-9.]*[KMG]? " "a row per role, its device named, with its write bandwidth"
expect 0 "iostat --json, 2 reports 0.2 s apart" -- "$G" iostat --json $C 0.2 2
[ "$(wc -l <out)" -eq 2 ] && ok "two reports" || bad "$(wc -l <out) reports, wanted 2"
expect 0 "iostat -w turns the holder's histograms on" -- "$G" iostat -w $C 0.2 1
has out "^latency +read +write +flush +discard$" "-w prints latency histograms"
run "$G" status --json $C
json "the holder keeps histograms now" "d['stats']['histograms'] is True"

# --- spare add, fail: through the holder, printed and exit codes as unserved -------------
expect 0 "spare add through the holder" -- "$G" spare add s0 $C
has out "^s0 added as a hot spare$" "spare add prints as unserved"
expect 0 "status --json shows the holder's new spare" -- "$G" status --json $C
json "the holder lists s0 as a spare" \
	"any(m['state'] == 'spare' and m['path'].endswith('/s0') for m in d['members'])"
expect 1 "spare add of a member through the holder" -- "$G" spare add c2 $C
has err "spare: adding c2: refused: it is a member of this array" "the refusal is the unserved one's"
expect 2 "fail of a role past the array's" -- "$G" fail 7 $C
has err "fail: member index 7 is out of range: the array has roles 0..3" "the usage error is the unserved one's"
expect 0 "fail role 1 through the holder" -- "$G" fail 1 $C
has out "^member 1 \(c1\) marked failed$" "fail prints as unserved"
has out "hot spare .*s0 took role 1; it rebuilds in the holder \(pid $served\)" \
	"and says the spare rebuilds in the holder"
# s0 is role 1 now: the members given from here on are the array's as it is.
C="c0 s0 c2 c3"
run "$G" status --json $C
json "the holder's role 1 is s0, rebuilding or done" \
	"d['members'][1]['path'].endswith('/s0') and \
	 d['members'][1]['state'] in ('rebuilding', 'active')"
for i in $(seq 300); do
	"$G" status --json $C >out 2>/dev/null && break
	sleep 0.2
done
json "the spare's rebuild in the holder finishes: role 1 active, its catch-up complete" \
	"d['state'] == 'clean' and d['members'][1]['state'] == 'active' and \
	 d['members'][1]['catchup_total'] > 0 and \
	 d['members'][1]['catchup_done'] == d['members'][1]['catchup_total']"
expect 0 "fail role 2 through the holder" -- "$G" fail 2 $C
expect 1 "fail role 0 as well: refused" -- "$G" fail 0 $C
has err "fail: member 0 \(c0\): refused: the array cannot lose it without losing data" \
	"the refusal is the unserved one's"
expect 3 "status --json: role 2 failed in the holder" -- "$G" status --json $C
json "the holder's role 2 is failed" "d['members'][2]['state'] == 'failed' and d['nfailed'] == 1"
expect 3 "status (text) through the holder" -- "$G" status $C
has out "^ +2 failed " "the text shows the holder's role 2 failed"

# --- replace, rebuild through the holder (their progress comes from the holder's status) ---
expect 1 "replace of an active role" -- "$G" replace 0 n2 $C
has err "replace: member 0 with n2: role 0 is active; only a failed or missing role can be replaced" \
	"the refusal is the unserved one's"
run "$G" replace 2 n2 $C
C="c0 s0 n2 c3"
[ "$rc_last" -eq 0 ] && ok "replace 2 through the holder (exit 0)" ||
	{ bad "replace 2 through the holder: exit $rc_last"; cat out err; }
has out "^n2 is member 2, rebuilding$" "replace prints as unserved"
has out "^rebuild finished in" "and follows the rebuild to its end"
expect 0 "status after the replace" -- "$G" status --json $C
json "the holder's role 2 is n2, active" \
	"d['members'][2]['path'].endswith('/n2') and d['members'][2]['state'] == 'active'"
run "$G" rebuild $C
[ "$rc_last" -eq 0 ] && ok "rebuild through the holder, nothing to do (exit 0)" ||
	{ bad "rebuild through the holder: exit $rc_last"; cat out err; }
has out "^rebuild finished in" "rebuild prints as unserved"

# --- replace --keep-in-service through the holder: the role stays active until the swap ---
run "$G" replace --keep-in-service 3 n3 $C
[ "$rc_last" -eq 0 ] && ok "replace --keep-in-service 3 through the holder (exit 0)" ||
	{ bad "replace --keep-in-service 3 through the holder: exit $rc_last"; cat out err; }
has out "^copying member 3 \(.*c3\) onto n3 while it stays in service$" "says what it copies"
has out "n3 is member 3; the old member is let go" "and that n3 took the role"
C="c0 s0 n2 n3"
expect 0 "status after the replace in service" -- "$G" status --json $C
json "the holder's role 3 is n3, active, no copy left" \
	"d['members'][3]['path'].endswith('/n3') and d['members'][3]['state'] == 'active' and \
	 not d['members'][3]['replacing'] and d['nfailed'] == 0"

# --- scrub, scrub --stop, spare remove through the holder --------------------------------
run "$G" scrub $C
[ "$rc_last" -eq 0 ] && ok "scrub through the holder (exit 0)" ||
	{ bad "scrub through the holder: exit $rc_last"; cat out err; }
has out "^scrub \(check only\) in [0-9.]+ s: [1-9][0-9]* stripes checked, 0 skipped, 0 mismatches, 0 repaired$" \
	"scrub prints the unserved scrub's report"
expect 0 "status --json after it" -- "$G" status --json $C
json "shows the holder's scrub, done" "d['scrub']['state'] == 'done' and d['scrub']['mismatches'] == 0"
expect 0 "scrub --stop with none running" -- "$G" scrub --stop $C
has out "no scrub is running in the holder \(pid $served\)" "says none runs"
run "$G" spare remove s1 $C
[ "$rc_last" -eq 1 ] && ok "spare remove of a device that is no spare (exit 1)" ||
	{ bad "spare remove s1: exit $rc_last"; cat out err; }
has err "spare: removing s1: no hot spare of this array has that path" "which it says"
expect 0 "spare add s1 through the holder" -- "$G" spare add s1 $C
expect 0 "spare remove s1 through the holder" -- "$G" spare remove s1 $C
has out "^s1 removed from the hot spares$" "spare remove says so"
"$G" status --json $C >out 2>/dev/null
json "the holder lists no spare s1" \
	"not any(m['path'] and m['path'].endswith('/s1') for m in d['members'])"

# --- checksum mismatches: counted in the holder, shown by status --------------------------
truncate -s 17M k0 k1 k2
expect 0 "create RAID-5 --checksums on k0..k2" -- "$G" create -l 5 --checksums -s 16M k0 k1 k2
hold fill-k.out --control --hold-after 4M k0 k1 k2
kheld=$holder
expect 0 "status --json of the served checksummed array" -- "$G" status --json k0 k1 k2
json "no role has a checksum error yet" \
	"all(m['checksum_errors'] == 0 and m['checksum_tag_errors'] == 0 for m in d['members'])"
# A byte of role 1's first data-area block (written by the holder, so tagged) changed behind it.
"$PY" -c "
import struct, sys
with open(sys.argv[1], 'r+b') as f:
    f.seek(0x50); at = struct.unpack('<Q', f.read(8))[0] + 100
    f.seek(at); b = f.read(1); f.seek(at); f.write(bytes([b[0] ^ 0xa5]))" k1
run "$G" scrub k0 k1 k2
[ "$rc_last" -eq 0 ] && ok "scrub through the holder heals the block (exit 0)" ||
	{ bad "scrub of the checksummed array: exit $rc_last"; cat out err; }
expect 0 "status --json after it" -- "$G" status --json k0 k1 k2
json "the holder counted the block on role 1, data wrong, not an I/O error" \
	"[m['checksum_errors'] for m in d['members']] == [0, 1, 0] and \
	 all(m['checksum_tag_errors'] == 0 and m['errors'] == 0 for m in d['members'])"
expect 0 "status (text) after it" -- "$G" status k0 k1 k2
has out "checksums : on \(a CRC-32C tag per 4 KiB block\); 1 block failed the check since the holder's open \(0 of them a wrong tag over right data; csum below\)$" \
	"the checksums line says how many blocks failed, since the holder's open"
has out "^role state +direct +reads +writes +read +written +errors +csum +path \[identity\]$" \
	"the roles' table has a csum column"
has out "^ +1 active .* 0 +1  (.*/)?k1 \[" "role 1's row counts its block"
has out "^ +0 active .* 0 +0  (.*/)?k0 \[" "role 0's row counts none"
kill -9 "$kheld"
wait "$kheld" 2>/dev/null

# --- a holder without an endpoint: refused, naming it and how to get one ------------------
hold fill-d.out --hold-after 1M d0 d1 d2
plain=$holder
expect 1 "fail on an array held without an endpoint" -- "$G" fail 1 d0 d1 d2
has err "fail: refused while pid $plain \(graid_fill\) on host .* holds the array: make the change through that program" \
	"the refusal names the holder"
has err "serves no control endpoint .*graid-ublk and the nbdkit plugin serve one by default.*graid_array_control_start\(\); nothing was changed" \
	"and says how to get an endpoint"
expect 1 "scrub --stop on it" -- "$G" scrub --stop d0 d1 d2
has err "pid $plain \(graid_fill\).* serves no control endpoint" "scrub --stop names the holder"
expect 0 "status on it: the members' view, as before" -- "$G" status d0 d1 d2
has out "held by : pid $plain \(graid_fill\)" "status names the holder"
! grep -q "live state" out && ok "and does not claim a live state" || bad "live state claimed"

# --- an endpoint whose holder lacks an op: exit 5, saying so (a fake endpoint) -----------
"$G" status --json d0 d1 d2 >out.json 2>/dev/null
uuid=$("$PY" -c "import json; print(json.load(open('out.json'))['uuid'])")
mkdir -p -m 0700 "$GRAID_RUN_DIR"
# An endpoint that accepts nothing, its backlog full (a holder stuck in a long request with
# others queued): status gives up on it after 5 s and shows the members' view.
"$PY" -c "
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(sys.argv[1]); s.listen(0)
held = []
for i in range(4):
    c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); c.setblocking(False)
    try: c.connect(sys.argv[1])
    except OSError: pass
    held.append(c)
print('deaf', flush=True)
time.sleep(120)" "$GRAID_RUN_DIR/$uuid.ctl" >deaf.out 2>&1 &
deaf=$!
for i in $(seq 100); do grep -q deaf deaf.out && break; sleep 0.1; done
start=$(date +%s)
timeout 50 "$G" status d0 d1 d2 >out 2>err
rc=$? took=$(( $(date +%s) - start ))
[ "$rc" -eq 0 ] && [ "$took" -lt 30 ] && ok "status past an endpoint that accepts nothing: the look, in ${took} s" ||
	{ bad "status past a deaf endpoint: exit $rc after ${took} s"; sed 's/^/     err: /' err; }
has err "accepted no connection within 5 s" "and says why it did not use the endpoint"
kill "$deaf" 2>/dev/null; wait "$deaf" 2>/dev/null
rm -f "$GRAID_RUN_DIR/$uuid.ctl"
echo old >mode
"$PY" "$FAKE" "$GRAID_RUN_DIR/$uuid.ctl" mode requests >fake.out 2>&1 &
pids+=($!)
for i in $(seq 100); do grep -q listening fake.out && break; sleep 0.1; done
expect 5 "rebuild through an endpoint that lacks the op" -- "$G" rebuild d0 d1 d2
has err "rebuild: the holder, pid $plain \(graid_fill\).*, runs libgraid 0.0.1-fake, which has no 'rebuild' operation" \
	"says the holder's libgraid is too old for it"
expect 5 "spare add through it" -- "$G" spare add s1 d0 d1 d2
has err "which has no 'spare-add' operation" "names the op"
expect 0 "status --json through it: the members' view, the endpoint's problem said" -- \
	"$G" status --json d0 d1 d2
json "still one JSON document, of the members' view" "d['holder_pid'] == $plain and d['scrub'] is None"
has err "unknown op 'status'" "the endpoint's answer is said"

# --- the client's following of long work, against the scripted endpoint ------------------
echo new >mode
expect 0 "rebuild through the scripted endpoint" -- "$G" rebuild d0 d1 d2
has out "^rebuild: [0-9.]+% \(" "shows the rebuild's progress from the holder's status"
has out "^rebuild: 100.0% \(64 MiB of 64 MiB\)" "up to its end"
has out "^rebuild finished in" "and ends as the unserved rebuild does"
: >requests
expect 0 "replace --max-rate through it" -- "$G" replace --max-rate 1M 1 s1 d0 d1 d2
has out "^s1 is member 1, rebuilding$" "replace prints as unserved"
has out "^rebuild finished in" "and follows the rebuild"
has requests '"bytes_per_s": 1048576, "op": "rebuild-rate"' "the rate went to the holder"
has requests "\"op\": \"replace\", \"path\": \"$T/s1\", \"role\": 1" \
	"the new device's path went absolute (the holder's cwd is not ours)"
echo lose >mode
expect 1 "a rebuild whose role fails in the holder" -- "$G" rebuild d0 d1 d2
has err "rebuild: rebuild: role 1 failed in the holder \(pid $plain\)" "says which role, where"
echo halt >mode
expect 1 "a rebuild the holder stopped with roles left" -- "$G" rebuild d0 d1 d2
has err "rebuild: rebuild: the holder \(pid $plain\) stopped rebuilding before it finished" \
	"says the holder's rebuild stopped, not a role failed"
echo stuck >mode
: >requests
"$G" rebuild d0 d1 d2 >out 2>err &
follower=$!
interrupt_when_following "$follower" '"op": "rebuild"' '"op": "status"'
rc=$?
[ "$rc" -eq 0 ] && ok "Ctrl-C detaches from a rebuild (exit 0)" || bad "Ctrl-C: exit $rc"
has out "detached: the rebuild goes on in the holder \(pid $plain\); 'graidctl status' shows it" \
	"and says where it goes on"
echo new >mode
: >requests
expect 3 "scrub through it: two mismatches" -- "$G" scrub d0 d1 d2
has requests '"op": "scrub-start", "repair": false, "resume": true' "a resumed check, as unserved"
has out "^scrub: 100.0% " "shows the scrub's progress"
has out "^scrub \(check only\) in [0-9.]+ s: 100 stripes checked, 0 skipped, 2 mismatches, 0 repaired$" \
	"prints the unserved scrub's report"
has out "^  stripe 5: member 1 wrong$" "names the member found wrong"
has out "^  stripe 9: inconsistent" "and the stripe with none to blame"
expect 3 "scrub --repair --restart through it" -- "$G" scrub --repair --restart d0 d1 d2
has requests '"op": "scrub-start", "repair": true, "resume": false' "sends repair, not resume"
echo busy >mode
expect 1 "scrub while one runs in the holder" -- "$G" scrub d0 d1 d2
has err "scrub: a scrub is already running in the holder \(pid $plain\)" "says so"
echo stuck >mode
: >requests
"$G" scrub d0 d1 d2 >out 2>err &
follower=$!
interrupt_when_following "$follower" '"op": "scrub-start"' '"op": "scrub-status"'
rc=$?
[ "$rc" -eq 0 ] && ok "Ctrl-C detaches from a scrub (exit 0)" || bad "Ctrl-C: exit $rc"
has out "detached: the scrub goes on in the holder \(pid $plain\).*'graidctl scrub --stop' stops it" \
	"and says how to stop it"
expect 3 "status while the holder scrubs" -- "$G" status d0 d1 d2
has out "scrub : running in the holder, [0-9.]+% \([0-9.]+ [KMG]?i?B of 64 MiB\), check only" \
	"status shows the holder's scrub"
expect 3 "status --json while the holder scrubs" -- "$G" status --json d0 d1 d2
json "status --json has the holder's scrub" \
	"d['scrub']['state'] == 'running' and d['scrub']['total'] == 64 << 20"
expect 0 "scrub --stop through it" -- "$G" scrub --stop d0 d1 d2
has out "scrub stopped in the holder \(pid $plain\) at 50.0% \(32 MiB of 64 MiB\)" \
	"prints where the stopped scrub got"
expect 0 "spare remove through it" -- "$G" spare remove s1 d0 d1 d2
has out "^s1 removed from the hot spares$" "prints as unserved"
expect 1 "spare remove of no spare through it" -- "$G" spare remove nosuch d0 d1 d2
has err "spare: removing nosuch: no hot spare of this array has that path" "says so"

# --- unserved again: scrub --stop says no scrub runs there ------------------------------
kill -9 "$plain"
wait "$plain" 2>/dev/null
expect 1 "iostat on an array nobody holds" -- "$G" iostat d0 d1 d2
has err "no process holds this array: it is not served, so it does no I/O" "says there is no I/O to show"
expect 1 "scrub --stop on an array nobody holds" -- "$G" scrub --stop d0 d1 d2
has err "no scrub is running on this array: no process holds it" "says so, and why"
run "$G" spare remove s1 d0 d1 d2
[ "$rc_last" -eq 1 ] && ok "unserved spare remove of no spare (exit 1)" ||
	{ bad "unserved spare remove: exit $rc_last"; cat out err; }
has err "spare: removing s1: no hot spare of this array has that path" "says so"

# --- grow through the holder: the op, its progress followed, status shows it ------------
truncate -s 5M q0 q1 q2 q3 q4 q5
expect 0 "create RAID-0 on q0..q2" -- "$G" create -l 0 -s 4M q0 q1 q2
hold fill-q.out --control --hold-after 1M q0 q1 q2
qheld=$holder
expect 0 "grow --add q3 through the holder" -- "$G" grow --add q3 q0 q1 q2
has out "^growing to 4 members in the holder \(pid $qheld\)$" "says the holder grows it"
has out "^grow finished in " "follows it to the end"
has out "^grown: 4 members, 16777216 bytes$" "prints the new count and size, as unserved"
expect 0 "status --json after it" -- "$G" status --json q0 q1 q2 q3
json "the holder's array: four members, 16 MiB, no reshape" \
	"d['holder_pid'] == $qheld and d['nmembers'] == 4 and d['size'] == 16 << 20 and \
	 not d['reshape']['reshaping']"
# Slow (64 KiB/s a member): followed, then Ctrl-C once a progress line shows it follows.
"$G" grow --max-rate 64K --add q4 q0 q1 q2 q3 >out 2>err &
follower=$!
for i in $(seq 300); do grep -q "^grow: " out && break; sleep 0.1; done
kill -INT "$follower"
wait "$follower"
rc=$?
[ "$rc" -eq 0 ] && ok "Ctrl-C detaches from a grow in the holder (exit 0)" ||
	{ bad "Ctrl-C of grow: exit $rc"; cat out err; }
has out "^growing to 5 members in the holder \(pid $qheld\)$" "it said the holder grows it"
has out "detached: the grow goes on in the holder \(pid $qheld\)" "and that it goes on there"
expect 0 "status while the holder moves it" -- "$G" status q0 q1 q2 q3 q4
has out "reshape : growing to 5 members, [0-9.]+% moved \([0-9.]+ [KMG]?i?B of 16 MiB\)" \
	"status shows the holder's reshape"
expect 0 "status --json while the holder moves it" -- "$G" status --json q0 q1 q2 q3 q4
json "its JSON: reshaping and running in the holder, of 16 MiB, the old size" \
	"d['reshape']['reshaping'] and d['reshape']['running'] and \
	 d['reshape']['total_bytes'] == 16 << 20 and d['size'] == 16 << 20 and d['nmembers'] == 5"
expect 1 "a second grow while it moves" -- "$G" grow --no-wait --add q5 q0 q1 q2 q3 q4
has err "grow: Device or resource busy \(a reshape runs already" "is refused by the holder"
kill -9 "$qheld"
wait "$qheld" 2>/dev/null

# --- convert through the holder: a RAID-1 of two to RAID-5 and back (the convert op) ------
truncate -s 5M cv0 cv1
expect 0 "create RAID-1 on cv0 cv1" -- "$G" create -l 1 -s 4M cv0 cv1
hold fill-cv.out --control --hold-after 1M cv0 cv1
cheld=$holder
expect 0 "convert --level 5 through the holder" -- "$G" convert --level 5 cv0 cv1
has out "^now a RAID-5 of 2 members$" "prints the new level and count"
expect 1 "convert --level 5 of the RAID-5 of two" -- "$G" convert --level 5 cv0 cv1
has err "convert: Operation not supported" "is refused by the holder"
expect 0 "convert --level 1 through the holder" -- "$G" convert --level 1 cv0 cv1
has out "^now a RAID-1 of 2 members$" "back to RAID-1"
kill -9 "$cheld"
wait "$cheld" 2>/dev/null

# --- drive health: the holder's watch's last sample and rules; a look reads the drive ----
# A scripted drive (the fault model's health=FILE): only in builds with fault injection.
if [ "${GRAID_TEST_FAULT_INJECTION:-1}" = 1 ]; then
	truncate -s 17M h0 h1 h2
	expect 0 "create RAID-5 on h0..h2" -- "$G" create -l 5 -s 16M h0 h1 h2
	printf 'critical_warning 4\navailable_spare 50\nspare_threshold 10\npercent_used 7\ntemperature_c 41\nmedia_errors 3\n' >hdrive
	expect 0 "status of the unserved array: health read from the scripted drive" -- \
		"$G" status "faulty:health=$T/hdrive:h0" h1 h2
	has out "^health \(read from each drive now\):" "status has a health table, read now"
	has out "^   0 scripted  0x04   50%/10%    7%  41 C          3 +[0-9]+ ms  - \(not judged: no watch\)$" \
		"role 0's sample, not judged"
	! grep -Eq "^   1 scripted" out && ok "a file has no health row" || bad "role 1 has a health row"
	expect 0 "status --json of it" -- "$G" status --json "faulty:health=$T/hdrive:h0" h1 h2
	json "its JSON: role 0's sample, rules null; role 1 null" \
		"d['members'][0]['health']['sample']['critical_warning'] == 4 and \
		 d['members'][0]['health']['sample']['media_errors'] == 3 and \
		 d['members'][0]['health']['rules'] is None and d['members'][1]['health'] is None"
	GRAID_FILL_HEALTH_MS=100 hold hfill.out --control --hold-after 1M "faulty:health=$T/hdrive:h0" h1 h2
	hholder=$holder
	for i in $(seq 100); do
		"$G" status --json h0 h1 h2 >out 2>/dev/null
		grep -q '"verdict"' out && break
		sleep 0.1
	done
	expect 0 "status --json of the served array" -- "$G" status --json h0 h1 h2
	json "the holder's sample of role 0, with its age, and the rule that holds" \
		"d['members'][0]['health']['sample']['critical_warning'] == 4 and \
		 d['members'][0]['health']['sample']['available_spare'] == 50 and \
		 d['members'][0]['health']['sample']['spare_threshold'] == 10 and \
		 d['members'][0]['health']['sample']['percent_used'] == 7 and \
		 d['members'][0]['health']['sample']['temperature_c'] == 41 and \
		 d['members'][0]['health']['sample']['age_ms'] < 10000 and \
		 d['members'][0]['health']['rules'] == ['critical-warning'] and \
		 d['members'][0]['health']['verdict'] == 'critical' and \
		 d['members'][1]['health'] is None"
	expect 0 "status of the served array" -- "$G" status h0 h1 h2
	has out "^health \(the holder's watch, its last sample\):" "status has the holder's health table"
	has out "^   0 scripted  0x04   50%/10%    7%  41 C          3 +[0-9]+ (ms|s)  critical: critical-warning$" \
		"role 0's sample, its age and the rule holding"
	kill -9 "$hholder"
	wait "$hholder" 2>/dev/null
fi

echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
