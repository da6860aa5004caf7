-- HEARTBEAT(worker, ttl_ms) -> live worker ids. KEYS[1] is the workers ZSET (worker id -> when its
-- heartbeat lapses, ms). A worker calls it every ttl/3 with its id; a sweep calls it with worker '' to only
-- read who is alive. Lapsed workers are forgotten: the sweep treats an id it does not know as dead.
local workers, worker, ttl = KEYS[1], ARGV[1], tonumber(ARGV[2])
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', workers, '-inf', now)
if worker ~= '' then
  redis.call('ZADD', workers, now + ttl, worker)
end
return redis.call('ZRANGE', workers, 0, -1)
