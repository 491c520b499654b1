"""Reads one point's slow requests beside the scheduler's trace of the
same window (bench/cpu/tail.sh makes both).

    tail.py LAT_DUMP_FILE SCHED_SCRIPT [COMM_PREFIX]

LAT_DUMP_FILE is a closed-loop client's request list (bench/gpu/closedloop.h,
LAT_DUMP), SCHED_SCRIPT the text of `perf script -F comm,tid,cpu,time,event,trace`
over `perf record -a -k CLOCK_MONOTONIC -e sched:sched_switch` of the run, so
both read CLOCK_MONOTONIC. The process's threads are the tasks whose
command name starts with COMM_PREFIX (default "loadgen"): the caller is
the client thread that sends the requests (its id is in the file's
header; without one, the thread longest on a CPU), the others that held a
CPU for a tenth of the window or more are the library's workers (a Go
worker moves between threads: they count as one, off only when all are).

A request is slow when it took 1.3x the median or more. For each one it
says, first that holds: a signal was delivered to the caller inside it
(for mstream, SIGURG: Go's preemption of a goroutine that has held its P
for 10 ms, here the thread that entered from C, whose hand-off of its P
follows), the caller was off its CPU for more than 5 us inside it, every
worker was, or none of these; and over the whole window what took the
caller's CPU (a task of another name, a thread of the client's own, or
the caller's own sleep) with counts and durations: the parts of a tail
that the scheduler's trace explains, and the part it does not.
"""
import bisect
import collections
import math
import re
import statistics
import sys

SWITCH = re.compile(
    r"\[(\d+)\]\s+([0-9.]+):\s+sched:sched_switch: prev_comm=(.*?) prev_pid=(\d+)"
    r".*prev_state=(\S+) ==> next_comm=(.*?) next_pid=(\d+)"
)
DELIVER = re.compile(r"^\s*\S.*?\s+(\d+)\s+\[\d+\]\s+([0-9.]+):\s+signal:signal_deliver: sig=(\d+)")
SLOW = 1.3  # a slow request, in medians
OFF_US = 5.0  # off its CPU for longer than this inside a request


def read_requests(path):
    """The requests of a LAT_DUMP file's first client: (start, latency) in
    seconds of CLOCK_MONOTONIC, in start order; and that client thread's
    id (0 where the header has none)."""
    with open(path) as f:
        head = f.readline()
        m = re.search(r"after ([0-9.]+)", head)
        if not m:
            raise SystemExit(f"tail.py: {path}: no window start in its first line ({head.strip()!r})")
        t0 = float(m.group(1))
        tids = re.search(r"client tids: (\d+)", head)
        reqs = []
        for line in f:
            client, start, lat = line.split()
            if client == "0":
                reqs.append((t0 + float(start), float(lat)))
    return sorted(reqs), int(tids.group(1)) if tids else 0


def read_trace(path):
    """The sched_switch events of a perf script text, as (time, cpu,
    prev_comm, prev_tid, prev_state, next_comm, next_tid), and its
    signal_deliver events as (time, tid, signal)."""
    switches, signals = [], []
    with open(path) as f:
        for line in f:
            m = SWITCH.search(line)
            if m:
                cpu, t, pc, pid, st, nc, nid = m.groups()
                switches.append((float(t), int(cpu), pc, int(pid), st, nc, int(nid)))
                continue
            m = DELIVER.search(line)
            if m:
                signals.append((float(m.group(2)), int(m.group(1)), int(m.group(3))))
    return sorted(switches), sorted(signals)


def on_cpu(switches, end):
    """Each task's on-CPU intervals [a, b), by tid, and its command name.
    A task seen leaving a CPU it was not seen entering (the trace's first
    events; and on this VM a CPU's switch out of its idle task is now and
    then missing from the trace) ran there since that CPU's last switch."""
    since, ivs, comm, last = {}, collections.defaultdict(list), {}, {}
    start = switches[0][0]
    for t, cpu, pc, pid, _, nc, nid in switches:
        comm[pid] = pc
        comm.setdefault(nid, nc)
        a = since.pop(pid, None)
        if a is None:
            a = max(last.get(cpu, start), ivs[pid][-1][1] if ivs[pid] else start)
        ivs[pid].append((a, t))
        since[nid] = last[cpu] = t
    for tid, a in since.items():
        ivs[tid].append((a, end))
    return ivs, comm


def covered(ivs, s, e):
    """How much of [s, e) the sorted intervals ivs cover."""
    tot = 0.0
    for a, b in ivs:
        if b <= s:
            continue
        if a >= e:
            break
        tot += min(b, e) - max(a, s)
    return tot


