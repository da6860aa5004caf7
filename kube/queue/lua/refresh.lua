-- REFRESH(member, token, lease_ms) -> 1 while this run still holds the lease, 0 once it was taken back.
local member, token = ARGV[1], ARGV[2]
if redis.call('HGET', owner, member) ~= token then
  return 0
end
redis.call('ZADD', running, now + tonumber(ARGV[3]), member)
return 1
