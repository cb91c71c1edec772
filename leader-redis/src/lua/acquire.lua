-- Acquire a lock, or one slot of a leader group (a single lock is a group of one slot);
-- renew the one the caller already owns.
--
-- KEYS[2i-1]  slot i's lock hash      {prefix}:{name} for slot 0, {prefix}:{name}#<n> after
-- KEYS[2i]    slot i's fence counter  <its lock hash>:fence   (never expires)
--             the slots in the order they are tried; a group's keys share one hash tag
-- ARGV[1]  owner token (32 hex digits)
-- ARGV[2]  leader id
-- ARGV[3]  lease in milliseconds (>= 1)
-- ARGV[4]  the client's clock, microseconds since the Unix epoch
-- ARGV[5]  '1' to take timestamps from the server's TIME instead of ARGV[4]
--
-- Returns {1, fence, acquired_us, expires_us, leader, i} when the caller holds slot i
--           (1-based, in KEYS order),
--         {0, leader, fence, acquired_us, expires_us} when every slot is held by another
--           owner (the first held slot's holder),
--         {-1, 'expiry', i} when every slot is held and slot i's record has no expiry
--           (corrupted: it would never be freed, so it is reported rather than treated
--           as a holder).
--
-- The caller's own slot wins over a free one: a retried attempt whose first answer was
-- lost renews what that attempt took instead of taking a second slot.
--
-- Hash fields: owner, leader, fence, acq and exp (reported times, on the clock the
-- caller chose), sacq (acquisition time on the server's clock, for the minimum lease).
-- Numbers are written with %.0f: Lua's tostring would print 1.7e+15.
local function fmt(n)
  return string.format('%.0f', n)
end

local function server_us()
  local time = redis.call('TIME')
  return tonumber(time[1]) * 1000000 + tonumber(time[2])
end

local lease_ms = tonumber(ARGV[3])
local slots = #KEYS / 2

-- The hash only exists while a lease runs: PX removes it on expiry. A hash without an
-- owner holds nothing. One HMGET a slot reads all an answer needs (a single lock that
-- is held costs it and a PTTL, nothing more).
local free, held
for i = 1, slots do
  local lock = KEYS[2 * i - 1]
  local cur = redis.call('HMGET', lock, 'owner', 'leader', 'fence', 'acq', 'exp')
  if cur[1] == ARGV[1] then
    local now_us = tonumber(ARGV[4])
    if ARGV[5] == '1' then
      now_us = server_us()
    end
    local expires_us = fmt(now_us + lease_ms * 1000)
    redis.call('HSET', lock, 'exp', expires_us)
    redis.call('PEXPIRE', lock, lease_ms)
    return {1, cur[3], cur[4], expires_us, cur[2], i}
  elseif not cur[1] then
    free = free or i
  else
    held = held or cur
  end
end

if not free then
  for i = 1, slots do
    if redis.call('PTTL', KEYS[2 * i - 1]) == -1 then
      return {-1, 'expiry', i}
    end
  end
  return {0, held[2], held[3], held[4], held[5]}
end

-- A new owner: the next fencing token, never below the server's clock in microseconds:
-- max(counter + 1, TIME). The counter can be behind (Redis restarted on an older RDB or
-- AOF, a replica promoted before it caught up) or missing (deleted, never written); the
-- clock has moved on since every token handed out before, so tokens never repeat or go
-- back as long as the server's clock does not, and a lock averages fewer than one
-- acquisition per microsecond (each acquisition is a script run of several microseconds).
local lock, counter = KEYS[2 * free - 1], KEYS[2 * free]
local server_now = server_us()
local now_us = server_now
if ARGV[5] ~= '1' then
  now_us = tonumber(ARGV[4])
end
local fence = redis.call('INCR', counter)
if fence < server_now then
  fence = server_now
  redis.call('SET', counter, fmt(fence))
end

local fence_s, now_s, expires_s = fmt(fence), fmt(now_us), fmt(now_us + lease_ms * 1000)
redis.call('HSET', lock,
  'owner', ARGV[1], 'leader', ARGV[2], 'fence', fence_s,
  'acq', now_s, 'exp', expires_s, 'sacq', fmt(server_now))
redis.call('PEXPIRE', lock, lease_ms)
return {1, fence_s, now_s, expires_s, ARGV[2], free}
