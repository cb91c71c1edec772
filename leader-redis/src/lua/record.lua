-- A record (the scheduler's compare-and-set register): read it, or write it only while
-- its version is the one expected, in one script so that nothing runs in between.
--
-- KEYS[1]  the record hash (fields `version`, a positive decimal, and `value`, UTF-8)
-- ARGV     none to read; to write: the version expected (a decimal, or '' for no
--          record), the version the write gives (the expected one plus one), the value
--
-- Returns, to a read: {0} when there is no record, {1, version, value} otherwise;
--         to a write: {1} when written, {0} when there is no record and one was expected,
--         {0, version, value} when the record has another version (nothing changed);
--         to both: {-1, what} when the key holds something no backend writes (another
--         type, a version that is not a positive decimal, a value that is not UTF-8),
--         which is left alone.
local I64_MAX = '9223372036854775807'

-- A positive decimal without leading zeros that the client reads as an i64.
local function version(s)
  if not s or not string.find(s, '^[1-9]%d*$') then
    return false
  end
  return #s < 19 or (#s == 19 and s <= I64_MAX)
end

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

local kind = redis.call('TYPE', KEYS[1])['ok']
local cur = nil
if kind == 'hash' then
  cur = redis.call('HMGET', KEYS[1], 'version', 'value')
  if not version(cur[1]) then
    return {-1, 'the version is not a positive integer'}
  end
  if not cur[2] or not utf8(cur[2]) then
    return {-1, 'the value is missing or not UTF-8'}
  end
elseif kind ~= 'none' then
  return {-1, 'the key holds a ' .. kind .. ', not a hash'}
end

if #ARGV == 0 then
  if cur then
    return {1, cur[1], cur[2]}
  end
  return {0}
end

if not cur then
  if ARGV[1] ~= '' then
    return {0}
  end
elseif cur[1] ~= ARGV[1] then
  return {0, cur[1], cur[2]}
end
redis.call('HSET', KEYS[1], 'version', ARGV[2], 'value', ARGV[3])
return {1}
