#!/bin/bash
# SPDX-License-Identifier: MIT
# The nbdkit plugin end to end: RAID-6 served over NBD, data written and read back, aligned
# and not, a member lost while served, then replaced and rebuilt and read back through it;
# the control endpoint it serves by default (its socket, a status through it, control=off).
# usage: test_nbdkit.sh PATH/TO/graidctl PATH/TO/nbdkit-graid-plugin.so
set -u
# The shared helpers: counts, ok, bad, expect, has, hasnt, json, check, workdir (lib.sh).
. "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"

G=${1:?usage: test_nbdkit.sh GRAIDCTL PLUGIN}
P=${2:-}
[ -n "$P" ] && [ -f "$P" ] || { echo "SKIP: the nbdkit plugin was not built (no nbdkit-plugin-dev)"; exit 77; }
# nbdkit itself is not built with the sanitizers, so it cannot load a plugin that is.
[ -z "${GRAID_SANITIZED:-}" ] || { echo "SKIP: sanitizer build: nbdkit cannot load an ASan-instrumented plugin"; exit 77; }
# meson passes them relative to the build folder; we work elsewhere.
G=$(readlink -f "$G") P=$(readlink -f "$P")
for t in nbdkit nbdcopy nbdinfo; do
	command -v $t >/dev/null || { echo "SKIP: $t is not installed (nbdkit, libnbd-bin)"; exit 77; }
done
# nbdsh is "python3 -m nbd" of whichever python3 comes first on PATH, which may not be the
# one python3-libnbd is installed for (a pyenv, a venv): find one that has the module.
NBDPY=
for py in python3 /usr/bin/python3; do
	if "$py" -c "import nbd" 2>/dev/null; then NBDPY=$py; break; fi
done
[ -n "$NBDPY" ] || { echo "SKIP: no python3 with the nbd module (python3-libnbd)"; exit 77; }
nbdsh() { "$NBDPY" -m nbd "$@"; }

T=$(mktemp -d "${TMPDIR:-/tmp}/nbdkit-test.XXXXXX") || exit 1
SRV=
stop_server() {
	if [ -n "$SRV" ]; then kill "$SRV" 2>/dev/null; wait "$SRV" 2>/dev/null; SRV=; fi
}
trap 'stop_server; rm -rf "$T"' EXIT
cd "$T" || exit 1
# The servers' control endpoints go here, not in the host's /run/graid.
export GRAID_RUN_DIR=$T/run


SOCK=$T/nbd.sock
URI="nbd+unix:///?socket=$SOCK"
start_server() { # start_server LOG MEMBER...: serve, wait until it answers
	local log=$1 args=() i
	shift
	for m in "$@"; do
		case $m in
		rebuild-*=* | io-timeout=* | health-interval=* | degraded=* | control=* | run-dir=*) args+=("$m") ;;
		*) args+=("member=$m") ;;
		esac
	done
	rm -f "$SOCK" pid
	nbdkit --exit-with-parent -f -v -U "$SOCK" -P pid "$P" "${args[@]}" 2>"$log" &
	SRV=$!
	for i in $(seq 100); do
		[ -s pid ] && nbdinfo --size "$URI" >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	echo "server did not come up:"; sed 's/^/     /' "$log"
	return 1
}

# ctl_request SOCKET OP...: each op sent as one request line, each reply line printed.
ctl_request() {
	python3 - "$@" <<'PY'
import json, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(10)
s.connect(sys.argv[1])
f = s.makefile("rw")
for i, op in enumerate(sys.argv[2:]):
    f.write(json.dumps({"id": i, "op": op}) + "\n")
    f.flush()
    print(f.readline(), end="")
PY
}
# status_is_array REPLYFILE UUID NMEMBERS: the status reply describes that array.
status_is_array() {
	python3 - "$@" <<'PY'
import json, sys
r = json.loads(open(sys.argv[1]).read().splitlines()[-1])
assert r["ok"] is True and r["id"] == 1, r
assert r["uuid"] == sys.argv[2] and r["level"] == 6, (r["uuid"], r["level"])
assert r["nmembers"] == int(sys.argv[3]) and len(r["members"]) == int(sys.argv[3]), r["members"]
assert all(m["state"] == "active" for m in r["members"]), r["members"]
PY
}

