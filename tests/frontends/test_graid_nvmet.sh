#!/bin/bash
# SPDX-License-Identifier: MIT
# graid-nvmet against a stand-in for nvmet's configfs tree (GRAID_NVMET_CONFIGFS): the names it
# derives from the array UUID, a second export re-pointing the same namespace (what a takeover
# host does), ports reused and removed, refusals that change nothing. The kernel's nvmet itself
# is exercised in the VM bed (tests/vm, suite failover); this machine's kernel has no nvmet.
#
# usage: test_graid_nvmet.sh GRAID_NVMET
set -u
tool=${1:?usage: test_graid_nvmet.sh GRAID_NVMET}
t=$(mktemp -d /tmp/graid-nvmet-test.XXXXXX) || exit 1
trap 'rm -rf "$t"' EXIT
mkdir -p "$t/cfg/nvmet/subsystems" "$t/cfg/nvmet/ports" "$t/cfg/nvmet/hosts"
export GRAID_NVMET_CONFIGFS=$t/cfg
# What configfs does that a plain directory does not, as shims on PATH (only under $t): an
# item made gets its default groups (a subsystem namespaces/ and allowed_hosts/, a port
# subsystems/ and referrals/), and an item removed takes its attribute files with it.
mkdir "$t/bin"
cat >"$t/bin/mkdir" <<'SHIM'
#!/bin/sh
/bin/mkdir "$@" || exit
for d; do
	case $d in
	*/nvmet/subsystems/*/namespaces/* | */nvmet/subsystems/*/allowed_hosts/*) ;;
	*/nvmet/subsystems/*) /bin/mkdir "$d/namespaces" "$d/allowed_hosts" ;;
	*/nvmet/ports/*/*) ;;
	*/nvmet/ports/*) /bin/mkdir "$d/subsystems" "$d/referrals" ;;
	esac
done
SHIM
cat >"$t/bin/rmdir" <<'SHIM'
#!/bin/sh
for d; do
	find "$d" -maxdepth 1 -type f -delete
	for g in namespaces allowed_hosts subsystems referrals; do /bin/rmdir "$d/$g" 2>/dev/null; done
done
exec /bin/rmdir "$@"
SHIM
chmod +x "$t/bin/mkdir" "$t/bin/rmdir"
export PATH=$t/bin:$PATH
N=$t/cfg/nvmet
export GRAID_RUN_DIR=$t/run
mkdir -p "$GRAID_RUN_DIR/ublk"
fails=0
ok() { echo "PASS $1"; }
bad() { echo "FAIL $1: $2"; fails=$((fails + 1)); }
tree() { (cd "$N" && find . -printf '%p %l\n' | sort; cat "$N"/subsystems/*/namespaces/1/device_path 2>/dev/null); }
truncate -s 1M "$t/devA" "$t/devB"
U=6c696267-7261-6964-0000-00000000002a
NQN=nqn.2026-12.io.libgraid:array:$U
sub=$N/subsystems/$NQN

# An administrator's port, made before graid-nvmet ran (port 1, on 10.0.0.1).
mkdir "$N/ports/1"
printf tcp >"$N/ports/1/addr_trtype"
printf 10.0.0.1 >"$N/ports/1/addr_traddr"
printf 4420 >"$N/ports/1/addr_trsvcid"

