#!/bin/bash
# SPDX-License-Identifier: MIT
# How the nbdkit plugin starts and refuses to: two servers at once on one array, -r, a member
# path mistyped, a split RAID-1, an open that fails after the fork, and each warning once.
# usage: test_nbdkit_start.sh PATH/TO/graidctl PATH/TO/graid_fill PATH/TO/nbdkit-graid-plugin.so
set -u
# The shared helpers: counts, ok, bad, expect, has, hasnt, json, check, workdir (lib.sh).
. "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"

G=${1:?usage: test_nbdkit_start.sh GRAIDCTL GRAID_FILL PLUGIN}
FILL=${2:?usage: test_nbdkit_start.sh GRAIDCTL GRAID_FILL PLUGIN}
P=${3:-}
[ -n "$P" ] && [ -f "$P" ] || { echo "SKIP: the nbdkit plugin was not built (no nbdkit-plugin-dev)"; exit 77; }
# nbdkit itself is not built with the sanitizers, so it cannot load a plugin that is.
[ -z "${GRAID_SANITIZED:-}" ] || { echo "SKIP: sanitizer build: nbdkit cannot load an ASan-instrumented plugin"; exit 77; }
# meson passes them relative to the build folder; we work elsewhere.
G=$(readlink -f "$G") FILL=$(readlink -f "$FILL") P=$(readlink -f "$P")
for t in nbdkit nbdcopy nbdinfo sha1sum; do
	command -v $t >/dev/null || { echo "SKIP: $t is not installed (nbdkit, libnbd-bin)"; exit 77; }
done
# Rounds of the two-server race (each well under a second here).
ROUNDS=${GRAID_NBDKIT_RACE_ROUNDS:-40}

T=$(mktemp -d "${TMPDIR:-/tmp}/nbdkit-start.XXXXXX") || exit 1
cd "$T" || exit 1
# The servers' control endpoints go here, not in the host's /run/graid.
export GRAID_RUN_DIR=$T/run

has() { # has FILE PATTERN DESCRIPTION
	if grep -Eq -- "$2" "$1"; then ok "$3"; else bad "$3: no /$2/ in $1"; sed "s/^/     $1: /" "$1"; fi
}
hasnt() { # hasnt FILE PATTERN DESCRIPTION
	if ! grep -Eq -- "$2" "$1"; then ok "$3"; else bad "$3: /$2/ in $1"; sed "s/^/     $1: /" "$1"; fi
}

# A process that still runs. A zombie waiting for a slow reaper has let go of everything,
# unless it is a leader whose other threads are still exiting: they hold its files, the
# start lock among them, until they are gone (a start right after saw the lock held).
alive() {
	local st
	st=$(ps -o stat= -p "$1" 2>/dev/null)
	[ -n "$st" ] || return 1
	[ "${st#Z}" = "$st" ] && return 0
	[ "$(ls /proc/"$1"/task 2>/dev/null | wc -l)" -gt 1 ]
}
stop() { # stop NAME: SIGTERM to the server NAME.pid names, then wait until it is gone
	local pid i
	[ -s "$1.pid" ] || return 0
	pid=$(cat "$1.pid")
	kill "$pid" 2>/dev/null
	# Up to 30 s: on a loaded machine the close (a flush of every member) takes seconds.
	for i in $(seq 600); do alive "$pid" || break; sleep 0.05; done
	alive "$pid" && echo "# server $1 (pid $pid) still running 30 s after SIGTERM"
	rm -f "$1.pid"
}
trap 'for f in "$T"/*.pid; do [ -e "$f" ] && stop "${f%.pid}"; done; rm -rf "$T"' EXIT
# serve NAME ARGS...: nbdkit as a daemon (its default) on NAME.sock with pidfile NAME.pid,
# stderr in NAME.err; returns nbdkit's exit status, which is what the caller sees.
serve() {
	local name=$1
	shift
	stop "$name"
	rm -f "$name.sock"
	timeout 60 nbdkit -U "$T/$name.sock" -P "$name.pid" "$P" "$@" 2>"$name.err"
}
uri() { echo "nbd+unix:///?socket=$T/$1.sock"; }
answers() { nbdinfo --size "$(uri "$1")" >/dev/null 2>&1; }
serving() { [ -s "$1.pid" ] && alive "$(cat "$1.pid")" && answers "$1"; }
left_nothing() { [ ! -e "$1.pid" ] && [ ! -e "$1.sock" ]; }
# sums MEMBER...: a checksum line per member on stdout (a member that cannot be read fails).
sums() { sha1sum "$@" || bad "checksums of $*"; }

