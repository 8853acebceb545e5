#!/usr/bin/env python3
"""A day of editing, compressed: kernlint --lsp driven by a real client over its pipes.

Random edits across several open documents (MSL, one of them many kernels long, and an MLX
Python file): insertions, deletions, pastes of other kernels, unbalanced braces, positions past a
line's end or the last line (clamped, as the protocol's reference TextDocument clamps them),
malformed ranges (dropped by the server) and bodies that are not UTF-8 (a parse error). Edits
come in bursts; after each burst the client waits for the diagnostics of its last version and
checks them against a fresh `kernlint` run on the same text. Publishes must come in version
order. At the end: the server is alive, exits 0 after shutdown, and its resident memory did not
grow over the second half.

Usage: lsp_soak.py KERNLINT FIXTURES TMPDIR EDITS [SEED] [--no-rss]
Prints PASS/FAIL lines (tests/run.sh counts them)."""
import json
import os
import queue
import random
import subprocess
import sys
import threading
import time

sys.dont_write_bytecode = True  # no __pycache__ in the checkout
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lsp_client import frame, read_messages  # noqa: E402

KERNLINT, FIX, TMP = (os.path.abspath(a) for a in sys.argv[1:4])
EDITS = int(sys.argv[4])
SEED = int(sys.argv[5]) if len(sys.argv) > 5 and sys.argv[5].isdigit() else 1
CHECK_RSS = "--no-rss" not in sys.argv
rnd = random.Random(SEED)
failures = []


def check(name, ok, why=""):
    if ok:
        print("PASS soak-" + name)
    else:
        failures.append(name)
        print("FAIL soak-%s: %s (seed %d)" % (name, why, SEED))
    sys.stdout.flush()


class Server:
    def __init__(self):
        self.err = open(os.path.join(TMP, "soak.stderr"), "w+b")
        self.p = subprocess.Popen([KERNLINT, "--lsp"], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=self.err, cwd=TMP)
        self.q = queue.Queue()
        self.next_id = 0
        threading.Thread(target=read_messages, args=(self.p.stdout, self.q.put),
                         daemon=True).start()

    def raw(self, body):
        try:
            self.p.stdin.write(frame(body))
            self.p.stdin.flush()
        except OSError:
            pass  # the server is gone: the next wait finds nothing, and says so

    def send(self, obj):
        obj["jsonrpc"] = "2.0"
        self.raw(json.dumps(obj).encode())

    def request(self, method, params=None):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)
        return self.wait(lambda m: m.get("id") == self.next_id and "method" not in m)

    def wait(self, pred, timeout=120):
        end = time.time() + timeout
        while time.time() < end:
            try:
                m = self.q.get(timeout=max(0.05, end - time.time()))
            except queue.Empty:
                return None
            if m is None:
                return None
            if pred(m):
                return m
            self.other(m)
        return None

    def other(self, m):
        if m.get("method") == "textDocument/publishDiagnostics":
            p = m["params"]
            last = published.get(p["uri"], 0)
            if p.get("version", 0) < last:
                check("publish-order", False, "%s: version %s after %s" % (p["uri"],
                                                                          p.get("version"), last))
            published[p["uri"]] = p.get("version", 0)
            latest[p["uri"]] = p
        elif "error" in m:
            errors.append(m["error"])

    def rss_kb(self):
        try:
            with open("/proc/%d/status" % self.p.pid) as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        return int(line.split()[1])
        except OSError:
            pass
        return 0


published = {}
latest = {}  # per document, the last diagnostics published
errors = []


# ---- the client's model of a document, with the server's position rules ----

def units(ch):
    return 2 if ord(ch) > 0xFFFF else 1


def offset(text, line, character):
    """The index into text of an LSP position (UTF-16), clamped as kl_text_offset clamps it."""
    i = 0
    for _ in range(line):
        j = text.find("\n", i)
        if j < 0:
            return len(text)
        i = j + 1
    j = text.find("\n", i)
    le = len(text) if j < 0 else j
    if le > i and text[le - 1] == "\r":
        le -= 1
    u = 0
    while i < le and u < character:
        w = units(text[i])
        if u + w > character:
            break
        u += w
        i += 1
    return i


def position(text, index):
    line = text.count("\n", 0, index)
    start = text.rfind("\n", 0, index) + 1
    return {"line": line, "character": sum(units(c) for c in text[start:index])}


