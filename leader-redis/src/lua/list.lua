-- One page of a name's held derived locks (leader group slots, ranked candidates'
-- records) from the name's index, in name order: what `list` runs for a prefix inside
-- one name's derived names, instead of a SCAN of the keyspace.
--
-- KEYS[1]  the index: {prefix}:{name}:derived, a sorted set of the derived names' rests
--          (score 0, so they sort by name), kept by acquire.lua
-- ARGV[1]  what every derived lock key of the name starts with: {prefix}:{name}#
-- ARGV[2]  the ZRANGEBYLEX lower bound: '[<rest prefix>' on the first page,
--          '(<last member of the previous page>' after
-- ARGV[3]  the upper bound: '[<rest prefix>' followed by the byte 0xFF, above every
--          member that starts with the rest prefix (names are UTF-8, which has no 0xFF)
-- ARGV[4]  how many members to look at (>= 1)
--
-- Returns {1, next, member, pttl, {owner, leader, fence, acq, exp}, ...}: `next` is the
-- last member looked at when more may follow, '' when the page is the last; then each
-- member whose lock key exists, with its PTTL and its fields (the caller decodes them as
-- `state` does its own, so a free or corrupted record is told apart there). A member whose
-- lock key is gone (expired on the server's clock, released, force-released, deleted) is
-- removed from the index and not returned.
-- Returns {-1, member, message} when a command on a member's key failed (another type of
-- value there), {-2, message} when the index itself holds another type.
--
-- The lock keys share the index's hash tag, so on a cluster they are on the node that
-- runs the script. They are not declared in KEYS because the index names them: a script
-- that reads an index cannot know them before it runs.
local head, count = ARGV[1], tonumber(ARGV[4])
local members = redis.pcall('ZRANGEBYLEX', KEYS[1], ARGV[2], ARGV[3], 'LIMIT', 0, count + 1)
if members.err then
  return {-2, members.err}
end

local reply = {1, ''}
if #members > count then
  reply[2] = members[count]
end
for i = 1, math.min(#members, count) do
  local member = members[i]
  local key = head .. member
  local pttl = redis.call('PTTL', key)
  if pttl == -2 then
    redis.call('ZREM', KEYS[1], member)
  else
    local fields = redis.pcall('HMGET', key, 'owner', 'leader', 'fence', 'acq', 'exp')
    if fields.err then
      return {-1, member, fields.err}
    end
    reply[#reply + 1] = member
    reply[#reply + 1] = pttl
    reply[#reply + 1] = fields
  end
end
return reply
