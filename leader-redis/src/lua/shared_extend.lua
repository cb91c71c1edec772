-- Renew a hold of a read/write lock in a role: SharedRecord::extend on the record
-- (lib/shared.lua, put before this script).
--
-- KEYS[1]  the record ({prefix}:rw{name})
-- ARGV     the client's clock (microseconds since the epoch), the owner token, the lease
--          in milliseconds (>= 1), '1' to report the expiry on the server's TIME, 'read'
--          or 'write'
--
-- Returns the new reported expiry in microseconds when renewed, 0 when the caller holds
-- nothing in that role (a released hold kept for its minimum lease included), or
-- {-1, 'corrupt', what} for a record this library did not write.
local key = KEYS[1]
local rec, failed = shared_load(key)
if not rec then
  return failed
end
if shared_free(rec) then
  return 0
end
local now = shared_now()
shared_prune(rec, now)
local owner, lease_ms = ARGV[2], tonumber(ARGV[3])
local hold
if ARGV[5] == 'read' then
  for _, reader in ipairs(rec.r) do
    if reader.o == owner and not reader.x then
      hold = reader
      break
    end
  end
elseif rec.w and rec.w.o == owner and not rec.w.x then
  hold = rec.w
end
if not hold then
  return 0
end
local reported = tonumber(ARGV[1])
if ARGV[4] == '1' then
  reported = now
end
hold.e = format('%d', reported + lease_ms * 1000)
hold.se = format('%d', now + lease_ms * 1000)
shared_save(key, rec, now)
return hold.e
