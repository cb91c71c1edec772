-- A write fenced by a token: run the command only if the caller's fencing token is not
-- older than the highest token the resource has seen, and record it as the highest.
--
-- KEYS[1]     the fence key: the highest token seen, in decimal, a plain string
-- KEYS[2..]   the keys the command writes (declared so a cluster can route and check them)
-- ARGV[1]     the caller's token, decimal digits (a u64)
-- ARGV[2..]   the command and its arguments
--
-- Returns {1} when the command ran and the fence holds the token,
--         {0, highest} when the fence holds a newer token (nothing was written),
--         {-1, value} when the fence key holds a string that is not a token,
--         {-2, type} when the fence key holds another type.
--
-- The command runs before the fence is raised: if it fails, the script stops with its
-- error and nothing changed. Tokens are compared as decimal strings, digit by digit:
-- Lua numbers are doubles, exact only up to 2^53.
local U64_MAX = '18446744073709551615'

-- a < b, for decimal strings without leading zeros.
local function older(a, b)
  if #a ~= #b then
    return #a < #b
  end
  for i = 1, #a do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then
      return x < y
    end
  end
  return false
end

-- The token in `s` without leading zeros, or nil when `s` is not a u64 in decimal.
local function token_of(s)
  if not string.find(s, '^%d+$') then
    return nil
  end
  local digits = string.gsub(s, '^0+', '')
  if digits == '' then
    digits = '0'
  end
  if older(U64_MAX, digits) then
    return nil
  end
  return digits
end

local token = token_of(ARGV[1])
if not token then
  return redis.error_reply('ERR fence: the token is not a decimal u64')
end

local kind = redis.call('TYPE', KEYS[1])['ok']
local seen = nil
if kind == 'string' then
  local raw = redis.call('GET', KEYS[1])
  seen = token_of(raw)
  if not seen then
    return {-1, string.sub(raw, 1, 64)}
  end
  if older(token, seen) then
    return {0, seen}
  end
elseif kind ~= 'none' then
  return {-2, kind}
end

redis.call(unpack(ARGV, 2))
if seen ~= token then
  redis.call('SET', KEYS[1], token)
end
return {1}
