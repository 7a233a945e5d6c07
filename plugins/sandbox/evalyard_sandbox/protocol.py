"""Length-prefixed JSON frames between the platform process and the sandbox worker."""

from __future__ import annotations

import json
import os
import struct

_HEADER = struct.Struct(">I")
MAX_FRAME = 256 * 1024 * 1024


def encode(message: dict) -> bytes:
    body = json.dumps(message, separators=(",", ":")).encode()
    return _HEADER.pack(len(body)) + body


def write_frame(fd: int, message: dict) -> None:
    data = memoryview(encode(message))
    while data:
        written = os.write(fd, data)
        data = data[written:]


class FrameReader:
    """Accumulates bytes and yields complete frames (for the worker's non-blocking loop)."""

    def __init__(self) -> None:
        self.buffer = bytearray()

    def feed(self, data: bytes) -> list[dict]:
        self.buffer += data
        frames = []
        while len(self.buffer) >= _HEADER.size:
            (size,) = _HEADER.unpack_from(self.buffer)
            if size > MAX_FRAME:
                raise ValueError(f"frame of {size} bytes exceeds the limit")
            if len(self.buffer) < _HEADER.size + size:
                break
            body = bytes(self.buffer[_HEADER.size:_HEADER.size + size])
            del self.buffer[:_HEADER.size + size]
            frames.append(json.loads(body))
        return frames


def read_frame(stream) -> dict | None:
    """Blocking read of one frame from a binary file object; None at end of stream."""
    header = stream.read(_HEADER.size)
    if len(header) < _HEADER.size:
        return None
    (size,) = _HEADER.unpack(header)
    body = stream.read(size)
    if len(body) < size:
        return None
    return json.loads(body)
