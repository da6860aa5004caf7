-- FINISH(member, token, result, base_ms, cap_ms, requeue_after_ms)
--   -> {outcome, countdown_ms, depth, backoff_ms, epoch}
-- result is success, error or requeue_after. outcome:
--   lost:  the lease had lapsed and the key was taken back, or the data was lost before the run took its
--          lease back; whoever has the key now owns the state (after a loss, the leader enqueues it again)
--   idle:  nothing more is owed
--   again: the key is pending again, due in countdown_ms; the caller sends its task message
-- A failure waits out its backoff even if events arrived meanwhile (they are covered by the retry), so a
-- failing reconcile that triggers its own watch events cannot spin.
local member, token, result = args[1], args[2], args[3]
if redis.call('HGET', owner, member) ~= token then
  return {'lost', -1, depth(), -1, epoch_id}
end
release(member)
local was_dirty = redis.call('SREM', dirty, member) == 1
local due, backoff = nil, -1
if result == 'error' then
  local count = redis.call('HINCRBY', failures, member, 1)
  backoff = math.floor(math.min(tonumber(args[4]) * 2 ^ (count - 1), tonumber(args[5])))
  due = now + backoff
else
  redis.call('HDEL', failures, member)
  if was_dirty then
    due = now
  elseif result == 'requeue_after' then
    due = now + tonumber(args[6])
  end
end
if not due then
  return {'idle', -1, depth(), backoff, epoch_id}
end
redis.call('ZADD', pending, due, member)
return {'again', due - now, depth(), backoff, epoch_id}
