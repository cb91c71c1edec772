-- Acquire a lock, or renew it when the caller already owns it.
--
-- KEYS[1]  the lock hash      {prefix}:{name}
-- KEYS[2]  the fence counter  {prefix}:{name}:fence   (never expires)
-- ARGV[1]  owner token (32 hex digits)
-- ARGV[2]  leader id
-- ARGV[3]  lease in milliseconds (>= 1)
-- ARGV[4]  the client's clock, microseconds since the Unix epoch
-- ARGV[5]  '1' to take timestamps from the server's TIME instead of ARGV[4]
--
-- Returns {1, fence, acquired_us, expires_us, leader} when the caller holds the lock,
--         {0, leader, fence, acquired_us, expires_us} when another owner holds it,
--         {-1, 'expiry'} when another owner's record has no expiry (corrupted: it would
--         never be freed, so it is reported rather than treated as a holder).
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

-- The hash only exists while a lease runs: PX removes it on expiry.
local cur = redis.call('HMGET', KEYS[1], 'owner', 'leader', 'fence', 'acq', 'exp')
if cur[1] then
  if cur[1] ~= ARGV[1] then
    if redis.call('PTTL', KEYS[1]) == -1 then
      return {-1, 'expiry'}
    end
    return {0, cur[2], cur[3], cur[4], cur[5]}
  end
  local now_us = tonumber(ARGV[4])
  if ARGV[5] == '1' then
    now_us = server_us()
  end
  local expires_us = fmt(now_us + lease_ms * 1000)
  redis.call('HSET', KEYS[1], 'exp', expires_us)
  redis.call('PEXPIRE', KEYS[1], lease_ms)
  return {1, cur[3], cur[4], expires_us, cur[2]}
end

-- A new owner: the next fencing token, never below the server's clock in microseconds:
-- max(counter + 1, TIME). The counter can be behind (Redis restarted on an older RDB or
-- AOF, a replica promoted before it caught up) or missing (deleted, never written); the
-- clock has moved on since every token handed out before, so tokens never repeat or go
-- back as long as the server's clock does not, and a lock averages fewer than one
-- acquisition per microsecond (each acquisition is a script run of several microseconds).
local server_now = server_us()
local now_us = server_now
if ARGV[5] ~= '1' then
  now_us = tonumber(ARGV[4])
end
local fence = redis.call('INCR', KEYS[2])
if fence < server_now then
  fence = server_now
  redis.call('SET', KEYS[2], fmt(fence))
end

local fence_s, now_s, expires_s = fmt(fence), fmt(now_us), fmt(now_us + lease_ms * 1000)
redis.call('HSET', KEYS[1],
  'owner', ARGV[1], 'leader', ARGV[2], 'fence', fence_s,
  'acq', now_s, 'exp', expires_s, 'sacq', fmt(server_now))
redis.call('PEXPIRE', KEYS[1], lease_ms)
return {1, fence_s, now_s, expires_s, ARGV[2]}
