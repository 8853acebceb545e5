#!/usr/bin/env bash
# kernlint --lsp driven by scripted JSON-RPC messages over its real stdin/stdout: every method,
# malformed input, UTF-16 (and negotiated UTF-8) positions, .lintrc per document, unsaved
# buffers, code actions applied back to the buffer, and shutdown/exit statuses.
. "$(dirname "$0")/lib.sh"

# ---- the command line ----
"$KERNLINT" --lsp examples </dev/null >/dev/null 2>"$tmp/err"
rc=$?
if [ $rc = 2 ] && grep -q "takes no PATH" "$tmp/err"; then pass lsp-cli-no-path
else fail lsp-cli-no-path "exit $rc: $(cat "$tmp/err")"; fi
for opt in "--format json" "-o $tmp/x" "--quiet" "--stdin-filename a.metal" "--exit-zero"; do
  # shellcheck disable=SC2086
  "$KERNLINT" --lsp $opt </dev/null >/dev/null 2>"$tmp/err"
  rc=$?
  if [ $rc = 2 ] && grep -q "cannot be combined" "$tmp/err"; then pass "lsp-cli-conflict ${opt%% *}"
  else fail "lsp-cli-conflict ${opt%% *}" "exit $rc: $(cat "$tmp/err")"; fi
done
[ -e "$tmp/x" ] && fail lsp-cli-no-output "-o file written"
"$KERNLINT" --lsp --config "$tmp/missing.lintrc" </dev/null >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ $rc = 2 ] && [ ! -s "$tmp/out" ]; then pass lsp-cli-bad-config
else fail lsp-cli-bad-config "exit $rc"; fi
"$KERNLINT" --help | grep -q -- "--lsp" && pass lsp-cli-help || fail lsp-cli-help "--lsp not in --help"

if ! command -v python3 >/dev/null; then
  skip lsp-session "python3 is not installed"
  exit 0
fi

# ---- scripted sessions ----
timeout 300 python3 - "$KERNLINT" "$tmp" "$PWD/tests/fixtures" <<'EOF'
import json, os, queue, subprocess, sys, threading, time

KERNLINT, TMP, FIX = sys.argv[1], sys.argv[2], sys.argv[3]
failures = 0

def check(name, ok, why=""):
    global failures
    if ok:
        print("PASS lsp-" + name)
    else:
        failures += 1
        print("FAIL lsp-%s: %s" % (name, why))
    sys.stdout.flush()

def frame(obj):
    body = json.dumps(obj).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body

class Server:
    """kernlint --lsp as a subprocess; a thread parses every framed message it writes."""
    def __init__(self, *args):
        self.err = open(os.path.join(TMP, "stderr.%d" % time.time_ns()), "w+b")
        self.p = subprocess.Popen([KERNLINT, "--lsp", *args], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=self.err)
        self.q = queue.Queue()
        self.bad = []  # framing problems in the server's output
        self.next_id = 100
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        f = self.p.stdout
        while True:
            headers = {}
            while True:
                line = f.readline()
                if not line:
                    self.q.put(None)
                    return
                if line == b"\r\n":
                    break
                if not line.endswith(b"\r\n") or b":" not in line:
                    self.bad.append(line)
                    continue
                k, v = line[:-2].split(b":", 1)
                headers[k.strip().lower()] = v.strip()
            n = int(headers.get(b"content-length", b"-1"))
            body = f.read(n)
            try:
                self.q.put(json.loads(body))
            except ValueError:
                self.bad.append(body)

    def raw(self, data):
        try:
            self.p.stdin.write(data)
            self.p.stdin.flush()
        except BrokenPipeError:
            pass

    def send(self, obj):
        obj.setdefault("jsonrpc", "2.0")
        self.raw(frame(obj))

    def notify(self, method, params):
        self.send({"method": method, "params": params})

    def request(self, method, params=None, want=True):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)
        return self.response(self.next_id) if want else self.next_id

    def get(self, timeout=30):
        try:
            return self.q.get(timeout=timeout)
        except queue.Empty:
            return None

    def wait(self, pred, timeout=30):
        """The first message pred accepts; the ones before it are kept in self.seen."""
        self.seen = []
        end = time.time() + timeout
        while time.time() < end:
            m = self.get(max(0.1, end - time.time()))
            if m is None:
                return None
            if pred(m):
                return m
            self.seen.append(m)
        return None

    def response(self, rid, timeout=30):
        return self.wait(lambda m: m.get("id") == rid and "method" not in m, timeout)

    def diags(self, uri, timeout=30):
        m = self.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                      and m["params"]["uri"] == uri, timeout)
        return None if m is None else m["params"]["diagnostics"]

    def init(self, caps=None):
        r = self.request("initialize", {"processId": None, "rootUri": None,
                                        "capabilities": caps or {}})
        self.notify("initialized", {})
        return r

    def finish(self, shutdown=True):
        if shutdown:
            self.request("shutdown")
        self.notify("exit", None)
        try:
            rc = self.p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.p.kill()
            rc = "hung"
        self.p.stdin.close()
        self.err.seek(0)
        self.stderr = self.err.read().decode(errors="replace")
        return rc

