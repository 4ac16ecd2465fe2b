#!/bin/bash
# SPDX-License-Identifier: MIT
# The metrics as Prometheus takes them: promtool checks the alerting rules and runs their
# unit tests, checks the nbdkit plugin's /metrics and graidctl metrics' file (with an array
# that lost too many members to be opened, written from its superblocks); then a real
# Prometheus server on loopback scrapes a served RAID-5 every second, a member is failed
# through the holder's control endpoint, and the degraded alert must fire (its HTTP API,
# /api/v1/alerts).
# usage: test_prometheus.sh GRAIDCTL RULES [PLUGIN]
# Without promtool or prometheus it skips (77), or fails where GRAID_TEST_REQUIRE_PROMETHEUS=1
# (tools/bootstrap installs them).
set -u
# The shared helpers: counts, ok, bad, expect, has, hasnt, json, check, workdir (lib.sh).
. "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"

G=${1:?usage: test_prometheus.sh GRAIDCTL RULES [PLUGIN]}
RULES=${2:?usage: test_prometheus.sh GRAIDCTL RULES [PLUGIN]}
P=${3:-}
need() { # need WHAT: skip, or fail when required
	if [ "${GRAID_TEST_REQUIRE_PROMETHEUS:-0}" = 1 ]; then
		echo "FAIL: $1 (GRAID_TEST_REQUIRE_PROMETHEUS=1)"; exit 1
	fi
	echo "SKIP: $1"; exit 77
}
for t in promtool prometheus python3; do
	command -v $t >/dev/null || need "$t is not installed (Debian: prometheus)"
done
G=$(readlink -f "$G") RULES=$(readlink -f "$RULES")
[ -z "$P" ] || P=$(readlink -f "$P")

T=$(mktemp -d "${TMPDIR:-/tmp}/prometheus.XXXXXX") || exit 1
SRV= PROM=
stop_all() {
	[ -n "$PROM" ] && { kill "$PROM" 2>/dev/null; wait "$PROM" 2>/dev/null; }
	[ -n "$SRV" ] && { kill "$SRV" 2>/dev/null; wait "$SRV" 2>/dev/null; }
	PROM= SRV=
}
trap 'stop_all; rm -rf "$T"' EXIT
cd "$T" || exit 1
export GRAID_RUN_DIR=$T/run

finish() { echo "$pass passed, $fail failed"; [ $fail -eq 0 ]; exit $?; }
# get URL: the body on stdout; non-zero when it cannot be fetched.
get() { python3 -c 'import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode())' "$1" 2>/dev/null; }
# A free loopback port (the kernel's choice; a race with another binder is unlikely here).
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

promtool check rules "$RULES" >out 2>&1 && ok "promtool check rules: the example rules" ||
	{ bad "promtool check rules"; sed 's/^/     /' out; }
# Their unit tests, beside them: the stall alerts on series of a stalled rebuild and replace.
promtool test rules "${RULES%.yml}.test.yml" >out 2>&1 &&
	ok "promtool test rules: the example rules' tests" ||
	{ bad "promtool test rules"; sed 's/^/     /' out; }

[ -n "$P" ] && [ -f "$P" ] || need "the nbdkit plugin was not built (no nbdkit-plugin-dev)"
[ -z "${GRAID_SANITIZED:-}" ] || { echo "SKIP: sanitizer build: nbdkit cannot load an ASan-instrumented plugin"; exit 77; }
command -v nbdkit >/dev/null || need "nbdkit is not installed"

for f in k0 k1 k2 k3 u0 u1; do truncate -s 40M $f; done
"$G" create -l 5 -c 64K k0 k1 k2 k3 >out 2>&1 || { bad "create"; cat out; finish; }
"$G" create -l 1 u0 u1 >out 2>&1 || { bad "create RAID-1"; cat out; finish; }
uuid=$(sed -n 's/.*UUID[: ]*\([0-9a-f-]\{36\}\).*/\1/p' out | head -n1)
MP=$(port)
nbdkit --exit-with-parent -f -U "$T/nbd.sock" -P pid "$P" member=$T/k0 member=$T/k1 \
	member=$T/k2 member=$T/k3 metrics=$MP 2>srv.log &
SRV=$!
for i in $(seq 150); do get "http://127.0.0.1:$MP/metrics" >m.txt && break; sleep 0.1; done
if [ -s m.txt ]; then ok "the plugin serves /metrics on 127.0.0.1:$MP"; else
	bad "no /metrics from the plugin"; sed 's/^/     /' srv.log
	if grep -q "no HTTP server" srv.log; then need "the plugin was built without libmicrohttpd"; fi
	finish
fi
promtool check metrics <m.txt >out 2>&1 && ok "promtool check metrics: the endpoint's text" ||
	{ bad "promtool check metrics (endpoint)"; sed 's/^/     /' out; }
