-- Read a lock's holder and remaining time, atomically.
--
-- KEYS[1]  the lock hash
--
-- Returns {pttl, owner, leader, fence, acquired_us, expires_us}; pttl is -2 when there
-- is no lock (the fields are then nil) and -1 when the key has no expiry (corrupted).
local cur = redis.call('HMGET', KEYS[1], 'owner', 'leader', 'fence', 'acq', 'exp')
return {redis.call('PTTL', KEYS[1]), cur[1], cur[2], cur[3], cur[4], cur[5]}