def uri_of(path):
    from urllib.parse import quote
    return "file://" + quote(path)

def open_doc(s, uri, text, lang="metal"):
    s.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": lang,
                                                      "version": 1, "text": text}})
    return s.diags(uri)

def change(s, uri, text, version=2):
    s.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version},
                                        "contentChanges": [{"text": text}]})
    return s.diags(uri)

def codes(diags):
    return sorted(d.get("code") for d in diags or [])

def utf16_len(s):
    return len(s.encode("utf-16-le")) // 2

def offset(text, pos, enc="utf-16"):
    """Index into text of an LSP position."""
    lines = text.split("\n")
    base = sum(len(l) + 1 for l in lines[:pos["line"]])
    line = lines[pos["line"]] if pos["line"] < len(lines) else ""
    units = 0
    for i, ch in enumerate(line):
        if units >= pos["character"]:
            return base + i
        units += utf16_len(ch) if enc == "utf-16" else len(ch.encode()) if enc == "utf-8" else 1
    return base + len(line)

def apply(text, edits, enc="utf-16"):
    for e in sorted(edits, key=lambda e: (e["range"]["start"]["line"],
                                          e["range"]["start"]["character"]), reverse=True):
        a, b = offset(text, e["range"]["start"], enc), offset(text, e["range"]["end"], enc)
        text = text[:a] + e["newText"] + text[b:]
    return text

def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()

def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)

BAD = read(os.path.join(FIX, "bounds-guard", "bad_guard_after_access.metal"))
GOOD = BAD.replace("  float v = x[gid]; // expect: bounds-guard\n  if (gid >= n) return;\n",
                   "  if (gid >= n) return;\n  float v = x[gid];\n")
assert GOOD != BAD
BAD_LINE = BAD.split("\n").index("  float v = x[gid]; // expect: bounds-guard")

# -- initialize, diagnostics, related information --
s = Server()
r = s.init()
caps = (r or {}).get("result", {}).get("capabilities", {})
sync = caps.get("textDocumentSync", {})
check("initialize", sync.get("change") == 2 and sync.get("openClose") is True and
      "save" in sync and caps.get("codeActionProvider") and "positionEncoding" not in caps
      and r["result"].get("serverInfo", {}).get("name") == "kernlint", json.dumps(r))

folder = os.path.join(TMP, "plain dir")
path = os.path.join(folder, "k.metal")
write(path, GOOD)
uri = uri_of(path)
d = open_doc(s, uri, BAD)
want_range = {"start": {"line": BAD_LINE, "character": 12},
              "end": {"line": BAD_LINE, "character": 18}}
ok = d is not None and len(d) == 1 and d[0]["code"] == "bounds-guard" and \
    d[0]["source"] == "kernlint" and d[0]["severity"] == 1 and d[0]["range"] == want_range
check("didOpen-diagnostics", ok, json.dumps(d))
rel = (d or [{}])[0].get("relatedInformation", [])
check("related-information", len(rel) == 1 and rel[0]["location"]["uri"] == uri and
      rel[0]["location"]["range"]["start"]["line"] == BAD_LINE + 1 and rel[0]["message"],
      json.dumps(rel))
check("unsaved-buffer-linted", codes(d) == ["bounds-guard"],
      "the disk file is clean, the buffer is not: %s" % codes(d))
published = d[0] if d else {}

# -- codeAction: suppress, applied back to the buffer --
r = s.request("textDocument/codeAction", {"textDocument": {"uri": uri}, "range": want_range,
                                          "context": {"diagnostics": [published]}})
acts = (r or {}).get("result") or []
sup = [a for a in acts if a["title"] == "kernlint: suppress bounds-guard on this line"]
check("codeAction-suppress", len(sup) == 1 and sup[0]["kind"] == "quickfix" and
      sup[0]["diagnostics"] == [published] and not sup[0].get("isPreferred"), json.dumps(acts))
edits = sup[0]["edit"]["changes"][uri] if sup else []
fixed = apply(BAD, edits)
check("codeAction-suppress-text",
      "  float v = x[gid]; /* kernlint-disable-line bounds-guard */ // expect: bounds-guard" in
      fixed, json.dumps(edits))
