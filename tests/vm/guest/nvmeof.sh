#!/bin/busybox sh
# SPDX-License-Identifier: MIT
# The nvmeof suite (tests/vm/suites): storage hosts as network namespaces exporting null_blk
# through nvmet-tcp, the guest's root namespace as the RAID host, and nvmeof_vm's scenarios
# over them (issue 18: members on other hosts; tests/vm/README.md, docs/REMOTE.md).
#
# usage: nvmeof.sh IP TC DMSETUP NVMEOF_VM GRAIDCTL [SCENARIO...]
#
# The bed: h1..h5 export one 64 MiB namespace each (data members), h6 one (the remote hot
# spare), h7 a small one (connected only to shift device numbers in the rename scenario).
# h1 has a second path (native multipath). Local null_blk devices loc1..loc4 (64 MiB, no
# network) give the local figures beside the remote ones.
#
# Timeouts (short, so that the suite fits the CI budget under TCG emulation):
#   keep_alive_tmo=2     a silent outage is noticed by the keep-alive within ~2-4 s
#   fast_io_fail_tmo=2   I/O queued on a reconnecting controller fails 2 s after that
#   reconnect_delay=1    a healed path is live again ~1-2 s after it heals
#   ctrl_loss_tmo=60     (h1..h4, h6) no outage of the suite outlasts it
#   ctrl_loss_tmo=9,reconnect_delay=3  (h5) its long outage outlasts it: the controller is
#                        deleted. The kernel counts attempts, not seconds: it gives up after
#                        ctrl_loss_tmo / reconnect_delay failed reconnects, and while the
#                        network is silent each attempt also waits out a TCP connect (~3 s,
#                        one SYN retry), so h5 is deleted ~3 x (3 + 3) s after the loss is
#                        noticed, not 9 s (with 15/1 it took over a minute).
set -u
export NVMF_IP=${1:?usage: nvmeof.sh IP TC DMSETUP NVMEOF_VM GRAIDCTL [SCENARIO...]} NVMF_TC=${2:?} NVMF_DMSETUP=${3:?}
prog=${4:?}
export NVMF_GRAIDCTL=${5:?}
shift 5
export NVMF_LIB=/vm/nvmeof-lib.sh
export NVMF_OPTS=ctrl_loss_tmo=60,reconnect_delay=1,fast_io_fail_tmo=2,keep_alive_tmo=2
export NVMF_H5_OPTS=ctrl_loss_tmo=9,reconnect_delay=3
. "$NVMF_LIB"

t0=$(date +%s)
bed() { # a bed step that must work: otherwise every scenario is skipped with the reason
	"$@" >/tmp/bed.out 2>&1 && return 0
	echo "SKIP nvmeof-bed: '$*' failed: $(tail -n 2 /tmp/bed.out | tr '\n' ' ')"
	dmesg | tail -n 20
	nvmf_teardown
	exit 77
}
bed nvmf_init
mp=$(cat /sys/module/nvme_core/parameters/multipath 2>/dev/null)
echo "nvme_core multipath=$mp; null_blk features: $(cat /sys/kernel/config/nullb/features)"
for k in 1 2 3 4 5 6 7; do bed nvmf_host_add $k; done
bed nvmf_path_add 1
for k in 1 2 3 4 5 6; do bed nvmf_ns_add $k 1 64; done
bed nvmf_ns_add 7 1 16
for k in 1 2 3 4 5 6 7; do bed nvmf_export $k; done
for k in 1 2 3 4 6; do bed nvmf_connect $k a; done
bed nvmf_connect 5 a "$NVMF_H5_OPTS"
bed nvmf_connect 1 b
# Both paths carry I/O, so losing either one is a real failover.
for s in /sys/class/nvme-subsystem/nvme-subsys*; do
	[ "$(cat "$s/subsysnqn" 2>/dev/null)" = "$(nvmf_nqn 1)" ] && echo round-robin >"$s/iopolicy" 2>/dev/null
done
# Local null_blk, the same size and block size, no network.
NVMF_LOCAL=''
for k in 1 2 3 4; do
	nb=/sys/kernel/config/nullb/loc$k
	bed mkdir "$nb"
	echo 64 >"$nb/size"
	echo 4096 >"$nb/blocksize"
	echo 1 >"$nb/memory_backed"
	echo 1 >"$nb/power"
	sleep 0.2
	NVMF_LOCAL="$NVMF_LOCAL $(nvmf_nullb_dev loc$k)"
done
export NVMF_LOCAL=${NVMF_LOCAL# }
echo "bed ready in $(($(date +%s) - t0)) s: $(for k in 1 2 3 4 5 6; do printf 'h%s=%s(%s) ' $k "$(nvmf_dev $k 1)" "$(nvmf_state $k)"; done)local=$NVMF_LOCAL"

"$prog" "$@"
rc=$?
nvmf_teardown
for k in 1 2 3 4; do rmdir /sys/kernel/config/nullb/loc$k 2>/dev/null; done
echo "nvmeof suite: $(($(date +%s) - t0)) s"
exit $rc
