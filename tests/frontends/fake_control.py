#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# A stand-in control endpoint (docs/CONTROL.md) for graidctl's client side: scripted replies.
# usage: fake_control.py SOCKET MODEFILE LOGFILE
# Each request is appended to LOGFILE; MODEFILE, read at each request, picks the script:
#   old    only hello is known: every other op is "unknown op" (a holder's older libgraid)
#   new    rebuild: role 1 rebuilds over four status polls; scrub: runs over four polls and
#          ends with two mismatches; scrub-stop stops it; spare-remove of ".../nosuch": ENOENT
#   stuck  as new, but the rebuild and the scrub never end (for Ctrl-C)
#   lose   as new, but role 1 fails during its rebuild
#   halt   as new, but the holder's rebuild stops (EIO) with role 1 still rebuilding
#   busy   as new, but scrub-start says a scrub runs already (EBUSY)
import json
import socket
import sys

path, modefile, logfile = sys.argv[1:4]
polls = {"status": 0, "scrub": 0, "scrubbing": 0}
TOTAL = 64 << 20


def member(role, state, done=0, total=0):
    return {"role": role, "state": state, "path": "d%d" % role, "catchup_done": done,
            "catchup_total": total, "bad_block_units": 0}


def scrub_obj(state, n):
    o = {"state": state, "repair": False, "done": min(n, 4) * TOTAL // 4, "total": TOTAL,
         "first_row": 0, "stripes_checked": 0, "mismatches": 0, "repaired": 0, "skipped": 0,
         "unused": 0, "rewritten": 0, "unrecoverable": 0, "named": [], "errno": 0,
         "error": None}
    if state == "done":
        o.update(stripes_checked=100, mismatches=2,
                 named=[{"stripe": 5, "member": 1}, {"stripe": 9, "member": -1}])
    return o


def reply(mode, req):
    op = req.get("op")
    if op == "hello":
        return {"protocol": 1, "version": "0.0.1-fake"}
    if mode == "old":
        return {"errno": 95, "error": "unknown op '%s'" % op}
    if op == "status":
        polls["status"] += 1
        n = polls["status"]
        if mode == "lose" and n >= 3:
            role1 = member(1, "failed")
        elif mode == "stuck" or n < 4:
            role1 = member(1, "rebuilding", min(n, 3) * TOTAL // 4, TOTAL)
        else:
            role1 = member(1, "active", TOTAL, TOTAL)
        if mode == "halt":
            role1 = member(1, "rebuilding", TOTAL // 4, TOTAL)
        st = {"nmembers": 3, "state": "degraded",
              "scrub": scrub_obj("running", polls["scrub"]) if polls["scrubbing"] else None,
              "members": [member(0, "active"), role1, member(2, "active")]}
        if mode == "halt":
            st["rebuild"] = {"running": False, "errno": 5}
        elif mode in ("new", "stuck", "lose"):
            st["rebuild"] = {"running": True, "errno": 0}
        return st
    if op == "rebuild":
        polls["status"] = 0
        return {"rebuilding": [1]}
    if op in ("rebuild-rate", "replace", "fail", "spare-add"):
        return {"done": op}
    if op == "spare-remove":
        if req.get("path", "").endswith("/nosuch"):
            return {"errno": 2, "error": "spare-remove: No such file or directory"}
        return {"done": op}
    if op == "scrub-start":
        if mode == "busy":
            return {"errno": 16, "error": "scrub-start: a scrub is running"}
        polls["scrub"] = 0
        polls["scrubbing"] = 1
        return {"scrub": scrub_obj("running", 0)}
    if op == "scrub-status":
        polls["scrub"] += 1
        n = polls["scrub"]
        return {"scrub": scrub_obj("running" if mode == "stuck" or n < 4 else "done", n)}
    if op == "scrub-stop":
        return {"stopped": True, "scrub": scrub_obj("stopped", 2)}
    return {"errno": 95, "error": "unknown op '%s'" % op}


s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(path)
s.listen(4)
print("listening", flush=True)
while True:
    c, _ = s.accept()
    f = c.makefile("rwb")
    for line in f:
        req = json.loads(line)
        with open(logfile, "a") as log:
            log.write(json.dumps(req, sort_keys=True) + "\n")
        with open(modefile) as m:
            mode = m.read().strip()
        r = reply(mode, req)
        ok = "errno" not in r
        r.update({"id": req.get("id"), "ok": ok})
        f.write((json.dumps(r) + "\n").encode())
        f.flush()
    c.close()