d = change(s, uri, fixed)
check("codeAction-suppress-works", d == [], json.dumps(d))
r = s.request("textDocument/codeAction", {"textDocument": {"uri": uri}, "range": want_range,
                                          "context": {"diagnostics": [published],
                                                      "only": ["refactor"]}})
check("codeAction-only-filter", r and r.get("result") == [], json.dumps(r))
foreign = dict(published, code="not-ours")
r = s.request("textDocument/codeAction", {"textDocument": {"uri": uri}, "range": want_range,
                                          "context": {"diagnostics": [foreign]}})
check("codeAction-unknown-diagnostic", r and r.get("result") == [], json.dumps(r))

# -- codeAction: a rule's fix is offered first, and is the edit --fix makes --
for name in ("bad_dot_loop.metal", "bad_half4_sum.metal"):
    text = read(os.path.join(FIX, "half-accumulator", name))
    hpath = os.path.join(folder, name)
    huri = uri_of(hpath)
    d = open_doc(s, huri, text)
    ha = [x for x in (d or []) if x["code"] == "half-accumulator"]
    acts = []
    if ha:
        r = s.request("textDocument/codeAction", {"textDocument": {"uri": huri},
                                                  "range": ha[0]["range"],
                                                  "context": {"diagnostics": [ha[0]]}})
        acts = (r or {}).get("result") or []
    fixa = [a for a in acts if a.get("isPreferred")]
    want = subprocess.run([KERNLINT, "--fix", "-q", "--stdin-filename", hpath, "-"], input=text,
                          capture_output=True, text=True).stdout
    got = apply(text, fixa[0]["edit"]["changes"][huri]) if fixa else None
    check("codeAction-fix " + name, len(ha) == 1 and bool(fixa) and acts[0] is fixa[0] and
          got == want and got != text, json.dumps(acts)[:400])
    d = change(s, huri, got or text)
    check("codeAction-fix-clears " + name,
          d is not None and got not in (None, text) and codes(d) == [], json.dumps(d))

# -- didChange back and forth, didSave, didClose --
d = change(s, uri, GOOD, 3)
check("didChange-clean", d == [], json.dumps(d))
d = change(s, uri, BAD, 4)
check("didChange-dirty", codes(d) == ["bounds-guard"], json.dumps(d))
write(os.path.join(folder, ".lintrc"), "[rules]\nbounds-guard = note\n")
s.notify("textDocument/didSave", {"textDocument": {"uri": uri}})
d = s.diags(uri)
check("didSave-relints-with-new-lintrc", d and [x["severity"] for x in d] == [3], json.dumps(d))
s.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
d = s.diags(uri)
check("didClose-clears", d == [], json.dumps(d))
r = s.request("textDocument/codeAction", {"textDocument": {"uri": uri}, "range": want_range,
                                          "context": {"diagnostics": [published]}})
check("codeAction-closed-document", r and r.get("result") == [], json.dumps(r))

# -- a local header created, edited and removed while the server runs: each lint reads it anew --
hdir = os.path.join(TMP, "header dir")
hk = os.path.join(hdir, "k.metal")
HK = read(os.path.join(FIX, "barrier-divergence", "header-macro", "bad_header_barrier_macro.metal"))
write(hk, HK)
huri2 = uri_of(hk)
d = open_doc(s, huri2, HK)
check("header-missing", "barrier-divergence" not in codes(d), json.dumps(d))
write(os.path.join(hdir, "sync_macros.h"),
      "#define TG_SYNC threadgroup_barrier(mem_flags::mem_threadgroup);\n")
d = change(s, huri2, HK, 2)
check("header-created", codes(d) == ["barrier-divergence"], json.dumps(d))
write(os.path.join(hdir, "sync_macros.h"), "#define TG_SYNC /* nothing */\n")
d = change(s, huri2, HK, 3)
check("header-edited", "barrier-divergence" not in codes(d), json.dumps(d))
os.remove(os.path.join(hdir, "sync_macros.h"))
write(os.path.join(hdir, "sync_macros.h"),
      "#define TG_SYNC threadgroup_barrier(mem_flags::mem_threadgroup);\n")
d = change(s, huri2, HK, 4)
check("header-recreated", codes(d) == ["barrier-divergence"], json.dumps(d))
os.remove(os.path.join(hdir, "sync_macros.h"))
d = change(s, huri2, HK, 5)
check("header-removed", "barrier-divergence" not in codes(d), json.dumps(d))
s.notify("textDocument/didClose", {"textDocument": {"uri": huri2}})
s.diags(huri2)

