-- Renew a lease the caller still owns.
--
-- KEYS[1]  the lock hash
-- ARGV[1]  owner token
-- ARGV[2]  lease in milliseconds (>= 1)
-- ARGV[3]  the client's clock, microseconds since the Unix epoch
-- ARGV[4]  '1' to take the time from the server's TIME instead of ARGV[3]
--
-- Returns {1, expires_us} when renewed, {0} when the caller does not hold the lock.
if redis.call('HGET', KEYS[1], 'owner') ~= ARGV[1] then
  return {0}
end

local now_us = tonumber(ARGV[3])
if ARGV[4] == '1' then
  local time = redis.call('TIME')
  now_us = tonumber(time[1]) * 1000000 + tonumber(time[2])
end
local expires_us = string.format('%.0f', now_us + tonumber(ARGV[2]) * 1000)

redis.call('HSET', KEYS[1], 'exp', expires_us)
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return {1, expires_us}