SNIPPETS = [
    "threadgroup_barrier(mem_flags::mem_threadgroup);\n", "{", "}", "if (gid >= n) return;\n",
    "half acc = 0;\n", "acc += x[gid];\n", "  ", "\n", "float v = x[gid + 1];\n", "for (", ")",
    "// \u00e9\U0001F600 comment\n", "#define TID gid\n", "uint lid [[thread_position_in_threadgroup]]",
    "threadgroup float tile[64];\n", "tile[lid] = v;\n", "out[gid] = tile[lid ^ 1];\n", "\"",
    "/*", "*/", "kernel void k2(device float* y [[buffer(0)]]) {}\n", "x", "\U0001F600",
]
KERNELS = []
for dirpath, _, names in os.walk(FIX):
    for n in sorted(names):
        if n.endswith(".metal") and len(KERNELS) < 400:
            with open(os.path.join(dirpath, n), encoding="utf-8", errors="replace") as f:
                KERNELS.append(f.read())
KERNELS.sort()
PY = [k for k in sorted(os.listdir(os.path.join(FIX, "python"))) if k.endswith(".py")]
# Host files that keep kernels in string literals (linted as units of their own).
HOST = [k for k in sorted(os.listdir(os.path.join(FIX, "host")))
        if "_string_" in k and k.endswith((".mm", ".cpp"))]


class Doc:
    def __init__(self, name, text, lang):
        self.path = os.path.join(TMP, "soak", name)
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        self.uri = "file://" + self.path
        self.text, self.lang, self.version = text, lang, 1
        self.accepted = 1  # the version of the last change the server takes


def cli(doc):
    r = subprocess.run([KERNLINT, "--format", "json", "--exit-zero", "--stdin-filename",
                        doc.path, "-"], input=doc.text.encode("utf-8", "surrogatepass"),
                       capture_output=True, cwd=TMP)
    if r.returncode == 2:
        return "error"
    sev = {"error": 1, "warning": 2, "note": 3}
    found = [d for f in json.loads(r.stdout)["files"] for d in f["diagnostics"]]
    return sorted((d["rule"], d["line"] - 1, sev[d["severity"]], d["message"]) for d in found)


def view(diags):
    if len(diags) == 1 and "code" not in diags[0]:
        return "error"
    return sorted((d["code"], d["range"]["start"]["line"], d["severity"], d["message"])
                  for d in diags)


def random_change(doc):
    """A change event and the text it makes (None: the server must refuse it)."""
    t = doc.text
    kind = rnd.random()
    nlines = t.count("\n") + 1
    if len(t) > 24000:
        kind = 0.3  # a deletion keeps documents a bounded size
    if kind < 0.30:
        a = rnd.randrange(len(t) + 1)
        new = rnd.choice(SNIPPETS)
        p = position(t, a)
        return {"range": {"start": p, "end": p}, "text": new}, t[:a] + new + t[a:]
    if kind < 0.50:
        a = rnd.randrange(len(t) + 1)
        b = min(len(t), a + rnd.randrange(1 + (4000 if len(t) > 24000 else 120)))
        return ({"range": {"start": position(t, a), "end": position(t, b)}, "text": ""},
                t[:a] + t[b:])
    if kind < 0.58:
        a = offset(t, rnd.randrange(nlines), 0)
        new = rnd.choice(KERNELS)
        p = position(t, a)
        return {"range": {"start": p, "end": p}, "text": new}, t[:a] + new + t[a:]
    if kind < 0.70:
        # Past a line's end, or past the last line: clamped on both sides.
        line = rnd.choice([rnd.randrange(nlines), nlines + rnd.randrange(50)])
        ch = rnd.randrange(200, 400)
        a = offset(t, line, ch)
        new = rnd.choice(SNIPPETS)
        r = {"start": {"line": line, "character": ch}, "end": {"line": line, "character": ch}}
        return {"range": r, "text": new}, t[:a] + new + t[a:]
    if kind < 0.74:
        return {"range": {"start": {"line": -1, "character": 0},
                          "end": {"line": 0, "character": 0}}, "text": "x"}, None
    if kind < 0.80:
        k = rnd.choice(KERNELS)
        return {"text": k}, k
    # A replacement of a span by a snippet, possibly inside a surrogate pair's units.
    a = rnd.randrange(len(t) + 1)
    b = min(len(t), a + rnd.randrange(12))
    pa, pb = position(t, a), position(t, b)
    pb = dict(pb, character=pb["character"] + rnd.choice([0, 0, 1]))
    a2, b2 = offset(t, pa["line"], pa["character"]), offset(t, pb["line"], pb["character"])
    if b2 < a2:
        a2, b2 = b2, a2
    new = rnd.choice(SNIPPETS)
    return {"range": {"start": pa, "end": pb}, "text": new}, t[:a2] + new + t[b2:]


