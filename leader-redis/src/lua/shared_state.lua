-- Read a read/write lock: its live holds and intent (lib/shared.lua, put before this
-- script).
--
-- KEYS[1]  the record ({prefix}:rw{name})
-- ARGV[1]  '1' when the caller waits for a release notification of this lock (an
--          observer): a record with a hold or an intent is then marked, so that the
--          release that frees a hold publishes (see shared_release.lua)
--
-- Returns {1, writer, readers, intent} (see shared_view; nothing that ran out), or
-- {-1, 'corrupt', what} for a record this library did not write.
local key = KEYS[1]
local rec, failed = shared_load(key)
if not rec then
  return failed
end
if shared_free(rec) then
  return {1, shared_view(rec)}
end
local now = shared_now()
shared_prune(rec, now)
if ARGV[1] == '1' and not rec.m and not shared_free(rec) then
  rec.m = true
  shared_save(key, rec, now)
end
return {1, shared_view(rec)}
