#!/bin/bash
# SPDX-License-Identifier: MIT
# bench/fio/run end to end, in its smoke mode (a few seconds): every profile runs against
# RAID-6, RAID-5 and the single-drive line through nbdkit, fio's JSON is saved, and the table
# has a row of figures for each. Checks that it works, never how fast.
# usage: test_fio_bench.sh PATH/TO/graidctl [PATH/TO/nbdkit-graid-plugin.so]
set -u
G=${1:?usage: test_fio_bench.sh GRAIDCTL [PLUGIN]}
P=${2:-}
RUN=$(cd "$(dirname "$0")/../../bench/fio" && pwd)/run
[ -n "$P" ] && [ -f "$P" ] || { echo "SKIP: the nbdkit plugin was not built (no nbdkit-plugin-dev)"; exit 77; }
# nbdkit itself is not built with the sanitizers, so it cannot load a plugin that is.
[ -z "${GRAID_SANITIZED:-}" ] || { echo "SKIP: sanitizer build: nbdkit cannot load an ASan-instrumented plugin"; exit 77; }
command -v fio >/dev/null || { echo "SKIP: fio is not installed (Debian: fio)"; exit 77; }
fio --enghelp 2>/dev/null | grep -qw nbd || { echo "SKIP: this fio has no nbd engine"; exit 77; }
for t in nbdkit nbdinfo; do
	command -v $t >/dev/null || { echo "SKIP: $t is not installed (nbdkit, libnbd-bin)"; exit 77; }
done

T=$(mktemp -d "${TMPDIR:-/tmp}/fio-bench-test.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
# The servers' control endpoints in the test's folder, not in the host's /run/graid.
GRAID_RUN_DIR=$T/run "$RUN" --smoke --graidctl "$G" --plugin "$P" --dir "$T" --out "$T/out" >"$T/run.log" 2>&1
rc=$?
cat "$T/run.log"
[ "$rc" -ne 77 ] || exit 77

pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok   - $*"; }
bad() { fail=$((fail + 1)); echo "FAIL - $*"; }
[ "$rc" -eq 0 ] && ok "bench/fio/run --smoke exits 0" || bad "bench/fio/run --smoke exits $rc"
num='[0-9]+(\.[0-9]+)?'
for p in 4k-randread 4k-randwrite 4k-70-30 64k-randwrite 1m-seqread 1m-seqwrite; do
	for t in raid6 raid5 single; do
		if grep -Eq "^$p +$t +$num +$num +$num +$num +($num|-)\$" "$T/out/table.txt"; then
			ok "$p on $t: a row of figures"
		else
			bad "$p on $t: no row of figures in the table"
		fi
		if [ -s "$T/out/$t-$p.json" ] && grep -q '"jobname" : "'"$p"'"' "$T/out/$t-$p.json"; then
			ok "$p on $t: fio's JSON saved"
		else
			bad "$p on $t: no JSON"
		fi
	done
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
