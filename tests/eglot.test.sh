#!/usr/bin/env bash
# kernlint --lsp under a second real client: Emacs's eglot (Debian's emacs-nox and elpa-eglot),
# in batch mode. It opens a bad kernel and waits for the finding (through flymake), hovers over
# it for the rule's explanation, then types the missing guard one keystroke at a time, each sent
# as a ranged change (incremental sync), until the finding goes; then shuts the server down.
# Skipped where emacs or eglot is missing; bounded by timeout.
. "$(dirname "$0")/lib.sh"

if ! command -v emacs >/dev/null; then
  skip lsp-eglot "emacs is not installed (apt-get install emacs-nox elpa-eglot)"
  exit 0
fi
if ! emacs --batch -q --eval '(progn (package-initialize) (require (quote eglot)))' \
  >/dev/null 2>&1; then
  skip lsp-eglot "eglot is not installed (apt-get install elpa-eglot)"
  exit 0
fi

mkdir -p "$tmp/proj"
cp tests/fixtures/bounds-guard/bad_guard_after_access.metal "$tmp/proj/bad.metal"
sed -i 's|  float v = x\[gid\]; // expect: bounds-guard|  float v = x[gid];|' "$tmp/proj/bad.metal"
cat >"$tmp/test.el" <<'EOF'
;;; eglot 1.9 (Debian 12): eglot--connect starts the server for a transient project.
(package-initialize)
(require 'eglot)
(require 'flymake)
(defvar kl-out (getenv "KL_OUT"))
(defun kl-log (fmt &rest args)
  (with-temp-buffer (insert (apply #'format fmt args) "\n") (append-to-file nil nil kl-out)))
(defun kl-wait (pred secs)
  (let ((end (+ (float-time) secs)))
    (while (and (not (funcall pred)) (< (float-time) end))
      (accept-process-output nil 0.05))
    (funcall pred)))
(define-derived-mode metal-mode prog-mode "Metal")
(condition-case err
    (progn
      (find-file (getenv "KL_FILE"))
      (metal-mode)
      (let ((server (eglot--connect '(metal-mode) (cons 'transient default-directory)
                                    'eglot-lsp-server (list (getenv "KERNLINT") "--lsp")
                                    "metal")))
        (unless server (error "no server"))
        (kl-log "sync\t%S" (plist-get (plist-get (eglot--capabilities server) :textDocumentSync)
                                      :change))
        (unless (kl-wait (lambda () (flymake-diagnostics)) 20) (error "no diagnostics in 20 s"))
        (dolist (d (flymake-diagnostics))
          (kl-log "diag\t%d\t%s" (line-number-at-pos (flymake-diagnostic-beg d))
                  (flymake-diagnostic-text d)))
        (goto-char (flymake-diagnostic-beg (car (flymake-diagnostics))))
        (let ((hover (jsonrpc-request server :textDocument/hover
                                      (eglot--TextDocumentPositionParams))))
          (kl-log "hover\t%s" (replace-regexp-in-string
                               "\n" " " (plist-get (plist-get hover :contents) :value))))
        (goto-char (point-min))
        (search-forward "  float v = x[gid];")
        (beginning-of-line)
        (dolist (c (string-to-list "  if (gid >= n) return;\n"))
          (insert c)
          (eglot--signal-textDocument/didChange))
        (unless (kl-wait (lambda () (null (flymake-diagnostics))) 20)
          (error "the finding stayed: %S"
                 (mapcar #'flymake-diagnostic-text (flymake-diagnostics))))
        (kl-log "cleared")
        ;; What eglot-shutdown sends; it then kills the process at once (jsonrpc-shutdown), so
        ;; the server's own exit is waited for first.
        (jsonrpc-request server :shutdown nil)
        (jsonrpc-notify server :exit nil)
        (let ((proc (jsonrpc--process server)))
          (kl-wait (lambda () (not (process-live-p proc))) 10)
          (kl-log "shutdown\t%S" (process-exit-status proc)))))
  (error (kl-log "error\t%S" err)))
(kill-emacs 0)
EOF

(cd "$tmp/proj" && KL_OUT="$tmp/out.txt" KL_FILE="$tmp/proj/bad.metal" KERNLINT="$KERNLINT" \
  timeout 120 emacs --batch -q -l "$tmp/test.el" </dev/null >"$tmp/emacs.log" 2>&1)
rc=$?
out=$(cat "$tmp/out.txt" 2>/dev/null)
if [ $rc != 0 ]; then
  fail lsp-eglot "emacs exited $rc: $out $(tail -c 400 "$tmp/emacs.log")"
  exit 1
fi
line=$(grep -n 'float v = x\[gid\];' tests/fixtures/bounds-guard/bad_guard_after_access.metal |
  cut -d: -f1)
check_line() { # name pattern
  if grep -qP "$2" <<<"$out"; then pass "$1"; else fail "$1" "got: $out"; fi
}
check_line lsp-eglot-incremental-sync '^sync\t2$'
check_line lsp-eglot-diagnostics "^diag\t$line\tkernlint \[bounds-guard\]: \`x\[gid\]\` is indexed"
check_line lsp-eglot-hover "^hover\tkernlint: bounds-guard: .*kernlint --explain bounds-guard"
check_line lsp-eglot-typing-clears '^cleared$'
check_line lsp-eglot-shutdown '^shutdown\t0$'
if grep -q '^error' <<<"$out"; then fail lsp-eglot-errors "got: $out"; fi

# The Emacs setup in docs/integrations.md, as written (but for the path to kernlint), as the
# user's init file:
# opening a .metal file starts kernlint and shows its finding.
sed -n '/^(define-derived-mode metal-mode c++-mode/,/^```$/p' docs/integrations.md | sed '$d' |
  sed "s|'(metal-mode \. (\"kernlint\" \"--lsp\"))|\`(metal-mode . (,(getenv \"KERNLINT\") \"--lsp\"))|" \
    >"$tmp/init.el"
cat >"$tmp/check.el" <<'EOF'
(package-initialize)
(require 'eglot)
(load (getenv "KL_INIT"))
(find-file (getenv "KL_FILE"))
;; eglot-ensure connects after the command that opened the file: batch mode runs no command.
(run-hooks 'post-command-hook)
(let ((end (+ (float-time) 20)))
  (while (and (null (flymake-diagnostics)) (< (float-time) end))
    (accept-process-output nil 0.05)))
(let ((line (format "%s\t%d\n" major-mode (length (flymake-diagnostics)))))
  (with-temp-buffer (insert line) (write-region nil nil (getenv "KL_OUT"))))
(kill-emacs 0)
EOF
if ! grep -q 'getenv "KERNLINT"' "$tmp/init.el"; then
  fail lsp-eglot-readme "no Emacs snippet found in docs/integrations.md: $(cat "$tmp/init.el")"
else
  (cd "$tmp/proj" && KL_OUT="$tmp/readme.txt" KL_INIT="$tmp/init.el" \
    KL_FILE="$tmp/proj/bad.metal" KERNLINT="$KERNLINT" timeout 120 \
    emacs --batch -q -l "$tmp/check.el" </dev/null >"$tmp/emacs.log" 2>&1)
  got=$(cat "$tmp/readme.txt" 2>/dev/null)
  if [ "$got" = "$(printf 'metal-mode\t1')" ]; then
    pass lsp-eglot-readme
  else
    fail lsp-eglot-readme "got: $got $(tail -c 300 "$tmp/emacs.log")"
  fi
fi
exit $((failures > 0))
