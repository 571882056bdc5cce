#!/usr/bin/env python3
"""kvclient.py - the client of delog-raft-kv's process tests and benchmark.

  kvclient.py leader NODES               print the leader's id (0: none agreed on)
  kvclient.py status NODES               one STATUS line per node (or "down")
  kvclient.py load NODES --log F ...     unique keys, many SETs in flight, every OK'd
                                         key appended to F (flushed) when OK arrives
  kvclient.py verify NODES --log F       every key in F readable with its value through
                                         the leader, then all nodes' maps identical
  kvclient.py set NODES KEY VALUE        one SET through the leader (exit 1 unless OK);
                                         --once: no retry, print the reply
  kvclient.py get NODES KEY              one GET through the leader: prints the reply
  kvclient.py send ADDR LINE...          write LINEs to one node, wait a little, close
                                         (replies ignored: for requests never answered)
  kvclient.py bench NODES ...            SETs for a while: writes/s, p50, p99 (ms)
  kvclient.py members NODES              the configuration: one "ID ADDRESS ROLE [seen]"
                                         line per member, as the leader holds it (or
                                         the first node that answers, if none leads)
  kvclient.py add NODES ID HOST:PORT     add node ID at Raft address HOST:PORT (a spare)
  kvclient.py promote NODES ID [ROLE]    give ID the role voter (default), standby or
                                         spare; a voter is caught up with the log first
  kvclient.py remove NODES ID            remove ID from the configuration
NODES is a comma-separated list of client addresses (HOST:PORT).

Why it is built this way: requests are pipelined on one connection per node (replies
come back in request order, so a FIFO of futures matches them); a request that times out
or meets a dropped connection drops that connection, so nothing is ever matched with the
wrong reply.  "OK" is logged only once the daemon answered OK, which it does only after
the entry was committed and applied; a SET that got anything else is retried, which is
harmless (same key, same value).  A membership change is retried until the leader's
configuration shows it done, so one that committed while its reply was lost succeeds.
"""
import argparse
import asyncio
import os
import sys
import time


class Pipe:
    """One pipelined connection at a time to ADDR; replies match requests in order."""

    def __init__(self, addr):
        self.addr = addr
        self.host, port = addr.rsplit(":", 1)
        self.port = int(port)
        self.reader = self.writer = None
        self.waiters = []
        self.lock = asyncio.Lock()

    async def connect(self, timeout=1.0):
        async with self.lock:
            if self.writer is not None:
                return
            r, w = await asyncio.wait_for(asyncio.open_connection(self.host, self.port, limit=1 << 21),
                                          timeout)
            self.reader, self.writer, self.waiters = r, w, []
            asyncio.ensure_future(self._read(r, w, self.waiters))

    async def _read(self, r, w, waiters):
        try:
            while True:
                line = await r.readline()
                if not line:
                    break
                if waiters:
                    fut = waiters.pop(0)
                    if not fut.done():
                        fut.set_result(line.decode().rstrip("\n"))
        except (ConnectionError, OSError, asyncio.CancelledError):
            pass
        self._drop(w)

    def _drop(self, w=None):
        """Drop the connection whose writer is W (None: the current one)."""
        if w is None:
            w = self.writer
        if w is None:
            return
        if w is self.writer:
            for fut in self.waiters:
                if not fut.done():
                    fut.set_exception(ConnectionError("connection to %s lost" % self.addr))
            self.reader = self.writer = None
            self.waiters = []
        try:
            w.close()
        except Exception:
            pass

    async def req(self, line, timeout=5.0):
        await self.connect()
        w = self.writer
        if w is None:
            raise ConnectionError("connection to %s lost" % self.addr)
        fut = asyncio.get_running_loop().create_future()
        self.waiters.append(fut)
        w.write((line + "\n").encode())
        try:
            return await asyncio.wait_for(asyncio.shield(fut), timeout)
        except asyncio.TimeoutError:
            self._drop(w)
            raise ConnectionError("%s: no reply in %.1fs" % (self.addr, timeout))


