#!/bin/bash
# SPDX-License-Identifier: MIT
# The VM watch suite's sampler (tests/vm/redundancy_probe) on the host, against an array
# the nbdkit plugin serves: through a replace in service (graidctl replace
# --keep-in-service) it must see the role being replaced and the swap, every role active
# throughout, and exit 0; through graidctl fail it must see the drop and exit 1; with no
# holder it must exit 2 (it proves nothing either way).
# usage: test_redundancy_probe.sh GRAIDCTL PROBE [PLUGIN]
set -u
# The shared helpers: counts, ok, bad, expect, has, hasnt, json, check, workdir (lib.sh).
. "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"

G=${1:?usage: test_redundancy_probe.sh GRAIDCTL PROBE [PLUGIN]}
PR=${2:?usage: test_redundancy_probe.sh GRAIDCTL PROBE [PLUGIN]}
P=${3:-}
[ -n "$P" ] && [ -f "$P" ] || { echo "SKIP: the nbdkit plugin was not built (no nbdkit-plugin-dev)"; exit 77; }
[ -z "${GRAID_SANITIZED:-}" ] || { echo "SKIP: sanitizer build: nbdkit cannot load an ASan-instrumented plugin"; exit 77; }
command -v nbdkit >/dev/null || { echo "SKIP: nbdkit is not installed"; exit 77; }
G=$(readlink -f "$G") PR=$(readlink -f "$PR") P=$(readlink -f "$P")

T=$(mktemp -d "${TMPDIR:-/tmp}/redundancy-probe.XXXXXX") || exit 1
SRV='' PRB=''
trap '[ -n "$PRB" ] && kill "$PRB" 2>/dev/null; [ -n "$SRV" ] && kill "$SRV" 2>/dev/null; wait; rm -rf "$T"' EXIT
cd "$T" || exit 1
export GRAID_RUN_DIR=$T/run

check() { # check DESCRIPTION COMMAND...
	local what=$1
	shift
	if "$@"; then ok "$what"; else bad "$what"; sed 's/^/     probe: /' probe.out; fi
}
# field NAME: NAME=... in the probe's summary line.
field() { sed -n 's/^probe: samples=/samples=/p' probe.out | tr ' ' '\n' | sed -n "s/^$1=//p"; }
# probe_start: the probe on the endpoint, until the file stop exists; waits for its first sample.
probe_start() {
	rm -f stop
	"$PR" --stop-file "$T/stop" "$CTL" >probe.out 2>&1 &
	PRB=$!
	for _ in $(seq 1 100); do
		grep -q "^probe: sampling" probe.out && return 0
		kill -0 "$PRB" 2>/dev/null || break
		sleep 0.1
	done
	return 1
}
probe_stop() { # its exit status
	touch stop
	wait "$PRB"
	local rc=$?
	PRB=
	return $rc
}

if ! "$G" create --level 5 --file-size 32M m0 m1 m2 m3 >create.out 2>&1; then
	cat create.out
	echo "FAIL - graidctl create"
	exit 1
fi
truncate -s 32M s0
UUID=$(sed -n 's/^created RAID-5 array \([0-9a-f-]*\):.*/\1/p' create.out)
CTL=$T/run/$UUID.ctl

"$PR" "$CTL" >probe.out 2>&1
check "no holder: exit 2" test $? -eq 2

# At 8 MiB/s the copy of 31 MiB takes some seconds: hundreds of samples see it.
nbdkit --exit-with-parent -f -U "$T/sock" "$P" member=m0 member=m1 member=m2 member=m3 \
	rebuild-max-rate=8M 2>srv.log &
SRV=$!
for _ in $(seq 1 100); do [ -S "$CTL" ] && break; sleep 0.1; done
check "the probe samples the holder's status" probe_start
"$G" replace --keep-in-service 1 "$T/s0" m0 m1 m2 m3 >replace.out 2>&1
check "graidctl replace --keep-in-service 1 through the holder" test $? -eq 0
probe_stop
check "through the replace in service: exit 0" test $? -eq 0
check "redundancy kept, every sample 4 of 4 roles active, none with nfailed" \
	test "$(field redundancy) $(field fewest_active) $(field nfailed_samples)" = "kept 4 0"
check "samples saw role 1 being replaced onto s0" grep -q "^probe: role 1 being replaced in service onto $T/s0" probe.out
check "and its swap" grep -q "^probe: role 1's device $T/m1 -> $T/s0" probe.out
check "at about 10 ms (mean gap under 50 ms)" \
	awk -v g="$(field mean_gap_ms)" 'BEGIN { exit !(g > 0 && g < 50) }'

check "the probe samples again" probe_start
"$G" fail 2 m0 s0 m2 m3 >fail.out 2>&1
check "graidctl fail 2 through the holder" test $? -eq 0
sleep 0.3
probe_stop
check "a role out: exit 1" test $? -eq 1
check "said when, and what it saw" grep -q "^probe: REDUNDANCY DROPPED at sample .* 3 of 4 roles active, nfailed 1" probe.out
check "summary: fewest active 3, dropped" test "$(field fewest_active) $(field redundancy)" = "3 dropped"

kill "$SRV"
wait "$SRV"
SRV=
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
