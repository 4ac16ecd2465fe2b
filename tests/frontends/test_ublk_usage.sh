#!/bin/bash
# SPDX-License-Identifier: MIT
# graid-ublk's options, checked before anything is opened, so on any machine (no ublk
# driver, no root): a bad value exits 2 with a message that names it, and nothing is touched.
# usage: test_ublk_usage.sh [PATH/TO/graid-ublk]
set -u

U=${1:-}
if [ -z "$U" ] || [ ! -f "$U" ]; then
	echo "SKIP: graid-ublk was not built (no <linux/ublk_cmd.h>)"
	exit 77
fi
T=$(mktemp -d "${TMPDIR:-/tmp}/ublk-usage.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
# A member that must stay as it is: a refused option opens nothing.
head -c 65536 /dev/urandom >"$T/m0"
sum=$(cksum <"$T/m0")

pass=0 fail=0
# refused OPTION VALUE WORD: exit 2, and the message has WORD in it.
refused() {
	local rc
	"$U" "$1" "$2" "$T/m0" >"$T/out" 2>&1
	rc=$?
	if [ "$rc" -eq 2 ] && grep -qF -- "$3" "$T/out"; then
		pass=$((pass + 1)); echo "ok   - $1 '$2' refused: $(head -n 1 "$T/out")"
	else
		fail=$((fail + 1)); echo "FAIL - $1 '$2': exit $rc, wanted 2 naming '$3'"
		sed 's/^/     /' "$T/out"
	fi
}

for v in +1 ' 1' 0-+1 -1 1-0 0, ,0 0x1 1024 ''; do
	refused --queue-cpus "$v" "--queue-cpus"
done
# 1023 fits a cpu_set_t but no machine this runs on has it: offline, named as such.
refused --queue-cpus 1023 "CPU 1023 is offline"
refused --queue-cpus 0,1023 "CPU 1023 is offline"
refused --rebuild-busy-rate fast "fast"
refused --batch sometimes "--batch"
refused --fixed-buffers yes "--fixed-buffers"
refused --zero-copy on "--zero-copy"
refused --one-ring two "--one-ring"

if [ "$(cksum <"$T/m0")" = "$sum" ]; then
	pass=$((pass + 1)); echo "ok   - the member is untouched"
else
	fail=$((fail + 1)); echo "FAIL - the member changed"
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