class Cluster:
    def __init__(self, nodes):
        self.nodes = nodes
        self.pipes = {a: Pipe(a) for a in nodes}
        self.leader = nodes[0]
        self.rot = 0

    def pipe(self, addr):
        if addr not in self.pipes:
            self.pipes[addr] = Pipe(addr)
        return self.pipes[addr]

    async def leader_req(self, line, deadline):
        """Send LINE to the leader, following redirects, until a reply that is not a
        redirect or the deadline; returns the reply or None."""
        while time.monotonic() < deadline:
            addr = self.leader
            try:
                rep = await self.pipe(addr).req(line)
            except (ConnectionError, OSError, asyncio.TimeoutError):
                self._next(addr)
                await asyncio.sleep(0.05)
                continue
            if rep.startswith("ERR not-leader "):
                self.leader = rep.split()[3]
                continue
            if rep.startswith("ERR no-leader") or rep.startswith("ERR "):
                if rep.startswith("ERR no-leader"):
                    self._next(addr)
                await asyncio.sleep(0.05)
                return rep
            return rep
        return None

    def _next(self, addr):
        if self.leader == addr:
            self.rot = (self.rot + 1) % len(self.nodes)
            self.leader = self.nodes[self.rot]


async def status_one(addr):
    p = Pipe(addr)
    try:
        return await p.req("STATUS", 1.0)
    except (ConnectionError, OSError, asyncio.TimeoutError):
        return "down"
    finally:
        p._drop()


async def status_all(nodes):
    return await asyncio.gather(*[status_one(a) for a in nodes])


async def cmd_leader(a):
    """The id of the node that says it leads; with --wait, wait that long for one."""
    end = time.monotonic() + a.wait
    while True:
        lead = 0
        for s in await status_all(a.nodes):
            f = dict(w.split("=", 1) for w in s.split()[1:] if "=" in w)
            if f.get("state") == "leader":
                lead = int(f["id"])
        if lead or time.monotonic() >= end:
            print(lead)
            return 0
        await asyncio.sleep(0.1)


async def cmd_status(a):
    """STATUS of each node; with --wait, wait that long for all to answer."""
    end = time.monotonic() + a.wait
    while True:
        st = await status_all(a.nodes)
        if "down" not in st or time.monotonic() >= end:
            break
        await asyncio.sleep(0.1)
    for n, s in zip(a.nodes, st):
        print(n, s)
    return 0 if "down" not in st else 1


async def cmd_load(a):
    cl = Cluster(a.nodes)
    end = time.monotonic() + a.duration
    log = open(a.log, "a")
    nxt = [0]
    ok = [0]
    stop = asyncio.Event()
    for sig in ("SIGTERM", "SIGINT"):
        try:
            import signal
            asyncio.get_running_loop().add_signal_handler(getattr(signal, sig), stop.set)
        except (NotImplementedError, RuntimeError):
            pass

    async def worker():
        while not stop.is_set() and time.monotonic() < end and nxt[0] < a.count:
            i = nxt[0]
            nxt[0] += 1
            key = "%s-%d" % (a.prefix, i)
            val = "v%d-%s" % (i, "x" * max(0, a.size - 8))
            while not stop.is_set() and time.monotonic() < end:
                rep = await cl.leader_req("SET %s %s" % (key, val), end)
                if rep == "OK":
                    log.write("%s %s\n" % (key, val))
                    log.flush()
                    ok[0] += 1
                    break
                if rep is None:
                    break

    await asyncio.gather(*[worker() for _ in range(a.inflight)])
    log.close()
    print("load: %d SETs answered OK" % ok[0], file=sys.stderr)
    return 0