# -- a header function's body, which the uniformity pass reads from the header (kl_xdefs), edited
# while the server runs: the summary kept from the version before must not answer for the new
# text, nor for a header it includes that changed --
fdir = os.path.join(TMP, "header fn")
fk = os.path.join(fdir, "k.metal")
FK = ('#include <metal_stdlib>\n#include "lane.h"\nusing namespace metal;\n\n'
      'kernel void k(device float *out [[buffer(0)]], uint tid [[thread_position_in_grid]]) {\n'
      '  if (pick()) {\n    threadgroup_barrier(mem_flags::mem_threadgroup);\n  }\n'
      '  out[tid] = 1.0f;\n}\n')
write(fk, FK)
write(os.path.join(fdir, "lane.h"), "inline bool pick() { return simd_is_first(); }\n")
furi = uri_of(fk)
d = open_doc(s, furi, FK)
check("header-fn-lane", codes(d) == ["barrier-divergence"], json.dumps(d))
d = change(s, furi, FK, 2)
check("header-fn-kept", codes(d) == ["barrier-divergence"], json.dumps(d))
write(os.path.join(fdir, "lane.h"), "inline bool pick() { return true; }\n")
d = change(s, furi, FK, 3)
check("header-fn-edited", codes(d) == [], json.dumps(d))
write(os.path.join(fdir, "lane.h"), '#include "inner.h"\ninline bool pick() { return inner(); }\n')
write(os.path.join(fdir, "inner.h"), "inline bool inner() { return true; }\n")
d = change(s, furi, FK, 4)
check("header-fn-inner", codes(d) == [], json.dumps(d))
write(os.path.join(fdir, "inner.h"), "inline bool inner() { return simd_is_first(); }\n")
d = change(s, furi, FK, 5)
check("header-fn-inner-edited", codes(d) == ["barrier-divergence"], json.dumps(d))
os.remove(os.path.join(fdir, "inner.h"))
d = change(s, furi, FK, 6)
check("header-fn-inner-removed", codes(d) == [], json.dumps(d))
# lane.h parses whole only with inner.h's macro expanded: its summary depends on that text too.
write(os.path.join(fdir, "lane.h"), '#include "inner.h"\ninline bool pick() { return PICK_EXPR }\n')
write(os.path.join(fdir, "inner.h"), "#define PICK_EXPR simd_is_first();\n")
d = change(s, furi, FK, 7)
check("header-fn-macro", codes(d) == ["barrier-divergence"], json.dumps(d))
write(os.path.join(fdir, "inner.h"), "#define PICK_EXPR true;\n")
d = change(s, furi, FK, 8)
check("header-fn-macro-edited", codes(d) == [], json.dumps(d))
s.notify("textDocument/didClose", {"textDocument": {"uri": furi}})
s.diags(furi)

# -- .lintrc per document: two folders, two configs, one server --
fa, fb = os.path.join(TMP, "proj a"), os.path.join(TMP, "proj%b")
write(os.path.join(fa, ".lintrc"), "[rules]\nbounds-guard = off\n")
write(os.path.join(fb, ".lintrc"), "[rules]\nbounds-guard = warning\n")
ua, ub = uri_of(os.path.join(fa, "k.metal")), uri_of(os.path.join(fb, "sub", "k.metal"))
da, db = open_doc(s, ua, BAD), open_doc(s, ub, BAD)
check("lintrc-per-document", da == [] and db and [x["severity"] for x in db] == [2],
      "a: %s b: %s" % (json.dumps(da), json.dumps(db)))
check("uri-percent-decoded", "%25" in ub and db and len(db) == 1, ub)
fc = os.path.join(TMP, "broken")
write(os.path.join(fc, ".lintrc"), "[rules]\nno-such-rule = off\n")
uc = uri_of(os.path.join(fc, "k.metal"))
dc = open_doc(s, uc, BAD)
check("lintrc-broken", dc and len(dc) == 1 and ".lintrc:2" in dc[0]["message"] and
      dc[0]["range"]["start"] == {"line": 0, "character": 0}, json.dumps(dc))
fe = os.path.join(TMP, "excl")
write(os.path.join(fe, ".lintrc"), "exclude = vendor/\n")
de = open_doc(s, uri_of(os.path.join(fe, "vendor", "k.metal")), BAD)
check("lintrc-exclude", de == [], json.dumps(de))
# -- what the project says: its build's version (a saved file), and the code of a project that
# never guards bfloat, as on the command line --
BF = ("kernel void to_bf(device const float *a [[buffer(0)]], device bfloat *b [[buffer(1)]],\n"
      "                  uint gid [[thread_position_in_grid]]) {\n  b[gid] = bfloat(a[gid]);\n}\n")
