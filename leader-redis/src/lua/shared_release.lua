-- End a hold of a read/write lock in a role (a writer's: or its intent), keeping a hold
-- until acquired + the minimum lease: SharedRecord::release on the record
-- (lib/shared.lua, put before this script).
--
-- KEYS[1]  the record ({prefix}:rw{name})
-- ARGV     the channel to announce a release on, the owner token, the minimum lease in
--          milliseconds (0 = none), 'read' or 'write', and the message announcing the
--          release (the lock name, a newline, the fencing token)
--
-- Returns 1 when the hold (or intent) is gone, and the release published when a waiting
--         caller marked the record (acquire and state mark it; a release nobody waits for
--         saves the PUBLISH), 2 when the hold is kept until acquired + minimum lease (no
--         longer its owner's to renew or release), 0 when the caller holds nothing in
--         that role, {-1, 'corrupt', what} for a record this library did not write.
--
-- The minimum lease is counted from `sa` and compared with TIME, both the server's
-- clock, as the exclusive release counts it from `sacq`.
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
local owner, min_ms = ARGV[2], tonumber(ARGV[3])

-- Keeps `hold` until acquired + the minimum lease, marked released; false when that is
-- not after now (the hold goes).
local function kept(hold)
  if min_ms <= 0 then
    return false
  end
  local keep_until = tonumber(hold.sa) + min_ms * 1000
  if keep_until <= now then
    return false
  end
  if keep_until < tonumber(hold.se) then
    hold.se = format('%d', keep_until)
  end
  local reported_until = tonumber(hold.a) + min_ms * 1000
  if reported_until < tonumber(hold.e) then
    hold.e = format('%d', reported_until)
  end
  hold.x = true
  return true
end

local status
if ARGV[4] == 'read' then
  local at
  for k, reader in ipairs(rec.r) do
    if reader.o == owner and not reader.x then
      at = k
      break
    end
  end
  if not at then
    return 0
  end
  if kept(rec.r[at]) then
    status = 2
  else
    table.remove(rec.r, at)
    status = 1
  end
elseif rec.w and rec.w.o == owner and not rec.w.x then
  if kept(rec.w) then
    status = 2
  else
    rec.w = nil
    status = 1
  end
elseif rec.i and rec.i.o == owner then
  rec.i = nil
  status = 1
else
  return 0
end

local watched = status == 1 and rec.m
if watched then
  rec.m = nil
end
shared_save(key, rec, now)
if watched then
  redis.call('PUBLISH', ARGV[1], ARGV[5])
end
return status
