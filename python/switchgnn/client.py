"""A numpy client of the daemon's Unix-socket interface (docs/host.md, contract/ipc/src/lib.rs).

Every message is ``length: u32 | kind: u8 | body``, little-endian, ``length`` counting ``kind``
and ``body``.
"""

from __future__ import annotations

import math
import mmap
import os
import secrets
import socket
import struct
import time
from types import TracebackType

import numpy as np

HELLO, PROPAGATE, CLOSE, ATTACH, PROPAGATE_SHARED = 1, 2, 3, 4, 5
INFO, SUMS, BYE, ATTACHED, SUMS_SHARED, ERROR = 129, 130, 131, 132, 133, 255
MAX_MESSAGE = 1 << 30
ENV_SOCKET = "SWITCHGNN_SOCKET"  # the daemon of this worker, set by `switchgnn launch`
ENV_SHM_DIR = "SWITCHGNN_SHM_DIR"  # where the shared buffer is created (default /dev/shm)


class DaemonError(RuntimeError):
    """The daemon answered ERROR, closed the socket, or broke the protocol."""


def exchange_scale(max_abs: float, clamp: float) -> int:
    """The power of two s with max_abs * 2**s <= clamp < max_abs * 2**(s+1) (0 for 0).

    The same rule as the Rust trainer's `exchange_scale`: every worker must use the same s for
    one exchange, so agree on max_abs first (e.g. torch.distributed.all_reduce with MAX).
    """
    if not max_abs > 0 or not math.isfinite(max_abs):
        return 0
    return max(-100, min(100, math.floor(math.log2(clamp / max_abs))))


