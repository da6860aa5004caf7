-- REFRESH(member, token, lease_ms) -> {1 while this run holds the lease, 0 once it was taken back; epoch}.
-- ARGV[1] is the epoch the run's lease was last confirmed in. If the data was lost since (another epoch)
-- and nobody holds the key, the run takes its lease back: no CLAIM hands the key out before the fence ends,
-- so it is still the only run. If the key was enqueued again meanwhile, it runs once more afterwards
-- (dirty): this run began before the loss and may have missed what happened while Redis was away.
local member, token = args[1], args[2]
local holder = redis.call('HGET', owner, member)
if holder ~= token and (holder or known == epoch_id) then
  return {0, epoch_id}
end
if not holder and redis.call('ZREM', pending, member) == 1 then
  redis.call('SADD', dirty, member)
end
redis.call('ZADD', running, now + tonumber(args[3]), member)
redis.call('HSET', owner, member, token)
return {1, epoch_id}
