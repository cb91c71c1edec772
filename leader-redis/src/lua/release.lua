-- Release locks the caller owns, or shorten each to end at acquired + min lease: one
-- lease, or a tenant poller's batch of many.
--
-- KEYS[i]     lease i's lock hash
-- ARGV[1]     the channel to announce a release on
-- ARGV[3i-1]  lease i's owner token
-- ARGV[3i]    lease i's minimum lease in milliseconds (0 = none)
-- ARGV[3i+1]  the message announcing lease i's release: its lock name, a newline, its
--             fencing token
--
-- Returns one item per lease, in order:
--   1 when the lock was freed (and the release published, when a waiting caller found
--     the lease held: acquire.lua marks the record with `w` then, and state.lua for an
--     observer; a release nobody waits for saves the PUBLISH),
--   2 when it is kept until acquired + min lease,
--   0 when the caller does not hold the lock,
--   {-1, field} when the record is corrupted,
--   {-1, 'error', message} when a command on its key failed (another type of value
--     there): one lease's trouble is its own, not the batch's.
--
-- The minimum lease is counted from `sacq`, the acquisition time on the server's clock,
-- and compared with the server's TIME: the client's clock (which `acq` may come from)
-- never decides how long the key lives. A lock kept for the minimum lease is no longer
-- its owner's: `owner` becomes 'released', so a renewal that was still on its way cannot
-- stretch it, and the owner cannot re-acquire it.
local channel = ARGV[1]

-- One TIME per script run, and only when a minimum lease needs it.
local server_time
local function server_us()
  if not server_time then
    local time = redis.call('TIME')
    server_time = tonumber(time[1]) * 1000000 + tonumber(time[2])
  end
  return server_time
end

local function release(lock, owner, min_ms, message)
  local watched
  if min_ms > 0 then
    local cur = redis.pcall('HMGET', lock, 'owner', 'sacq', 'acq', 'exp', 'w')
    if cur.err then
      return {-1, 'error', cur.err}
    end
    if cur[1] ~= owner then
      return 0
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
    local keep_ms = math.ceil((sacq + min_ms * 1000 - server_us()) / 1000)
    if keep_ms > 0 then
      local pttl = redis.call('PTTL', lock)
      if pttl < 0 or keep_ms < pttl then
        redis.call('PEXPIRE', lock, keep_ms)
      end
      local until_us = acq + min_ms * 1000
      if until_us < exp then
        redis.call('HSET', lock, 'owner', 'released', 'exp', string.format('%d', until_us))
      else
        redis.call('HSET', lock, 'owner', 'released')
      end
      return 2
    end
    watched = cur[5]
  else
    local cur = redis.pcall('HMGET', lock, 'owner', 'w')
    if cur.err then
      return {-1, 'error', cur.err}
    end
    if cur[1] ~= owner then
      return 0
    end
    watched = cur[2]
  end

  redis.call('DEL', lock)
  if watched then
    redis.call('PUBLISH', channel, message)
  end
  return 1
end

local answers = {}
for i = 1, #KEYS do
  answers[i] = release(KEYS[i], ARGV[3 * i - 1], tonumber(ARGV[3 * i]), ARGV[3 * i + 1])
end
return answers
