-- Shared by the scripts that check a text field: scripts.rs puts this file before each
-- of them (a script cannot load another), so it is written once.

-- Well-formed UTF-8, as Rust's str::from_utf8 accepts it.
local function utf8(s)
  local i, n = 1, #s
  while i <= n do
    local c = string.byte(s, i)
    local len, lo, hi = 1, 0x80, 0xBF
    if c < 0x80 then
      len = 1
    elseif c >= 0xC2 and c <= 0xDF then
      len = 2
    elseif c >= 0xE0 and c <= 0xEF then
      len = 3
      if c == 0xE0 then lo = 0xA0 elseif c == 0xED then hi = 0x9F end
    elseif c >= 0xF0 and c <= 0xF4 then
      len = 4
      if c == 0xF0 then lo = 0x90 elseif c == 0xF4 then hi = 0x8F end
    else
      return false
    end
    for j = i + 1, i + len - 1 do
      local d = string.byte(s, j)
      if not d or d < lo or d > hi then
        return false
      end
      lo, hi = 0x80, 0xBF
    end
    i = i + len
  end
  return true
end