def main():
    os.makedirs(os.path.join(TMP, "soak"), exist_ok=True)
    s = Server()
    r = s.request("initialize", {"processId": None, "rootUri": None, "capabilities": {}})
    check("initialize", r and r.get("result", {}).get("capabilities", {})
          .get("textDocumentSync", {}).get("change") == 2, json.dumps(r))
    s.send({"method": "initialized", "params": {}})
    docs = [Doc("a.metal", rnd.choice(KERNELS), "metal"), Doc("b.metal", rnd.choice(KERNELS),
                                                              "metal"),
            Doc("c.metal", rnd.choice(KERNELS), "metal")]
    # Many kernels in one document: an edit inside one body leaves the others as the server
    # kept them (analyzer/passes/factkeep.h), which the check against the command line covers.
    docs.append(Doc("f.metal", "".join(rnd.choice(KERNELS) for _ in range(6)), "metal"))
    if PY:
        with open(os.path.join(FIX, "python", rnd.choice(PY)), encoding="utf-8") as f:
            docs.append(Doc("d.py", f.read(), "python"))
    if HOST:
        name = rnd.choice(HOST)
        with open(os.path.join(FIX, "host", name), encoding="utf-8") as f:
            docs.append(Doc("e" + os.path.splitext(name)[1], f.read(),
                            "objective-cpp" if name.endswith(".mm") else "cpp"))
    for d in docs:
        s.send({"method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": d.uri, "languageId": d.lang, "version": d.version, "text": d.text}}})
    edits = checks = mismatches = refused = 0
    rss = []
    first_mismatch = ""
    start = time.time()
    while edits < EDITS:
        burst = rnd.randrange(1, 9)
        touched = {}
        for _ in range(burst):
            d = rnd.choice(docs)
            if rnd.random() < 0.03:
                # Not UTF-8: the whole message is refused with a parse error.
                body = (b'{"jsonrpc":"2.0","method":"textDocument/didChange","params":'
                        b'{"textDocument":{"uri":"' + d.uri.encode() + b'","version":'
                        + str(d.version + 1).encode() + b'},"contentChanges":[{"text":"\xff\xfe'
                        b'"}]}}')
                s.raw(body)
                refused += 1
                edits += 1
                continue
            change, new = random_change(d)
            d.version += 1
            s.send({"method": "textDocument/didChange", "params": {
                "textDocument": {"uri": d.uri, "version": d.version},
                "contentChanges": [change]}})
            edits += 1
            if new is None:
                refused += 1
                continue
            d.text = new
            d.accepted = d.version
            touched[d.uri] = d
        for d in touched.values():
            want = d.accepted
            if latest.get(d.uri, {}).get("version") != want:
                m = s.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics" and
                           m["params"]["uri"] == d.uri and m["params"].get("version") == want)
                if m is None:
                    check("published", False, "no diagnostics for %s version %d after %d edits" %
                          (d.uri, want, edits))
                    return s
                s.other(m)
            checks += 1
            got, exp = view(latest[d.uri]["diagnostics"]), cli(d)
            if got != exp:
                mismatches += 1
                if not first_mismatch:
                    first_mismatch = "%s v%d: lsp %s, cli %s" % (d.uri, want, str(got)[:300],
                                                                 str(exp)[:300])
                    with open(os.path.join(TMP, "soak-mismatch.txt"), "w",
                              encoding="utf-8", errors="surrogatepass") as f:
                        f.write(d.text)
        if s.p.poll() is not None:
            break
        rss.append(s.rss_kb())
    alive = s.p.poll() is None
    check("server-alive", alive, "exit status %s after %d edits" % (s.p.poll(), edits))
    check("diagnostics-equal-cli", checks > 0 and mismatches == 0,
          "%d of %d checks differ; first: %s" % (mismatches, checks, first_mismatch))
    check("malformed-answered", all(e.get("code") == -32700 for e in errors),
          json.dumps(errors[:3]))
    if CHECK_RSS and len(rss) >= 8:
        half = len(rss) // 2
        first, second = max(rss[:half]), max(rss[half:])
        check("rss-bounded", second <= first * 1.10 + 2048,
              "max RSS %d KB in the first half, %d KB in the second" % (first, second))
    if alive:
        r = s.request("shutdown")
        s.send({"method": "exit"})
        try:
            rc = s.p.wait(timeout=60)
        except subprocess.TimeoutExpired:
            s.p.kill()
            rc = "hung"
        check("exit", rc == 0, "exit status %s" % rc)
    print("soak: %d edits (%d refused) on %d documents, %d checks, %.1f s, seed %d" %
          (edits, refused, len(docs), checks, time.time() - start, SEED))
    return s


main()
sys.exit(1 if failures else 0)