fp = os.path.join(TMP, "proj-never-guards")
write(os.path.join(fp, "one.metal"), BF)
write(os.path.join(fp, "two.metal"), BF)
dp = open_doc(s, uri_of(os.path.join(fp, "one.metal")), BF)
check("project-inferred-msl31", "bfloat-target" not in codes(dp), json.dumps(dp))
fq = os.path.join(TMP, "proj-states-30")
write(os.path.join(fq, "one.metal"), BF)
write(os.path.join(fq, "two.metal"), BF)
write(os.path.join(fq, "Makefile"), "METALFLAGS = -std=metal3.0\n")
dq = open_doc(s, uri_of(os.path.join(fq, "one.metal")), BF)
check("project-stated-msl30", "bfloat-target" in codes(dq), json.dumps(dq))
du = open_doc(s, "untitled:Untitled-1", BAD)
check("untitled-defaults", codes(du) == ["bounds-guard"] and du[0]["severity"] == 1,
      json.dumps(du))

# -- UTF-16 positions on a non-ASCII line --
pre = "  float v = /* é → 😀 */ "
uni = BAD.replace("  float v = ", pre, 1)
uu = uri_of(os.path.join(TMP, "uni", "k.metal"))
d = open_doc(s, uu, uni)
start = d[0]["range"]["start"] if d else {}
end = d[0]["range"]["end"] if d else {}
check("utf16-position", start == {"line": BAD_LINE, "character": utf16_len(pre)} and
      end["character"] == utf16_len(pre) + 6, "%s, want character %d" % (start, utf16_len(pre)))
r = s.request("textDocument/codeAction", {"textDocument": {"uri": uu}, "range": d[0]["range"],
                                          "context": {"diagnostics": d}}) if d else None
acts = (r or {}).get("result") or []
after = apply(uni, acts[0]["edit"]["changes"][uu]) if acts else ""
check("utf16-edit", after.split("\n")[BAD_LINE].startswith(pre + "x[gid]; /* kernlint-disable"),
      json.dumps(acts))

# -- Python: a line inside an MLX kernel string gets the MSL // comment, inside the string --
py = read(os.path.join(FIX, "python", "bad_literal_rounded_grid.py"))
py = py.replace("; // expect: bounds-guard", ";")
up = uri_of(os.path.join(TMP, "py", "k.py"))
d = open_doc(s, up, py, "python")
bg = [x for x in d or [] if x["code"] == "bounds-guard"]
check("python-diagnostics", bg, json.dumps(d))
if bg:
    r = s.request("textDocument/codeAction", {"textDocument": {"uri": up}, "range": bg[0]["range"],
                                              "context": {"diagnostics": bg[:1]}})
    acts = (r or {}).get("result") or []
    e = acts[0]["edit"]["changes"][up] if acts else []
    check("python-suppress-in-string", len(e) == 1 and
          e[0]["newText"] == " // kernlint-disable-line bounds-guard", json.dumps(e))
    d2 = change(s, up, apply(py, e))
    check("python-suppress-works", len([x for x in d2 or [] if x["code"] == "bounds-guard"]) ==
          len(bg) - 1 and "unused-suppression" not in codes(d2), json.dumps(d2))

# -- Python: an MLX launch's threadgroup finding relates the call that makes its kernel --
py = read(os.path.join(FIX, "python", "bad_threadgroup_kernel_place.py"))
name_line = py.split("\n").index('    name="softplus",  # expect-also: threadgroup-size')
ut = uri_of(os.path.join(TMP, "py", "place.py"))
d = open_doc(s, ut, py, "python")
ts = [x for x in d or [] if x["code"] == "threadgroup-size"]
rel = [r for x in ts for r in x.get("relatedInformation", [])]
check("python-related-kernel", len(ts) == 2 and len(rel) == 2 and
      all(r["location"]["uri"] == ut and r["location"]["range"]["start"] ==
          {"line": name_line, "character": 9} for r in rel), json.dumps(ts))

# -- merging into a disable-line comment that is there --
merged_src = BAD.replace("// expect: bounds-guard", "// kernlint-disable-line half-accumulator")
um = uri_of(os.path.join(TMP, "merge", "k.metal"))
d = open_doc(s, um, merged_src)
bg = [x for x in d or [] if x["code"] == "bounds-guard"]
r = s.request("textDocument/codeAction", {"textDocument": {"uri": um}, "range": bg[0]["range"],
                                          "context": {"diagnostics": bg}}) if bg else None
