-- One model's rate limit shared by every worker process (repos/rate_limit.py drives it).
--
-- KEYS: 1 state (hash: token buckets, AIMD window), 2 leases (zset member "kb\ntoken", score =
-- expiry ms), 3 waiters (zset member "kb\ntoken", score = arrival ms), 4 seen (hash token -> last
-- poll ms), 5 served (hash kb -> last grant ms), 6 active (zset kb -> last seen ms).
-- ARGV: 1 op (acquire | release | leave | renew), 2 wake key prefix, then per op (see below).
-- Time is the Redis server's, so processes on other hosts agree. Every key expires when idle:
-- a flushed or forgotten limiter starts over, which loses no work.

local K_STATE, K_LEASES, K_WAITERS, K_SEEN, K_SERVED, K_ACTIVE = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local op, wake_prefix = ARGV[1], ARGV[2]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local KEEP_MS = 600000
local INF = math.huge

local function num(x, default)
  if x == false or x == nil then return default end
  return tonumber(x)
end

local function touch_all()
  for i = 1, 6 do redis.call('PEXPIRE', KEYS[i], KEEP_MS) end
end

local function kb_of(member) return string.match(member, '^(.-)\n') end
local function token_of(member) return string.match(member, '\n(.*)$') end

-- Leases still running, per KB and in all (expired ones, a killed holder's, are dropped).
local function holdings()
  redis.call('ZREMRANGEBYSCORE', K_LEASES, '-inf', now)
  local held, total = {}, 0
  for _, m in ipairs(redis.call('ZRANGE', K_LEASES, 0, -1)) do
    local kb = kb_of(m)
    held[kb] = (held[kb] or 0) + 1
    total = total + 1
  end
  return held, total
end

-- Additive increase after a cut: one step per quiet period (recover_ms) since the last cut or step.
local function recover(cap, recover_ms)
  local s = redis.call('HMGET', K_STATE, 'win', 'wbase', 'rfac', 'tmark')
  local win, wbase, rfac, tmark = num(s[1], nil), num(s[2], nil), num(s[3], 1), num(s[4], now)
  if (win or rfac < 1) then
    local steps = math.floor((now - tmark) / recover_ms)
    if steps > 0 then
      if win then
        local base = cap > 0 and cap or (wbase or win)
        win = win + steps * math.max(1, math.ceil(base / 10))
        if win >= base then win = nil end
      end
      rfac = math.min(1, rfac + 0.1 * steps)
      if win then
        redis.call('HSET', K_STATE, 'win', win)
      else
        redis.call('HDEL', K_STATE, 'win', 'wbase')
      end
      redis.call('HSET', K_STATE, 'rfac', rfac, 'tmark', tmark + steps * recover_ms)
    end
  end
  return win, rfac
end

-- The window in force, the share of one KB (ceil(window / active KBs)), the rate factor.
local function limits(cap, held, kb, recover_ms, active_ms)
  local win, rfac = recover(cap, recover_ms)
  local eff = cap > 0 and cap or INF
  if win then eff = math.min(eff, win) end
  redis.call('ZREMRANGEBYSCORE', K_ACTIVE, '-inf', now - active_ms)
  local names, n = {}, 0
  for _, k in ipairs(redis.call('ZRANGE', K_ACTIVE, 0, -1)) do
    if not names[k] then names[k] = true; n = n + 1 end
  end
  for k, _ in pairs(held) do
    if not names[k] then names[k] = true; n = n + 1 end
  end
  if kb and not names[kb] then n = n + 1 end
  local share = INF
  if eff < INF then share = math.max(1, math.ceil(eff / math.max(n, 1))) end
  return eff, share, rfac, n
end

-- Whose turn it is: among live waiters, those of KBs under their share first (work-conserving:
-- a KB over its share still gets a slot no one under theirs waits for), then the KB served
-- longest ago, then the earliest waiter. Waiters not seen for waiter_ms have gone and are dropped.
local function next_waiter(held, share, waiter_ms)
  local best, best_key = nil, nil
  local ws = redis.call('ZRANGE', K_WAITERS, 0, -1, 'WITHSCORES')
  for i = 1, #ws, 2 do
    local m, arrival = ws[i], tonumber(ws[i + 1])
    local token = token_of(m)
    if num(redis.call('HGET', K_SEEN, token), 0) < now - waiter_ms then
      redis.call('ZREM', K_WAITERS, m)
      redis.call('HDEL', K_SEEN, token)
    else
      local kb = kb_of(m)
      local over = (held[kb] or 0) >= share and 1 or 0
      local served = num(redis.call('HGET', K_SERVED, kb), 0)
      if best == nil or over < best_key[1] or (over == best_key[1] and (served < best_key[2]
          or (served == best_key[2] and arrival < best_key[3]))) then
        best, best_key = m, {over, served, arrival}
      end
    end
  end
  return best
end

local function wake(member)
  if member then
    local key = wake_prefix .. token_of(member)
    redis.call('LPUSH', key, 1)
    redis.call('PEXPIRE', key, 2000)
  end
end

-- A token bucket of per_min a minute (scaled by rfac) holding at most burst_s seconds of it.
-- Returns the level now and the ms until `need` (at most a full bucket) is there.
local function bucket(field, per_min, rfac, need, burst_s)
  if per_min <= 0 then return 0, 0 end
  local rate = per_min * rfac / 60000
  local capacity = math.max(1, per_min * rfac * burst_s / 60)
  local s = redis.call('HMGET', K_STATE, field, field .. '_t')
  local level = math.min(capacity, num(s[1], capacity) + (now - num(s[2], now)) * rate)
  local want = math.min(need, capacity)
  if level >= want then return level, 0 end
  return level, math.ceil((want - level) / rate)
end

if op == 'acquire' then
  -- ARGV: 3 kb, 4 token, 5 cap, 6 rpm, 7 tpm, 8 tokens reserved, 9 lease ms, 10 active ms,
  -- 11 recover ms, 12 waiter ms, 13 burst s
  local kb, token = ARGV[3], ARGV[4]
  local cap, rpm, tpm, need = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8])
  local lease_ms, active_ms, recover_ms = tonumber(ARGV[9]), tonumber(ARGV[10]), tonumber(ARGV[11])
  local waiter_ms, burst_s = tonumber(ARGV[12]), tonumber(ARGV[13])
  local member = kb .. '\n' .. token
  local held, total = holdings()
  local eff, share, rfac, n = limits(cap, held, kb, recover_ms, active_ms)
  redis.call('ZADD', K_ACTIVE, now, kb)
  redis.call('HSET', K_SEEN, token, now)
  redis.call('ZADD', K_WAITERS, 'NX', now, member)
  local reason = nil
  if total >= eff then
    reason = 'concurrency'
  elseif next_waiter(held, share, waiter_ms) ~= member then
    reason = (held[kb] or 0) >= share and 'share' or 'turn'
  end
  local wait = 0
  local rlevel, tlevel = 0, 0
  if not reason then
    local rwait, twait
    rlevel, rwait = bucket('rpm', rpm, rfac, 1, burst_s)
    tlevel, twait = bucket('tpm', tpm, rfac, need, burst_s)
    wait = math.max(rwait, twait)
    if wait > 0 then reason = 'rate' end
  end
  touch_all()
  if reason then
    return {0, wait, reason, tostring(eff), n, now}
  end
  if rpm > 0 then redis.call('HSET', K_STATE, 'rpm', rlevel - 1, 'rpm_t', now) end
  if tpm > 0 then redis.call('HSET', K_STATE, 'tpm', tlevel - need, 'tpm_t', now) end
  redis.call('ZADD', K_LEASES, now + lease_ms, member)
  redis.call('ZREM', K_WAITERS, member)
  redis.call('HDEL', K_SEEN, token)
  redis.call('HSET', K_SERVED, kb, now)
  held[kb] = (held[kb] or 0) + 1
  if total + 1 < eff then wake(next_waiter(held, share, waiter_ms)) end
  return {1, 0, 'ok', tostring(eff), n, now}
