#!/usr/bin/env python3
"""burst-timeline.py: where one bulk burst's time goes inside orchagent.

Reads a perf recording of orchagent's system calls (taken during one bulk
bench run) and prints, in ms from orchagent's first large read of keyspace
notifications (>= 8 KB: the burst's start), how many HGETALL pipelines the
watcher wrote, how many kernel batches (netlink sendto) the worker sent,
their sizes, the time spent in them, the worker's gaps between them (a
sendto's return to the next sendto: its own work and its waits for the
next keys), the STATE_DB result writes, and the last of each.

Record with a SWITCHYARD_BIN directory whose orchagent is a wrapper (the
other binaries linked from a real bin/):

  #!/bin/sh
  exec perf record -q -m 64M -k CLOCK_MONOTONIC \\
    -e syscalls:sys_enter_sendto,syscalls:sys_exit_sendto,syscalls:sys_enter_read,\\
  syscalls:sys_exit_read,syscalls:sys_enter_write \\
    -o /tmp/sys.$$.data -- /path/to/bin/orchagent "$@"

then run one bench (-test.benchtime 1x) and:

  scripts/burst-timeline.py /tmp/sys.*.data

The file descriptors are told apart by their use: the notifications' is
the first with a read of 8 KB or more, the HGETALLs' the first written
after it, netlink's the one sendto writes, the results' the one written
most after the first kernel batch. docs/performance.md (addr5) has
figures.
"""
import re
import subprocess
import sys


def syscalls(path):
    """(time, kind, fd, size) of the reads, writes and sendtos in path."""
    txt = subprocess.run(['perf', 'script', '-F', 'tid,time,event,trace', '-i', path],
                         capture_output=True, text=True, check=True).stdout
    reading, out = {}, []
    for line in txt.splitlines():
        m = re.match(r'\s*(\d+)\s+(\d+\.\d+):\s+syscalls:(\S+):\s*(.*)', line)
        if not m:
            continue
        tid, t, name, rest = m.groups()
        t = float(t)
        fd = re.search(r'fd: 0x([0-9a-f]+)', rest)
        fd = int(fd.group(1), 16) if fd else None
        size = re.search(r'(?:count|len): 0x([0-9a-f]+)', rest)
        size = int(size.group(1), 16) if size else None
        if name == 'sys_enter_read':
            reading[tid] = fd
        elif name == 'sys_exit_read':
            n = int(rest, 16) if not rest.startswith('0xffff') else -1
            if n > 0:
                out.append((t, 'read', reading.get(tid), n))
        elif name == 'sys_enter_write':
            out.append((t, 'write', fd, size))
        elif name == 'sys_enter_sendto':
            out.append((t, 'sendto', fd, size))
        elif name == 'sys_exit_sendto':
            out.append((t, 'ret', None, None))
    return out


def burst(path, span=2.0):
    """The burst's figures, or None when the recording holds no burst."""
    calls = syscalls(path)
    start = next(((t, fd) for t, k, fd, n in calls if k == 'read' and n >= 8000), None)
    if start is None:
        return None
    start, notes_fd = start
    calls = [c for c in calls if start - 0.002 <= c[0] <= start + span]
    hget_fd = next(fd for t, k, fd, n in calls if k == 'write' and t >= start)
    sends, cur = [], None
    for t, k, fd, n in calls:
        if k == 'sendto' and n > 200:  # not a small request (a link look-up)
            cur = [t, None, n]
        elif k == 'ret' and cur:
            cur[1] = t
            sends.append(cur)
            cur = None
    if not sends:
        return None
    later = [fd for t, k, fd, n in calls if k == 'write' and fd != hget_fd and t > sends[0][0]]
    res_fd = max(set(later), key=later.count) if later else None
    ms = lambda t: round((t - start) * 1000, 2)
    results = [t for t, k, fd, n in calls if k == 'write' and fd == res_fd]
    notes = [t for t, k, fd, n in calls if k == 'read' and fd == notes_fd]
    return {
        'hgetall_pipelines': sum(1 for t, k, fd, n in calls if k == 'write' and fd == hget_fd),
        'kernel_batches': len(sends),
        'batch_bytes': [s[2] for s in sends],
        'first_kernel_write_ms': ms(sends[0][0]),
        'last_notification_ms': ms(notes[-1]),
        'last_kernel_return_ms': ms(sends[-1][1]),
        'last_result_write_ms': ms(results[-1]) if results else None,
        'in_kernel_ms': round(sum(s[1] - s[0] for s in sends) * 1000, 2),
        'worker_gaps_ms': round(sum(sends[i][0] - sends[i - 1][1] for i in range(1, len(sends))) * 1000, 2),
        'result_writes': len(results),
    }


if __name__ == '__main__':
    for p in sys.argv[1:]:
        print(p, burst(p))
