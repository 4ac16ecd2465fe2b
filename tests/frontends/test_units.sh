#!/bin/bash
# SPDX-License-Identifier: MIT
# The boot units: graid-ublk@.service passes systemd-analyze verify and starts graid-ublk on
# the members graidctl finds by UUID; the udev rule calls graidctl incremental.
# usage: test_units.sh graid-ublk@.service 64-graid-incremental.rules BINDIR PATH/TO/graidctl
set -u

UNIT=$(readlink -f "${1:?usage: test_units.sh UNIT RULE BINDIR GRAIDCTL}")
RULE=$(readlink -f "${2:?}")
BINDIR=${3:?}
G=$(readlink -f "${4:?}")
command -v systemd-analyze >/dev/null || { echo "SKIP: no systemd-analyze"; exit 77; }

T=$(mktemp -d "${TMPDIR:-/tmp}/graid-units.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1

pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok   - $*"; }
bad() { fail=$((fail + 1)); echo "FAIL - $*"; }

# --man=no: Documentation= names graidctl(1), which is not installed where the tests run.
# No running systemd is needed for verify (it loads the unit files offline).
verify() {
	if systemd-analyze verify --man=no "$1" >out 2>&1 && [ ! -s out ]; then
		ok "systemd-analyze verify $(basename "$1"): no complaint"
	else
		bad "systemd-analyze verify $(basename "$1")"; sed 's/^/     /' out
	fi
}
verify "$UNIT"
U=0123abcd-0000-4000-8000-00000000cafe
cp "$UNIT" "$T/graid-ublk@$U.service"
verify "$T/graid-ublk@$U.service"
# verify does complain about a bad unit (so a silent one above means something).
sed 's/^KillMode=.*/KillMode=bogus/' "$UNIT" >"$T/graid-ublk@x.service"
systemd-analyze verify --man=no "$T/graid-ublk@x.service" >out 2>&1
grep -q "KillMode\|kill mode" out && ok "verify complains about a bad KillMode" ||
	{ bad "verify let a bad KillMode through"; sed 's/^/     /' out; }

# ExecStart as systemd would run it (specifiers and $$ resolved), with the installed
# programs replaced: graidctl is the one built, graid-ublk prints what it was given.
mkdir bin && ln -s "$G" bin/graidctl
printf '#!/bin/sh\nprintf "%%s\\n" "$@" >%s/ublk-args\n' "$T" >bin/graid-ublk && chmod +x bin/graid-ublk
"$G" create -l 1 --file-size 8M m1 m0 >out 2>&1 || { cat out; echo "Bail out! create"; exit 1; }
UA=$(sed -n 's/^created RAID-1 array \([0-9a-f-]*\):.*/\1/p' out)
"$G" create -l 1 --file-size 8M o0 o1 >/dev/null 2>&1 || { echo "Bail out! create"; exit 1; }
printf 'DEVICE %s/m* %s/o*\nARRAY %s serve=ublk\n' "$T" "$T" "$UA" >graid.conf
cmd=$(sed -n 's/^ExecStart=//p' "$UNIT")
cmd=${cmd//"$BINDIR"/$T/bin}
cmd=${cmd//%i/$UA}
cmd=${cmd//'$$'/'$'}
[[ "$cmd" == "/bin/sh -c '"*"' graid-ublk $UA" ]] && ok "ExecStart is /bin/sh -c '...' with the UUID" ||
	bad "ExecStart: $cmd"
script=${cmd#/bin/sh -c \'}
script=${script%\' graid-ublk $UA}
GRAID_CONF=$T/graid.conf /bin/sh -c "$script" graid-ublk "$UA" 2>err
[ "$(sort ublk-args 2>/dev/null | tr '\n' ' ')" = "$T/m0 $T/m1 " ] &&
	ok "ExecStart starts graid-ublk on the array's members, found by UUID" ||
	{ bad "graid-ublk got: $(cat ublk-args 2>/dev/null)"; sed 's/^/     err: /' err; }
rm -f ublk-args
if GRAID_CONF=$T/graid.conf /bin/sh -c "$script" graid-ublk 0123abcd-0000-4000-8000-000000000000 2>err; then
	bad "ExecStart for an array not found succeeded"
else
	[ ! -e ublk-args ] && grep -q "no member of array" err && ok "an array not found: the start fails, graid-ublk not run" ||
		bad "an array not found: $(cat err)"
fi

# The rule hands block devices blkid does not claim to graidctl incremental.
grep -Eq "^RUN\+=\"$BINDIR/graidctl incremental \\\$devnode\"" "$RULE" &&
	ok "the udev rule runs $BINDIR/graidctl incremental \$devnode" || bad "the rule's RUN"
grep -Eq '^ENV\{ID_FS_TYPE\}=="\?\*", GOTO="graid_end"' "$RULE" &&
	ok "the rule skips devices blkid claims" || bad "the rule does not skip blkid's devices"

echo "# $pass passed, $fail failed"
[ "$fail" -eq 0 ]
