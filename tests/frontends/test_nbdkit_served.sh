#!/bin/bash
# SPDX-License-Identifier: MIT
# A RAID-6 served by the nbdkit plugin, managed through its control endpoint while a client
# writes and verifies over NBD: graidctl status --json (the server's live state), fail a
# member, replace it (the rebuild followed to its end), add a hot spare, scrub. fio (its nbd
# engine, verify=crc32c) must end every round without an I/O error and verify everything.
# usage: test_nbdkit_served.sh PATH/TO/graidctl PATH/TO/nbdkit-graid-plugin.so
set -u
# The shared helpers: counts, ok, bad, expect, has, hasnt, json, check, workdir (lib.sh).
. "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"

G=${1:?usage: test_nbdkit_served.sh GRAIDCTL PLUGIN}
P=${2:-}
[ -n "$P" ] && [ -f "$P" ] || { echo "SKIP: the nbdkit plugin was not built (no nbdkit-plugin-dev)"; exit 77; }
[ -z "${GRAID_SANITIZED:-}" ] || { echo "SKIP: sanitizer build: nbdkit cannot load an ASan-instrumented plugin"; exit 77; }
G=$(readlink -f "$G") P=$(readlink -f "$P")
for t in nbdkit nbdinfo fio; do
	command -v $t >/dev/null || { echo "SKIP: $t is not installed"; exit 77; }
done
fio --enghelp=nbd >/dev/null 2>&1 || { echo "SKIP: this fio has no nbd engine"; exit 77; }

T=$(mktemp -d "${TMPDIR:-/tmp}/nbdkit-served.XXXXXX") || exit 1
SRV= FIO=
stop_all() {
	[ -n "$FIO" ] && { kill "$FIO" 2>/dev/null; wait "$FIO" 2>/dev/null; }
	[ -n "$SRV" ] && { kill "$SRV" 2>/dev/null; wait "$SRV" 2>/dev/null; }
	FIO= SRV=
}
trap 'stop_all; rm -rf "$T"' EXIT
cd "$T" || exit 1
export GRAID_RUN_DIR=$T/run

# expect CODE DESCRIPTION -- COMMAND...: its exit status must be CODE; output in out / err.
expect() {
	local want=$1 what=$2
	shift 3
	"$@" >out 2>err
	local rc=$?
	if [ "$rc" -eq "$want" ]; then ok "$what (exit $rc)"; else
		bad "$what: exit $rc, not $want"; sed 's/^/     out: /' out; sed 's/^/     err: /' err; fi
}
has() { grep -qE "$2" "$1" && ok "$3" || { bad "$3"; sed 's/^/     /' "$1"; }; }
json() { # json DESCRIPTION PYTHON-EXPRESSION-ON-d: out must be one JSON document
	if python3 -c "import json,sys; d=json.load(open('out')); sys.exit(0 if ($2) else 1)"; then
		ok "$1"; else bad "$1"; sed 's/^/     out: /' out; fi
}

for f in k0 k1 k2 k3 k4 k5 n2 s0; do truncate -s 40M $f; done
K="k0 k1 k2 k3 k4 k5"
expect 0 "create RAID-6 on k0..k5" -- "$G" create -l 6 -c 64K $K
SOCK=$T/nbd.sock
URI="nbd+unix:///?socket=$SOCK"
args=(); for m in $K; do args+=("member=$T/$m"); done
nbdkit --exit-with-parent -f -U "$SOCK" -P pid "$P" "${args[@]}" rebuild-busy-rate=16M 2>srv.log &
SRV=$!
for i in $(seq 150); do [ -s pid ] && nbdinfo --size "$URI" >/dev/null 2>&1 && break; sleep 0.1; done
nbdinfo --size "$URI" >/dev/null 2>&1 && ok "the plugin serves the array" ||
	{ bad "the server did not come up"; sed 's/^/     /' srv.log; exit 1; }

# The client: fio writes 24 MiB at random over NBD and verifies it, round after round,
# until told to stop; each round's result is kept.
size=$(nbdinfo --size "$URI")
(
	r=0
	while [ ! -e fio.stop ] && [ $r -lt 50 ]; do
		r=$((r + 1))
		fio --name=served --ioengine=nbd --uri="$URI" --rw=randwrite --bs=4k --iodepth=8 \
			--size=24M --offset=$(( (r % 2) * 8 ))M --verify=crc32c --verify_fatal=1 \
			--randseed=$r --output=fio.$r.out >/dev/null 2>&1
		echo "$r $?" >>fio.rounds
	done
) &
FIO=$!
for i in $(seq 300); do [ -s fio.rounds ] && break; sleep 0.1; done

# --- through the holder, while fio runs ---------------------------------------------------
expect 0 "status --json through the server" -- "$G" status --json $K
json "live: the server's writes are counted" "sum(m['writes'] for m in d['members']) > 0"
has out '"state": "clean"' "the array is clean"
expect 0 "fail 2 through the server" -- "$G" fail 2 $K
expect 3 "status says the array needs attention" -- "$G" status --json $K
json "the server's role 2 is failed" "d['members'][2]['state'] == 'failed'"
expect 0 "replace 2 with n2 through the server, its rebuild followed" -- "$G" replace --max-rate 2M 2 n2 $K
has out "^n2 is member 2, rebuilding$" "replace prints as on an unserved array"
has out "^rebuild finished in" "and follows the rebuild to its end"
# The rebuild runs at 2 MiB/s (--max-rate, the holder's limit from then on): some seconds,
# and graidctl prints its progress a line a second when stdout is no terminal.
n=$(grep -cE "^rebuild: ([0-9]|[1-9][0-9])\.[0-9]%" out)
[ "$n" -ge 2 ] && ok "the rebuild's progress was shown as it went ($n lines below 100%)" ||
	{ bad "the rebuild's progress: $n lines below 100%"; sed 's/^/     out: /' out; }
K2="k0 k1 n2 k3 k4 k5"
expect 0 "spare add s0 through the server" -- "$G" spare add s0 $K2
expect 0 "status --json" -- "$G" status --json $K2
json "role 2 is n2, active; s0 is a spare" \
	"d['members'][2]['state'] == 'active' and d['members'][2]['path'].endswith('/n2') and \
	 any(m['state'] == 'spare' and m['path'].endswith('/s0') for m in d['members'])"
expect 0 "scrub through the server" -- "$G" scrub $K2
has out "^scrub \(check only\) in [0-9.]+ s: [1-9][0-9]* stripes checked, 0 skipped, 0 mismatches, 0 repaired$" \
	"the scrub's report: nothing wrong"

# --- fio's rounds -------------------------------------------------------------------------
touch fio.stop
wait "$FIO"
FIO=
rounds=$(wc -l <fio.rounds)
[ "$rounds" -ge 2 ] && ok "fio ran $rounds rounds across the changes" || bad "fio ran $rounds rounds"
if awk '$2 != 0 { exit 1 }' fio.rounds; then
	ok "every fio round wrote and verified without an error"
else
	bad "fio rounds failed: $(awk '$2 != 0' fio.rounds | tr '\n' ' ')"
	for f in fio.*.out; do grep -iE "err|verify" "$f" | head -5 | sed "s|^|     $f: |"; done
fi
grep -qiE "verify: bad|error=" fio.*.out && bad "fio reported a bad block" || ok "fio reported no bad block"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
