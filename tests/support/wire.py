"""A raw socket to the broker: send arbitrary bytes, or requests encoded with roster's codec."""
from __future__ import annotations

import itertools
import socket
import struct

from roster.protocol.build import make
from roster.protocol.codec import decode_response, encode_request, request_schema


class Wire:
    def __init__(self, bootstrap: str, timeout_s: float = 10.0) -> None:
        host, port = bootstrap.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout_s)
        self._ids = itertools.count(1)

    def close(self) -> None:
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def read_frame(self) -> bytes:
        (size,) = struct.unpack(">i", self._read(4))
        return self._read(size)

    def _read(self, size: int) -> bytes:
        data = bytearray()
        while len(data) < size:
            chunk = self.sock.recv(size - len(data))
            if not chunk:
                raise ConnectionError("closed by the broker")
            data += chunk
        return bytes(data)

    def closed_by_peer(self) -> bool:
        """True when the broker has closed this connection (reads EOF or reset)."""
        try:
            return self.sock.recv(1) == b""
        except ConnectionResetError:
            return True
        except TimeoutError:
            return False

    def call(self, api_key: int, version: int, **fields):
        body = make(request_schema(api_key, version), **fields)
        correlation_id = next(self._ids)
        self.send_raw(encode_request(api_key, version, correlation_id, "roster-tests", body))
        got, answer = decode_response(api_key, version, self.read_frame())
        assert got == correlation_id
        return answer