grep -q '^graid_state{array="[0-9a-f-]*",state="active"} 1$' m.txt && ok "the array is active" ||
	{ bad "graid_state active"; grep graid_state m.txt; }
get "http://127.0.0.1:$MP/other" >/dev/null && bad "a path other than /metrics is served" ||
	ok "only /metrics is served"

# I/O statistics: histograms turned on through the holder (iostat -w), 4 MiB written over
# NBD; the latency histograms are then in the text, valid, and count what was written.
command -v nbdcopy >/dev/null || need "nbdcopy is not installed (libnbd-bin)"
"$G" iostat -w k0 k1 k2 k3 >out 2>&1 || { bad "iostat -w through the holder"; sed 's/^/     /' out; }
head -c 4M /dev/urandom >d4
nbdcopy d4 "nbd+unix:///?socket=$T/nbd.sock" >out 2>&1 || { bad "nbdcopy"; sed 's/^/     /' out; }
get "http://127.0.0.1:$MP/metrics" >m2.txt
promtool check metrics <m2.txt >out 2>&1 && ok "promtool check metrics: with latency histograms" ||
	{ bad "promtool check metrics (histograms)"; sed 's/^/     /' out; }
python3 - m2.txt <<'EOF2' && ok "the array's write histogram counts the writes, +Inf bucket = count, 4 MiB counted" ||
import re, sys
t = open(sys.argv[1]).read()
def v(series):
    m = re.search("^" + re.escape(series) + r" (\S+)$", t, re.M)
    return float(m.group(1)) if m else None
lab = re.search(r'^graid_io_ops_total\{array="([^"]+)",kind="write"\}', t, re.M).group(1)
sel = 'array="%s",kind="write"' % lab
count = v("graid_io_latency_seconds_count{%s}" % sel)
inf = v('graid_io_latency_seconds_bucket{%s,le="+Inf"}' % sel)
ops = v("graid_io_ops_total{%s}" % sel)
nbytes = v("graid_io_bytes_total{%s}" % sel)
members = re.findall(r'^graid_member_io_latency_seconds_count\{array="%s",member="\d",device="[^"]*",kind="write"\} (\d+)$' % re.escape(lab), t, re.M)
ok = count and count == inf and count == ops and nbytes >= 4 << 20 and len(members) == 4
sys.exit(0 if ok else 1)
EOF2
	{ bad "the histogram families"; grep -E '^graid_(member_)?io_' m2.txt | head -40 | sed 's/^/     /'; }

# An address asked for that cannot be served stops the start, naming it.
nbdkit -f -U "$T/nbd2.sock" "$P" member=$T/u0 member=$T/u1 metrics=70000 >out 2>&1 &&
	bad "metrics=70000 was taken" || { grep -q "70000" out && ok "metrics=70000 refused, named" ||
	{ bad "metrics=70000: no message naming it"; sed 's/^/     /' out; }; }
timeout 20 nbdkit -f -U "$T/nbd2.sock" "$P" member=$T/u0 member=$T/u1 metrics=$MP >out 2>&1 &&
	bad "a second server started on the port in use" ||
	{ grep -q "127.0.0.1:\?$MP\|$MP" out && ok "a port in use stops the start, named" ||
	{ bad "port in use: no message naming it"; sed 's/^/     /' out; }; }

# graidctl metrics: the served array through its holder, the RAID-1 read-only, one file.
printf 'DEVICE %s/k* %s/u*\n' "$T" "$T" >graid.conf
"$G" metrics --config graid.conf --output "$T/graid.prom" >out 2>&1 &&
	ok "graidctl metrics --output" || { bad "graidctl metrics"; sed 's/^/     /' out; }
promtool check metrics <graid.prom >out 2>&1 && ok "promtool check metrics: graidctl's file" ||
	{ bad "promtool check metrics (graidctl)"; sed 's/^/     /' out; }
[ "$(grep -c '^graid_array_info{' graid.prom)" = 2 ] && ok "both arrays in the file" ||
	{ bad "graid_array_info lines"; grep graid_array_info graid.prom; }
[ "$(grep -c '^# TYPE graid_state ' graid.prom)" = 1 ] && ok "each family once" ||
	bad "graid_state's TYPE line more than once"
grep -q 'level="5",engine="isal"\|level="5",engine="[a-z]*"' graid.prom &&
	! grep -q 'level="5",engine="ref"' graid.prom &&
	ok "the served array came from its holder (its engine, not the look's)" ||
	{ bad "the served array was not asked through its holder"; grep graid_array_info graid.prom; }
[ "$(grep -c '^graid_served{.*} 1$' graid.prom)" = 1 ] &&
	[ "$(grep -c '^graid_served{.*} 0$' graid.prom)" = 1 ] &&
	ok "graid_served: 1 for the held array, 0 for the look" ||
	{ bad "graid_served"; grep '^graid_served' graid.prom; }
