-- Renew leases the caller still owns: one lease, or a renewal driver's batch of many.
--
-- KEYS[i]     lease i's lock hash
-- ARGV[1]     the client's clock, microseconds since the Unix epoch
-- ARGV[3i-1]  lease i's owner token
-- ARGV[3i]    lease i's new lease in milliseconds (>= 1)
-- ARGV[3i+1]  '1' to take lease i's time from the server's TIME instead of ARGV[1]
--
-- Returns one item per lease, in order: its new expiry in microseconds when renewed, 0
-- when the caller does not hold it, or {-1, message} when a command on its key failed
-- (another type of value at the key): one lease's trouble is its own, not the batch's.
local client_us = tonumber(ARGV[1])
local server_us
local answers = {}
for i = 1, #KEYS do
  local key, owner, ms = KEYS[i], ARGV[3 * i - 1], ARGV[3 * i]
  local current = redis.pcall('HGET', key, 'owner')
  if type(current) == 'table' and current.err then
    answers[i] = {-1, current.err}
  elseif current ~= owner then
    answers[i] = 0
  else
    local now_us = client_us
    if ARGV[3 * i + 1] == '1' then
      if not server_us then
        local time = redis.call('TIME')
        server_us = tonumber(time[1]) * 1000000 + tonumber(time[2])
      end
      now_us = server_us
    end
    local expires_us = string.format('%d', now_us + tonumber(ms) * 1000)
    redis.call('HSET', key, 'exp', expires_us)
    redis.call('PEXPIRE', key, ms)
    answers[i] = expires_us
  end
end
return answers
