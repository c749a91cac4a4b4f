"""How much of an exchange is the Unix-socket / shared-memory path between the training process
and its daemon (docs/benchmarks.md, "The Python exchange path").

Starts `sgnn serve` (software switch, loopback UDP, one daemon per worker), then one client
process per worker that sends ROUNDS exchanges of [rows, DIM] float32 features. For each round
it takes the client's wall time of `Daemon.propagate` and the daemon's own time for the round
(`rounds[].seconds` of its stats: from the request's values in hand to the sums in hand), and
prints the difference, the path's cost, as a share of the client's time.

    python3 python/bench/exchange_overhead.py --graph 'sbm:n=1048576,...' --workers 4 --dim 64
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from switchgnn import Daemon  # noqa: E402


def client(sock: str, dim: int, rounds: int, shm: bool, q: "mp.Queue[tuple]") -> None:
    d = Daemon(sock, shared_memory=shm)
    x = np.random.default_rng(d.worker).uniform(-1, 1, (d.rows, dim)).astype(np.float32)
    times = []
    for r in range(rounds):
        if d.transport == "shared-memory":
            # The steps of Daemon.propagate, timed: copy in, request and reply, copy out.
            t0 = time.perf_counter()
            d.shared_buffer(dim)[...] = x
            t1 = time.perf_counter()
            view = d.propagate_shared(r, dim)
            t2 = time.perf_counter()
            view.copy()
            t3 = time.perf_counter()
            times.append((t3 - t0, t1 - t0, t2 - t1, t3 - t2))
        else:
            t = time.perf_counter()
            d.propagate(r, x)
            times.append((time.perf_counter() - t, 0.0, 0.0, 0.0))
    transport = d.transport
    d.close()
    q.put((d.worker, d.rows, times, transport))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--graph", default="sbm:n=1048576,classes=4,p_in=0.00003,p_out=0.0000001,seed=1")
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--dim", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--transport", choices=["socket", "shm"], default="shm")
    ap.add_argument("--sgnn", default=os.environ.get("SGNN_BIN", "target/release/sgnn"))
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    out = Path(a.out or tempfile.mkdtemp(prefix="sgnn-overhead-"))
    out.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    serve = subprocess.Popen(
        [a.sgnn, "serve", "--graph", a.graph, "--workers", str(a.workers), "--feature-dim",
         str(a.dim), "--timeout", "600", "--out", str(out)],
        stdout=subprocess.PIPE, stderr=open(out.parent / f"{out.name}.serve.log", "w"), text=True)
    socks = {}
    assert serve.stdout is not None
    for line in serve.stdout:
        if line.startswith("worker "):
            w, p = line.strip()[len("worker "):].split(": ", 1)
            socks[int(w)] = p
        elif line.startswith("ready:"):
            break
        elif line.startswith("FAILED"):
            sys.exit(line)
    print(f"cluster ready in {time.perf_counter() - t0:.1f} s", flush=True)
    q: "mp.Queue[tuple]" = mp.Queue()
    ps = [mp.Process(target=client, args=(socks[w], a.dim, a.rounds, a.transport == "shm", q))
          for w in range(a.workers)]
    for p in ps:
        p.start()
    res = sorted(q.get() for _ in ps)
    for p in ps:
        p.join()
    last = [line.strip() for line in serve.stdout if line.strip()]
    serve.wait()
    print(last[-1] if last else "no final line from sgnn serve")
    rows = []
    for w, n, times, transport in res:
        stats = json.loads((out / "switchgnn" / f"w{w}.json").read_text())
        daemon = [r["seconds"] for r in stats["stats"]["rounds"]]
        for r, (c, d) in enumerate(zip(times, daemon)):
            rows.append((w, r, n, c[0], d, c[1], c[2], c[3]))
    print(f"transport {res[0][3]}, {a.workers} workers, dim {a.dim}")
    print("worker round rows  client_s  daemon_s  path_s  path_share  copy_in_s  request_s  "
          "copy_out_s")
    for w, r, n, c, d, ci, rq, co in rows:
        print(f"{w:6} {r:5} {n:7} {c:9.3f} {d:9.3f} {c - d:7.3f} {100 * (c - d) / c:9.1f}% "
              f"{ci:10.3f} {rq:10.3f} {co:11.3f}")
    for label, sel in (("all rounds", rows), ("rounds after the first", [x for x in rows if x[1]])):
        c = sum(x[3] for x in sel)
        d = sum(x[4] for x in sel)
        if sel:
            print(f"{label}: path {c - d:.3f} s of {c:.3f} s client time = "
                  f"{100 * (c - d) / c:.1f}% (mean per exchange and worker: "
                  f"{(c - d) / len(sel) * 1e3:.1f} ms)")


if __name__ == "__main__":
    main()