M="m0 m1 m2 m3 m4 m5"
check "create RAID-6 on six 33M files" "$G" create --level 6 --chunk 64K --file-size 33M $M
UM=$(sed -n 's/^created RAID-6 array \([0-9a-f-]*\):.*/\1/p' cmd.out)
# With an I/O timeout: member reads go through the library's buffers (graid.h), all of
# what follows runs that way.
check "the server starts" start_server srv1.log $M io-timeout=2000 health-interval=500
check "with the I/O timeout set" grep -q "older than 2000 ms" srv1.log
check "and the health watch's interval" grep -q "drive health sampled every 500 ms" srv1.log
check "it serves 128 MiB" test "$(nbdinfo --size "$URI")" -eq $((128 << 20))
check "it advertises 4096-byte blocks" grep -q "block_size_minimum: 4096" \
	<(nbdinfo "$URI")
check "and multi-conn" grep -q "can_multi_conn: true" <(nbdinfo "$URI")

# The control endpoint, served by default at $GRAID_RUN_DIR/UUID.ctl.
CTL=$GRAID_RUN_DIR/$UM.ctl
check "it serves the control endpoint at \$GRAID_RUN_DIR/UUID.ctl" test -S "$CTL"
check "mode 0600" test "$(stat -c %a "$CTL")" = 600
check "and says where (-v)" grep -qF "control endpoint $CTL" srv1.log
ctl_request "$CTL" hello status >ctl.out 2>&1
check "hello over it names protocol 1" grep -q '"protocol": *1' ctl.out
check "status over it returns the array, live" status_is_array ctl.out "$UM" 6

head -c 96M /dev/urandom >data
check "nbdcopy writes 96 MiB of random data" nbdcopy data "$URI"
check "nbdcopy reads the array back" nbdcopy "$URI" back
check "the data reads back as written" cmp -n 96M data back
check "the rest still reads as zeroes" cmp -i 96M:0 -n 32M back /dev/zero

# Unaligned I/O: the plugin must read-modify-write edge blocks, also many at once on one
# block (the concurrent writes below touch disjoint bytes of the same blocks).
cat >unaligned.py <<'PY'
import random
h.set_strict_mode(0)            # let unaligned requests through to the server
rnd = random.Random(7)
base = 40 << 20
model = bytearray(h.pread(1 << 20, base))
def put(off, b):
    model[off:off + len(b)] = b
for off, n in [(1, 1), (4095, 2), (5000, 100), (8191, 12290), (65536 - 7, 70000)]:
    b = rnd.randbytes(n)
    h.pwrite(b, base + off)
    put(off, b)
cookies = []
for i in range(64):             # 64 writes in flight, 64 bytes apart: 16 per 4 KiB block
    off = 300000 + i * 64 + 3
    b = rnd.randbytes(61)
    cookies.append(h.aio_pwrite(nbd.Buffer.from_bytearray(bytearray(b)), base + off))
    put(off, b)
while h.aio_in_flight() > 0:
    h.poll(-1)
for c in cookies:
    assert h.aio_command_completed(c)
for off, n in [(0, 7), (4093, 9), (300000, 4096 * 3 + 5), (12345, 100000)]:
    assert h.pread(n, base + off) == model[off:off + n], (off, n)
assert h.pread(1 << 20, base) == bytes(model)
open("unaligned.bin", "wb").write(model)
PY
check "unaligned reads and writes, also concurrent ones to one block" \
	nbdsh -u "$URI" -c "exec(open('unaligned.py').read())"
dd if=unaligned.bin of=data bs=1M seek=40 conv=notrunc status=none

# Trim and zero: offered, and what they leave reads back as zeroes (zero: every byte, also
# unaligned edges; trim: the whole blocks inside the range, the edges as they were).
check "it advertises trim and zero" bash -c \
	"nbdinfo '$URI' | grep -q 'can_trim: true' && nbdinfo '$URI' | grep -q 'can_zero: true'"
cat >trimzero.py <<'PY'
h.set_strict_mode(0)
base = 60 << 20
model = bytearray(h.pread(4 << 20, base))
def zero(off, n):
    model[off:off + n] = bytes(n)
