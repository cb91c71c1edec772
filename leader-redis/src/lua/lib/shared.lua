-- A read/write lock's record: shared by the shared_*.lua scripts (scripts.rs puts it
-- before each). The rules are leader_core's SharedRecord, step for step.
--
-- The record is a string (KEYS[1], {prefix}:rw{name}) holding a JSON object, with a PX
-- expiry at the latest server-clock expiry of its holds and intent, so it exists exactly
-- while one of them runs; the fencing counter is apart ({prefix}:rw{name}:fence, never
-- expires), as the exclusive lock's is.
--   w  the writer, r the readers in the order they came (an array), i a waiting writer's
--      intent, m true once a caller that waits for a release notification found the lock
--      held (a release that frees a hold publishes only then, and clears it)
--   a hold: o the owner token (hex), n the node id, t the fencing token, a and e the
--      reported acquisition and expiry (microseconds since the epoch, on the clock the
--      caller chose), sa and se the same on the server's clock (se decides expiry), x true
--      once released and kept for its minimum lease
--   an intent: o, n, e (reported) and se (the server's)
-- Numbers are decimal strings: cjson writes numbers with 14 significant digits, too few
-- for microseconds since the epoch. A value in another shape (or a key of another type)
-- is never written over: the scripts answer {-1, 'corrupt', what}.
local format, find = string.format, string.find

-- The server's clock in microseconds.
local function shared_now()
  local time = redis.call('TIME')
  return tonumber(time[1]) * 1000000 + tonumber(time[2])
end

-- A decimal of at most `most` digits.
local function shared_digits(s, most)
  return type(s) == 'string' and #s >= 1 and #s <= most and find(s, '^%d+$') ~= nil
end

local function shared_hold_ok(h)
  return type(h) == 'table' and type(h.o) == 'string' and type(h.n) == 'string'
    and shared_digits(h.t, 16) and tonumber(h.t) < 9007199254740992
    and shared_digits(h.a, 19) and shared_digits(h.e, 19)
    and shared_digits(h.sa, 19) and shared_digits(h.se, 19)
    and (h.x == nil or h.x == true)
end

-- The record at `key` ({r = {}} when there is none), or nil and the reply that reports
-- it corrupted.
local function shared_load(key)
  local raw = redis.pcall('GET', key)
  if type(raw) == 'table' then
    return nil, {-1, 'corrupt', 'the key holds a ' .. redis.call('TYPE', key)['ok'] .. ', not a string'}
  end
  if not raw then
    return {r = {}}
  end
  local ok, rec = pcall(cjson.decode, raw)
  if not ok or type(rec) ~= 'table' then
    return nil, {-1, 'corrupt', 'the value is not a JSON object'}
  end
  if rec.w ~= nil and not shared_hold_ok(rec.w) then
    return nil, {-1, 'corrupt', 'the writer is unreadable'}
  end
  if rec.r == nil then
    rec.r = {}
  elseif type(rec.r) ~= 'table' then
    return nil, {-1, 'corrupt', 'the readers are not a list'}
  else
    local count = 0
    for _, reader in pairs(rec.r) do
      count = count + 1
      if not shared_hold_ok(reader) then
        return nil, {-1, 'corrupt', 'a reader is unreadable'}
      end
    end
    if count ~= #rec.r then
      return nil, {-1, 'corrupt', 'the readers are not a list'}
    end
  end
  local i = rec.i
  if i ~= nil and not (type(i) == 'table' and type(i.o) == 'string' and type(i.n) == 'string'
      and shared_digits(i.e, 19) and shared_digits(i.se, 19)) then
    return nil, {-1, 'corrupt', 'the intent is unreadable'}
  end
  if rec.m ~= nil and rec.m ~= true then
    return nil, {-1, 'corrupt', 'the waiter mark is unreadable'}
  end
  return rec
end

-- Drops the holds and the intent that ran out by `now` (server microseconds).
local function shared_prune(rec, now)
  if rec.w and tonumber(rec.w.se) <= now then
    rec.w = nil
  end
  local live = {}
  for _, reader in ipairs(rec.r) do
    if tonumber(reader.se) > now then
      live[#live + 1] = reader
    end
  end
  rec.r = live
  if rec.i and tonumber(rec.i.se) <= now then
    rec.i = nil
  end
end

-- Whether nobody holds the lock and no writer waits (as of the last prune).
local function shared_free(rec)
  return not rec.w and #rec.r == 0 and not rec.i
end

-- Writes `rec` back with its key's expiry at its latest hold or intent, or deletes the
-- key when nothing in it runs any more (the counter stays).
local function shared_save(key, rec, now)
  local last = 0
  if rec.w then
    last = tonumber(rec.w.se)
  end
  for _, reader in ipairs(rec.r) do
    last = math.max(last, tonumber(reader.se))
  end
  if rec.i then
    last = math.max(last, tonumber(rec.i.se))
  end
  if last <= now then
    redis.call('DEL', key)
    return
  end
  local readers = rec.r
  if #readers == 0 then
    -- cjson writes an empty table as an object: leave it out.
    rec.r = nil
  end
  local ms = math.ceil((last - now) / 1000)
  redis.call('SET', key, cjson.encode(rec), 'PX', format('%d', ms))
  rec.r = readers
end

-- The lock as a reply: the writer ({} or {node, token, acquired, expires}), the readers
-- (a list of the same) and the intent ({} or {node, expires}).
local function shared_view(rec)
  local writer, readers, intent = {}, {}, {}
  if rec.w then
    writer = {rec.w.n, rec.w.t, rec.w.a, rec.w.e}
  end
  for k, reader in ipairs(rec.r) do
    readers[k] = {reader.n, reader.t, reader.a, reader.e}
  end
  if rec.i then
    intent = {rec.i.n, rec.i.e}
  end
  return writer, readers, intent
end
