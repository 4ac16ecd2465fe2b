#!/bin/bash
# SPDX-License-Identifier: MIT
# graid-ublk's options, checked before anything is opened, so on any machine (no ublk
# driver, no root): a bad value exits 2 with a message that names it, and nothing is touched.
# Where there is no ublk driver, also the options that act on the open array before the
# driver is needed: the control endpoint it starts by default, --run-dir and --control off,
# and --health-interval.
# usage: test_ublk_usage.sh [PATH/TO/graid-ublk PATH/TO/graidctl]
set -u

U=${1:-}
G=${2:-}
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
refused --control maybe "--control"
refused --run-dir '' "--run-dir"
# The health watch's interval: 0 (none) or the library's 100 ms up to a day.
for v in 99 1 -1 +500 ' 500' 500ms 1.5 '' 86400001 99999999999999999999; do
	refused --health-interval "$v" "--health-interval"
done

# ctl_run NAME ARGS...: graid-ublk on the array c0..c3; exit status in NAME.rc, stderr NAME.err.
# With no ublk driver it opens the array, starts the endpoint, fails at /dev/ublk-control
# and closes the array (which stops the endpoint): exit 1.
ctl_run() {
	local name=$1
	shift
	GRAID_RUN_DIR=$T/run "$U" "$@" "$T/c0" "$T/c1" "$T/c2" "$T/c3" >"$T/$name.out" 2>"$T/$name.err"
	echo $? >"$T/$name.rc"
}
# ctl_check WHAT CONDITION...: one result.
ctl_check() {
	local what=$1
	shift
	if "$@"; then
		pass=$((pass + 1)); echo "ok   - $what"
	else
		fail=$((fail + 1)); echo "FAIL - $what"
		sed 's/^/     /' "$T"/*.err
	fi
}
if [ -e /dev/ublk-control ]; then
	echo "# the control endpoint's options: not here, where a ublk driver would serve the array"
elif [ -z "$G" ] || ! "$G" create --level 5 --file-size 8M "$T/c0" "$T/c1" "$T/c2" "$T/c3" \
	>"$T/create.out" 2>&1; then
	fail=$((fail + 1)); echo "FAIL - graidctl create for the endpoint's checks"
	cat "$T/create.out"
else
	CU=$(sed -n 's/^created RAID-5 array \([0-9a-f-]*\):.*/\1/p' "$T/create.out")
	ctl_run default
	ctl_check "by default the endpoint is served at \$GRAID_RUN_DIR/UUID.ctl, and said so" \
		grep -qF "control endpoint $T/run/$CU.ctl" "$T/default.err"
	ctl_check "(then exit 1 for want of a ublk driver)" test "$(cat "$T/default.rc")" = 1
	ctl_check "the close removed the socket" test ! -e "$T/run/$CU.ctl"
	ctl_run rundir --run-dir "$T/rd"
	ctl_check "--run-dir DIR: the endpoint is DIR/UUID.ctl" \
		grep -qF "control endpoint $T/rd/$CU.ctl" "$T/rundir.err"
	ctl_check "(the directory was made, 0700)" test "$(stat -c %a "$T/rd")" = 700
	# Set after the open (the library's own call): taken, said, and the driver reached.
	ctl_run health --health-interval 500
	ctl_check "--health-interval 500: the watch set after the open, said" \
		grep -qF "drive health sampled every 500 ms" "$T/health.err"
	ctl_check "(and the option was taken: exit 1 from the driver, not 2)" \
		test "$(cat "$T/health.rc")" = 1
	ctl_run health0 --health-interval 0
	ctl_check "--health-interval 0: no watch, said" \
		grep -qF "drive health not watched" "$T/health0.err"
	ctl_run off --control off
	ctl_check "--control off: no endpoint" bash -c "! grep -q 'control endpoint' '$T/off.err'"
	ctl_check "(and the option was taken: exit 1, not 2)" test "$(cat "$T/off.rc")" = 1
	mkdir -m 0777 "$T/open"
	ctl_run open --run-dir "$T/open"
	ctl_check "a run directory it cannot use: said, and it goes on (exit 1 from the driver only)" \
		grep -q "no control endpoint at $T/open/$CU.ctl.*serving without one" "$T/open.err"
	ctl_check "(the driver was reached: it did not give up at the endpoint)" \
		grep -q "/dev/ublk-control" "$T/open.err"
fi

if [ "$(cksum <"$T/m0")" = "$sum" ]; then
	pass=$((pass + 1)); echo "ok   - the member is untouched"
else
	fail=$((fail + 1)); echo "FAIL - the member changed"
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