h.zero(10000, base + 123)                 # unaligned both ends
zero(123, 10000)
h.zero(2 << 20, base + (1 << 20))         # whole stripes: deallocated on the members
zero(1 << 20, 2 << 20)
h.trim(3 * 4096 + 200, base + (3 << 20) + 100)  # the two whole blocks inside only
zero((3 << 20) + 4096, 2 * 4096)
h.trim(256 << 10, base + (3 << 20) + (512 << 10))
zero((3 << 20) + (512 << 10), 256 << 10)
h.zero(512 << 10, base + (2 << 20) + 8192, nbd.CMD_FLAG_NO_HOLE)  # no hole: zeroes as data
zero((2 << 20) + 8192, 512 << 10)
h.flush()
assert h.pread(4 << 20, base) == bytes(model)
open("trimzero.bin", "wb").write(model)
PY
check "zero and trim read back as zeroes, the rest untouched" \
	nbdsh -u "$URI" -c "exec(open('trimzero.py').read())"
dd if=trimzero.bin of=data bs=1M seek=60 conv=notrunc status=none

# A member lost while served: truncated to nothing, it returns short reads, the library
# fails it, and reads are rebuilt from parity on the fly.
truncate -s 0 m2
check "with member 2 gone, the data still reads back" nbdcopy "$URI" back2
check "and is right" cmp -n 96M data back2
check "the server logged the member failure" grep -qiE "member 2.*(fail|error)|m2.*(fail|error)" srv1.log
head -c 5M /dev/urandom >more
check "writes still work, degraded" nbdsh -u "$URI" \
	-c "h.pwrite(open('more','rb').read(), 50 << 20)" -c "h.flush()"
dd if=more of=data bs=1M seek=50 conv=notrunc status=none
check "and read back" nbdcopy "$URI" back3
check "right" cmp -n 96M data back3
stop_server
check "the server had no other errors" bash -c "! grep -v -iE 'member 2|m2|degraded|warning|: debug: ' srv1.log | grep -qiE 'error'"
check "its close removed the control socket" test ! -e "$CTL"

"$G" status m0 m1 m3 m4 m5 >status.out 2>&1
check "graidctl status: degraded (exit 3)" test $? -eq 3
check "role 2 out of the array" grep -qE "^ +2 (missing|failed)" status.out

# Replace and rebuild role 2 offline, then drop two other members, so every read of
# roles 0, 1 and 2 depends on what the rebuild wrote.
# (A bad --max-rate is a usage error, 2, where rebuild exists, and 5 where it does not.)
"$G" rebuild --max-rate 0 m0 >/dev/null 2>&1
if [ $? -ne 5 ]; then
	truncate -s 33M n2
	check "graidctl replace 2 rebuilds a new member" "$G" replace 2 n2 m0 m1 m3 m4 m5
	check "graidctl fail 0" "$G" fail 0 m0 m1 n2 m3 m4 m5
	check "graidctl fail 1" "$G" fail 1 m0 m1 n2 m3 m4 m5
	check "the server starts on the rebuilt member, with rebuild rates" \
		start_server srv2.log n2 m3 m4 m5 rebuild-max-rate=1G rebuild-busy-rate=50M
	check "and applies them" grep -q "52428800 B/s while serving" srv2.log
	check "nbdcopy reads it back" nbdcopy "$URI" back4
	check "the data is right" cmp -n 96M data back4
	stop_server
else
	echo "# replace/rebuild: not in this libgraid, not tested"
fi

# --- an engine that cannot open fails the start, before any fork or client --------------
K="k0 k1 k2 k3 k4 k5"
check "create RAID-6 on k0..k5" "$G" create --level 6 --file-size 17M $K
UK=$(sed -n 's/^created RAID-6 array \([0-9a-f-]*\):.*/\1/p' cmd.out)
args=(); for m in $K; do args+=("member=$m"); done
rm -f bad.pid
SECONDS=0
timeout 10 nbdkit -U "$T/bad.sock" -P bad.pid "$P" "${args[@]}" backend=bogus >bad.log 2>&1
rc=$?
check "daemon mode with backend=bogus exits non-zero, within 10 s" test "$rc" -ne 0 -a "$rc" -ne 124 -a $SECONDS -lt 10
check "and names the engine" grep -q "bogus" bad.log
check "and leaves no server behind" bash -c '! { [ -s bad.pid ] && kill -0 "$(cat bad.pid)" 2>/dev/null; }'
timeout 10 nbdkit -U - "$P" "${args[@]}" backend=bogus --run 'nbdinfo --size "$uri"' >bad.log 2>&1
rc=$?
check "--run with backend=bogus exits non-zero instead of hanging the client" test "$rc" -ne 0 -a "$rc" -ne 124

