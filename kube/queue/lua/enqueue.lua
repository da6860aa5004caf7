-- ENQUEUE(member) -> {outcome, depth}. The caller sends a task message when outcome is added or recovered.
local member = ARGV[1]
local due = redis.call('ZSCORE', pending, member)
if due then
  if tonumber(due) > now and redis.call('HEXISTS', failures, member) == 0 then
    -- Waiting for a requeue_after, not a backoff: the timer only bounds when the key runs next, and an
    -- event is news now (controller-runtime's AddAfter never delays an Add).
    redis.call('ZADD', pending, now, member)
    return {'added', depth()}
  end
  return {'already_pending', depth()}  -- queued or waiting out a backoff: that run will see this event
end
local expiry = redis.call('ZSCORE', running, member)
if expiry and tonumber(expiry) > now then
  if redis.call('SADD', dirty, member) == 1 then
    return {'dirty', depth()}  -- the run in progress may have read the object too early: run once more
  end
  return {'already_pending', depth()}
end
if expiry then
  -- The holder stopped renewing its lease (killed): take the key back instead of waiting for the sweep.
  release(member)
  redis.call('SREM', dirty, member)
  redis.call('ZADD', pending, now, member)
  return {'recovered', depth()}
end
redis.call('ZADD', pending, now, member)
return {'added', depth()}
