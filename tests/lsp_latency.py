#!/usr/bin/env python3
"""The language server's latency as an editor sees it: for each file, open it, then send
one-character edits in the middle of the file (a space put at the start of its middle line, then
taken out again) and time each from didChange to the publishDiagnostics of that version.

Usage: lsp_latency.py KERNLINT EDITS FILE...   (prints one line per file, then a summary;
files whose slowest edit is over LIMIT_MS (50) are listed worst first)."""
import json
import os
import subprocess
import sys
import threading
import queue
import time

sys.dont_write_bytecode = True  # no __pycache__ in the checkout
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lsp_client import frame, read_messages  # noqa: E402

KERNLINT, EDITS, FILES = os.path.abspath(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
LIMIT = float(os.environ.get("LIMIT_MS", "50"))
SHOW = int(os.environ.get("SHOW_FILES", "12"))


p = subprocess.Popen([KERNLINT, "--lsp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                     stderr=subprocess.DEVNULL)
q = queue.Queue()


threading.Thread(target=read_messages, daemon=True,
                 args=(p.stdout, lambda m: q.put(m and (time.perf_counter(), m)))).start()


def send(obj):
    obj["jsonrpc"] = "2.0"
    p.stdin.write(frame(obj))
    p.stdin.flush()


def wait_publish(uri, version):
    while True:
        m = q.get(timeout=120)
        if m is None:
            sys.exit("kernlint --lsp ended")
        t, msg = m
        if (msg.get("method") == "textDocument/publishDiagnostics" and
                msg["params"]["uri"] == uri and msg["params"].get("version") == version):
            return t


send({"id": 1, "method": "initialize", "params": {"processId": None, "rootUri": None,
                                                    "capabilities": {}}})
send({"method": "initialized", "params": {}})
results = []
for path in FILES:
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    uri = "file://" + os.path.abspath(path)
    lang = "python" if path.endswith(".py") else "metal"
    send({"method": "textDocument/didOpen", "params": {"textDocument": {
        "uri": uri, "languageId": lang, "version": 1, "text": text}}})
    t0 = time.perf_counter()
    wait_publish(uri, 1)
    opened = time.perf_counter() - t0
    mid = text.count("\n") // 2
    worst, total, version = 0.0, 0.0, 1
    for k in range(EDITS):
        version += 1
        put = k % 2 == 0
        r = {"start": {"line": mid, "character": 0},
             "end": {"line": mid, "character": 0 if put else 1}}
        t0 = time.perf_counter()
        send({"method": "textDocument/didChange", "params": {
            "textDocument": {"uri": uri, "version": version},
            "contentChanges": [{"range": r, "text": " " if put else ""}]}})
        dt = (wait_publish(uri, version) - t0) * 1000
        worst, total = max(worst, dt), total + dt
    send({"method": "textDocument/didClose", "params": {"textDocument": {"uri": uri}}})
    results.append((worst, total / max(1, EDITS), opened * 1000, path))
send({"id": 2, "method": "shutdown"})
send({"method": "exit"})
p.wait(timeout=60)

over = sorted((r for r in results if r[0] > LIMIT), reverse=True)
med = sorted(r[0] for r in results)[len(results) // 2] if results else 0
print("  %d files, %d one-character edits each in the middle of the file" % (len(results), EDITS))
print("  didChange -> publishDiagnostics: median file %.1f ms (its slowest edit), worst %.1f ms"
      % (med, max((r[0] for r in results), default=0)))
print("  files over %g ms: %d of %d%s" % (LIMIT, len(over), len(results),
                                        "  OVER TARGET" if over else ""))
for worst, mean, opened, path in over[:SHOW]:
    print("    %8.1f ms slowest  %8.1f ms mean  %8.1f ms open  %s" % (worst, mean, opened, path))
if len(over) > SHOW:
    print("    ... and %d more (SHOW_FILES=N lists more)" % (len(over) - SHOW))
