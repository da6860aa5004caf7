-- CLAIM(member, token, lease_ms) -> {outcome, ms, depth, epoch}. A delivered task message asks to run the key.
--   claimed / took_over: run it now (ms = how long it waited since due, or since the dead lease lapsed)
--   busy:  another live run holds it; that run, or the sweep when its lease lapses, covers this message
--   stale: nothing is owed; the run that consumed the pending mark started after this message was sent
--   early: a backoff is not over, or the epoch is fenced (ms = how long is left); the caller sends the
--          message again for then
local member, token, lease_ms = args[1], args[2], tonumber(args[3])
local outcome, waited
-- Whatever the outcome, this message is consumed: the key is no longer pending, or it runs now, or (early)
-- the caller sends a new message, whose receipt reserves it again.
redis.call('HDEL', reserved, member)
local expiry = redis.call('ZSCORE', running, member)
if expiry then
  if tonumber(expiry) > now then
    return {'busy', 0, depth(), epoch_id}
  end
  -- The previous run died without finishing: this run redoes it and covers the events it had absorbed.
  redis.call('SREM', dirty, member)
  outcome, waited = 'took_over', now - tonumber(expiry)
else
  local due = redis.call('ZSCORE', pending, member)
  if not due then
    return {'stale', 0, depth(), epoch_id}
  end
  -- After a loss of the data, a run of this key may still be in progress, its lease forgotten: it takes
  -- the lease back at its next renewal, before the fence ends.
  local until_ms = math.max(tonumber(due), fenced_until)
  if until_ms > now then
    return {'early', until_ms - now, depth(), epoch_id}
  end
  redis.call('ZREM', pending, member)
  outcome, waited = 'claimed', now - tonumber(due)
end
redis.call('ZADD', running, now + lease_ms, member)
redis.call('HSET', owner, member, token)
return {outcome, waited, depth(), epoch_id}
