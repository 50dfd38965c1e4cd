#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Inject machine checks into the test VM when a test in the guest asks.

QEMU (vm/lib/qemu.sh, x86 guests) serves two Unix sockets: its QMP
monitor and the guest's second serial port (ttyS1). A test writes one
request a line on ttyS1 and waits for the answer line:

    srao PHYS      an action-optional memory error (a patrol scrub's) at
                   guest-physical address PHYS, on CPU 0
    srar CPU PHYS  an action-required one: CPU consumed it (a load); the
                   guest keeps CPU busy in user mode, where the relay
                   waits to find it (below)
    ok             the monitor took the `mce` command (HMP's, through
                   QMP's human-monitor-command)
    error TEXT     it did not, or the request was not understood

The records are the ones measured in Documentation/kernel-facts.md
("Memory errors"): bank 1, MCi_MISC 0x8c (a physical address, 4 KiB
granularity). QEMU delivers a record wherever the vCPU is: an SRAR that
finds it in the kernel panics the guest (one injection in three without
isolation, measured; with isolation, rarely: a tick or an IPI). So an
SRAR is injected only into a stopped VM whose CPU is in user mode
(CPL=3 in `info registers`): stop, look, inject and continue, or
continue and look again a little later. With the VM stopped nothing
runs before the record: QEMU takes a machine check before any external
interrupt pending with it. The guest that asks for one still isolates
the CPU (vm/guest/mce.sh), so that the look succeeds soon.

Usage: mce_relay.py REQUEST_SOCKET MONITOR_SOCKET; it waits for both to
appear and ends when QEMU closes them.
"""
import json
import re
import socket
import sys
import time

SRAO = "mce 0 1 0xbd000000000000c0 0x5 {phys:#x} 0x8c"
SRAR = "mce {cpu} 1 0xbd80000000000134 0x6 {phys:#x} 0x8c"
NUMBER = r"0x[0-9a-fA-F]+|[0-9]+"


def command(words):
    """The monitor command for a request, or None."""
    if len(words) == 2 and words[0] == "srao" and re.fullmatch(NUMBER, words[1]):
        return SRAO.format(phys=int(words[1], 0))
    if len(words) == 3 and words[0] == "srar" and \
            re.fullmatch(r"[0-9]+", words[1]) and re.fullmatch(NUMBER, words[2]):
        return SRAR.format(cpu=int(words[1]), phys=int(words[2], 0))
    return None


def connect(path, deadline):
    while True:
        try:
            s = socket.socket(socket.AF_UNIX)
            s.connect(path)
            return s
        except OSError:
            s.close()
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


class Monitor:
    """QMP: one JSON object a line each way; events are skipped."""

    def __init__(self, sock):
        self.sock = sock
        self.buf = b""
        self.read()                     # the greeting
        self.execute("qmp_capabilities")

    def read(self):
        while b"\n" not in self.buf:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise EOFError("monitor closed")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def execute(self, command, **arguments):
        msg = {"execute": command}
        if arguments:
            msg["arguments"] = arguments
        self.sock.sendall((json.dumps(msg) + "\n").encode())
        while True:
            reply = self.read()
            if "return" in reply or "error" in reply:
                return reply

    def hmp(self, command_line):
        """Run an HMP command; return what it printed, or the error."""
        reply = self.execute("human-monitor-command",
                             **{"command-line": command_line})
        if "error" in reply:
            return reply["error"].get("desc", "error")
        return reply["return"].strip()


def srar(mon, cpu, cmd):
    """Inject @cmd while CPU @cpu is in user mode; "" or what went wrong."""
    for look in range(1, 601):
        out = mon.execute("stop")
        if "error" in out:
            return "stop: %s" % out["error"].get("desc", "error")
        regs = mon.execute("human-monitor-command",
                           **{"command-line": "info registers",
                              "cpu-index": cpu})
        text = regs.get("return", "")
        cpl = re.search(r"CPL=([0-3])", text)
        out = mon.hmp(cmd) if cpl and cpl.group(1) == "3" else None
        cont = mon.execute("cont")
        if "error" in cont:
            return "cont: %s" % cont["error"].get("desc", "error")
        if out is not None:
            print("mce relay: CPU %d in user mode at look %d" % (cpu, look),
                  file=sys.stderr, flush=True)
            return out
        if not cpl:
            return "no CPL in info registers of CPU %d" % cpu
        time.sleep(0.05)
    return "CPU %d was in the kernel at each of 600 looks" % cpu


def main():
    req_path, mon_path = sys.argv[1], sys.argv[2]
    deadline = time.monotonic() + 120
    mon = Monitor(connect(mon_path, deadline))
    req = connect(req_path, deadline)
    buf = b""
    while True:
        chunk = req.recv(4096)
        if not chunk:
            return
        buf += chunk
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            words = line.decode(errors="replace").strip().split()
            if not words:
                continue
            cmd = command(words)
            if not cmd:
                reply = "error: not a request: %s" % " ".join(words)
            else:
                out = srar(mon, int(words[1]), cmd) if words[0] == "srar" \
                    else mon.hmp(cmd)
                reply = "ok" if not out else "error: " + out.replace("\n", " ")
            print("mce relay: %s -> %s" % (" ".join(words), reply),
                  file=sys.stderr, flush=True)
            req.sendall((reply + "\n").encode())


if __name__ == "__main__":
    try:
        main()
    except (OSError, EOFError):
        pass
