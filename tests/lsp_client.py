"""What the language server's Python clients share (tests/lsp_soak.py, tests/lsp_latency.py):
the base protocol's framing, both ways."""
import json


def frame(body):
    """A message (a dict, or its JSON bytes) with its Content-Length header."""
    if not isinstance(body, bytes):
        body = json.dumps(body).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def read_messages(stream, put):
    """Call put with each message the server writes to stream (parsed JSON), then with None at
    the end of the stream."""
    while True:
        n = -1
        while True:
            line = stream.readline()
            if not line:
                put(None)
                return
            if line == b"\r\n":
                break
            k, _, v = line.partition(b":")
            if k.strip().lower() == b"content-length":
                n = int(v)
        put(json.loads(stream.read(n)))
