-- STATUS() -> {due, waiting, running, dirty, epoch}: how many keys are pending and due now, pending for
-- later (a backoff or a requeue_after), running, and running with a run owed afterwards. One atomic read:
-- three separate reads can straddle a FINISH that moves a dirty key from running back to pending, and see
-- neither. The leader calls it every second to learn the epoch (see prelude.lua).
return {depth(), redis.call('ZCOUNT', pending, '(' .. now, '+inf'), redis.call('ZCARD', running), redis.call('SCARD', dirty), epoch_id}