# --- run-dir=: the endpoint in another directory -----------------------------------------
check "the server starts on k0..k5 with run-dir=" start_server srv5.log $K run-dir=rd
check "the endpoint is at run-dir/UUID.ctl (run-dir made absolute)" test -S "$T/rd/$UK.ctl"
check "and not in \$GRAID_RUN_DIR" test ! -e "$GRAID_RUN_DIR/$UK.ctl"
ctl_request "$T/rd/$UK.ctl" hello status >ctl.out 2>&1
check "status over it returns the array" status_is_array ctl.out "$UK" 6
stop_server

# --- control=off, and a run directory the endpoint cannot use ----------------------------
# (graidctl without an endpoint: a second writer is refused, naming the server.)
check "the server starts on k0..k5 with control=off" start_server srv3.log $K control=off
check "control=off: no socket" test ! -e "$GRAID_RUN_DIR/$UK.ctl"
check "and no endpoint line" bash -c "! grep -q 'control endpoint' srv3.log"
"$G" status $K >status.out 2>&1
check "graidctl status works while the array is served (exit 0)" test $? -eq 0
"$G" fail 0 $K >fail.out 2>&1
check "graidctl fail while served without an endpoint is refused (exit 1)" test $? -eq 1
check "naming the server as the holder" grep -q "refused while pid [0-9]* (nbdkit)" fail.out
stop_server
mkdir -m 0777 open-dir
check "with a run directory others can write, the server still starts" \
	start_server srv6.log $K run-dir=open-dir
check "and serves" test "$(nbdinfo --size "$URI")" -gt 0
check "saying why it has no endpoint" grep -q "warning: no control endpoint at $T/open-dir/$UK.ctl" srv6.log
check "no socket there" test ! -e "$T/open-dir/$UK.ctl"
stop_server

# --- a spare taken over at assembly is rebuilt while serving ----------------------------
truncate -s 17M s0
check "add a hot spare" "$G" spare add s0 $K
args=(); for m in k0 k1 k2 k3 k4 s0; do args+=("member=$m"); done
rm -f bad.sock
timeout 10 nbdkit -f -U "$T/bad.sock" "$P" "${args[@]}" >bad.log 2>&1
rc=$?
check "without k5 the start is refused (a spare does not make up for a member not given)" \
	test "$rc" -ne 0 -a "$rc" -ne 124
check "naming role 5" grep -q "role 5 .*not among the members given" bad.log
"$G" status k0 k1 k2 k3 k4 s0 >status.out 2>&1
check "and the spare is still a spare" grep -qE "^ +[0-9]+ spare .* s0 " status.out
check "with degraded=1 the server starts without k5: the spare takes role 5" \
	start_server srv4.log k0 k1 k2 k3 k4 s0 degraded=1
for i in $(seq 100); do
	"$G" status k0 k1 k2 k3 k4 s0 >status.out 2>&1 && break
	sleep 0.2
done
# Through the server's endpoint: its live state, with the paths as it opened them (absolute).
check "the spare's rebuild finished while serving (status clean)" grep -qE "^ +5 active .*[ /]s0 " status.out
stop_server

if timeout 10 nbdkit -f -U "$T/bad.sock" "$P" member=m0 rebuild-busy-rate=fast >bad.log 2>&1; then
	bad "a bad rebuild-busy-rate is refused"
else
	check "a bad rebuild-busy-rate is refused, saying why" grep -q "fast" bad.log
fi
if timeout 10 nbdkit -f -U "$T/bad.sock" "$P" member=m0 io-timeout=soon >bad.log 2>&1; then
	bad "a bad io-timeout is refused"
else
	check "a bad io-timeout is refused, saying why" grep -q "io-timeout.*soon" bad.log
fi

for v in 99 -1 +500 ' 500' 500ms '' 86400001; do
	if timeout 10 nbdkit -f -U "$T/bad.sock" "$P" member=m0 "health-interval=$v" >bad.log 2>&1; then
		bad "a bad health-interval '$v' is refused"
	else
		check "a bad health-interval '$v' is refused, saying why" grep -q "health-interval.*'$v'" bad.log
	fi
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