async def cmd_verify(a):
    cl = Cluster(a.nodes)
    deadline = time.monotonic() + a.timeout
    want = {}
    with open(a.log) as f:
        for line in f:
            k, v = line.rstrip("\n").split(" ", 1)
            want[k] = v
    bad = [0]
    items = list(want.items())
    lost = []

    async def reader():
        while items:
            k, v = items.pop()
            while True:
                rep = await cl.leader_req("GET %s" % k, deadline)
                if rep is None:
                    lost.append(k)
                    return
                if not rep.startswith("ERR"):
                    break
            if rep != "VALUE " + v:
                bad[0] += 1
                if bad[0] <= 5:
                    print("verify: %s: acknowledged %r, read %r" % (k, v, rep[:80]),
                          file=sys.stderr)

    await asyncio.gather(*[reader() for _ in range(64)])
    if lost:
        print("verify: no leader answered GET %s in time" % lost[0], file=sys.stderr)
        return 1
    bad = bad[0]
    if bad:
        print("verify: %d of %d acknowledged SETs lost" % (bad, len(want)), file=sys.stderr)
        return 1
    for k in a.absent or []:
        while True:
            rep = await cl.leader_req("GET %s" % k, deadline)
            if rep is None:
                return 1
            if not rep.startswith("ERR"):
                break
        if rep != "NOTFOUND":
            print("verify: %s should never have been applied, read %r" % (k, rep),
                  file=sys.stderr)
            return 1
    # every node's map: identical once all have applied the same prefix
    last = None
    while time.monotonic() < deadline:
        digs = []
        for n in a.nodes:
            p = Pipe(n)
            try:
                digs.append(await p.req("DIGEST", 2.0))
            except (ConnectionError, OSError, asyncio.TimeoutError):
                digs.append("down")
            finally:
                p._drop()
        last = digs
        if all(d.startswith("DIGEST") for d in digs) and len(set(digs)) == 1:
            print("verify: %d acknowledged SETs readable; %d maps identical: %s" %
                  (len(want), len(digs), digs[0]), file=sys.stderr)
            return 0
        await asyncio.sleep(0.2)
    print("verify: maps differ: %s" % last, file=sys.stderr)
    return 1


async def cmd_set(a):
    cl = Cluster(a.nodes)
    end = time.monotonic() + a.timeout
    if a.once:
        rep = await cl.leader_req("SET %s %s" % (a.key, a.value), end)
        print(rep)
        return 0 if rep == "OK" else 1
    while time.monotonic() < end:
        rep = await cl.leader_req("SET %s %s" % (a.key, a.value), end)
        if rep == "OK":
            return 0
    print("set: no OK in %.0fs" % a.timeout, file=sys.stderr)
    return 1


async def cmd_get(a):
    cl = Cluster(a.nodes)
    end = time.monotonic() + a.timeout
    while time.monotonic() < end:
        rep = await cl.leader_req("GET %s" % a.key, end)
        if rep and not rep.startswith("ERR"):
            print(rep)
            return 0
    return 1


async def cmd_send(a):
    p = Pipe(a.nodes[0])
    await p.connect()
    for line in a.lines:
        p.writer.write((line + "\n").encode())
    await p.writer.drain()
    await asyncio.sleep(a.wait)
    p._drop()
    return 0


async def cmd_bench(a):
    cl = Cluster(a.nodes)
    # find the leader first, then measure only after a short warm-up
    while (await cl.leader_req("SET warm up", time.monotonic() + 10)) != "OK":
        await asyncio.sleep(0.1)
    val = "x" * a.size
    lat = []
    n = [0]
    t0 = time.monotonic()
    end = t0 + a.duration

    async def worker(w):
        i = 0
        while time.monotonic() < end:
            s = time.monotonic()
            rep = await cl.leader_req("SET b%d-%d %s" % (w, i, val), end + 5)
            if rep == "OK":
                lat.append(time.monotonic() - s)
                n[0] += 1
            i += 1

    await asyncio.gather(*[worker(w) for w in range(a.inflight)])
    el = time.monotonic() - t0
    lat.sort()
    p = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))] * 1000 if lat else 0.0
    print("bench: inflight %d size %d: %d writes in %.2fs: %.0f/s p50 %.2f ms p99 %.2f ms" %
          (a.inflight, a.size, n[0], el, n[0] / el, p(0.50), p(0.99)))
    return 0


def members_parse(rep):
    """{id: (address, role, seen)} of a MEMBERS reply, or None."""
    if not rep or rep.split(" ", 1)[0] != "MEMBERS":
        return None
    out = {}
    for tok in rep.split()[1:]:
        i, rest = tok.split("=", 1)
        f = rest.split("/")
        out[int(i)] = (f[0], f[1], len(f) > 2 and f[2] == "seen")
    return out


