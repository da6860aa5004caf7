-- ENQUEUE(member) -> {outcome, depth, epoch}. The caller sends a task message when outcome is added or
-- recovered.
local member = args[1]
local due = redis.call('ZSCORE', pending, member)
if due then
  if tonumber(due) > now and redis.call('HEXISTS', failures, member) == 0 then
    -- Waiting for a requeue_after, not a backoff: the timer only bounds when the key runs next, and an
    -- event is news now (controller-runtime's AddAfter never delays an Add).
    redis.call('ZADD', pending, now, member)
    return {'added', depth(), epoch_id}
  end
  return {'already_pending', depth(), epoch_id}  -- queued or waiting out a backoff: that run sees this event
end
local expiry = redis.call('ZSCORE', running, member)
if expiry and tonumber(expiry) > now then
  if redis.call('SADD', dirty, member) == 1 then
    return {'dirty', depth(), epoch_id}  -- the run in progress may have read the object too early: run once more
  end
  return {'already_pending', depth(), epoch_id}
end
if expiry then
  -- The holder stopped renewing its lease (killed): take the key back instead of waiting for the sweep.
  release(member)
  redis.call('SREM', dirty, member)
  redis.call('ZADD', pending, now, member)
  return {'recovered', depth(), epoch_id}
end
redis.call('ZADD', pending, now, member)
return {'added', depth(), epoch_id}
