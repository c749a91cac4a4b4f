"""``switchgnn launch``: one command from a graph to a training run through the switch.

It plans the graph and starts the software switch and one daemon per worker (``sgnn serve``),
then starts the user's command once per worker under torch.distributed's environment
(``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``MASTER_ADDR``, ``MASTER_PORT``, as torchrun sets
them; gloo on CPU) plus ``SWITCHGNN_SOCKET`` (its daemon) and ``SWITCHGNN_DATA`` (the graph
in our layout), waits for all of them, and stops everything on exit, on Ctrl-C, or as soon as
one worker dies, naming it.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Sequence

import numpy as np

from .client import ENV_SOCKET
from .data import ENV_DATA, as_layout, find_edges

ENV_SGNN = "SGNN_BIN"


class LaunchError(RuntimeError):
    """The cluster could not be started; the message says what to fix."""


def find_sgnn(explicit: str | None = None) -> str:
    """The `sgnn` binary: `explicit`, ``$SGNN_BIN``, ``sgnn`` on PATH, or a release build of
    the checkout in the working directory."""
    for c in (explicit, os.environ.get(ENV_SGNN)):
        if c:
            if not os.access(c, os.X_OK):
                raise LaunchError(f"{c} is not an executable sgnn binary")
            return c
    on_path = shutil.which("sgnn")
    if on_path:
        return on_path
    for built in (Path("target/release/sgnn"),
                  Path(__file__).resolve().parents[2] / "target/release/sgnn"):
        if built.exists():
            return str(built)
    raise LaunchError(
        "no sgnn binary: build it with `cargo build --release -p sgnn -p sgnn-hostd -p softswitch "
        "-p switch-ctl` in the SwitchGNN checkout, then put target/release on PATH or set "
        f"{ENV_SGNN}=/path/to/target/release/sgnn (or pass --sgnn)")


def _die_with_parent() -> None:
    """In the child before exec: get SIGTERM if the launcher dies (Linux prctl)."""
    try:
        ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def free_port() -> int:
    """A TCP port on loopback that was free a moment ago (torch.distributed's rendezvous)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def describe_exit(rc: int) -> str:
    """'exited with code N' or 'was killed by SIGNAME'."""
    if rc < 0:
        try:
            return f"was killed by {signal.Signals(-rc).name}"
        except ValueError:
            return f"was killed by signal {-rc}"
    return f"exited with code {rc}"


def tail(path: Path, lines: int = 12) -> str:
    """The last lines of a log file (empty if there is none)."""
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


@dataclass
class Serve:
    """A running `sgnn serve` and what it printed."""

    proc: subprocess.Popen[str]
    sockets: dict[int, str]
    log: Path
    final: list[str] = field(default_factory=list)

    def finished(self) -> str | None:
        """Its last line once it ended (`served: ...` or `FAILED: ...`), else None."""
        return self.final[-1] if self.final else None


def start_serve(cmd: list[str], log: Path, timeout: float) -> Serve:
    """Starts `sgnn serve`, waits for `ready:`, and keeps reading its stdout on a thread."""
    err: IO[str] = open(log, "w")
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True,
                            start_new_session=True, preexec_fn=_die_with_parent)
    assert proc.stdout is not None
    sockets: dict[int, str] = {}
    deadline = time.monotonic() + timeout
    for line in proc.stdout:
        line = line.strip()
        if line.startswith("worker "):
            w, path = line[len("worker "):].split(": ", 1)
            sockets[int(w)] = path
        elif line.startswith("ready:"):
            break
        elif line.startswith("FAILED:"):
            proc.wait()
            raise LaunchError(f"sgnn serve: {line} (log: {log})")
        if time.monotonic() > deadline:
            break
    else:
        proc.wait()
        raise LaunchError(f"sgnn serve exited ({describe_exit(proc.returncode)}) before it was "
                          f"ready:\n{tail(log)}")
    serve = Serve(proc, sockets, log)

    def drain() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.strip():
                serve.final.append(line.strip())

    threading.Thread(target=drain, daemon=True).start()
    return serve


