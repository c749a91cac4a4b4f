"""A numpy client of the daemon's Unix-socket interface (docs/host.md, host/transport/src/ipc.rs).

Every message is ``length: u32 | kind: u8 | body``, little-endian, ``length`` counting ``kind``
and ``body``.
"""

import math
import socket
import struct
import time

import numpy as np

HELLO, PROPAGATE, CLOSE = 1, 2, 3
INFO, SUMS, BYE, ERROR = 129, 130, 131, 255
MAX_MESSAGE = 1 << 30


class DaemonError(RuntimeError):
    """The daemon answered ERROR, closed the socket, or broke the protocol."""


def exchange_scale(max_abs, clamp):
    """The power of two s with max_abs * 2**s <= clamp < max_abs * 2**(s+1) (0 for 0).

    The same rule as the Rust trainer's `exchange_scale`: every worker must use the same s for
    one exchange, so agree on max_abs first (e.g. torch.distributed.all_reduce with MAX).
    """
    if not max_abs > 0 or not math.isfinite(max_abs):
        return 0
    return max(-100, min(100, math.floor(math.log2(clamp / max_abs))))


class Daemon:
    """One worker's session with its daemon.

    After construction: ``worker``, ``workers``, ``max_dim``, ``frac_bits`` and ``vertices``
    (uint32, ascending): the row order of every array sent and received.
    """

    def __init__(self, path, wait=30.0):
        deadline = time.monotonic() + wait
        while True:
            try:
                self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                self._sock.connect(str(path))
                break
            except OSError as e:
                self._sock.close()
                if time.monotonic() > deadline:
                    raise DaemonError(f"no daemon on {path} after {wait} s ({e})") from e
                time.sleep(0.02)
        self._send(HELLO, b"")
        kind, body = self._recv()
        if kind != INFO:
            raise DaemonError(self._unexpected("HELLO", kind, body))
        worker, workers, max_dim, frac_bits, rows = struct.unpack_from("<5I", body)
        self.worker, self.workers = worker, workers
        self.max_dim, self.frac_bits = max_dim, frac_bits
        self.vertices = np.frombuffer(body, dtype="<u4", count=rows, offset=20).copy()
        self.rounds = 0

    @property
    def rows(self):
        return len(self.vertices)

    def clamp(self, max_degree):
        """Largest real value of one term such that max_degree of them cannot overflow int32."""
        limit = (2**31 - 1) // max(1, max_degree)
        return float(np.float32(limit)) / 2.0**self.frac_bits

    def propagate(self, layer, values, backward=False):
        """Sum over each local vertex's neighbours (local and remote) of `values`.

        `values` is [rows, dim] (float32; rows in `vertices` order, dim <= max_dim). Returns
        the sums, [rows, dim] float32, exact up to the fixed-point bound of docs/host.md.
        """
        x = np.ascontiguousarray(values, dtype="<f4")
        if x.ndim != 2 or x.shape[0] != self.rows:
            raise ValueError(f"values must be [{self.rows}, dim], got {x.shape}")
        rows, dim = x.shape
        if dim > self.max_dim:
            raise ValueError(f"dim {dim} is above the plan's {self.max_dim} values per vertex")
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

    def close(self):
        """Ends the session: the daemon runs its final barrier, answers BYE and exits."""
        self._send(CLOSE, b"")
        kind, body = self._recv()
        self._sock.close()
        if kind != BYE:
            raise DaemonError(self._unexpected("CLOSE", kind, body))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if exc[0] is None:
            self.close()
        else:
            self._sock.close()

    def _send(self, kind, body):
        self._sock.sendall(struct.pack("<IB", len(body) + 1, kind) + body)

    def _read(self, n):
        buf = bytearray()
        while len(buf) < n:
            chunk = self._sock.recv(min(n - len(buf), 1 << 20))
            if not chunk:
                raise DaemonError("the daemon closed the socket (it exited: see its log)")
            buf += chunk
        return bytes(buf)

    def _recv(self):
        (length,) = struct.unpack("<I", self._read(4))
        if not 1 <= length <= MAX_MESSAGE:
            raise DaemonError(f"message length {length} is not in 1..=2^30")
        data = self._read(length)
        return data[0], data[1:]

    @staticmethod
    def _unexpected(what, kind, body):
        if kind == ERROR:
            return f"the daemon: {body.decode('utf-8', 'replace')}"
        return f"the daemon answered {what} with message kind {kind}"