# --- two servers started together: exactly one serves, the other exits non-zero ----------
# What was wrong in a round, or nothing. Both servers are daemons, as nbdkit is by default:
# the exit status is the one of the process that nbdkit forks the server off. They name the
# members in different orders: the array is the same.
check_round() { # check_round ROUND RC_A RC_B
	local i=$1 ra=$2 rb=$3 win lose
	if [ "$ra" -eq 0 ] && [ "$rb" -ne 0 ]; then
		win=a lose=b
	elif [ "$rb" -eq 0 ] && [ "$ra" -ne 0 ]; then
		win=b lose=a
	else
		echo "round $i: exit statuses $ra and $rb, not one 0 and one other"
		return
	fi
	serving $win || echo "round $i: the server that exited 0 does not serve"
	grep -q "error" $lose.err || echo "round $i: the server that failed gave no error"
	left_nothing $lose || echo "round $i: the server that failed left a pidfile or socket"
}
check "create RAID-1 on r0 r1" "$G" create --level 1 --file-size 9M r0 r1
wrong=()
SECONDS=0
for i in $(seq "$ROUNDS"); do
	serve a r0 r1 &
	A=$!
	# The second a little later each round (0 to 19.5 ms): the rounds sweep through the
	# first one's start, the check, the fork and the open after it.
	{ sleep "$(printf '0.%04d' $(((i - 1) * 5)))"; serve b r1 r0; } &
	B=$!
	wait $A
	ra=$?
	wait $B
	rb=$?
	w=$(check_round "$i" "$ra" "$rb")
	[ -z "$w" ] || wrong+=("$w")
	stop a
	stop b