async def members_of(addr):
    p = Pipe(addr)
    try:
        return members_parse(await p.req("MEMBERS", 2.0))
    except (ConnectionError, OSError, asyncio.TimeoutError):
        return None
    finally:
        p._drop()


async def cmd_members(a):
    end = time.monotonic() + a.timeout
    while time.monotonic() < end:
        st = await status_all(a.nodes)
        lead = [n for n, s in zip(a.nodes, st) if " state=leader " in s + " "]
        up = [n for n, s in zip(a.nodes, st) if s != "down"]
        for n in lead + up:
            m = await members_of(n)
            if m is not None:
                for i in sorted(m):
                    print(i, m[i][0], m[i][1], "seen" if m[i][2] else "")
                return 0
        await asyncio.sleep(0.2)
    print("members: no node answered", file=sys.stderr)
    return 1


async def change(a, line, done):
    """LINE (ADD, PROMOTE or REMOVE) through the leader until the leader's configuration
    satisfies DONE; a reply lost with its connection, a change in progress or a new
    leader is retried."""
    cl = Cluster(a.nodes)
    end = time.monotonic() + a.timeout
    last = None
    while time.monotonic() < end:
        rep = await cl.leader_req(line, end)
        if rep is None:
            break
        last = rep
        if rep.startswith("ERR usage"):
            print(rep, file=sys.stderr)
            return 2
        m = await members_of(cl.leader)
        if m is not None and done(m):
            print("OK")
            return 0
        await asyncio.sleep(0.2)
    print("%s: not done in %.0fs (last reply: %s)" % (line, a.timeout, last), file=sys.stderr)
    return 1


async def cmd_add(a):
    return await change(a, "ADD %d %s" % (a.id, a.address),
                        lambda m: a.id in m and m[a.id][0] == a.address)


async def cmd_promote(a):
    return await change(a, "PROMOTE %d %s" % (a.id, a.role),
                        lambda m: a.id in m and m[a.id][1] == a.role)


async def cmd_remove(a):
    return await change(a, "REMOVE %d" % a.id, lambda m: a.id not in m)


def main():
    ap = argparse.ArgumentParser(description="delog-raft-kv client (tests, benchmark)")
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("leader", "status", "load", "verify", "set", "get", "send", "bench",
                 "members", "add", "promote", "remove"):
        p = sub.add_parser(name)
        p.add_argument("nodes")
        if name == "load":
            p.add_argument("--log", required=True)
            p.add_argument("--prefix", default="k")
            p.add_argument("--count", type=int, default=10 ** 9)
            p.add_argument("--inflight", type=int, default=32)
            p.add_argument("--duration", type=float, default=30)
            p.add_argument("--size", type=int, default=16)
        if name == "verify":
            p.add_argument("--log", required=True)
            p.add_argument("--absent", nargs="*")
            p.add_argument("--timeout", type=float, default=30)
        if name in ("set", "get"):
            p.add_argument("key")
            if name == "set":
                p.add_argument("value")
                p.add_argument("--once", action="store_true")
            p.add_argument("--timeout", type=float, default=15)
        if name in ("leader", "status"):
            p.add_argument("--wait", type=float, default=0)
        if name == "send":
            p.add_argument("lines", nargs="+")
            p.add_argument("--wait", type=float, default=0.3)
        if name in ("add", "promote", "remove"):
            p.add_argument("id", type=int)
            if name == "add":
                p.add_argument("address")
            if name == "promote":
                p.add_argument("role", nargs="?", default="voter",
                               choices=("voter", "standby", "spare"))
        if name in ("members", "add", "promote", "remove"):
            p.add_argument("--timeout", type=float, default=30)
        if name == "bench":
            p.add_argument("--inflight", type=int, default=1)
            p.add_argument("--size", type=int, default=128)
            p.add_argument("--duration", type=float, default=5)
    a = ap.parse_args()
    a.nodes = a.nodes.split(",")
    fn = globals()["cmd_" + a.cmd]
    return asyncio.run(fn(a))


if __name__ == "__main__":
    sys.exit(main())