def stop(procs: Sequence[subprocess.Popen[str] | subprocess.Popen[bytes]], grace: float = 3.0) -> None:
    """SIGTERM to each process group, then SIGKILL after `grace` seconds."""
    for p in procs:
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
    deadline = time.monotonic() + grace
    for p in procs:
        try:
            p.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait()


def parser() -> argparse.ArgumentParser:
    """The options of `switchgnn launch`."""
    ap = argparse.ArgumentParser(
        prog="switchgnn launch",
        description="Plan a graph, start the software switch and one SwitchGNN daemon per "
        "worker, run COMMAND once per worker under torch.distributed (gloo) with its daemon's "
        "socket in SWITCHGNN_SOCKET, and stop everything when the workers end, on Ctrl-C, or "
        "when one dies.",
        epilog="example: switchgnn launch --graph ../shared/datasets/cora --workers 4 -- "
        "python train.py")
    ap.add_argument("--graph", required=True,
                    help="a graph directory (edges.txt.gz or edges.npy, features.npy, "
                    "labels.npy, {train,val,test}_mask.npy), a PyG Data saved with torch.save "
                    "(.pt), or any graph `sgnn serve --graph` takes (then the script loads its "
                    "own features)")
    ap.add_argument("--workers", type=int, default=2, help="workers (processes), at least 2")
    ap.add_argument("--feature-dim", type=int, default=64,
                    help="values per vertex one exchange carries (wider layers take several "
                    "exchanges); default 64")
    ap.add_argument("--mode", default="switchgnn", choices=["switchgnn", "host-based"],
                    help="sums in the switch (default) or the host-based baseline")
    ap.add_argument("--loss", type=float, default=0.0,
                    help="drop each frame with this probability, each way (the daemons recover)")
    ap.add_argument("--aggregate", default=None,
                    help="how the plan delivers sums: paper (default), auto, partials, multicast")
    ap.add_argument("--switch-mem", default=None, help="switch aggregator memory, e.g. 4MB")
    ap.add_argument("--timeout", type=float, default=20.0,
                    help="a daemon gives up after this long without progress in an exchange, s")
    ap.add_argument("--out", default="launch-out",
                    help="directory for the plan, sockets, logs (workerW.log for W > 0)")
    ap.add_argument("--sgnn", default=None, help=f"the sgnn binary (default: ${ENV_SGNN}, PATH, "
                    "or target/release/sgnn)")
    ap.add_argument("--all-output", action="store_true",
                    help="let every worker print to the terminal (default: worker 0 only)")
    ap.add_argument("command", nargs=argparse.REMAINDER,
                    help="after `--`: the training command, e.g. python train.py --epochs 200")
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    """Runs `switchgnn launch`; returns the exit code (0 when every worker succeeded)."""
    a = parser().parse_args(argv)
    command = list(a.command)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        print("switchgnn launch: no command: add `-- python train.py ...`", file=sys.stderr)
        return 2
    if a.workers < 2:
        print("switchgnn launch: --workers must be at least 2 (one process: run the script "
              "without launch; the layers are PyG's then)", file=sys.stderr)
        return 2
    try:
        return run(a, command)
    except LaunchError as e:
        print(f"switchgnn launch: {e}", file=sys.stderr)
        return 1


