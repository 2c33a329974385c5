#!/usr/bin/env python3
"""The exec sink's child in the end-to-end tests: ack_child.py FILE.

Appends every JSON line it reads on stdin to FILE and answers each
{"kind":"flush","seq":N,...} line with "ack N" once FILE is fsynced: the
exec sink's protocol (docs/sinks.md), so what it acknowledged is durable.

CHILD_FIRST_ACK_DELAY=SECONDS holds the first ack back that long after the
fsync (a slow child: the consumer must keep the walsender's keepalives
answered meanwhile, and acknowledge nothing of the unit before the ack).
CHILD_FIRST_ACK_GATE=PATH also holds it until PATH exists (a test reads what
the slot and the checkpoint hold while the ack is held, then creates PATH).
"""
import json
import os
import sys
import time

out = open(sys.argv[1], "a")
delay = float(os.environ.get("CHILD_FIRST_ACK_DELAY", "0"))
gate = os.environ.get("CHILD_FIRST_ACK_GATE")
for line in sys.stdin:
    if line.startswith('{"kind":"flush"'):
        out.flush()
        os.fsync(out.fileno())
        time.sleep(delay)
        delay = 0
        while gate and not os.path.exists(gate):
            time.sleep(0.05)
        gate = None
        print("ack %d" % json.loads(line)["seq"], flush=True)
    else:
        out.write(line)
out.flush()
