-- SWEEP(resend_after_ms, limit) -> {depth, recovered members, resent members}. Run by every worker on a
-- timer; the caller sends a task message for each member returned.
--   recovered: the run's lease lapsed (its worker was killed): owed a run again, now
--   resent:    due for resend_after_ms without being claimed: its message was lost (the sender died
--              between this script and the send); a duplicate is harmless, CLAIM drops it as stale
local resend_after, limit = tonumber(ARGV[1]), tonumber(ARGV[2])
local recovered, resent = {}, {}
for _, member in ipairs(redis.call('ZRANGEBYSCORE', running, '-inf', now, 'LIMIT', 0, limit)) do
  release(member)
  redis.call('SREM', dirty, member)
  redis.call('ZADD', pending, now, member)
  table.insert(recovered, member)
end
for _, member in ipairs(redis.call('ZRANGEBYSCORE', pending, '-inf', now - resend_after, 'LIMIT', 0, limit)) do
  redis.call('ZADD', pending, now, member)  -- restarts its clock, so it is resent at most once per period
  table.insert(resent, member)
end
return {depth(), recovered, resent}
