-- CLAIM(member, token, lease_ms) -> {outcome, ms, depth}. A delivered task message asks to run the key.
--   claimed / took_over: run it now (ms = how long it waited since due, or since the dead lease lapsed)
--   busy:  another live run holds it; that run, or the sweep when its lease lapses, covers this message
--   stale: nothing is owed; the run that consumed the pending mark started after this message was sent
--   early: a backoff is not over (ms = how long is left); the caller sends the message again for then
local member, token, lease_ms = ARGV[1], ARGV[2], tonumber(ARGV[3])
local outcome, waited
-- Whatever the outcome, this message is consumed: the key is no longer pending, or it runs now, or (early)
-- the caller sends a new message, whose receipt reserves it again.
redis.call('HDEL', reserved, member)
local expiry = redis.call('ZSCORE', running, member)
if expiry then
  if tonumber(expiry) > now then
    return {'busy', 0, depth()}
  end
  -- The previous run died without finishing: this run redoes it and covers the events it had absorbed.
  redis.call('SREM', dirty, member)
  outcome, waited = 'took_over', now - tonumber(expiry)
else
  local due = redis.call('ZSCORE', pending, member)
  if not due then
    return {'stale', 0, depth()}
  end
  if tonumber(due) > now then
    return {'early', tonumber(due) - now, depth()}
  end
  redis.call('ZREM', pending, member)
  outcome, waited = 'claimed', now - tonumber(due)
end
redis.call('ZADD', running, now + lease_ms, member)
redis.call('HSET', owner, member, token)
return {outcome, waited, depth()}