def union(lists):
    """The union of several interval lists, sorted and merged."""
    allv = sorted(iv for lst in lists for iv in lst)
    out = []
    for a, b in allv:
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def displacements(switches, caller, prefix):
    """What took the caller's CPU each time it left it: (kind, name) ->
    list of us off. kind is 'preempted by' (it stayed runnable) or
    'slept, then' (it blocked; name is who ran next on its CPU); a thread
    of the client's own (its command name starts with prefix) is named
    with its tid."""
    left, out = None, collections.defaultdict(list)
    for t, _, pc, pid, st, nc, nid in switches:
        if pid == caller:
            kind = "preempted by" if st.startswith("R") else "slept, then"
            who = f"{nc} (tid {nid})" if nc.startswith(prefix) else nc
            left = (t, kind, re.sub(r"/\d+$", "", who))
        elif nid == caller and left:
            out[(left[1], left[2])].append((t - left[0]) * 1e6)
            left = None
    return out


def main(argv):
    if len(argv) < 3:
        raise SystemExit(__doc__)
    prefix = argv[3] if len(argv) > 3 else "loadgen"
    reqs, client = read_requests(argv[1])
    switches, signals = read_trace(argv[2])
    if not reqs or not switches:
        raise SystemExit("tail.py: no requests or no sched_switch events")
    w0, w1 = reqs[0][0], reqs[-1][0] + reqs[-1][1]
    ivs, comm = on_cpu(switches, w1)
    mine = {tid: covered(ivs[tid], w0, w1) for tid in ivs if comm.get(tid, "").startswith(prefix)}
    if not mine:
        raise SystemExit(f"tail.py: no task named {prefix}* in the trace")
    ranked = sorted(mine, key=mine.get, reverse=True)
    caller = client if client in mine else ranked[0]
    workers = [tid for tid in ranked if tid != caller and mine[tid] >= 0.1 * (w1 - w0)]
    lats = [lat for _, lat in reqs]
    med = statistics.median(lats)
    worker_on = union([ivs[w] for w in workers])
    slow = [(s, lat) for s, lat in reqs if lat >= SLOW * med]
    fast = [(s, lat) for s, lat in reqs if lat < 1.1 * med]
    print(f"window {w1 - w0:.2f} s, {len(reqs)} requests, median {med * 1e6:.1f} us; "
          f"caller tid {caller} ({mine[caller] / (w1 - w0):.0%} on a CPU), "
          f"workers {', '.join(f'{w} ({mine[w] / (w1 - w0):.0%})' for w in workers) or 'none'}")

    sig_at = [t for t, tid, _ in signals if tid == caller]
    sig_names = collections.Counter(sig for t, tid, sig in signals if tid == caller and w0 <= t <= w1)

    def classify(rs):
        n = {"signalled": 0, "caller off": 0, "workers off": 0, "neither": 0}
        excess = dict.fromkeys(n, 0.0)
        for s, lat in rs:
            e = s + lat
            c_off = (lat - covered(ivs[caller], s, e)) * 1e6
            w_off = (lat - covered(worker_on, s, e)) * 1e6 if workers else 0.0
            i = bisect.bisect_left(sig_at, s)
            if i < len(sig_at) and sig_at[i] < e:
                k = "signalled"
            else:
                k = "caller off" if c_off > OFF_US else "workers off" if w_off > OFF_US else "neither"
            n[k] += 1
            excess[k] += (lat - med) * 1e6
        return n, excess

    for name, rs in (("slow", slow), ("fast", fast)):
        n, excess = classify(rs)
        total = max(len(rs), 1)
        parts = ", ".join(
            f"{k} {n[k] / total:.0%}" + (f" (+{excess[k] / n[k]:.0f} us)" if name == "slow" and n[k] else "")
            for k in n)
        label = f">= {SLOW}x median" if name == "slow" else "< 1.1x median"
        print(f"{name} ({label}): {len(rs)} = {len(rs) / len(reqs):.2%} of requests; {parts}")
    if sig_names:
        print("signals delivered to the caller in the window: "
              + ", ".join(f"{n} of signal {sig}" for sig, n in sorted(sig_names.items())))
    print("what took the caller's CPU in the window (us off its CPU):")
    disp = displacements([s for s in switches if w0 <= s[0] <= w1], caller, prefix)
    for (kind, who), v in sorted(disp.items(), key=lambda kv: -sum(kv[1]))[:12]:
        v.sort()
        p90 = v[math.ceil(0.9 * len(v)) - 1]
        print(f"  {kind} {who}: {len(v)} times, median {statistics.median(v):.0f}, "
              f"p90 {p90:.0f}, total {sum(v) / 1e3:.1f} ms")


if __name__ == "__main__":
    main(sys.argv)