done
if [ ${#wrong[@]} -eq 0 ]; then
	ok "$ROUNDS rounds of two servers started together: one served, the other exited non-zero with an error and left nothing ($SECONDS s)"
else
	bad "two servers started together: ${#wrong[@]} of $ROUNDS rounds wrong"
	printf '     %s\n' "${wrong[@]}" | head -20
	sed 's/^/     a.err: /' a.err
	sed 's/^/     b.err: /' b.err
fi
serve a r0 r1
check "a server starts on r0 r1" serving a
serve b r0 r1
check "a second one, while it serves, exits non-zero" test $? -ne 0
has b.err "another nbdkit graid server .*serving" "saying another server holds the array"
check "and leaves no pidfile or socket" left_nothing b
stop a

# --- an open that fails after the fork fails the start too -------------------------------
# The check before the fork opens without the lease, the server with it: a lease area that
# does not exist fails only the open made after nbdkit forked into the background.
serve l r0 r1 lease=sanlock:host-id=1:"$T/no-such-lease-area"
check "an open failing after the fork makes nbdkit exit non-zero" test $? -ne 0
has l.err "did not start" "saying the server did not start"
has l.err "no-such-lease-area|lease" "and why"
check "and no server runs" bash -c "! { [ -s l.pid ] && ps -o stat= -p \$(cat l.pid) | grep -qv Z; }"
stop l

# --- -r: nothing is written to any member ------------------------------------------------
check "create RAID-5 on q0 q1 q2" "$G" create --level 5 --file-size 9M q0 q1 q2
check "fill it" "$FILL" q0 q1 q2
sums q0 q1 q2 >before
serve q -r q0 q1 q2
check "nbdkit -r starts" test $? -eq 0
check "and serves read-only" bash -c "nbdinfo '$(uri q)' | grep -q 'is_read_only: true'"
check "and serves no control endpoint (nothing to change)" \
	bash -c "! ls '$GRAID_RUN_DIR'/*.ctl >/dev/null 2>&1"
check "a client reads the whole array" nbdcopy "$(uri q)" q.back
head -c 1M /dev/urandom >one
if nbdcopy one "$(uri q)" >/dev/null 2>&1; then bad "a client write is refused"; else ok "a client write is refused"; fi
stop q
sums q0 q1 q2 >after
check "no byte of any member changed (-r, a client reading)" cmp before after
serve q -r q0 q1 q2
stop q
sums q0 q1 q2 >after
check "no byte changed (-r, started and stopped)" cmp before after
# After a crash, an open that may write resyncs; a read-only one must not.
rm -f w.sock
nbdkit -f -U "$T/w.sock" "$P" q0 q1 q2 2>w.err &
W=$!
# Up to a minute: on a loaded machine the start (auto's timing of every engine) takes seconds.
for i in $(seq 600); do answers w && break; sleep 0.1; done
nbdcopy one "$(uri w)" >/dev/null 2>&1
kill -9 $W
wait $W 2>/dev/null
sums q0 q1 q2 >before
rm -f q.sock
timeout 60 nbdkit -f --read-only -U "$T/q.sock" "$P" q0 q1 q2 2>q.err &
Q=$!
# Up to a minute: on a loaded machine the start (auto's timing of every engine) takes seconds.
for i in $(seq 600); do answers q && break; sleep 0.1; done
check "--read-only after a crash serves (foreground)" answers q
check "a client reads the whole array" nbdcopy "$(uri q)" q.back
kill $Q 2>/dev/null
wait $Q 2>/dev/null
sums q0 q1 q2 >after
check "no byte changed (--read-only after a crash: no resync, no superblock)" cmp before after

# --- a member path mistyped: refused, unless degraded=1 ----------------------------------
check "create RAID-5 on t0 t1 t2" "$G" create --level 5 --file-size 9M t0 t1 t2
truncate -s 9M s0
check "with a hot spare" "$G" spare add s0 t0 t1 t2
sums t0 t1 t2 s0 >before
serve t t0 t1x t2 s0
check "a start with t1 mistyped exits non-zero" test $? -ne 0
has t.err "role 1 .*not among the members given" "naming the role without a member"
has t.err "degraded=1" "and what to add to serve without it"
check "and leaves no pidfile or socket" left_nothing t
sums t0 t1 t2 s0 >after
check "and writes nothing (the spare is still a spare)" cmp before after
# A member left out by the library: the reason it gives is named with the role.
cp --sparse=always t1 t1.saved
truncate -s 5M t1
sums t0 t1 t2 s0 >before
serve t t0 t1 t2 s0
check "a start with t1 shrunk exits non-zero" test $? -ne 0
has t.err "role 1 .*t1, given for it, was left out \\(.*smaller" "naming the role, the member and why"
sums t0 t1 t2 s0 >after
check "and writes nothing" cmp before after
mv t1.saved t1
serve t t0 t1x t2 s0 degraded=1
check "with degraded=1 it starts" test $? -eq 0
check "and serves" serving t
stop t
# Each library warning once, labelled a warning: in the foreground all goes to one stderr.
rm -f t.sock
timeout 60 nbdkit -f -U "$T/t.sock" "$P" t0 t1x t2 s0 degraded=1 2>tf.err &
F=$!
# Up to a minute: on a loaded machine the start (auto's timing of every engine) takes seconds.
for i in $(seq 600); do answers t && break; sleep 0.1; done
kill $F 2>/dev/null
wait $F 2>/dev/null
check "the mistyped path is warned of once (foreground)" \
	test "$(grep -c 't1x: No such file' tf.err)" -eq 1
has tf.err "warning: open: .*t1x: No such file" "as a warning"
hasnt tf.err "error: warning" "never as \"error: warning\""
hasnt t.err "error: warning" "nor in the background's start"
check "once in the background's start too" test "$(grep -c 't1x: No such file' t.err)" -eq 1

# --- a split RAID-1: refused, unless degraded=1 -------------------------------------------
check "create RAID-1 on h0 h1" "$G" create --level 1 --file-size 9M h0 h1
check "h0 written without h1" "$FILL" h0
check "h1 written without h0 (the array is split)" "$FILL" h1
sums h0 h1 >before
serve h h0 h1
check "a start on the split halves exits non-zero" test $? -ne 0
has h.err "role [01] .*left out \(diverged.*split" "naming the diverged half and its role"
check "and leaves no pidfile or socket" left_nothing h
serve h h1 h0
check "so does one with the halves the other way round" test $? -ne 0
sums h0 h1 >after
check "and neither writes a byte" cmp before after
serve h h0 h1 degraded=1
check "with degraded=1 the half the library keeps is served" serving h
stop h

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
