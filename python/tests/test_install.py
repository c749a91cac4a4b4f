"""The installed package (`pip install ./python`, as .ci/run does): its console script runs and
its module is the package, with the typing marker."""

from __future__ import annotations

import shutil
import subprocess
import sys


def test_the_switchgnn_command_is_installed(skipped):
    exe = shutil.which("switchgnn")
    if exe is None:
        skipped("the installed-command test", "the switchgnn command is not on PATH",
                "pip install ./python")
        return
    r = subprocess.run([exe, "launch", "--help"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "--graph" in r.stdout and "--workers" in r.stdout, r.stderr
    r = subprocess.run([exe, "nonsense"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "unknown command" in r.stderr
    r = subprocess.run([sys.executable, "-c", "import importlib.resources as r, switchgnn; "
                        "print(r.files('switchgnn').joinpath('py.typed').is_file())"],
                       capture_output=True, text=True, timeout=60, cwd="/")
    assert r.stdout.strip() == "True", r.stdout + r.stderr
