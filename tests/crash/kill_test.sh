#!/bin/sh
# kill_test.sh DELOG TESTDIR KILLS - SIGKILL `delog stress` at random moments on every
# real backend and check what survives (docs/DESIGN.md section 5, G1 and G3; T7).
#
# For each backend (uring, aio, psync; one that cannot run here is skipped, and with
# none the test exits 77), KILLS times: start `delog stress LOG --backend B` with 1..8
# threads and a policy taken in turn (sync, async, single), wait for its first
# acknowledged id and kill it with SIGKILL 0..150 ms later (one run in five is killed
# 0..40 ms after it started instead, often inside its own recovery), then run
# `delog recover LOG --ids` and check:
#   - recovery succeeds (exit 0);
#   - every id any run ever printed (stress prints an id only after its force returned)
#     is recovered, unless stress announced on stderr that the log released it ("released
#     thread T through id C", printed before each delog_release from its push callback);
#   - each thread's recovered ids are a run without holes or duplicates.
# The log is formatted by the first run only, so later runs recover and continue it
# (ids continue after the highest recovered), across the log's wrap.  The parent reads
# the ids through a pipe; a line cut by the kill (no newline) is ignored.
set -eu
DELOG=$1
DIR=$2
KILLS=${3:-50}
command -v python3 >/dev/null 2>&1 || { echo "kill_test: python3 not found: skipped"; exit 77; }
exec python3 - "$DELOG" "$DIR" "$KILLS" <<'EOF'
import os, random, signal, subprocess, sys, threading, time

delog, tdir, kills = sys.argv[1], sys.argv[2], int(sys.argv[3])
rng = random.Random(int(os.environ.get("KILL_SEED", "1")))
policies = ["sync", "async", "single"]
SHIFT = 40
total_kills = total_ids = total_released = 0
ran = []

def fail(msg):
    print("kill_test: FAIL: " + msg, flush=True)
    sys.exit(1)

def run_stress(log, backend, first, policy, threads):
    args = [delog, "stress", log, "--backend", backend, "--policy", policy,
            "--threads", str(threads), "--size", "16M"]
    if first:
        args.append("--format")
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, got_first, errl = [], threading.Event(), []
    def ereader():
        for l in p.stderr:
            errl.append(l.decode(errors="replace"))
    te = threading.Thread(target=ereader, daemon=True)
    te.start()
    def reader():
        buf = b""
        for chunk in iter(lambda: p.stdout.read1(65536), b""):
            buf += chunk
            *lines, buf = buf.split(b"\n")
            for l in lines:
                out.append(int(l))
            if out:
                got_first.set()
        got_first.set()            # EOF (or a cut line left in buf: ignored)
    t = threading.Thread(target=reader, daemon=True)
    t.start()
    early = not first and rng.random() < 0.2
    if early:
        time.sleep(rng.uniform(0, 0.04))
    else:
        if not got_first.wait(60):
            p.kill()
            fail("%s: no id acknowledged within 60 s" % backend)
        time.sleep(rng.uniform(0, 0.15))
    p.send_signal(signal.SIGKILL)
    p.wait()
    t.join(30)
    te.join(30)
    if p.returncode != -signal.SIGKILL:
        fail("%s: stress exited with %s before the kill:\n%s" % (backend, p.returncode,
             "".join(errl)))
    if os.environ.get("KILL_DEBUG"):
        with open(os.environ["KILL_DEBUG"], "a") as f:
            f.write("=== run first=%s policy=%s threads=%d\n" % (first, policy, threads))
            f.writelines(errl)
    rel = {}
    for l in errl:
        w = l.split()
        if len(w) == 6 and w[0] == "released" and l.endswith("\n"):
            i = int(w[5])
            rel[i >> SHIFT] = max(rel.get(i >> SHIFT, 0), i & ((1 << SHIFT) - 1))
    return out, rel

def recover(log, backend):
    r = subprocess.run([delog, "recover", log, "--ids", "--backend", backend],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if r.returncode != 0:
        fail("%s: recovery after a kill failed (%d):\n%s" % (backend, r.returncode,
             r.stderr.decode(errors="replace")))
    return [int(l) for l in r.stdout.split()]

for backend in ["uring", "aio", "psync"]:
    log = os.path.join(tdir, "kill-%s-%d.log" % (backend, os.getpid()))
    probe = subprocess.run([delog, "stress", log, "--backend", backend, "--count", "1",
                            "--threads", "1", "--size", "16M", "--format"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if probe.returncode != 0:
        print("kill_test: %s: cannot run here, skipped: %s" % (backend,
              probe.stderr.decode(errors="replace").strip().splitlines()[-1:]), flush=True)
        if os.path.exists(log):
            os.unlink(log)
        continue
    printed = {}                   # thread -> set of counters ever printed
    relw = {}                      # thread -> highest counter the log may have dropped
    released = 0
    t0 = time.time()
    for k in range(kills):
        ids, rel = run_stress(log, backend, k == 0, policies[k % 3], rng.randint(1, 8))
        for th, c in rel.items():
            relw[th] = max(relw.get(th, 0), c)
        for i in ids:
            printed.setdefault(i >> SHIFT, set()).add(i & ((1 << SHIFT) - 1))
        rec = recover(log, backend)
        per = {}
        for i in rec:
            per.setdefault(i >> SHIFT, []).append(i & ((1 << SHIFT) - 1))
        for th, cs in per.items():
            s = sorted(cs)
            if len(set(s)) != len(s):
                fail("%s kill %d: thread %d: an id recovered twice" % (backend, k, th))
            if s[-1] - s[0] + 1 != len(s):
                fail("%s kill %d: thread %d: recovered ids %d..%d have holes (%d of them)"
                     % (backend, k, th, s[0], s[-1], len(s)))
        for th, cs in printed.items():
            got = per.get(th, [])
            lo, hi = (min(got), max(got)) if got else (None, None)
            for c in cs:
                if lo is not None and lo <= c <= hi:
                    continue
                if c <= relw.get(th, 0):
                    continue       # the log released it (announced before the release)
                fail("%s kill %d: thread %d: id %d was acknowledged (printed) but is not "
                     "recovered (recovered %s..%s; the log released through %d)"
                     % (backend, k, th, c, lo, hi, relw.get(th, 0)))
        # Released ids no longer count: keep only what the log still holds.
        for th in printed:
            got = per.get(th)
            before = len(printed[th])
            printed[th] = {c for c in printed[th] if c > relw.get(th, 0)}
            released += before - len(printed[th])
        total_kills += 1
        total_ids += len(ids)
    total_released += released
    ran.append(backend)
    print("kill_test: %s: %d SIGKILLs, %d acknowledged ids, every one recovered (%d "
          "released by the log), %.1f s" % (backend, kills,
          sum(len(v) for v in printed.values()) + released, released, time.time() - t0),
          flush=True)
    os.unlink(log)

if not ran:
    print("kill_test: no real backend can run here: skipped")
    sys.exit(77)
print("kill_test: %d SIGKILLs on %s, %d acknowledged ids printed, 0 lost" %
      (total_kills, ", ".join(ran), total_ids))
EOF
