-- Acquire (or renew) a read/write lock in a role: the rules of leader_core's
-- SharedRecord::acquire on the record (lib/shared.lua, put before this script).
--
-- KEYS[1]  the record ({prefix}:rw{name}), KEYS[2] its fencing counter (never expires)
-- ARGV     the client's clock (microseconds since the epoch), the owner token, the node
--          id, the lease in milliseconds (>= 1), '1' to report times on the server's
--          TIME instead of the client's clock, '1' when the caller waits for a release
--          notification (a refusal then marks the record), 'read' or 'write', and the
--          most readers the lock may have with a new one
--
-- Returns {1, token, acquired_us, expires_us, node} when the caller holds the lock in
--         its role (granted, or renewed with its token kept),
--         {0, writer, readers, intent} when refused (see shared_view),
--         {2, writer, readers, intent} when a writer's intent is recorded or renewed,
--         {-1, 'corrupt', what} for a record this library did not write (left as it is),
--         {-1, 'error', message} when the counter cannot be used (nothing written).
--
-- A new grant's token is max(counter + 1, TIME in microseconds), as the exclusive
-- acquire's: tokens keep growing after the counter is lost. Taking a free lock costs
-- four redis.call()s (GET, TIME, SET .. GET of the counter, SET of the record).
local key, counter = KEYS[1], KEYS[2]
local rec, failed = shared_load(key)
if not rec then
  return failed
end
local now = shared_now()
local owner, node, lease_ms = ARGV[2], ARGV[3], tonumber(ARGV[4])
local reported = tonumber(ARGV[1])
if ARGV[5] == '1' then
  reported = now
end
local expires_s = format('%d', now + lease_ms * 1000)
local reported_expires = format('%d', reported + lease_ms * 1000)
shared_prune(rec, now)
local other_intent = rec.i ~= nil and rec.i.o ~= owner

local function granted(hold)
  return {1, hold.t, hold.a, hold.e, hold.n}
end

local function renewed(hold)
  hold.e, hold.se = reported_expires, expires_s
  shared_save(key, rec, now)
  return granted(hold)
end

-- Held (0) or queued (2); `changed` when the record was written to.
local function refused(status, changed)
  if ARGV[6] == '1' and not rec.m then
    rec.m, changed = true, true
  end
  if changed then
    shared_save(key, rec, now)
  end
  return {status, shared_view(rec)}
end

-- A new hold with the next token, or nil and the error reply.
local function grant()
  local last = redis.pcall('SET', counter, format('%d', now), 'GET')
  if type(last) == 'table' then
    return nil, {-1, 'error', last.err}
  end
  local token = now
  if last then
    local seen = tonumber(last)
    if not seen or #last > 16 or seen >= 9007199254740992 or not find(last, '^%d+$') then
      -- Not a token: put it back as it was and report it, never paper over it.
      redis.call('SET', counter, last)
      return nil, {-1, 'error', 'the fencing counter ' .. counter .. ' holds a value that is not a token'}
    end
    if seen >= now then
      token = seen + 1
      redis.call('SET', counter, format('%d', token))
    end
  end
  return {o = owner, n = node, t = format('%d', token), a = format('%d', reported),
    e = reported_expires, sa = format('%d', now), se = expires_s}
end

if ARGV[7] == 'read' then
  -- A reader's retried request (its answer lost) renews what it holds, even behind a
  -- waiting writer: it is not a new reader.
  for _, reader in ipairs(rec.r) do
    if reader.o == owner and not reader.x then
      return renewed(reader)
    end
  end
  if rec.w or other_intent or #rec.r >= tonumber(ARGV[8]) then
    return refused(0, false)
  end
  local hold, failure = grant()
  if not hold then
    return failure
  end
  rec.r[#rec.r + 1] = hold
  shared_save(key, rec, now)
  return granted(hold)
end

if rec.w then
  if rec.w.o ~= owner or rec.w.x then
    return refused(0, false)
  end
  return renewed(rec.w)
end
if other_intent then
  return refused(0, false)
end
if #rec.r > 0 then
  rec.i = {o = owner, n = node, e = reported_expires, se = expires_s}
  return refused(2, true)
end
local hold, failure = grant()
if not hold then
  return failure
end
rec.i, rec.w = nil, hold
shared_save(key, rec, now)
return granted(hold)
