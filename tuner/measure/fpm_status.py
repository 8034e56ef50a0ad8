"""php-fpm's status page read straight from its status socket, over FastCGI.

`pm.status_path` answers through a child of the pool, so when every child is
busy the status request waits in the same listen queue it should measure.
php-fpm 8 can answer status on a socket of its own (`pm.status_listen`): a
hidden pool the load does not reach. The sandbox's pool sets both, and this
module asks that socket with a minimal FastCGI client (the standard library
only: one request, the records FastCGI 1.0 defines).

A sampler thread reads it once per interval during a trial, so the verdict
can say when the pool ran out: active children at pm.max_children, none
idle, requests in the listen queue.
"""

from __future__ import annotations

import json
import socket
import struct
import time
from dataclasses import dataclass

from advisor.tuner.measure.status import PeriodicReader

FCGI_VERSION = 1
FCGI_BEGIN_REQUEST, FCGI_END_REQUEST, FCGI_PARAMS, FCGI_STDIN, FCGI_STDOUT = 1, 3, 4, 5, 6
FCGI_RESPONDER = 1
STATUS_PATH = "/fpm-status"


@dataclass
class FpmStatus:
    """One reading of the pool's status page (its JSON form)."""

    t: float
    listen_queue: int
    max_listen_queue: int
    listen_queue_len: int
    idle: int
    active: int
    total: int
    max_active: int
    max_children_reached: int
    accepted: int

    @property
    def exhausted(self) -> bool:
        """Every child busy and requests waiting for one."""
        return self.idle == 0 and self.listen_queue > 0


def _record(kind: int, content: bytes, request_id: int = 1) -> bytes:
    padding = (8 - len(content) % 8) % 8
    return struct.pack(">BBHHBx", FCGI_VERSION, kind, request_id, len(content), padding) + content + b"\0" * padding


def _pair(name: str, value: str) -> bytes:
    out = b""
    for part in (name.encode(), value.encode()):
        out += struct.pack(">B", len(part)) if len(part) < 128 else struct.pack(">I", len(part) | 0x80000000)
    return out + name.encode() + value.encode()


def fetch(socket_path: str, timeout: float = 1.0, path: str = STATUS_PATH) -> dict | None:
    """The status page as a dict (php-fpm's `?json`), or None when it does not answer."""
    params = {"SCRIPT_NAME": path, "SCRIPT_FILENAME": path, "REQUEST_URI": path + "?json",
              "QUERY_STRING": "json", "REQUEST_METHOD": "GET", "SERVER_PROTOCOL": "HTTP/1.1",
              "GATEWAY_INTERFACE": "CGI/1.1", "REMOTE_ADDR": "127.0.0.1", "SERVER_NAME": "localhost"}
    body = b"".join(_pair(k, v) for k, v in params.items())
    request = (_record(FCGI_BEGIN_REQUEST, struct.pack(">HB5x", FCGI_RESPONDER, 0))
               + _record(FCGI_PARAMS, body) + _record(FCGI_PARAMS, b"") + _record(FCGI_STDIN, b""))
    stdout = b""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(timeout)
            conn.connect(socket_path)
            conn.sendall(request)
            data = b""
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                chunk = conn.recv(65536)
                if not chunk:
                    break
                data += chunk
            position = 0
            while position + 8 <= len(data):
                _version, kind, _rid, length, padding = struct.unpack(">BBHHBx", data[position:position + 8])
                content = data[position + 8:position + 8 + length]
                position += 8 + length + padding
                if kind == FCGI_STDOUT:
                    stdout += content
                elif kind == FCGI_END_REQUEST:
                    break
    except OSError:
        return None
    _headers, _, text = stdout.partition(b"\r\n\r\n")
    try:
        return json.loads(text.decode("utf-8", "replace"))
    except ValueError:
        return None


def read_status(socket_path: str, timeout: float = 1.0) -> FpmStatus | None:
    page = fetch(socket_path, timeout)
    if page is None:
        return None
    try:
        return FpmStatus(time.monotonic(), int(page["listen queue"]), int(page["max listen queue"]),
                         int(page["listen queue len"]), int(page["idle processes"]),
                         int(page["active processes"]), int(page["total processes"]),
                         int(page["max active processes"]), int(page["max children reached"]),
                         int(page["accepted conn"]))
    except (KeyError, TypeError, ValueError):
        return None


class FpmSampler(PeriodicReader[FpmStatus]):
    """Reads the status socket every `interval` seconds in a thread, at most
    `max_samples` times; `stop()` returns the readings with t from start."""

    def __init__(self, socket_path: str, interval: float = 1.0, max_samples: int = 600):
        super().__init__("fpm-status", self._read, interval, max_samples)
        self.socket_path = socket_path

    def _read(self, elapsed: float) -> FpmStatus | None:
        status = read_status(self.socket_path, timeout=min(1.0, self.interval))
        if status is not None:
            status.t = elapsed
        return status