elseif op == 'release' then
  -- ARGV: 3 kb, 4 token, 5 cap, 6 tpm, 7 tokens reserved, 8 tokens used (-1: unknown),
  -- 9 throttled (0/1), 10 active ms, 11 recover ms, 12 waiter ms, 13 lease's grant ms, 14 burst s
  local kb, token = ARGV[3], ARGV[4]
  local cap, tpm, need, used = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8])
  local throttled = ARGV[9] == '1'
  local active_ms, recover_ms, waiter_ms = tonumber(ARGV[10]), tonumber(ARGV[11]), tonumber(ARGV[12])
  local granted_ms, burst_s = tonumber(ARGV[13]), tonumber(ARGV[14])
  redis.call('ZREM', K_LEASES, kb .. '\n' .. token)
  local held, total = holdings()
  local eff, share, rfac = limits(cap, held, nil, recover_ms, active_ms)
  if tpm > 0 and used >= 0 and used ~= need then
    local level = bucket('tpm', tpm, rfac, 0, burst_s)
    local capacity = math.max(1, tpm * rfac * burst_s / 60)
    redis.call('HSET', K_STATE, 'tpm', math.min(capacity, level + need - used), 'tpm_t', now)
  end
  local cut = 0
  if throttled and granted_ms > num(redis.call('HGET', K_STATE, 'tcut'), 0) then
    -- Multiplicative decrease, once per wave (TCP's once per round trip): a 429 to a request
    -- sent before the last cut says nothing the cut did not already hear.
    local inflight = total + 1
    local win = math.max(1, math.floor(math.min(eff, inflight) / 2))
    local wbase = cap > 0 and cap or math.max(inflight, num(redis.call('HGET', K_STATE, 'wbase'), 0))
    redis.call('HSET', K_STATE, 'win', win, 'wbase', wbase, 'rfac', math.max(rfac / 2, 1 / 64),
      'tcut', now, 'tmark', now)
    cut = win
    eff = math.min(eff, win)
    if eff < INF then share = math.max(1, math.ceil(eff / math.max(redis.call('ZCARD', K_ACTIVE), 1))) end
  end
  if total < eff then wake(next_waiter(held, share, waiter_ms)) end
  touch_all()
  return {cut, tostring(eff), tostring(math.max(rfac / 2, 1 / 64))}
elseif op == 'leave' then
  -- A waiter that gives up (its deadline passed): out of the queue at once, and the next in
  -- line woken if a slot is free. ARGV: 3 kb, 4 token, 5 cap, 6 active ms, 7 recover ms, 8 waiter ms
  local member = ARGV[3] .. '\n' .. ARGV[4]
  local cap, active_ms, recover_ms, waiter_ms = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8])
  redis.call('ZREM', K_WAITERS, member)
  redis.call('HDEL', K_SEEN, ARGV[4])
  local held, total = holdings()
  local eff, share = limits(cap, held, nil, recover_ms, active_ms)
  if total < eff then wake(next_waiter(held, share, waiter_ms)) end
  return 1
elseif op == 'renew' then
  -- ARGV: 3 lease ms, 4.. members still held by this process
  local lease_ms = tonumber(ARGV[3])
  local kept = 0
  for i = 4, #ARGV do
    kept = kept + redis.call('ZADD', K_LEASES, 'XX', 'CH', now + lease_ms, ARGV[i])
    redis.call('ZADD', K_ACTIVE, now, kb_of(ARGV[i]))
  end
  touch_all()
  return kept
end
return redis.error_reply('unknown op ' .. tostring(op))
