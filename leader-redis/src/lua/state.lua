-- Read a lock's holder and remaining time, atomically.
--
-- KEYS[1]  the lock hash
-- ARGV[1]  '1' when the caller waits for a release notification of this lock (an
--          observer): the holder's record is then marked with `w`, so that its release
--          publishes (see release.lua)
--
-- Returns {pttl, owner, leader, fence, acquired_us, expires_us}; pttl is -2 when there
-- is no lock (the fields are then nil) and -1 when the key has no expiry (corrupted).
local cur = redis.call('HMGET', KEYS[1], 'owner', 'leader', 'fence', 'acq', 'exp', 'w')
local pttl = redis.call('PTTL', KEYS[1])
if ARGV[1] == '1' and pttl > 0 and cur[1] and not cur[6] then
  redis.call('HSET', KEYS[1], 'w', '1')
end
return {pttl, cur[1], cur[2], cur[3], cur[4], cur[5]}
