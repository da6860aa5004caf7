-- Shared by every step. One kind's state lives in six keys (see docs/concurrency.md):
--   pending  ZSET member -> when its run is due (ms); the key is owed a run and a task message exists for it
--   running  ZSET member -> when the running worker's lease lapses (ms)
--   owner    HASH member -> token of the run holding the lease
--   dirty    SET  members enqueued while running: they run once more after the current run
--   failures HASH member -> consecutive failed runs, for the backoff
--   reserved HASH member -> id of the worker that last received (prefetched) a task message of the key
-- Invariants: pending and running never share a member; dirty is a subset of running; owner has exactly
-- the members of running. Time is the Redis server's clock, so every worker agrees on it.
local pending, running, owner, dirty, failures, reserved = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)

local function depth()
  return redis.call('ZCOUNT', pending, '-inf', now)
end

local function release(member)
  redis.call('ZREM', running, member)
  redis.call('HDEL', owner, member)
end
