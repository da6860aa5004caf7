-- FINISH(member, token, result, base_ms, cap_ms, requeue_after_ms) -> {outcome, countdown_ms, depth, backoff_ms}
-- result is success, error or requeue_after. outcome:
--   lost:  the lease had lapsed and the key was taken back; whoever took it owns the state now
--   idle:  nothing more is owed
--   again: the key is pending again, due in countdown_ms; the caller sends its task message
-- A failure waits out its backoff even if events arrived meanwhile (they are covered by the retry), so a
-- failing reconcile that triggers its own watch events cannot spin.
local member, token, result = ARGV[1], ARGV[2], ARGV[3]
if redis.call('HGET', owner, member) ~= token then
  return {'lost', -1, depth(), -1}
end
release(member)
local was_dirty = redis.call('SREM', dirty, member) == 1
local due, backoff = nil, -1
if result == 'error' then
  local count = redis.call('HINCRBY', failures, member, 1)
  backoff = math.floor(math.min(tonumber(ARGV[4]) * 2 ^ (count - 1), tonumber(ARGV[5])))
  due = now + backoff
else
  redis.call('HDEL', failures, member)
  if was_dirty then
    due = now
  elseif result == 'requeue_after' then
    due = now + tonumber(ARGV[6])
  end
end
if not due then
  return {'idle', -1, depth(), backoff}
end
redis.call('ZADD', pending, due, member)
return {'again', due - now, depth(), backoff}