acts = (r or {}).get("result") or []
e = acts[0]["edit"]["changes"][um] if acts else []
after = apply(merged_src, e)
check("suppress-merges", "// kernlint-disable-line half-accumulator, bounds-guard" in after,
      json.dumps(e))
d = change(s, um, after)
check("suppress-merged-works", codes(d) == ["unused-suppression"], json.dumps(d))

# -- malformed input: every one answered or logged, and the server goes on --
# A header without a usable length loses its body: the server skips to the next header.
s.raw(b"Content-Length: abc\r\n\r\n{}")
m = s.wait(lambda m: "error" in m)
check("bad-content-length", m and m["error"]["code"] == -32700 and m["id"] is None, json.dumps(m))
rid = s.request("textDocument/codeAction", {}, want=False)
m = s.wait(lambda m: m.get("id") == rid)
check("bad-content-length-recovers", m and m["error"]["code"] == -32602, json.dumps(m))
s.raw(b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n{}")
m = s.wait(lambda m: "error" in m)
check("missing-content-length", m and m["error"]["code"] == -32700, json.dumps(m))
s.raw(b"Content-Length: 2\r\nX-Junk\r\n\r\n{}")
m = s.wait(lambda m: "error" in m)
check("bad-header-line", m and m["error"]["code"] == -32700, json.dumps(m))
s.raw(b"content-length: 2\r\ncontent-type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n[]")
m = s.wait(lambda m: "error" in m)
check("headers-case-insensitive", m and m["error"]["code"] == -32600, json.dumps(m))
s.raw(b"Content-Length: 9\r\n\r\n{\"id\": 1,")
m = s.wait(lambda m: "error" in m)
check("invalid-json", m and m["error"]["code"] == -32700 and m["id"] is None, json.dumps(m))
s.send({"id": 7, "params": {}})
m = s.wait(lambda m: "error" in m)
check("missing-method", m and m["error"]["code"] == -32600 and m["id"] == 7, json.dumps(m))
s.raw(frame([1, 2]))
m = s.wait(lambda m: "error" in m)
check("not-an-object", m and m["error"]["code"] == -32600, json.dumps(m))
r = s.request("textDocument/definition", {"textDocument": {"uri": uri}, "position":
                                          {"line": 0, "character": 0}})
check("unknown-request", r and r["error"]["code"] == -32601, json.dumps(r))
r = s.request("textDocument/codeAction")
check("missing-params", r and r["error"]["code"] == -32602, json.dumps(r))
r = s.request("textDocument/codeAction", 5)
check("wrong-params-type", r and r["error"]["code"] == -32602, json.dumps(r))
r = s.request("textDocument/codeAction", {"textDocument": {"uri": uri}})
check("incomplete-params", r and r["error"]["code"] == -32602, json.dumps(r))
s.notify("textDocument/didOpen", {"textDocument": {"uri": 3}})
s.notify("$/cancelRequest", {"id": 1})
s.notify("workspace/didChangeConfiguration", {"settings": {}})
s.notify("textDocument/didOpen", None)
r = s.request("initialize", {"capabilities": {}})
check("initialize-twice", r and r["error"]["code"] == -32600, json.dumps(r))
check("notifications-unanswered", not s.seen, json.dumps(s.seen))
r = s.request("shutdown")
check("shutdown", r and r.get("result", 1) is None and "error" not in r, json.dumps(r))
r = s.request("textDocument/codeAction", {})
check("request-after-shutdown", r and r["error"]["code"] == -32600, json.dumps(r))
rc = s.finish(shutdown=False)
check("exit-after-shutdown", rc == 0, "exit status %s" % rc)
check("output-framing", not s.bad, repr(s.bad[:3]))
check("malformed-logged", "didOpen" in s.stderr, s.stderr[-500:])

# -- before initialize, exit without shutdown, end of input --
s = Server()
r = s.request("textDocument/codeAction", {})
check("request-before-initialize", r and r["error"]["code"] == -32002, json.dumps(r))
s.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "metal",
                                                   "version": 1, "text": BAD}})
r = s.init()
check("notification-before-initialize-dropped",
      r and "result" in r and not s.seen, json.dumps(s.seen))
rc = s.finish(shutdown=False)
check("exit-without-shutdown", rc == 1, "exit status %s" % rc)
s = Server()
s.init()
s.p.stdin.close()
try:
    rc = s.p.wait(timeout=30)
except subprocess.TimeoutExpired:
    s.p.kill()
    rc = "hung"
check("eof-ends-server", rc == 1, "exit status %s" % rc)

