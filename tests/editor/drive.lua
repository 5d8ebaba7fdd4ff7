-- Drives a real Neovim through an occlint session: open, diagnostics, code action, save.
-- Loaded after the README's set-up snippet; writes what it saw as JSON to $OCCLINT_NVIM_OUT.
local out = { steps = {} }
local raw = {}                                  -- the server's own LSP diagnostics, by URI

local publish = vim.lsp.handlers["textDocument/publishDiagnostics"]
vim.lsp.handlers["textDocument/publishDiagnostics"] = function(err, result, ctx, config)
  raw[result.uri] = result.diagnostics
  return publish(err, result, ctx, config)
end

local function finish()
  local fh = io.open(os.getenv("OCCLINT_NVIM_OUT"), "w")
  fh:write(vim.fn.json_encode(out))
  fh:close()
  vim.cmd("qa!")
end

local function step(name, ok)
  table.insert(out.steps, name)
  if not ok then
    out.failed = name
    finish()
  end
end

local ok, err = pcall(function()
  vim.cmd("edit " .. vim.fn.fnameescape(os.getenv("OCCLINT_NVIM_FILE")))
  local buf = vim.api.nvim_get_current_buf()
  local uri = vim.uri_from_bufnr(buf)
  out.filetype = vim.bo[buf].filetype
  step("diagnostics", vim.wait(120000, function() return raw[uri] ~= nil and #raw[uri] > 0 end, 50))
  out.diagnostics = {}
  for _, d in ipairs(vim.diagnostic.get(buf)) do
    table.insert(out.diagnostics, { lnum = d.lnum + 1, col = d.col + 1, source = d.source,
                                    code = d.code or (d.user_data and d.user_data.lsp and d.user_data.lsp.code),
                                    message = d.message })
  end
  local clients = (vim.lsp.get_clients or vim.lsp.get_active_clients)({ bufnr = buf })  -- 0.10+ or older
  out.clients = {}
  for _, c in ipairs(clients) do table.insert(out.clients, c.name) end

  local target = raw[uri][1]
  local params = { textDocument = { uri = uri }, range = target.range,
                   context = { diagnostics = { target } } }
  local replies = vim.lsp.buf_request_sync(buf, "textDocument/codeAction", params, 60000) or {}
  local chosen, encoding
  out.actions = {}
  for id, reply in pairs(replies) do
    for _, action in ipairs(reply.result or {}) do
      table.insert(out.actions, action.title)
      -- the finding's own fix (OCC031's round-up is unsafe: not `isPreferred`), not the noqa one
      if chosen == nil and not action.title:find("noqa", 1, true) then
        chosen = action
        encoding = vim.lsp.get_client_by_id(id).offset_encoding
      end
    end
  end
  step("code action", chosen ~= nil)
  vim.lsp.util.apply_workspace_edit(chosen.edit, encoding)
  out.after_fix = vim.api.nvim_buf_get_lines(buf, 0, -1, false)

  raw[uri] = nil
  vim.cmd("write")
  step("save", vim.wait(120000, function() return raw[uri] ~= nil and #raw[uri] == 0 end, 50))
  out.saved = vim.fn.readfile(vim.api.nvim_buf_get_name(buf))
end)
if not ok then out.error = tostring(err) end
finish()