# Refusals first: each names what is wrong, exits 2 (usage) or 1, and changes nothing.
check_refused() { # NAME WANT_RC WANT_TEXT ARGS...
	local name=$1 want=$2 text=$3 rc before after msg
	shift 3
	before=$(tree)
	msg=$("$tool" "$@" 2>&1 >/dev/null)
	rc=$?
	after=$(tree)
	if [ $rc -eq "$want" ] && echo "$msg" | grep -q -F -- "$text" && [ "$after" = "$before" ]; then
		ok "$name"
	else
		bad "$name" "rc $rc (want $want), message '$msg'"
	fi
}
check_refused without_a_host_id_export_is_refused 2 "--host-id N is required" export --any-device "$U" "$t/devA" 10.0.0.1
check_refused a_host_id_out_of_range_is_refused 2 "--host-id: 1..15, not '16'" export --host-id 16 "$U" "$t/devA" 10.0.0.1
check_refused a_host_id_with_a_leading_zero_is_refused 2 "--host-id: 1..15, not '010'" export --host-id 010 "$U" "$t/devA" 10.0.0.1
check_refused an_option_without_its_value_is_refused 2 "--host-id needs a value" export --host-id
check_refused a_bad_uuid_is_refused 2 "'not-a-uuid' is not an array UUID" export --host-id 1 not-a-uuid "$t/devA" 10.0.0.1
check_refused a_bad_transport_is_refused 2 "--trtype: tcp or rdma, not 'udp'" export --host-id 1 --trtype udp "$U" "$t/devA" 10.0.0.1
check_refused a_bad_port_number_is_refused 2 "--svcid: a port number, not 'x1'" export --host-id 1 --svcid x1 "$U" "$t/devA" 10.0.0.1
check_refused a_bad_host_nqn_is_refused 2 "--host: a host NQN (nqn....), not 'bob'" export --host-id 1 --host bob "$U" "$t/devA" 10.0.0.1
check_refused too_few_arguments_are_refused 2 "export needs UUID DEVICE ADDR" export --host-id 1 "$U" "$t/devA"
check_refused a_missing_device_is_refused 1 "$t/nothing is neither" export --host-id 1 --any-device "$U" "$t/nothing" 10.0.0.1
check_refused an_unknown_array_is_not_unexported 1 "no subsystem" unexport 6c696267-7261-6964-0000-000000000000
check_refused an_unknown_array_is_not_withdrawn 1 "no subsystem" withdraw 6c696267-7261-6964-0000-000000000000
check_refused withdraw_needs_a_uuid 2 "withdraw needs UUID" withdraw
# The device must be one graid-ublk serves this array on (its record), unless --any-device.
check_refused a_device_not_of_graid_ublk_is_refused 1 "is not a graid-ublk device" export --host-id 1 "$U" "$t/devA" 10.0.0.1
check_refused a_device_without_a_record_is_refused 1 "no record of which array /dev/ublkb7 serves" export --host-id 1 "$U" /dev/ublkb7 10.0.0.1
me_start=$(sed 's/^.*) //' /proc/$$/stat | cut -d' ' -f20) # this shell stands in for graid-ublk
printf 'uuid=6c696267-7261-6964-0000-0000000000ff\npid=%s\nstart=%s\n' $$ "$me_start" >"$GRAID_RUN_DIR/ublk/ublkb7"
check_refused another_arrays_device_is_refused 1 "/dev/ublkb7 serves array 6c696267-7261-6964-0000-0000000000ff, not $U" export --host-id 1 "$U" /dev/ublkb7 10.0.0.1
sleep 0 & dead=$!
wait $dead
printf 'uuid=%s\npid=%s\nstart=%s\n' "$U" "$dead" "$me_start" >"$GRAID_RUN_DIR/ublk/ublkb7"
check_refused a_record_of_a_server_that_is_gone_is_refused 1 "(pid $dead) is gone" export --host-id 1 "$U" /dev/ublkb7 10.0.0.1
printf 'uuid=%s\npid=%s\nstart=%s\n' "$U" $$ $((me_start + 1)) >"$GRAID_RUN_DIR/ublk/ublkb7"
check_refused a_record_whose_pid_was_reused_is_refused 1 "(pid $$) is gone" export --host-id 1 "$U" /dev/ublkb7 10.0.0.1
printf 'uuid=%s\npid=-1\nstart=%s\n' "$U" "$me_start" >"$GRAID_RUN_DIR/ublk/ublkb7"
check_refused a_damaged_record_is_refused 1 "a damaged record: pid '-1'" export --host-id 1 "$U" /dev/ublkb7 10.0.0.1
printf 'uuid=%s\npid=%s\nstart=%s\n' "$U" $$ "$me_start" >"$GRAID_RUN_DIR/ublk/ublkb7"
# (a record that matches passes the check; /dev/ublkb7 does not exist here, which is next)
check_refused a_matching_record_still_needs_the_device 1 "/dev/ublkb7 is neither a block device nor a file" export --host-id 1 "$U" /dev/ublkb7 10.0.0.1

out=$("$tool" export --host-id 1 --any-device "$U" "$t/devA" 10.0.0.1 2>&1)
rc=$?
if [ $rc -eq 0 ] && [ "$out" = "$NQN" ] && [ -d "$sub/namespaces/1" ] &&
	[ "$(cat "$sub/namespaces/1/device_nguid")" = "$U" ] &&
	[ "$(cat "$sub/namespaces/1/device_uuid")" = "$U" ] &&
	[ "$(cat "$sub/namespaces/1/device_path")" = "$t/devA" ] &&
	[ "$(cat "$sub/namespaces/1/enable")" = 1 ] &&
	[ "$(cat "$sub/attr_serial")" = 6c696267726169640000 ] &&
	[ "$(cat "$sub/attr_allow_any_host")" = 1 ] &&
	[ "$(cat "$sub/attr_cntlid_min")" = 4096 ] && [ "$(cat "$sub/attr_cntlid_max")" = 8191 ] &&
	[ "$(readlink "$N/ports/1/subsystems/$NQN")" = "$sub" ] && [ ! -e "$N/ports/2" ]; then
	ok export_names_the_subsystem_and_namespace_after_the_array_and_reuses_a_port