# -- UTF-8 positions when the client offers them --
s = Server()
r = s.init({"general": {"positionEncodings": ["utf-8", "utf-16"]}})
check("utf8-negotiated", r and r["result"]["capabilities"].get("positionEncoding") == "utf-8",
      json.dumps(r))
d = open_doc(s, uu, uni)
check("utf8-position", d and d[0]["range"]["start"]["character"] == len(pre.encode()),
      json.dumps(d))
rc = s.finish()
check("utf8-exit", rc == 0, "exit status %s" % rc)
# -- incremental sync: ranged edits, in order, clamped; versions; coalescing; hover; cancel --
def rng(l1, c1, l2, c2):
    return {"start": {"line": l1, "character": c1}, "end": {"line": l2, "character": c2}}

def edit(s, uri, version, *changes):
    s.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version},
                                        "contentChanges": list(changes)})

def publish(s, uri, timeout=60):
    m = s.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics"
               and m["params"]["uri"] == uri, timeout)
    return None if m is None else m["params"]

def cli(path, text):
    """The findings a fresh kernlint run reports on text, as (code, line, message)."""
    out = subprocess.run([KERNLINT, "--format", "json", "--exit-zero", "--stdin-filename", path,
                          "-"], input=text.encode(), capture_output=True).stdout
    found = [d for f in json.loads(out)["files"] for d in f["diagnostics"]]
    return sorted((f["rule"], f["line"] - 1, f["message"]) for f in found)

def lsp_view(diags):
    return sorted((d["code"], d["range"]["start"]["line"], d["message"]) for d in diags or [])

s = Server()
r = s.init({"textDocument": {"hover": {"contentFormat": ["markdown", "plaintext"]},
                             "publishDiagnostics": {"codeDescriptionSupport": True}}})
caps = (r or {}).get("result", {}).get("capabilities", {})
check("hover-provider", caps.get("hoverProvider") is True, json.dumps(caps))
ipath = os.path.join(TMP, "incremental", "k.metal")
write(ipath, BAD)
iuri = uri_of(ipath)
s.notify("textDocument/didOpen", {"textDocument": {"uri": iuri, "languageId": "metal",
                                                   "version": 1, "text": BAD}})
p = publish(s, iuri)
check("publish-version", p and p.get("version") == 1, json.dumps(p))
# Swap the load and the guard with two ranged edits in one notification, the second placed
# in the text the first made.
lines = BAD.split("\n")
load, guard = lines[BAD_LINE], lines[BAD_LINE + 1]
edit(s, iuri, 2, {"range": rng(BAD_LINE, 0, BAD_LINE + 1, 0), "text": ""},
     {"range": rng(BAD_LINE + 1, 0, BAD_LINE + 1, 0), "text": load + "\n"})
text = "\n".join(lines[:BAD_LINE] + [guard, load] + lines[BAD_LINE + 2:])
p = publish(s, iuri)
check("incremental-edits-in-order", p and p.get("version") == 2 and p["diagnostics"] == [] and
      lsp_view(p["diagnostics"]) == cli(ipath, text), json.dumps(p))
# A character past U+FFFF is two UTF-16 units: an edit after it on its line lands after it.
emoji = "// \U0001F600 x\n"
edit(s, iuri, 3, {"range": rng(0, 0, 0, 0), "text": emoji})
edit(s, iuri, 4, {"range": rng(0, 6, 0, 7), "text": "y"})
text = "// \U0001F600 y\n" + text
p = publish(s, iuri)
while p and p.get("version") != 4:
    p = publish(s, iuri)
check("incremental-utf16", p and lsp_view(p["diagnostics"]) == cli(ipath, text), json.dumps(p))
# Positions past a line's end or the last line clamp, as the protocol's reference TextDocument
# does: the text goes at the line's end, or the document's.
edit(s, iuri, 5, {"range": rng(0, 400, 0, 400), "text": " z"},
     {"range": rng(99999, 0, 99999, 5), "text": "\n// end\n"})
text = text.replace("\U0001F600 y\n", "\U0001F600 y z\n", 1) + "\n// end\n"
p = publish(s, iuri)
check("incremental-clamped", p and p.get("version") == 5 and
      lsp_view(p["diagnostics"]) == cli(ipath, text), json.dumps(p))
# A malformed change drops its notification, logged; the buffer stays as it was.
edit(s, iuri, 6, {"range": {"start": {"line": -1, "character": 0}}, "text": "junk"})
edit(s, iuri, 7, {"range": rng(0, 0, 0, 0), "text": "// ok\n"})
text = "// ok\n" + text
p = publish(s, iuri)
check("incremental-malformed-dropped", p and p.get("version") == 7 and
      lsp_view(p["diagnostics"]) == cli(ipath, text), json.dumps(p))
