-- SWEEP(resend_after_ms, limit, live worker ids...) -> {depth, recovered members, resent members,
-- countdowns of resent members (ms), epoch}. Run by every worker on a timer; the caller sends a task
-- message for each member returned. A worker is dead when it is not among the live ids (see heartbeat.lua).
--   recovered: the run's lease lapsed (its worker was killed): owed a run again, now. A run is judged by
--              its own lease, renewed by the process that runs it, never by its worker's heartbeat: a
--              worker's main process may stall while its pool child keeps running the key
--   resent:    a dead worker had received its message and never claimed it (prefetched, or a countdown
--              waiting inside the worker): the message died with it, send it again for the same due time;
--              or due for resend_after_ms without being claimed: its message was lost (the sender died
--              between a step and the send). A duplicate is harmless, CLAIM drops it as stale or early
local resend_after, limit = tonumber(args[1]), tonumber(args[2])
local live = {}
for index = 3, #args do
  live[args[index]] = true
end

local recovered, resent, countdowns, sent = {}, {}, {}, {}
for _, member in ipairs(redis.call('ZRANGEBYSCORE', running, '-inf', now, 'LIMIT', 0, limit)) do
  release(member)
  redis.call('SREM', dirty, member)
  redis.call('ZADD', pending, now, member)
  table.insert(recovered, member)
end
local holders = redis.call('HGETALL', reserved)
for index = 1, #holders, 2 do
  local member, worker = holders[index], holders[index + 1]
  if not live[worker] and #resent < limit then
    redis.call('HDEL', reserved, member)
    local due = redis.call('ZSCORE', pending, member)
    if due then
      sent[member] = true
      table.insert(resent, member)
      table.insert(countdowns, math.max(0, tonumber(due) - now))
    end
  end
end
for _, member in ipairs(redis.call('ZRANGEBYSCORE', pending, '-inf', now - resend_after, 'LIMIT', 0, limit)) do
  redis.call('ZADD', pending, now, member)  -- restarts its clock, so it is resent at most once per period
  if not sent[member] then
    table.insert(resent, member)
    table.insert(countdowns, 0)
  end
end
return {depth(), recovered, resent, countdowns, epoch_id}