def run(a: argparse.Namespace, command: list[str]) -> int:
    """Starts the cluster and the workers and supervises them."""
    out = Path(a.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    sgnn = find_sgnn(a.sgnn)
    graph = Path(a.graph)
    data_dir: Path | None = None
    extra: list[str] = []
    if graph.is_dir() or graph.suffix in (".pt", ".pth"):
        try:
            data_dir = as_layout(graph, out)
            edges = find_edges(data_dir)
        except (ValueError, FileNotFoundError) as e:
            raise LaunchError(str(e)) from e
        n = np.load(data_dir / "features.npy", mmap_mode="r").shape[0]
        spec = str(edges)
        extra += ["--num-vertices", str(n)]
    else:
        spec = a.graph
    if a.aggregate:
        extra += ["--aggregate", a.aggregate]
    if a.switch_mem:
        extra += ["--switch-mem", a.switch_mem]
    cmd = [sgnn, "serve", "--graph", spec, "--workers", str(a.workers),
           "--feature-dim", str(a.feature_dim), "--mode", a.mode, "--loss", str(a.loss),
           "--timeout", str(a.timeout), "--out", str(out / "serve"), *extra]
    t0 = time.monotonic()
    serve = start_serve(cmd, out / "serve.log", timeout=600.0)
    print(f"switchgnn launch: {a.workers} daemons ({a.mode}) ready in "
          f"{time.monotonic() - t0:.1f} s; plan {out / 'serve' / 'plan'}; logs {out}",
          file=sys.stderr, flush=True)
    interrupted: list[int] = []
    old = {s: signal.signal(s, lambda sig, _f: interrupted.append(sig))
           for s in (signal.SIGINT, signal.SIGTERM)}
    workers: list[subprocess.Popen[bytes]] = []
    logs: list[Path | None] = []
    try:
        port = free_port()
        for r in range(a.workers):
            env = dict(os.environ)
            env.update({
                "RANK": str(r), "LOCAL_RANK": str(r), "WORLD_SIZE": str(a.workers),
                "LOCAL_WORLD_SIZE": str(a.workers), "GROUP_RANK": "0",
                "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port),
                ENV_SOCKET: serve.sockets[r],
            })
            if data_dir is not None:
                env[ENV_DATA] = str(data_dir)
            # As torchrun: the workers share the cores, so PyTorch's thread pools must not
            # each spin on all of them (on 2 cores that made an epoch 3x slower).
            env.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // a.workers)))
            log: Path | None = None
            if r == 0 or a.all_output:
                stdout: int | IO[bytes] | None = None
            else:
                log = out / f"worker{r}.log"
                stdout = open(log, "wb")
            workers.append(subprocess.Popen(
                command, env=env, stdout=stdout, stderr=subprocess.STDOUT if log else None,
                start_new_session=True, preexec_fn=_die_with_parent))
            logs.append(log)
        return supervise(workers, logs, serve, interrupted)
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        stop(workers)
        if serve.proc.poll() is None:
            serve.proc.send_signal(signal.SIGTERM)
            try:
                serve.proc.wait(10)
            except subprocess.TimeoutExpired:
                stop([serve.proc])


def supervise(workers: list[subprocess.Popen[bytes]], logs: list[Path | None], serve: Serve,
              interrupted: list[int]) -> int:
    """Waits for the workers; returns the launch's exit code."""
    serve_failed_at: float | None = None
    while True:
        if interrupted:
            print(f"switchgnn launch: interrupted ({signal.Signals(interrupted[0]).name}); "
                  "stopping the workers, the daemons and the switch", file=sys.stderr, flush=True)
            return 130
        codes = [w.poll() for w in workers]
        for r, rc in enumerate(codes):
            if rc is not None and rc != 0:
                msg = f"switchgnn launch: worker {r} (pid {workers[r].pid}) {describe_exit(rc)}"
                log = logs[r]
                if log is not None:
                    msg += f"; the end of its output ({log}):\n{tail(log)}"
                if serve.finished():
                    msg += f"\nsgnn serve: {serve.finished()}"
                print(msg + "\nstopping the other workers, the daemons and the switch",
                      file=sys.stderr, flush=True)
                return 1
        if all(rc == 0 for rc in codes):
            break
        end = serve.finished()
        if end is not None and end.startswith("FAILED"):
            # The workers should fail on their own within a moment; name one if they do.
            serve_failed_at = serve_failed_at or time.monotonic()
            if time.monotonic() - serve_failed_at > 5.0:
                print(f"switchgnn launch: the cluster failed while the workers ran: sgnn serve: "
                      f"{end} (logs: {serve.log.parent / 'serve'})", file=sys.stderr, flush=True)
                return 1
        time.sleep(0.05)
    deadline = time.monotonic() + 60.0
    while serve.proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.1)
    end = serve.finished() or ""
    if not end.startswith("served:"):
        print(f"switchgnn launch: every worker finished, but the cluster did not end cleanly: "
              f"{end or 'no answer from sgnn serve'} (did every worker close its session? "
              f"switchgnn does at exit; logs: {serve.log})", file=sys.stderr, flush=True)
        return 1
    print(f"switchgnn launch: {end}", file=sys.stderr, flush=True)
    return 0
