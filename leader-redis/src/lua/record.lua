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

-- utf8(s), the check that a string is well-formed UTF-8, is lua/lib/utf8.lua, which
-- scripts.rs puts before this script.

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