else
	bad export_names_the_subsystem_and_namespace_after_the_array_and_reuses_a_port "rc $rc out '$out'; $(tree | head -n 30 | tr '\n' ' ')"
fi

# The same UUID in upper case without dashes is the same array.
out=$("$tool" nqn "$(echo "$U" | tr -d - | tr a-f A-F)")
[ "$out" = "$NQN" ] && ok the_uuid_is_read_with_or_without_dashes ||
	bad the_uuid_is_read_with_or_without_dashes "'$out'"

# Another host serving the array after a takeover: the same namespace, the new device, a port
# of its own (made: port 2); its own controller IDs; the NGUID untouched.
out=$("$tool" export --host-id 2 --any-device --svcid 4421 "$U" "$t/devB" 10.0.0.2 2>&1)
rc=$?
if [ $rc -eq 0 ] && [ "$out" = "$NQN" ] && [ "$(cat "$sub/namespaces/1/device_path")" = "$t/devB" ] &&
	[ "$(cat "$sub/namespaces/1/enable")" = 1 ] &&
	[ "$(cat "$sub/namespaces/1/device_nguid")" = "$U" ] &&
	[ "$(cat "$sub/attr_cntlid_min")" = 8192 ] && [ "$(cat "$sub/attr_cntlid_max")" = 12287 ] &&
	[ "$(cat "$N/ports/2/addr_traddr")" = 10.0.0.2 ] && [ "$(cat "$N/ports/2/addr_trsvcid")" = 4421 ] &&
	[ "$(cat "$N/ports/2/addr_adrfam")" = ipv4 ] && [ -L "$N/ports/2/subsystems/$NQN" ]; then
	ok a_second_export_repoints_the_same_namespace
else
	bad a_second_export_repoints_the_same_namespace "rc $rc out '$out'; path $(cat "$sub/namespaces/1/device_path")"
fi

# Allowed hosts: exactly those named, and all of them again without --host.
"$tool" export --host-id 2 --any-device --host nqn.2014-08.org.example:host-a \
	--host nqn.2014-08.org.example:host-b "$U" "$t/devB" 10.0.0.2 >/dev/null 2>&1 &&
	"$tool" export --host-id 2 --any-device --host nqn.2014-08.org.example:host-b "$U" "$t/devB" 10.0.0.2 >/dev/null 2>&1
rc=$?
if [ $rc -eq 0 ] && [ "$(cat "$sub/attr_allow_any_host")" = 0 ] &&
	[ "$(ls "$sub/allowed_hosts")" = nqn.2014-08.org.example:host-b ]; then
	ok host_nqns_become_exactly_the_allowed_list
else
	bad host_nqns_become_exactly_the_allowed_list "rc $rc; $(ls "$sub/allowed_hosts")"
fi
"$tool" export --host-id 2 --any-device "$U" "$t/devB" 10.0.0.2 >/dev/null 2>&1
rc=$?
[ $rc -eq 0 ] && [ "$(cat "$sub/attr_allow_any_host")" = 1 ] && [ -z "$(ls "$sub/allowed_hosts")" ] &&
	ok without_host_nqns_any_host_again_and_no_list ||
	bad without_host_nqns_any_host_again_and_no_list "rc $rc; $(ls "$sub/allowed_hosts")"

# A port graid-nvmet made that another subsystem now uses too stays at unexport; so does a
# port of a number it once made that someone else has made anew since (another address).
"$tool" export --host-id 2 --any-device --svcid 4422 "$U" "$t/devB" 10.0.0.3 >/dev/null 2>&1 &&
	"$tool" export --host-id 2 --any-device --svcid 4423 "$U" "$t/devB" 10.0.0.4 >/dev/null 2>&1
rc=$?
mkdir "$N/subsystems/other"
ln -s "$N/subsystems/other" "$N/ports/3/subsystems/other"
rm "$N/ports/4/subsystems/$NQN" && rmdir "$N/ports/4" && mkdir "$N/ports/4" && printf tcp >"$N/ports/4/addr_trtype" &&
	printf 10.0.0.44 >"$N/ports/4/addr_traddr" && printf 4420 >"$N/ports/4/addr_trsvcid"
ln -s "$sub" "$N/ports/4/subsystems/$NQN"
[ $rc -eq 0 ] && [ -f "$GRAID_RUN_DIR/nvmet-ports/3" ] && [ -f "$GRAID_RUN_DIR/nvmet-ports/4" ] ||
	bad ports_made_are_noted "rc $rc; $(ls "$GRAID_RUN_DIR/nvmet-ports" 2>&1)"

