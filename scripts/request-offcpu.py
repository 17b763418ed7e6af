#!/usr/bin/env python3
"""request-offcpu.py: where the kernel requests of a burst wait, orchagent against ip -batch.

Reads `perf script` output of a system-wide recording of scheduler, lock and
system-call events over one VM bench run (orchagent's burst and the
reference's `ip -batch` in the same recording), and prints for each of the
two (orchagent: the process with the most netlink sendto; ip: the `ip`
process with the most sendmsg), over the window from its first to its last
request:

- the requests: their number and wall time (a request's sendto/sendmsg to
  the next read on the same socket: the acknowledgement);
- the time a thread spent off its CPU *inside* a request (the switch-out
  stack holds netlink_sendmsg), by cause: waiting for the RTNL mutex (with
  what released it: the waker's stack), a workqueue thread being created
  (a bond's alloc_workqueue), an RCU grace period, or preempted (runnable,
  not running: R), with who took the CPU;
- the CPU used in the window per command (from the switches).

Record in the guest (echo 0 > /proc/sys/kernel/kptr_restrict; cp /proc/kallsyms OUT/):

  perf record -q -m 16M -a -g -e sched:sched_switch -e sched:sched_waking \\
    -e syscalls:sys_enter_sendto/call-graph=no/ -e syscalls:sys_enter_sendmsg/call-graph=no/ \\
    -e syscalls:sys_enter_recvfrom/call-graph=no/ -e syscalls:sys_enter_recvmsg/call-graph=no/ \\
    -o OUT/sched.data -- e2e.test -test.run '^$' -test.bench VMPortChannel -test.benchtime 1x

then on the host:

  perf script -i sched.data --kallsyms=kallsyms -F comm,pid,tid,cpu,time,event,trace,ip,sym > s.txt
  scripts/request-offcpu.py s.txt

docs/performance.md (vmpc6) has figures.
"""
import collections
import re
import sys

HDR = re.compile(r'\s*(.+?)\s+(\d+)/(\d+)\s+\[(\d+)\]\s+([\d.]+):\s+(\S+):\s*(.*)$')
SWITCH = re.compile(r'prev_pid=(\d+) prev_prio=\d+ prev_state=(\S+) ==> next_comm=(.*) next_pid=(\d+)')
FD = re.compile(r'fd: (0x[0-9a-f]+)')


def parse(path):
    """Yields one event per record: comm, pid, tid, cpu, t, ev, trace, stack (symbols)."""
    ev = None
    with open(path, errors='replace') as f:
        for line in f:
            m = HDR.match(line)
            if m:
                if ev:
                    yield ev
                comm, pid, tid, cpu, t, name, trace = m.groups()
                ev = dict(comm=comm, pid=int(pid), tid=int(tid), cpu=int(cpu), t=float(t), ev=name, trace=trace, stack=[])
            elif not line.strip():
                if ev:
                    yield ev
                ev = None
            elif ev is not None:
                p = line.split()
                if len(p) >= 2:
                    ev['stack'].append(p[1].split('+')[0])
    if ev:
        yield ev


def cause(state, stack):
    s = ' '.join(stack)
    if 'rtnetlink_rcv_msg' in s and '__mutex_lock' in s.split('rtnetlink_rcv_msg')[0]:
        return 'RTNL mutex'
    if 'kthread_create_on_node' in s:
        return 'workqueue thread create'
    if 'synchronize_rcu' in s and state.startswith('D'):
        return 'RCU grace period'
    if state.startswith('R'):
        return 'preempted (runnable)'
    return 'other ' + state + ' ' + ' < '.join(x for x in stack if x not in ('__schedule', 'schedule'))[:80]


def short(comm):
    return re.sub(r'[/:].*', '', comm)


def report(evs, comm, send, recv):
    pids = collections.Counter(e['pid'] for e in evs if e['comm'] == comm and e['ev'] == 'syscalls:sys_enter_' + send)
    if not pids:
        print(f'== {comm}: no {send}')
        return
    pid = pids.most_common(1)[0][0]
    tids = {e['tid'] for e in evs if e['pid'] == pid}
    sends = [e['t'] for e in evs if e['pid'] == pid and e['ev'] == 'syscalls:sys_enter_' + send]
    t0, t1 = min(sends), max(sends)
    # requests: send -> next read on the same fd
    pending, walls = {}, []
    for e in evs:
        if e['pid'] != pid or not e['ev'].startswith('syscalls:'):
            continue
        fd = FD.search(e['trace'])
        fd = fd.group(1) if fd else ''
        if e['ev'] == 'syscalls:sys_enter_' + send:
            pending[fd] = e['t']
        elif e['ev'] == 'syscalls:sys_enter_' + recv and fd in pending:
            walls.append(e['t'] - pending.pop(fd))
    walls.sort()
    out, woke = {}, {}
    agg = collections.defaultdict(lambda: [0.0, 0, collections.Counter()])
    took = collections.Counter()
    run, last = collections.Counter(), {}
    for e in evs:
        if not (t0 <= e['t'] <= t1):
            continue
        if e['ev'] == 'sched:sched_switch':
            m = SWITCH.search(e['trace'])
            if not m:
                continue
            pp, st, nc, np_ = int(m.group(1)), m.group(2), m.group(3), int(m.group(4))
            c = e['cpu']
            if c in last:
                run[last[c][0]] += e['t'] - last[c][1]
            last[c] = ('idle' if np_ == 0 else short(nc), e['t'])
            if pp in tids and 'netlink_sendmsg' in e['stack']:
                k = cause(st, e['stack'])
                out[pp] = (e['t'], k)
                woke.pop(pp, None)
                if k.startswith('preempted'):
                    took[(comm + ' thread') if np_ in tids else short(nc)] += 1
            if np_ in out:
                t, k = out.pop(np_)
                a = agg[k]
                a[0] += e['t'] - t
                a[1] += 1
                if np_ in woke:
                    a[2][woke.pop(np_)] += 1
        elif e['ev'] == 'sched:sched_waking':
            m = re.search(r' pid=(\d+) ', e['trace'])
            p = int(m.group(1)) if m else -1
            if p in out and p not in woke:
                fr = [s for s in e['stack'] if not s.startswith(('__traceiter', 'ttwu', 'try_to_wake_up', 'wake_up_q',
                      'wake_up_process', '[unknown]', '__mutex_unlock', '__rtnl_unlock', 'autoremove', '__wake_up'))][:3]
                woke[p] = short(e['comm']) + ': ' + ' < '.join(fr)
    print(f'== {comm} (pid {pid}): window {(t1 - t0) * 1000:.0f} ms, {len(walls)} requests, '
          f'{sum(walls) * 1000:.0f} ms in them (median {walls[len(walls) // 2] * 1000:.2f} ms)')
    print('  CPU in the window, ms: ' + ', '.join(f'{k} {v * 1000:.0f}' for k, v in run.most_common(10)))
    print('  off-CPU inside requests:')
    for k, (d, n, w) in sorted(agg.items(), key=lambda x: -x[1][0]):
        if d < 0.002:
            continue
        print(f'    {k:28s} {n:5d}x {d * 1000:8.1f} ms')
        if k == 'RTNL mutex':
            for who, c in w.most_common(4):
                print(f'        released by {c}x {who}')
    print('  preempted by: ' + ', '.join(f'{k} {v}x' for k, v in took.most_common(8)))


def main():
    evs = list(parse(sys.argv[1]))
    report(evs, 'orchagent', 'sendto', 'recvfrom')
    report(evs, 'ip', 'sendmsg', 'recvmsg')


if __name__ == '__main__':
    main()