ls -a | grep -q '^\.graid\.prom\.' && bad "a temporary file was left" || ok "no temporary file left"

# A RAID-5 that lost two of its three members: no look opens it, yet the file says it failed
# (GraidArrayFailed and GraidArrayDegraded go on firing through the textfile route).
for f in x0 x1 x2; do truncate -s 40M $f; done
"$G" create -l 5 -c 64K x0 x1 x2 >out 2>&1 || { bad "create the RAID-5 to lose"; cat out; }
rm -f x1 x2
# check_failed HOW FILE: the failed array's series in FILE.
check_failed() {
	promtool check metrics <"$2" >out 2>&1 && ok "$1: promtool check metrics" ||
		{ bad "$1: promtool check metrics"; sed 's/^/     /' out; }
	grep -q '^graid_state{array="[^"]*",state="failed"} 1$' "$2" &&
		grep -q '^graid_degraded{array="[^"]*"} 2$' "$2" &&
		grep -q '^graid_disks_required{array="[^"]*"} 3$' "$2" &&
		grep -q '^graid_disks{array="[^"]*",state="down"} 2$' "$2" &&
		grep -q '^graid_up{array="[^"]*"} 0$' "$2" &&
		ok "$1: failed, 2 roles down, graid_up 0" ||
		{ bad "$1: the failed array's series"; grep -v '^#' "$2" | sed 's/^/     /'; }
}
"$G" metrics x0 >x.prom 2>out && bad "metrics of the failed array exited 0" ||
	{ [ $? = 1 ] && grep -q 'writing what its superblocks say' out &&
	ok "metrics of the failed array: exit 1, said on stderr" ||
	{ bad "metrics of the failed array: exit status or message"; sed 's/^/     /' out; }; }
check_failed "MEMBER" x.prom
printf 'DEVICE %s/x* %s/u*\n' "$T" "$T" >x.conf
"$G" metrics --config x.conf --output "$T/x2.prom" >out 2>&1 && bad "the scan exited 0" ||
	{ [ $? = 1 ] && ok "the scan with a failed array: exit 1" || bad "the scan's exit status"; }
check_failed "scan" x2.prom
grep -q '^graid_up{array="[^"]*"} 1$' x2.prom && grep -q '^graid_array_info{' x2.prom &&
	ok "the scan still writes the readable RAID-1, graid_up 1" ||
	{ bad "the RAID-1 beside the failed array"; grep -v '^#' x2.prom | head -20; }

# A real Prometheus: scrape every second, evaluate the example rules every second.
PP=$(port)
cat >prometheus.yml <<EOC
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - $RULES
scrape_configs:
  - job_name: graid
    static_configs:
      - targets: ['127.0.0.1:$MP']
EOC
prometheus --config.file=prometheus.yml --storage.tsdb.path="$T/data" \
	--web.listen-address=127.0.0.1:$PP >prom.log 2>&1 &
PROM=$!
API=http://127.0.0.1:$PP/api/v1
# query EXPR: the result vector's length, as Prometheus answers now.
query() { get "$API/query?query=$(python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1]))' "$1")" |
	python3 -c 'import json, sys; print(len(json.load(sys.stdin)["data"]["result"]))' 2>/dev/null; }
# firing NAME: whether alert NAME is firing.
firing() { get "$API/alerts" | python3 -c '
import json, sys
a = json.load(sys.stdin)["data"]["alerts"]
sys.exit(0 if any(x["labels"]["alertname"] == sys.argv[1] and x["state"] == "firing" for x in a) else 1)' "$1"; }
for i in $(seq 300); do [ "$(query 'graid_degraded == 0')" = 1 ] && break; sleep 0.1; done
[ "$(query 'graid_degraded == 0')" = 1 ] && ok "Prometheus scrapes the endpoint" ||
	{ bad "Prometheus has no graid_degraded sample"; tail -n 20 prom.log | sed 's/^/     /'; finish; }
sleep 2 # two evaluations over a whole array
firing GraidArrayDegraded && bad "GraidArrayDegraded fires for a whole array" ||
	ok "no alert while the array is whole"

"$G" fail 2 k0 k1 k2 k3 >out 2>&1 && ok "fail role 2 through the holder" ||
	{ bad "graidctl fail"; sed 's/^/     /' out; }
for i in $(seq 200); do firing GraidArrayDegraded && break; sleep 0.1; done
firing GraidArrayDegraded && ok "GraidArrayDegraded fires (/api/v1/alerts)" ||
	{ bad "GraidArrayDegraded does not fire"; get "$API/alerts"; echo; grep graid_degraded m.txt; }
firing GraidArrayFailed && bad "GraidArrayFailed fires for a degraded RAID-5" ||
	ok "GraidArrayFailed does not"
stop_all
finish