shown = [m for m in s.seen if m.get("method") == "window/showMessage"]
check("incremental-malformed-shown", len(shown) == 1 and shown[0]["params"]["type"] == 1 and
      "could not be applied" in shown[0]["params"]["message"], json.dumps(s.seen)[:300])
# Back to the bad order, by a whole-text change: hover over the finding explains its rule.
bad_text = "// ok\n" + BAD
edit(s, iuri, 8, {"text": bad_text})
p = publish(s, iuri)
diag = (p or {}).get("diagnostics") or [{}]
check("code-description-needs-address", diag[0].get("code") == "bounds-guard" and
      "codeDescription" not in diag[0], json.dumps(diag))
at = diag[0].get("range", {}).get("start", {"line": 0, "character": 0})
r = s.request("textDocument/hover", {"textDocument": {"uri": iuri}, "position": at})
h = (r or {}).get("result") or {}
val = h.get("contents", {}).get("value", "")
check("hover-finding", h.get("contents", {}).get("kind") == "markdown" and
      "bounds-guard" in val and "kernlint --explain bounds-guard" in val and
      h.get("range") == diag[0].get("range"), json.dumps(r))
r = s.request("textDocument/hover", {"textDocument": {"uri": iuri},
                                     "position": {"line": 0, "character": 0}})
check("hover-elsewhere", r and r.get("result") is None and "error" not in r, json.dumps(r))
# A burst of edits: the diagnostics that come are of versions in order, the last one's last,
# and equal to a fresh run's on its text.
versions = []
for v in range(9, 49):
    edit(s, iuri, v, {"range": rng(0, 0, 0, 0), "text": "//\n"})
    bad_text = "//\n" + bad_text
while True:
    p = publish(s, iuri)
    if not p:
        break
    versions.append(p.get("version"))
    if p.get("version") == 48:
        break
check("burst-coalesced", versions and versions[-1] == 48 and versions == sorted(versions) and
      lsp_view(p["diagnostics"]) == cli(ipath, bad_text), "%s" % versions)
# A request on a document whose lint is under way waits for it, where $/cancelRequest reaches
# it; meanwhile other messages are read and answered.
big = "".join(BAD.replace("scale_shift", "scale_shift_%d" % k) for k in range(300))
bpath = os.path.join(TMP, "incremental", "big.metal")
buri = uri_of(bpath)
s.notify("textDocument/didOpen", {"textDocument": {"uri": buri, "languageId": "metal",
                                                   "version": 1, "text": big}})
rid = s.request("textDocument/hover", {"textDocument": {"uri": buri},
                                       "position": {"line": 0, "character": 0}}, want=False)
s.notify("$/cancelRequest", {"id": rid})
other = s.request("textDocument/hover", {"textDocument": {"uri": iuri}, "position": at})
order = [m.get("id") if "id" in m else m.get("method") for m in s.seen]
check("request-cancelled", any(m.get("id") == rid and m.get("error", {}).get("code") == -32800
                               for m in s.seen), json.dumps(s.seen)[:400])
check("reads-while-linting", other and "result" in other and
      "textDocument/publishDiagnostics" not in order, "%s" % order)
p = publish(s, buri)
check("big-published", p and len(p["diagnostics"]) == 300, json.dumps(p)[:200])
rc = s.finish()
check("incremental-exit", rc == 0, "exit status %s" % rc)

# -- codeDescription, where the client supports it and the user gives an address --
s = Server()
s.request("initialize", {"capabilities": {"textDocument": {"publishDiagnostics":
                                                           {"codeDescriptionSupport": True}}},
                         "initializationOptions": {"ruleDocs": "https://docs.example/{rule}.html"}})
s.notify("initialized", {})
d = open_doc(s, iuri, BAD)
check("code-description", d and d[0].get("codeDescription") ==
      {"href": "https://docs.example/bounds-guard.html"}, json.dumps(d))
r = s.request("textDocument/hover", {"textDocument": {"uri": iuri}, "position":
                                     d[0]["range"]["start"]} if d else {})
check("hover-plaintext", r and r.get("result", {}).get("contents", {}).get("kind") ==
      "plaintext", json.dumps(r))
rc = s.finish()
check("code-description-exit", rc == 0, "exit status %s" % rc)
sys.exit(1 if failures else 0)
EOF
rc=$?
[ $rc = 0 ] || [ $rc = 1 ] || fail lsp-session "the scripted session ended with status $rc"
exit $((failures > 0 || rc != 0))
