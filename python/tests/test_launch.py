"""`switchgnn launch` as a user meets it: it names a dead worker and stops everything, Ctrl-C
stops everything, and its mistakes say what to fix."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from conftest import ROOT, has


def leftover(marker: str) -> list[str]:
    """Command lines of live processes mentioning `marker` (the run's unique directory)."""
    found = []
    for p in Path("/proc").iterdir():
        if not p.name.isdigit() or int(p.name) == os.getpid():
            continue
        try:
            cmd = (p / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = next(line for line in (p / "status").read_text().splitlines()
                         if line.startswith("State:"))
        except (OSError, StopIteration):
            continue
        if marker in cmd and "zombie" not in state:
            found.append(cmd)
    return found


def launch_cmd(tmp: Path, script: str, workers: int = 2) -> list[str]:
    (tmp / "script.py").write_text(textwrap.dedent(script))
    return [sys.executable, "-m", "switchgnn", "launch", "--graph",
            "rmat:scale=7,edge_factor=4,seed=3", "--workers", str(workers), "--out",
            str(tmp / "out"), "--", sys.executable, str(tmp / "script.py")]


def env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(ROOT / "python"))


def wait_gone(marker: str, seconds: float = 15.0) -> list[str]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        left = leftover(marker)
        if not left:
            return []
        time.sleep(0.2)
    return leftover(marker)


def test_a_dead_worker_is_named_and_everything_stops(tmp_path, sgnn, skipped):
    if not has("torch"):
        skipped("the launch test", "torch is not importable", "pip install ./python[pyg]")
        return
    if sgnn is None:
        return
    os.environ["SGNN_BIN"] = sgnn
    script = """
        import os, time, torch, switchgnn
        c = switchgnn.init()
        x = torch.ones(c.daemon.rows, 4)
        c.neighbour_sum(x, 0)
        if c.rank == 1:
            os._exit(3)
        c.neighbour_sum(x, 1)   # can never complete: worker 1 is gone
        time.sleep(60)
    """
    t = time.monotonic()
    r = subprocess.run(launch_cmd(tmp_path, script), env=env(), capture_output=True, text=True,
                       timeout=300)
    took = time.monotonic() - t
    assert r.returncode == 1, r.stderr
    assert "worker 1 (pid" in r.stderr and "exited with code 3" in r.stderr, r.stderr
    assert took < 120, took
    assert wait_gone(str(tmp_path)) == []


def test_ctrl_c_stops_the_workers_the_daemons_and_the_switch(tmp_path, sgnn, skipped):
    if not has("torch"):
        skipped("the launch Ctrl-C test", "torch is not importable", "pip install ./python[pyg]")
        return
    if sgnn is None:
        return
    os.environ["SGNN_BIN"] = sgnn
    script = """
        import time, torch, switchgnn
        c = switchgnn.init()
        c.neighbour_sum(torch.ones(c.daemon.rows, 2), 0)
        print("exchanged", flush=True)
        time.sleep(600)
    """
    p = subprocess.Popen(launch_cmd(tmp_path, script), env=env(), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    assert p.stdout is not None
    line = p.stdout.readline()
    assert line.strip() == "exchanged", line + p.stderr.read()
    assert len(leftover(str(tmp_path))) >= 5  # launch, serve, switch, 2 daemons (+ workers)
    p.send_signal(signal.SIGINT)
    rc = p.wait(60)
    err = p.stderr.read()
    assert rc == 130 and "interrupted (SIGINT)" in err, (rc, err)
    assert wait_gone(str(tmp_path)) == []


def test_mistakes_say_what_to_fix(tmp_path):
    run = lambda *a: subprocess.run(  # noqa: E731
        [sys.executable, "-m", "switchgnn", *a], env=env(), capture_output=True, text=True,
        timeout=120)
    r = run("launch", "--graph", "x", "--workers", "2")
    assert r.returncode == 2 and "no command" in r.stderr, r.stderr
    r = run("launch", "--graph", "x", "--workers", "1", "--", "true")
    assert r.returncode == 2 and "at least 2" in r.stderr, r.stderr
    (tmp_path / "g").mkdir()
    r = run("launch", "--graph", str(tmp_path / "g"), "--out", str(tmp_path / "o"),
            "--sgnn", "/bin/true", "--", "true")
    assert r.returncode == 1 and "edges.txt.gz" in r.stderr, r.stderr
    r = run("launch", "--graph", "x", "--sgnn", str(tmp_path / "nope"), "--", "true")
    assert r.returncode == 1 and "not an executable sgnn" in r.stderr, r.stderr
    r = run("frobnicate")
    assert r.returncode == 2 and "unknown command" in r.stderr, r.stderr
