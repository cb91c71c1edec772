-- Acquire locks, or one slot of a leader group each (a single lock is a group of one
-- slot); renew the one the caller already owns. One request, or a tenant poller's batch
-- of many (on a standalone server: a batch's keys need not share a hash tag there).
--
-- ARGV[1]        the client's clock, microseconds since the Unix epoch
-- ARGV[6r-4 ..]  request r, six values each:
--   owner token (32 hex digits), leader id, lease in milliseconds (>= 1),
--   '1' to take timestamps from the server's TIME instead of ARGV[1],
--   '1' when the caller waits for a release notification if every slot is held,
--   n, the number of its slots
-- KEYS           per request, in order, its n slots' pairs in the order they are tried:
--   the slot's lock hash ({prefix}:{name} for slot 0, {prefix}:{name}#<i> after) and its
--   fence counter (<its lock hash>:fence, never expires); then the index of the derived
--   names of the request's name ({prefix}:{name}:derived, a sorted set); a request's keys
--   share one hash tag
--
-- Returns one reply per request, in order:
--   {1, fence, acquired_us, expires_us, leader, i} when the caller holds slot i
--     (1-based, in the request's order), and {1, ..., i, j} when slot j was skipped
--     because a command on its key failed (a corrupted record, reported by the caller),
--   {0, leader, fence, acquired_us, expires_us} when every slot is held by another owner
--     (the first held slot's holder),
--   {-1, 'expiry', i} when every slot is held and slot i's record has no expiry
--     (corrupted: it would never be freed, so it is reported rather than treated as a
--     holder),
--   {-1, 'error', message} when no slot could be taken and a command on one of its keys
--     failed (another type of value there): one request's trouble is its own, not the
--     batch's, and one unusable slot of a group is skipped while another can be taken.
--
-- A derived name's lock ({prefix}:{name}#<rest>) that the caller holds when the script
-- ends, taken or renewed, is a member <rest> of the index (score 0, so members sort by
-- name): `list` reads a name's derived locks from there instead of scanning the keyspace.
-- Adding it on every renewal by acquire too (a ranked candidate's heartbeat) rebuilds an
-- index that was lost. Members whose lock is gone are removed by the listing that finds
-- them gone (see list.lua), so release, extend and force release need not know of it.
--
-- The caller's own slot wins over a free one: a retried attempt whose first answer was
-- lost renews what that attempt took instead of taking a second slot.
--
-- Hash fields: owner, leader, fence, acq and exp (reported times, on the clock the
-- caller chose), sacq (acquisition time on the server's clock, for the minimum lease),
-- and w ('1' once a caller that waits for a release notification found the lease held:
-- release.lua publishes only then, so a release nobody waits for costs no PUBLISH).
--
-- The cost is counted in redis.call()s, each far dearer inside a script than the
-- command's own work: taking a free lock is five (HMGET, TIME, SET .. GET of the counter,
-- HSET, PEXPIRE), finding it held one (HMGET), plus an HSET of w the first time a waiting
-- caller finds a lease held and a PTTL when the lease looks past its end (below).
-- Numbers are written with %d (Lua's tostring would print 1.7e+15): exact for every
-- integer below 2^53, which microseconds since the epoch and tokens are, and several
-- times cheaper than the float formatting of %.0f.
--
-- Beyond its calls, a script pays for every closure it makes (Redis runs the whole file
-- as a function on each call, so each `local function` is made anew every time), every
-- table and every string it builds: the helpers here are only the two that are needed
-- in several places, and the checks that are rare (a derived name, a corrupted counter)
-- cost nothing until their first cheap test passes. `--bench redis` prints the server's
-- time per cycle, on a busy server too, where these show.
local format, find, byte, sub = string.format, string.find, string.byte, string.sub

local client_us = tonumber(ARGV[1])

-- The server's clock in microseconds: TIME once per script run, and only when an answer
-- uses it.
local server_time
local function server_us()
  if not server_time then
    local time = redis.call('TIME')
    server_time = tonumber(time[1]) * 1000000 + tonumber(time[2])
  end
  return server_time
end

-- Lists `lock` in `index` when it is a derived name's lock: the two keys share the head
-- {prefix}:{name}, which `index` follows with ':derived' (so `at` is the byte after the
-- head) and a derived lock with '#' (byte 35). Returns an error reply when `index` holds
-- another type of value (nothing was written then), else nil.
local function add_to_index(lock, index, at)
  if byte(lock, at) ~= 35 or sub(lock, 1, at - 1) ~= sub(index, 1, at - 1) then
    return nil
  end
  local added = redis.pcall('ZADD', index, 0, sub(lock, at + 1))
  if type(added) == 'table' and added.err then
    return {-1, 'error', added.err}
  end
  return nil
end

-- The request whose slots' keys start at KEYS[first], and its index at KEYS[first + 2n].
local function acquire(first, slots, owner, leader, lease_ms, db_time, watched)
  local index_key = KEYS[first + 2 * slots]
  local at = #index_key - #':derived' + 1
  -- The hash only exists while a lease runs: PX removes it on expiry. A hash without an
  -- owner holds nothing. One HMGET a slot reads all an answer needs (a single lock that
  -- is held costs it alone, while its lease runs).
  -- `records` (the held slots' records) is made only when a slot is held.
  local free, held, broken, broken_at, records
  for i = 1, slots do
    local lock = KEYS[first + 2 * i - 2]
    local cur = redis.pcall('HMGET', lock, 'owner', 'leader', 'fence', 'acq', 'exp', 'w')
    if cur.err then
      broken = broken or cur.err
      broken_at = broken_at or i
    elseif cur[1] == owner then
      local failed = add_to_index(lock, index_key, at)
      if failed then
        return failed
      end
      local now_us = client_us
      if db_time then
        now_us = server_us()
      end
      local expires_us = format('%d', now_us + lease_ms * 1000)
      redis.call('HSET', lock, 'exp', expires_us)
      redis.call('PEXPIRE', lock, lease_ms)
      return {1, cur[3], cur[4], expires_us, cur[2], i}
    elseif not cur[1] then
      free = free or i
    else
      held = held or cur
      records = records or {}
      records[i] = cur
    end
  end

  if not free then
    if broken then
      return {-1, 'error', broken}
    end
    -- A record without expiry would never be freed: reported, not waited for, once it is
    -- past its own end (`exp`) on the caller's clock (ARGV[1], whatever clock the request
    -- reports times on); before that it is a holder. Only such a record can tell, so a
    -- live lease costs no PTTL (nor TIME); one whose `exp` is not a number is checked too,
    -- and the client reports it corrupted. state, list and force release keep the same
    -- rule on the same clock (`holds_without_expiry` in ops/state.rs, force_release.lua).
    -- Every slot is held here (a broken one returned above), so each has its record.
    for i = 1, slots do
      local ends = tonumber(records[i][5])
      if (not ends or ends <= client_us) and redis.call('PTTL', KEYS[first + 2 * i - 2]) == -1 then
        return {-1, 'expiry', i}
      end
    end
    if watched then
      for i = 1, slots do
        if not records[i][6] then
          redis.call('HSET', KEYS[first + 2 * i - 2], 'w', '1')
        end
      end
    end
    return {0, held[2], held[3], held[4], held[5]}
  end

  -- A new owner: the next fencing token, never below the server's clock in microseconds:
  -- max(counter + 1, TIME). The counter can be behind (Redis restarted on an older RDB or
  -- AOF, a replica promoted before it caught up) or missing (deleted, never written); the
  -- clock has moved on since every token handed out before, so tokens never repeat or go
  -- back as long as the server's clock does not, and a lock averages fewer than one
  -- acquisition per microsecond (each acquisition takes several microseconds).
  local lock, counter = KEYS[first + 2 * free - 2], KEYS[first + 2 * free - 1]
  local failed = add_to_index(lock, index_key, at)
  if failed then
    return failed
  end
  local server_now = server_us()
  local now_us = client_us
  if db_time then
    now_us = server_now
  end
  -- One call in the usual case: the clock is ahead of the counter, so the counter is set
  -- to it, and the value it had is read in the same SET. Only when the counter is ahead
  -- (the clock went back) is it set again, to the value after it.
  local last = redis.pcall('SET', counter, format('%d', server_now), 'GET')
  if type(last) == 'table' then
    return {-1, 'error', last.err}
  end
  local fence = server_now
  if last then
    -- A token is a decimal that a double holds exactly (below 2^53, as every token
    -- handed out is); anything else is not a token.
    local seen = tonumber(last)
    if not seen or #last > 16 or seen >= 9007199254740992 or not find(last, '^%d+$') then
      -- Not a token: put it back as it was and report it, never paper over it.
      redis.call('SET', counter, last)
      return {-1, 'error', 'the fencing counter ' .. counter .. ' holds a value that is not a token'}
    end
    if seen >= server_now then
      fence = seen + 1
      redis.call('SET', counter, format('%d', fence))
    end
  end

  local fence_s, now_s = format('%d', fence), format('%d', now_us)
  local expires_s = format('%d', now_us + lease_ms * 1000)
  redis.call('HSET', lock,
    'owner', owner, 'leader', leader, 'fence', fence_s,
    'acq', now_s, 'exp', expires_s, 'sacq', format('%d', server_now))
  redis.call('PEXPIRE', lock, lease_ms)
  if broken_at then
    return {1, fence_s, now_s, expires_s, leader, free, broken_at}
  end
  return {1, fence_s, now_s, expires_s, leader, free}
end

local replies, first = {}, 1
for arg = 2, #ARGV, 6 do
  local slots = tonumber(ARGV[arg + 5])
  replies[#replies + 1] = acquire(first, slots, ARGV[arg], ARGV[arg + 1],
    tonumber(ARGV[arg + 2]), ARGV[arg + 3] == '1', ARGV[arg + 4] == '1')
  first = first + 2 * slots + 1
end
return replies
