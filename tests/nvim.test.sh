#!/usr/bin/env bash
# kernlint --lsp under a real client: headless Neovim with its built-in LSP client opens a bad
# kernel, waits for the diagnostics, asks for code actions, applies the suppression (Neovim sends
# the change) and waits for the finding to go. Skipped where nvim is missing; bounded by timeout.
. "$(dirname "$0")/lib.sh"

if ! command -v nvim >/dev/null; then
  skip lsp-nvim "nvim is not installed (apt-get install neovim)"
  exit 0
fi

mkdir -p "$tmp/proj"
cp tests/fixtures/bounds-guard/bad_guard_after_access.metal "$tmp/proj/bad.metal"
# The finding's line without its comment, so the suppression is the plain // form.
sed -i 's|  float v = x\[gid\]; // expect: bounds-guard|  float v = x[gid];|' "$tmp/proj/bad.metal"
cat >"$tmp/test.lua" <<'EOF'
-- Neovim 0.7 API: vim.lsp.start_client + vim.lsp.buf_attach_client (vim.lsp.start is 0.8+).
local out = assert(io.open(os.getenv('KL_OUT'), 'w'))
local function log(...)
  local parts = {}
  for _, v in ipairs({ ... }) do table.insert(parts, tostring(v)) end
  out:write(table.concat(parts, '\t'), '\n')
  out:flush()
end

local ok, err = pcall(function()
  local id = vim.lsp.start_client({
    name = 'kernlint',
    cmd = { os.getenv('KERNLINT'), '--lsp' },
    root_dir = vim.fn.getcwd(),
  })
  assert(id, 'vim.lsp.start_client failed')
  assert(vim.lsp.buf_attach_client(0, id), 'buf_attach_client failed')
  local client = vim.lsp.get_client_by_id(id)

  assert(vim.wait(20000, function() return #vim.diagnostic.get(0) > 0 end, 50),
    'no diagnostics within 20 s')
  local diags = vim.diagnostic.get(0)
  for _, d in ipairs(diags) do
    log('diag', d.lnum, d.col, d.end_col, d.severity, d.source, d.code, d.message)
  end
  local d = diags[1]

  -- What vim.lsp.buf.code_action() sends: the line's diagnostics in LSP form.
  local params = vim.lsp.util.make_range_params()
  params.range = { start = { line = d.lnum, character = 0 }, ['end'] = { line = d.lnum, character = 0 } }
  params.context = { diagnostics = vim.lsp.diagnostic.get_line_diagnostics(0, d.lnum, {}, id) }
  local resp = client.request_sync('textDocument/codeAction', params, 10000, 0)
  assert(resp and resp.result, 'no codeAction answer: ' .. vim.inspect(resp))
  local suppress
  for _, a in ipairs(resp.result) do
    log('action', a.title, a.kind)
    if a.title == 'kernlint: suppress ' .. d.code .. ' on this line' then suppress = a end
  end
  assert(suppress, 'no suppress action among ' .. #resp.result)

  -- Applying it edits the buffer; Neovim sends didChange (the edit's range), and the finding goes.
  vim.lsp.util.apply_workspace_edit(suppress.edit, client.offset_encoding)
  log('line', vim.api.nvim_buf_get_lines(0, d.lnum, d.lnum + 1, false)[1])
  assert(vim.wait(20000, function() return #vim.diagnostic.get(0) == 0 end, 50),
    'the finding is still there 20 s after the suppression')
  log('cleared')
  client.stop()
  vim.wait(5000, function() return client.is_stopped() end, 50)
end)
if not ok then log('error', err) end
out:close()
if ok then vim.cmd('qall!') else vim.cmd('cquit!') end
EOF

(cd "$tmp/proj" && KL_OUT="$tmp/out.txt" KERNLINT="$KERNLINT" timeout 120 \
  nvim --headless -u NONE -i NONE --cmd 'set noswapfile' -c "luafile $tmp/test.lua" bad.metal \
  </dev/null >"$tmp/nvim.log" 2>&1)
rc=$?
if [ $rc = 124 ]; then
  fail lsp-nvim "nvim did not finish within 120 s: $(head -c 500 "$tmp/out.txt" 2>/dev/null)"
  exit 1
fi
out=$(cat "$tmp/out.txt" 2>/dev/null)
if [ $rc != 0 ]; then
  fail lsp-nvim "nvim exited $rc: $out $(head -c 300 "$tmp/nvim.log")"
  exit 1
fi
line=$(grep -n 'float v = x\[gid\];' "$tmp/proj/bad.metal" | cut -d: -f1)
# vim.diagnostic lines are 0-based; severity 1 is ERROR; column 12 is `x[gid]`.
if grep -qP "^diag\t$((line - 1))\t12\t18\t1\tkernlint\tbounds-guard\t" <<<"$out"; then
  pass lsp-nvim-diagnostics
else
  fail lsp-nvim-diagnostics "got: $out"
fi
if grep -qP "^action\tkernlint: suppress bounds-guard on this line\tquickfix" <<<"$out"; then
  pass lsp-nvim-code-action
else
  fail lsp-nvim-code-action "got: $out"
fi
if grep -qP "^line\t  float v = x\[gid\]; // kernlint-disable-line bounds-guard$" <<<"$out" &&
  grep -q "^cleared" <<<"$out"; then
  pass lsp-nvim-suppression-applied
else
  fail lsp-nvim-suppression-applied "got: $out"
fi
[ -n "${KL_NVIM_SHOW:-}" ] && echo "$out"

# The Neovim setup in docs/integrations.md, as written (but for the path to kernlint), as the
# user's init.lua:
# a .metal and a .py buffer both get diagnostics, from one kernlint.
sed -n '/^-- init.lua$/,/^```$/p' docs/integrations.md | sed '$d' |
  sed "s|{ 'kernlint', '--lsp' }|{ os.getenv('KERNLINT'), '--lsp' }|" >"$tmp/init.lua"
cp tests/fixtures/python/bad_literal_rounded_grid.py "$tmp/proj/k.py"
cat >"$tmp/check.lua" <<'EOF'
local out = assert(io.open(os.getenv('KL_OUT'), 'w'))
local function has() return #vim.diagnostic.get(0) > 0 end
out:write('metal\t', vim.bo.filetype, '\t', tostring(vim.wait(20000, has, 50)), '\n')
vim.cmd('edit k.py')
out:write('python\t', vim.bo.filetype, '\t', tostring(vim.wait(20000, has, 50)), '\n')
out:write('clients\t', #vim.lsp.get_active_clients(), '\n')
out:close()
vim.cmd('qall!')
EOF
if ! grep -q "start_client" "$tmp/init.lua"; then
  fail lsp-nvim-readme "no Neovim init.lua snippet found in docs/integrations.md"
else
  (cd "$tmp/proj" && KL_OUT="$tmp/readme.txt" KERNLINT="$KERNLINT" timeout 120 \
    nvim --headless -u "$tmp/init.lua" -i NONE --cmd 'set noswapfile' -c "luafile $tmp/check.lua" \
    bad.metal </dev/null >"$tmp/nvim.log" 2>&1)
  got=$(cat "$tmp/readme.txt" 2>/dev/null)
  if [ "$got" = "$(printf 'metal\tmetal\ttrue\npython\tpython\ttrue\nclients\t1')" ]; then
    pass lsp-nvim-readme
  else
    fail lsp-nvim-readme "got: $got $(head -c 300 "$tmp/nvim.log")"
  fi
fi
exit $((failures > 0))
