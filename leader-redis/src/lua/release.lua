-- Release a lock the caller owns, or shorten it to end at acquired + min lease.
--
-- KEYS[1]  the lock hash
-- ARGV[1]  owner token
-- ARGV[2]  minimum lease in milliseconds (0 = none)
-- ARGV[3]  the channel to announce a release on
-- ARGV[4]  the lock name (the message)
--
-- Returns {1} when the lock was freed (and the release published),
--         {2} when it is kept until acquired + min lease,
--         {0} when the caller does not hold the lock,
--         {-1, field} when the record is corrupted.
--
-- The minimum lease is counted from `sacq`, the acquisition time on the server's clock,
-- and compared with the server's TIME: the client's clock (which `acq` may come from)
-- never decides how long the key lives. A lock kept for the minimum lease is no longer
-- its owner's: `owner` becomes 'released', so a renewal that was still on its way cannot
-- stretch it, and the owner cannot re-acquire it.
local min_ms = tonumber(ARGV[2])
if min_ms > 0 then
  local cur = redis.call('HMGET', KEYS[1], 'owner', 'sacq', 'acq', 'exp')
  if cur[1] ~= ARGV[1] then
    return {0}
  end
  local sacq = tonumber(cur[2])
  if not sacq then
    return {-1, 'sacq'}
  end
  local acq = tonumber(cur[3])
  if not acq then
    return {-1, 'acq'}
  end
  local exp = tonumber(cur[4])
  if not exp then
    return {-1, 'exp'}
  end
  local time = redis.call('TIME')
  local server_us = tonumber(time[1]) * 1000000 + tonumber(time[2])
  local keep_ms = math.ceil((sacq + min_ms * 1000 - server_us) / 1000)
  if keep_ms > 0 then
    local pttl = redis.call('PTTL', KEYS[1])
    if pttl < 0 or keep_ms < pttl then
      redis.call('PEXPIRE', KEYS[1], keep_ms)
    end
    local until_us = acq + min_ms * 1000
    if until_us < exp then
      redis.call('HSET', KEYS[1], 'owner', 'released', 'exp', string.format('%.0f', until_us))
    else
      redis.call('HSET', KEYS[1], 'owner', 'released')
    end
    return {2}
  end
elseif redis.call('HGET', KEYS[1], 'owner') ~= ARGV[1] then
  return {0}
end

redis.call('DEL', KEYS[1])
redis.call('PUBLISH', ARGV[3], ARGV[4])
return {1}
