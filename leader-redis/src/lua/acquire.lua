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
--         {0, leader, fence, acquired_us, expires_us} when another owner holds it.
--
-- Hash fields: owner, leader, fence, acq and exp (reported times, on the clock the
-- caller chose), sacq (acquisition time on the server's clock, for the minimum lease).
-- Numbers are written with %.0f: Lua's tostring would print 1.7e+15.
local function fmt(n)
  return string.format('%.0f', n)
end

local time = redis.call('TIME')
local server_us = tonumber(time[1]) * 1000000 + tonumber(time[2])
local now_us = server_us
if ARGV[5] ~= '1' then
  now_us = tonumber(ARGV[4])
end
local lease_ms = tonumber(ARGV[3])
local expires_us = now_us + lease_ms * 1000

-- The key only exists while the lease runs: PX removes it on expiry.
if redis.call('EXISTS', KEYS[1]) == 1 then
  local cur = redis.call('HMGET', KEYS[1], 'owner', 'leader', 'fence', 'acq', 'exp')
  if cur[1] ~= ARGV[1] then
    return {0, cur[2], cur[3], cur[4], cur[5]}
  end
  redis.call('HSET', KEYS[1], 'exp', fmt(expires_us))
  redis.call('PEXPIRE', KEYS[1], lease_ms)
  return {1, cur[3], cur[4], fmt(expires_us), cur[2]}
end

-- A new owner: the next fencing token. A missing counter (a new lock, or data lost in a
-- restart) is seeded from the server's clock in microseconds, so tokens keep growing as
-- long as fewer than one acquisition per microsecond happened since the last seeding.
local fence
if redis.call('EXISTS', KEYS[2]) == 1 then
  fence = redis.call('INCR', KEYS[2])
else
  fence = server_us
  redis.call('SET', KEYS[2], fmt(fence))
end

redis.call('HSET', KEYS[1],
  'owner', ARGV[1], 'leader', ARGV[2], 'fence', fmt(fence),
  'acq', fmt(now_us), 'exp', fmt(expires_us), 'sacq', fmt(server_us))
redis.call('PEXPIRE', KEYS[1], lease_ms)
return {1, fmt(fence), fmt(now_us), fmt(expires_us), ARGV[2]}
