-- Free a lock whoever holds it (the operator's force release), or only while its holder
-- has a given fencing token (the conditional force release): the check and the release
-- in one script, so a holder that took over since the operator looked is never freed.
--
-- KEYS[1]  the lock hash
-- ARGV[1]  the channel to announce a release on
-- ARGV[2]  the lock name; the message published is it, a newline and the freed holder's
--          fencing token
-- ARGV[3]  the fencing token the holder must have (a decimal), or '' for any holder
-- ARGV[4]  the caller's clock, microseconds since the Unix epoch
--
-- Returns {1, leader, fence, acquired_us, expires_us} when the lock was held and is freed
--         (and the release published, as release.lua does, so waiters wake),
--         {2, leader, fence, acquired_us, expires_us} when it is held with another token
--         than ARGV[3] (nothing changed),
--         {0} when nobody holds it (no hash, or a hash without an owner),
--         {-1, field} when the record is corrupted ('expiry' for a key without one whose
--         own end `exp` has passed on the caller's clock); such a record is left alone, as
--         every other script leaves it.
--
-- A record without key expiry whose `exp` is still ahead on the caller's clock is a
-- holder, as acquire.lua and every read have it (`holds_without_expiry` in
-- ops/state.rs), and is freed like any other.
--
-- A lock kept for its minimum lease after a release (`owner` = 'released') is a holder
-- too. The fence counter is never touched: tokens keep going up. Every field the client
-- decodes is checked here first, so a record is never deleted and then reported corrupted.
local I64_MAX = '9223372036854775807'

-- A decimal that the client reads as a non-negative i64.
local function decimal(s)
  if not s or not string.find(s, '^%d+$') then
    return false
  end
  return #s < 19 or (#s == 19 and s <= I64_MAX)
end

-- utf8(s), the check that a string is well-formed UTF-8, is lua/lib/utf8.lua, which
-- scripts.rs puts before this script.

local cur = redis.call('HMGET', KEYS[1], 'owner', 'leader', 'fence', 'acq', 'exp')
if not cur[1] then
  return {0}
end
if redis.call('PTTL', KEYS[1]) == -1 then
  if not decimal(cur[5]) or tonumber(cur[5]) <= tonumber(ARGV[4]) then
    return {-1, 'expiry'}
  end
end
if not cur[2] or not utf8(cur[2]) then
  return {-1, 'leader'}
end
if not decimal(cur[3]) then
  return {-1, 'fence'}
end
if not decimal(cur[4]) then
  return {-1, 'acq'}
end
if not decimal(cur[5]) then
  return {-1, 'exp'}
end

-- Tokens compared as decimals without leading zeros: a Lua number would round them.
local function canonical(s)
  return (string.gsub(s, '^0+(%d)', '%1'))
end
if ARGV[3] ~= '' and canonical(cur[3]) ~= canonical(ARGV[3]) then
  return {2, cur[2], cur[3], cur[4], cur[5]}
end

redis.call('DEL', KEYS[1])
-- The message names the lock and the token of the lease that ended.
redis.call('PUBLISH', ARGV[1], ARGV[2] .. '\n' .. canonical(cur[3]))
return {1, cur[2], cur[3], cur[4], cur[5]}
