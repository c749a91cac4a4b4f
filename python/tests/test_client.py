"""The numpy client against real daemons: `sgnn serve` starts the software switch and two
`sgnn-hostd --serve`; two client threads exchange features of magnitude 1 and gradients of
magnitude 1e-6 (scaled by the agreed power of two), and every sum must equal the numpy
reference within the fixed-point bound. Run: SGNN_BIN=target/release/sgnn python3 python/tests/test_client.py
"""

import os
import subprocess
import sys
import tempfile
import threading

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from switchgnn import Daemon, exchange_scale  # noqa: E402


def start_cluster(out, extra=()):
    sgnn = os.environ.get("SGNN_BIN", "target/release/sgnn")
    p = subprocess.Popen(
        [sgnn, "serve", "--graph", "rmat:scale=8,edge_factor=8,seed=2", "--workers", "2",
         "--feature-dim", "40", "--timeout", "10", "--max-seconds", "300", "--out", out,
         *extra],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    socks = {}
    for line in p.stdout:
        line = line.strip()
        if line.startswith("worker "):
            w, path = line[len("worker "):].split(": ", 1)
            socks[int(w)] = path
        elif line.startswith("ready:"):
            return p, socks
        elif line.startswith("FAILED:"):
            break
    raise RuntimeError(f"sgnn serve did not start: {line}\n{p.stderr.read()}")


def test_the_numpy_client_exchanges_exactly(sgnn):
    """pytest: the same check as the script."""
    if sgnn is None:
        return
    os.environ["SGNN_BIN"] = sgnn
    main()


def main():
    out = tempfile.mkdtemp()
    p, socks = start_cluster(out)
    indptr = np.load(os.path.join(out, "plan", "graph", "indptr.npy")).astype(np.int64)
    indices = np.load(os.path.join(out, "plan", "graph", "indices.npy")).astype(np.int64)
    n = len(indptr) - 1
    deg = np.diff(indptr)
    rng = np.random.default_rng(7)
    dim = 40
    feats = rng.uniform(-1, 1, (n, dim)).astype(np.float32)
    grads = (rng.uniform(-1, 1, (n, dim)) * 1e-6).astype(np.float32)

    def reference(x):
        return np.add.reduceat(
            np.vstack([x.astype(np.float64)[indices], np.zeros((1, x.shape[1]))]),
            indptr[:-1].clip(max=len(indices)), axis=0) * (deg > 0)[:, None]

    want_f, want_g = reference(feats), reference(grads)
    results, errors = {}, []

    def worker(w):
        try:
            # Worker 0 sends through the shared buffer, worker 1 through the socket.
            with Daemon(socks[w], shared_memory=(w == 0)) as d:
                assert d.worker == w and d.workers == 2 and d.max_dim >= dim
                want = "shared-memory" if w == 0 else "socket"
                assert d.transport == want, (d.transport, d.transport_note)
                rows = d.vertices.astype(np.int64)
                for bad in (np.zeros((len(rows) + 1, dim), np.float32),
                            np.zeros((len(rows), d.max_dim + 1), np.float32)):
                    try:
                        d.propagate(0, bad)
                        raise AssertionError("a bad shape was accepted")
                    except ValueError:
                        pass
                clamp = d.clamp(int(deg.max()))
                f = d.propagate(0, feats[rows])
                # Every worker knows the global maximum here; a trainer agrees on it first.
                s = exchange_scale(float(np.abs(grads).max()), clamp)
                g = d.propagate(0, grads[rows] * 2.0**s, backward=True) * 2.0**-s
                results[w] = (rows, f, g, s, d.frac_bits)
        except Exception as e:  # reported below
            errors.append(f"worker {w}: {e!r}")

    threads = [threading.Thread(target=worker, args=(w,)) for w in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    rc = p.wait(60)
    last = p.stdout.read().strip().splitlines()[-1:] or [""]
    assert not errors, errors
    assert rc == 0 and last[0].startswith("served:"), (rc, last, p.stderr.read()[-2000:])
    covered = 0
    for w, (rows, f, g, s, frac) in results.items():
        d = deg[rows][:, None].astype(np.float64)
        bound = d * 2.0**-(frac + 1) + 2.0**(6 - frac)
        assert np.all(np.abs(f - want_f[rows]) <= bound), f"worker {w}: feature sums off"
        gb = bound * 2.0**-s
        assert np.all(np.abs(g - want_g[rows]) <= gb), f"worker {w}: gradient sums off"
        # 1e-6 survived: relative error far below 1 where the sum is not tiny.
        big = np.abs(want_g[rows]) > 1e-7
        rel = np.abs(g - want_g[rows])[big] / np.abs(want_g[rows])[big]
        assert rel.max() < 1e-4, rel.max()
        covered += len(rows)
    assert covered == n, (covered, n)
    left = [f for f in os.listdir("/dev/shm") if f.startswith(f"switchgnn-{os.getpid()}-")] \
        if os.path.isdir("/dev/shm") else []
    assert not left, f"shared buffers left behind: {left}"
    print(f"ok: {n} vertices, 2 workers (shared memory and socket), features and 1e-6 "
          f"gradients exact within the bound; {last[0]}")


if __name__ == "__main__":
    main()
