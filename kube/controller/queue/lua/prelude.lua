-- Shared by every step of one kind. Its state lives in seven keys (see docs/concurrency.md):
--   pending  ZSET member -> when its run is due (ms); the key is owed a run and a task message exists for it
--   running  ZSET member -> when the running worker's lease lapses (ms)
--   owner    HASH member -> token of the run holding the lease
--   dirty    SET  members enqueued while running: they run once more after the current run
--   failures HASH member -> consecutive failed runs, for the backoff
--   reserved HASH member -> id of the worker that last received (prefetched) a task message of the key
--   epoch    HASH id, created, fence: which life of this data it is (see below)
-- Invariants: pending and running never share a member; dirty is a subset of running; owner has exactly
-- the members of running. Time is the Redis server's clock, so every worker agrees on it.
--
-- ARGV[1] is the epoch the caller last saw ('' if none), ARGV[2] the fence (ms, the lease); the step's own
-- arguments follow, in `args`. Every step returns the current epoch id last, so the caller learns it.
-- Redis that restarted empty, failed over to an empty replica or was flushed has no epoch: the first step
-- creates a new one. A caller that saw an earlier epoch knows the data was lost, and with it the leases of
-- runs that may still be in progress: it fences the new epoch, and no pending key is claimed until `fence`
-- (one lease after the epoch began), while those runs take their leases back (refresh.lua).
local pending, running, owner, dirty, failures, reserved, epoch = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7]
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local known, fence_ms = ARGV[1], tonumber(ARGV[2])
local args = {}
for index = 3, #ARGV do
  args[#args + 1] = ARGV[index]
end

local epoch_id, fenced_until
do
  local current = redis.call('HMGET', epoch, 'id', 'created', 'fence', 'last')
  if not current[1] then
    epoch_id, fenced_until = clock[1] .. string.format('%06d', tonumber(clock[2])), 0
    if known ~= '' then
      fenced_until = now + fence_ms
    end
    redis.call('HSET', epoch, 'id', epoch_id, 'created', now, 'fence', fenced_until)
  else
    epoch_id, fenced_until = current[1], tonumber(current[3])
    -- Someone who never saw the old epoch made this one: fence it from its creation now that it is known.
    if known ~= '' and known ~= epoch_id and tonumber(current[2]) + fence_ms > fenced_until then
      fenced_until = tonumber(current[2]) + fence_ms
      redis.call('HSET', epoch, 'fence', fenced_until)
    end
    -- Live workers step every sweep interval (2 s); a silence of half a lease means nobody could reach
    -- Redis (it was paused, stopped, or cut off from every worker), so no run could renew its lease either
    -- (renewed every third of a lease, a live one has two thirds left). Each running key gets a lease from
    -- now, as if Redis had never been away: the runs still in progress renew it, and those whose worker
    -- died meanwhile lapse one lease later.
    if current[4] and now - tonumber(current[4]) > fence_ms / 2 then
      for _, member in ipairs(redis.call('ZRANGE', running, 0, -1)) do
        redis.call('ZADD', running, 'XX', now + fence_ms, member)
      end
    end
  end
  redis.call('HSET', epoch, 'last', now)
end
local function depth()
  return redis.call('ZCOUNT', pending, '-inf', now)
end

local function release(member)
  redis.call('ZREM', running, member)
  redis.call('HDEL', owner, member)
end
