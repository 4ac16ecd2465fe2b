#!/bin/sh
# SPDX-License-Identifier: MIT
# In the test VM: `graidctl list` (libnvme's topology scan) finds the six drives by serial,
# each with its generic device, and after a create names the array and role of each member;
# `graidctl status` shows the NVMe identify fields of generic-device members.
# usage: nvme_list.sh GRAIDCTL
G=$1
why=
bad() { [ -n "$why" ] || why=$*; echo "  $*"; }

out=$($G list --json) || bad "graidctl list --json exited $?"
k=0
while [ "$k" -lt "$VM_DRIVES" ]; do
	eval "b=\${NVME$k} g=\${NG$k}"
	# one object per namespace: its line holds device, generic and serial close together
	echo "$out" | tr -d '\n ' | grep -q "\"device\":\"$b\",\"generic\":\"$g\"[^}]*\"serial\":\"$VM_SERIAL_PREFIX$k\"" ||
		bad "list does not show $b ($g) with serial $VM_SERIAL_PREFIX$k"
	k=$((k + 1))
done
$G list | sed 's/^/  /'
[ -z "$why" ] && echo "PASS list-drives" || { echo "FAIL list-drives: $why"; why=; }

$G create --level 1 --force "$NG0" "$NG1" >/dev/null 2>&1 || bad "create RAID-1 over $NG0 $NG1 failed"
out=$($G list --json | tr -d '\n ')
for d in "$NVME0" "$NVME1"; do
	echo "$out" | grep -q "\"device\":\"$d\"[^}]*\"libgraid\":{\"array_uuid\":\"[0-9a-f-]*\",\"level\":1,\"nmembers\":2" ||
		bad "list does not show $d as a member of the RAID-1"
done
# $NVME2 may carry an earlier suite's array, but not this one
echo "$out" | grep -q "\"device\":\"$NVME2\"[^}]*\"level\":1,\"nmembers\":2" &&
	bad "list shows $NVME2 as a member of the RAID-1, which it is not"
st=$($G status --json "$NG0" "$NG1" | tr -d '\n ')
echo "$st" | grep -q "\"nvme\":{\"controller\":\"nvme[0-9]*\",\"model\":\"[^\"]*QEMU[^\"]*\",\"serial\":\"${VM_SERIAL_PREFIX}0\"" ||
	bad "status --json has no NVMe identify fields for $NG0"
echo "$st" | grep -q '"passthrough":true' || bad "status --json: $NG0 is not passthrough"
$G status "$NG0" "$NG1" | sed 's/^/  /'
[ -z "$why" ] && echo "PASS list-members" || echo "FAIL list-members: $why"