class Daemon:
    """One worker's session with its daemon (`sgnn-hostd --serve PATH`).

    After construction: ``worker``, ``workers``, ``max_dim``, ``frac_bits`` and ``vertices``
    (uint32, ascending): the row order of every array sent and received.

    With `shared_memory` (the default) the values and sums travel through a buffer both
    processes map (a file in ``$SWITCHGNN_SHM_DIR`` or ``/dev/shm``, unlinked as soon as the
    daemon mapped it) and only 13-byte requests cross the socket; ``transport`` says which
    path is in use ("shared-memory" or "socket") and ``transport_note`` why, if the socket.
    """

    def __init__(self, path: str | os.PathLike[str], wait: float = 30.0,
                 shared_memory: bool = True) -> None:
        deadline = time.monotonic() + wait
        while True:
            try:
                self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                self._sock.connect(str(path))
                break
            except OSError as e:
                self._sock.close()
                if time.monotonic() > deadline:
                    raise DaemonError(
                        f"no daemon on {path} after {wait} s ({e}); start one with "
                        "`sgnn serve` or `switchgnn launch`") from e
                time.sleep(0.02)
        self.path = str(path)
        self._send(HELLO, b"")
        kind, body = self._recv()
        if kind != INFO:
            raise DaemonError(self._unexpected("HELLO", kind, body))
        worker, workers, max_dim, frac_bits, rows = struct.unpack_from("<5I", body)
        self.worker: int = worker
        self.workers: int = workers
        self.max_dim: int = max_dim
        self.frac_bits: int = frac_bits
        self.vertices: np.ndarray = np.frombuffer(body, dtype="<u4", count=rows, offset=20).copy()
        self.rounds = 0
        self.closed = False
        self.transport = "socket"
        self.transport_note = "shared_memory=False" if not shared_memory else ""
        self._shm: mmap.mmap | None = None
        self._shm_view: np.ndarray | None = None
        if shared_memory:
            self._attach()

    def _attach(self) -> None:
        """Creates, sizes and offers the shared buffer; falls back to the socket on refusal."""
        directory = os.environ.get(ENV_SHM_DIR, "/dev/shm")
        capacity = max(4, self.rows * self.max_dim * 4)
        name = os.path.join(directory,
                            f"switchgnn-{os.getpid()}-w{self.worker}-{secrets.token_hex(4)}")
        try:
            fd = os.open(name, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        except OSError as e:
            self.transport_note = f"no shared buffer in {directory} ({e}); set {ENV_SHM_DIR}"
            return
        try:
            try:
                # Reserve the pages now: a tmpfs that is full fails here, not with SIGBUS later.
                os.posix_fallocate(fd, 0, capacity)
            except OSError as e:
                self.transport_note = f"{directory} cannot hold {capacity} bytes ({e})"
                return
            shm = mmap.mmap(fd, capacity)
        finally:
            os.close(fd)
            if self.transport_note:
                os.unlink(name)
        try:
            self._send(ATTACH, struct.pack("<Q", capacity) + name.encode())
            kind, body = self._recv()
        finally:
            os.unlink(name)  # both sides keep their mapping; nothing is left behind
        if kind != ATTACHED:
            shm.close()
            self.transport_note = self._unexpected("ATTACH", kind, body)
            return
        self._shm = shm
        self._shm_view = np.frombuffer(shm, dtype="<f4")
        self.transport = "shared-memory"

    @property
    def rows(self) -> int:
        """The number of local vertices: the rows of every array sent and received."""
        return len(self.vertices)

    def clamp(self, max_degree: int) -> float:
        """Largest real value of one term such that max_degree of them cannot overflow int32."""
        limit = (2**31 - 1) // max(1, max_degree)
        return float(np.float32(limit)) / 2.0**self.frac_bits

    def propagate(self, layer: int, values: np.ndarray, backward: bool = False) -> np.ndarray:
        """Sum over each local vertex's neighbours (local and remote) of `values`.

        `values` is [rows, dim] (float32; rows in `vertices` order, dim <= max_dim). Returns
        the sums, [rows, dim] float32, exact up to the fixed-point bound of docs/host.md.
        Every worker must call it the same number of times in the same order.
        """
        x = np.ascontiguousarray(values, dtype="<f4")
        if x.ndim != 2 or x.shape[0] != self.rows:
            raise ValueError(f"values must be [{self.rows}, dim], got {x.shape}")
        rows, dim = x.shape
        if dim > self.max_dim:
            raise ValueError(
                f"dim {dim} is above the plan's {self.max_dim} values per vertex: split the "
                f"columns (switchgnn.torch does) or plan with --feature-dim {dim}")
        if self._shm_view is not None:
            buf = self.shared_buffer(dim)
            buf[...] = x
            return self.propagate_shared(layer, dim, backward).copy()
        head = struct.pack("<IBII", layer, 1 if backward else 0, rows, dim)
        self._send(PROPAGATE, head + x.tobytes())
        kind, body = self._recv()
        if kind != SUMS:
            raise DaemonError(self._unexpected("PROPAGATE", kind, body))
        _round, r, d = struct.unpack_from("<3I", body)
        if (r, d) != (rows, dim) or len(body) != 12 + 4 * r * d:
            raise DaemonError(f"SUMS of {r}x{d} answered PROPAGATE of {rows}x{dim}")
        self.rounds += 1
        return np.frombuffer(body, dtype="<f4", offset=12).reshape(rows, dim).copy()

    def shared_buffer(self, dim: int) -> np.ndarray:
        """The [rows, dim] float32 view of the shared buffer to write values into before
        :meth:`propagate_shared` (shared-memory transport only; dim <= max_dim)."""
        if self._shm_view is None:
            raise DaemonError(f"no shared buffer ({self.transport_note}): use propagate()")
        if not 0 < dim <= self.max_dim:
            raise ValueError(f"dim {dim} is not in 1..={self.max_dim} (the plan's values per "
                             "vertex)")
        return self._shm_view[:self.rows * dim].reshape(self.rows, dim)

    def propagate_shared(self, layer: int, dim: int, backward: bool = False) -> np.ndarray:
        """The exchange of the values already in :meth:`shared_buffer`, without copies: returns
        the sums as a view of the same buffer, valid until the next exchange."""
        view = self.shared_buffer(dim)
        self._send(PROPAGATE_SHARED,
                   struct.pack("<IBII", layer, 1 if backward else 0, self.rows, dim))
        kind, body = self._recv()
        if kind != SUMS_SHARED:
            raise DaemonError(self._unexpected("PROPAGATE_SHARED", kind, body))
        _round, r, d = struct.unpack_from("<3I", body)
        if (r, d) != (self.rows, dim):
            raise DaemonError(f"SUMS_SHARED of {r}x{d} answered PROPAGATE of {self.rows}x{dim}")
        self.rounds += 1
        return view

    def close(self) -> None:
        """Ends the session: the daemon runs its final barrier, answers BYE and exits."""
        if self.closed:
            return
        self.closed = True
        self._send(CLOSE, b"")
        kind, body = self._recv()
        self._sock.close()
        self._release()
        if kind != BYE:
            raise DaemonError(self._unexpected("CLOSE", kind, body))

    def __enter__(self) -> Daemon:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.close()
        else:
            self.closed = True
            self._sock.close()
            self._release()

    def _release(self) -> None:
        if self._shm is not None:
            self._shm_view = None
            try:
                self._shm.close()
            except BufferError:
                pass  # a view from propagate_shared is still alive: it unmaps when that goes
            self._shm = None

    def _send(self, kind: int, body: bytes) -> None:
        self._sock.sendall(struct.pack("<IB", len(body) + 1, kind) + body)

    def _read(self, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = self._sock.recv(min(n - len(buf), 1 << 20))
            if not chunk:
                raise DaemonError(
                    f"the daemon of {self.path} closed the socket (it exited: see its log, "
                    "wW.log beside the socket)")
            buf += chunk
        return bytes(buf)

    def _recv(self) -> tuple[int, bytes]:
        (length,) = struct.unpack("<I", self._read(4))
        if not 1 <= length <= MAX_MESSAGE:
            raise DaemonError(f"message length {length} is not in 1..=2^30")
        data = self._read(length)
        return data[0], data[1:]

    @staticmethod
    def _unexpected(what: str, kind: int, body: bytes) -> str:
        if kind == ERROR:
            return f"the daemon: {body.decode('utf-8', 'replace')}"
        return f"the daemon answered {what} with message kind {kind}"