# Another array, exported on a port of its own and withdrawn: this array's unexport must
# leave that port alone (found by review: it removed every noted port nothing used).
U2=6c696267-7261-6964-0000-00000000002b
"$tool" export --host-id 1 --any-device --svcid 4424 "$U2" "$t/devA" 10.0.0.9 >/dev/null 2>&1 &&
	"$tool" withdraw "$U2" 2>&1
rc=$?
p2=$(grep -l '10.0.0.9' "$N"/ports/*/addr_traddr | head -n 1)
p2=${p2%/addr_traddr}
[ $rc -eq 0 ] && [ -n "$p2" ] && [ -f "$GRAID_RUN_DIR/nvmet-withdrawn/$(echo "$U2" | tr -d -)" ] ||
	bad withdraw_notes_the_ports_it_left "rc $rc; port '$p2'; $(ls "$GRAID_RUN_DIR/nvmet-withdrawn" 2>&1)"

# resize (after a grow): nvmet takes the device's size again through revalidate_size; an
# array not exported here, or a kernel without the attribute, is refused and nothing changes.
check_refused resize_needs_a_uuid 2 "resize needs UUID" resize
check_refused resize_of_an_array_not_exported_is_refused 1 "is not exported here" resize 6c696267-7261-6964-0000-000000000000
check_refused resize_without_revalidate_size_is_refused 1 "has no revalidate_size" resize "$U"
: >"$sub/namespaces/1/revalidate_size" # what a 5.12+ kernel's namespace has
"$tool" resize "$U" 2>&1
rc=$?
[ $rc -eq 0 ] && [ "$(cat "$sub/namespaces/1/revalidate_size")" = 1 ] &&
	[ "$(cat "$sub/namespaces/1/enable")" = 1 ] &&
	ok resize_asks_nvmet_to_revalidate_the_namespace_size ||
	bad resize_asks_nvmet_to_revalidate_the_namespace_size "rc $rc; '$(cat "$sub/namespaces/1/revalidate_size")'"
rm -f "$sub/namespaces/1/revalidate_size"

# withdraw (graid-ublk --on-foreign): off every port at once, nothing else touched.
"$tool" withdraw "$U" 2>&1
rc=$?
if [ $rc -eq 0 ] && [ -d "$sub/namespaces/1" ] && [ "$(cat "$sub/namespaces/1/enable")" = 1 ] &&
	[ "$(cat "$sub/namespaces/1/device_path")" = "$t/devB" ] &&
	[ -z "$(find "$N/ports" -name "$NQN")" ] && [ -d "$N/ports/1" ] && [ -d "$N/ports/2" ] &&
	[ -f "$GRAID_RUN_DIR/nvmet-ports/2" ] && [ -L "$N/ports/3/subsystems/other" ]; then
	ok withdraw_takes_the_array_off_every_port_and_keeps_the_rest
else
	bad withdraw_takes_the_array_off_every_port_and_keeps_the_rest "rc $rc; $(tree | tr '\n' ' ')"
fi

# unexport (after a withdraw): the subsystem goes, the port it made goes, the administrator's port stays (with
# another subsystem on it or not), hosts/ is left alone.
"$tool" unexport "$U" 2>&1
rc=$?
if [ $rc -eq 0 ] && [ ! -e "$sub" ] && [ -d "$N/ports/1" ] && [ ! -e "$N/ports/1/subsystems/$NQN" ] &&
	[ "$(cat "$N/ports/1/addr_traddr")" = 10.0.0.1 ] && [ ! -e "$N/ports/2" ] &&
	[ ! -e "$GRAID_RUN_DIR/nvmet-ports/2" ] && [ -d "$N/hosts/nqn.2014-08.org.example:host-a" ] &&
	[ -L "$N/ports/3/subsystems/other" ] && [ ! -e "$N/ports/3/subsystems/$NQN" ] &&
	[ "$(cat "$N/ports/4/addr_traddr")" = 10.0.0.44 ] && [ ! -e "$N/ports/4/subsystems/$NQN" ] &&
	[ -d "$p2" ] && [ -f "$GRAID_RUN_DIR/nvmet-ports/${p2##*/}" ] &&
	[ ! -e "$GRAID_RUN_DIR/nvmet-withdrawn/$(echo "$U" | tr -d -)" ]; then
	ok unexport_removes_what_it_made_and_only_that
else
	bad unexport_removes_what_it_made_and_only_that "rc $rc; $(tree | tr '\n' ' ')"
fi
echo "graid-nvmet: $fails failed"
[ $fails -eq 0 ]
