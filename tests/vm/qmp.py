#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Set a property of one of the test VM's emulated NVMe controllers through QEMU's monitor.

usage: qmp.py SOCKET qom-set nvmectlK PROPERTY VALUE

tests/vm/run calls it for a guest's "HOST: qom-set ..." console line. Only the controllers'
own properties that a test may change from outside are accepted: a guest asks for nothing
else of the host.
"""
import json
import re
import socket
import sys

ALLOWED = {"smart_critical_warning"}


def main(argv):
    if len(argv) != 6 or argv[2] != "qom-set":
        print("qmp: usage: qmp.py SOCKET qom-set nvmectlK PROPERTY VALUE", file=sys.stderr)
        return 2
    sock_path, _, dev, prop, value = argv[1:]
    if not re.fullmatch(r"nvmectl[0-9]", dev) or prop not in ALLOWED or \
            not re.fullmatch(r"[0-9]{1,3}", value) or int(value) > 255:
        print(f"qmp: refused: qom-set {dev} {prop} {value}", file=sys.stderr)
        return 2
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(sock_path)
    f = s.makefile("rw")

    def reply():
        # Events may come between a command and its answer: skip them.
        while True:
            line = f.readline()
            if not line:
                raise OSError("QEMU closed its monitor")
            msg = json.loads(line)
            if "event" not in msg:
                return msg

    reply()  # the greeting
    for cmd in ({"execute": "qmp_capabilities"},
                {"execute": "qom-set", "arguments": {
                    "path": f"/machine/peripheral/{dev}", "property": prop,
                    "value": int(value)}}):
        f.write(json.dumps(cmd) + "\n")
        f.flush()
        msg = reply()
        if "error" in msg:
            print(f"qmp: {cmd['execute']}: {msg['error'].get('desc')}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
