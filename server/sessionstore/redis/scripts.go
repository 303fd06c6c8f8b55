package redis

import "github.com/mediocregopher/radix/v4"

// The Lua scripts that make each store operation atomic. radix sends them by
// EVALSHA and falls back to EVAL when the server answers NOSCRIPT (a restarted
// or newly promoted server has an empty script cache).
//
// Records:
//   - counter: an integer, INCR'd for every incarnation and every epoch.
//   - member:<inc>:<addr>: one registration (its id is <inc>:<addr>), holding
//     the incarnation, with a PX TTL that renewal extends. A node that
//     registers its address again gets a new key; the old one expires.
//   - members: a set of member ids, pruned on registration; the live members
//     are those whose member key exists.
//   - binding:<key>: a hash {addr, inc, epoch}; live only while
//     member:<inc>:<addr> exists and holds inc.
//   - role:<name>: a hash {addr, inc}, live like a binding (roles.go).
//
// Scripts reach member keys of binding owners by name (ARGV holds the member
// key prefix), so the store needs a single Redis, not Redis Cluster.

// nextValue draws the next value of the store-wide counter, never below the
// Redis server's clock in microseconds. Epochs must keep growing across a
// failover that loses the counter's last increments to asynchronous
// replication: a repeated epoch would let the database fence out the new
// owner. Scripts run with effects replication, so TIME may precede writes.
const nextValue = `
local function nextValue(key)
  local t = redis.call('TIME')
  local floor = tonumber(t[1]) * 1000000 + tonumber(t[2])
  local v = redis.call('INCR', key)
  if v < floor then
    v = floor
    redis.call('SET', key, string.format('%d', v))
  end
  return string.format('%d', v)
end
`

// registerScript: KEYS counter, members set; ARGV addr, ttl ms, event
// channel, member key prefix. Returns the new incarnation (as a string).
const registerScript = nextValue + `
local inc = nextValue(KEYS[1])
local id = inc .. ':' .. ARGV[1]
redis.call('SET', ARGV[4] .. id, inc, 'PX', ARGV[2])
redis.call('SADD', KEYS[2], id)
for _, m in ipairs(redis.call('SMEMBERS', KEYS[2])) do
  if redis.call('EXISTS', ARGV[4] .. m) == 0 then
    redis.call('SREM', KEYS[2], m)
  end
end
redis.call('PUBLISH', ARGV[3], 'join')
return inc
`

// renewScript: KEYS member key; ARGV incarnation, ttl ms. Returns 1 if the
// lease was extended, 0 if the key is gone (expired or revoked) or no longer
// holds the incarnation.
const renewScript = `
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
`

// revokeScript: KEYS member key, members set; ARGV incarnation, member id,
// event channel. Returns 1 if the registration was deleted.
const revokeScript = `
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  redis.call('SREM', KEYS[2], ARGV[2])
  redis.call('PUBLISH', ARGV[3], 'leave')
  return 1
end
return 0
`

// bindScript: KEYS binding, counter, owner's member key; ARGV member key
// prefix, owner addr, owner incarnation. Returns {'ok', addr, inc, epoch} for
// the binding in force, {'notmember'} or {'malformed'}.
const bindScript = nextValue + `
local t = redis.call('TYPE', KEYS[1]).ok
if t == 'hash' then
  local b = redis.call('HMGET', KEYS[1], 'addr', 'inc', 'epoch')
  if not b[1] or not b[2] or not b[3] then
    return {'malformed'}
  end
  if redis.call('GET', ARGV[1] .. b[2] .. ':' .. b[1]) == b[2] then
    return {'ok', b[1], b[2], b[3]}
  end
elseif t ~= 'none' then
  return {'malformed'}
end
if redis.call('GET', KEYS[3]) ~= ARGV[3] then
  return {'notmember'}
end
local e = nextValue(KEYS[2])
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'addr', ARGV[2], 'inc', ARGV[3], 'epoch', e)
return {'ok', ARGV[2], ARGV[3], e}
`

// resolveScript: KEYS binding; ARGV member key prefix. Returns
// {'ok', addr, inc, epoch}, {'none'} or {'malformed'}. It writes nothing, so
// it also runs on a replica.
const resolveScript = `
local t = redis.call('TYPE', KEYS[1]).ok
if t == 'none' then
  return {'none'}
elseif t ~= 'hash' then
  return {'malformed'}
end
local b = redis.call('HMGET', KEYS[1], 'addr', 'inc', 'epoch')
if not b[1] or not b[2] or not b[3] then
  return {'malformed'}
end
if redis.call('GET', ARGV[1] .. b[2] .. ':' .. b[1]) == b[2] then
  return {'ok', b[1], b[2], b[3]}
end
return {'none'}
`

// releaseScript: KEYS binding; ARGV addr, incarnation, epoch, member key
// prefix. Returns 'ok', 'notowner' or 'malformed'. A record that is the
// caller's but whose owner's lease ended is deleted too (nobody else can
// use it) and reported as not owned, since it was no longer in force.
const releaseScript = `
local t = redis.call('TYPE', KEYS[1]).ok
if t == 'none' then
  return 'notowner'
elseif t ~= 'hash' then
  return 'malformed'
end
local b = redis.call('HMGET', KEYS[1], 'addr', 'inc', 'epoch')
if b[1] ~= ARGV[1] or b[2] ~= ARGV[2] or b[3] ~= ARGV[3] then
  return 'notowner'
end
local live = redis.call('GET', ARGV[4] .. b[2] .. ':' .. b[1]) == b[2]
redis.call('DEL', KEYS[1])
if live then
  return 'ok'
end
return 'notowner'
`

// membersScript: KEYS members set; ARGV member key prefix. Returns the ids
// (incarnation:addr) of the live members. It writes nothing.
const membersScript = `
local out = {}
for _, m in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  if redis.call('EXISTS', ARGV[1] .. m) == 1 then
    out[#out + 1] = m
  end
end
return out
`

// secretScript: KEYS secret; ARGV a fresh random secret. Keeps the first
// secret ever stored and returns the one in force.
const secretScript = `
redis.call('SET', KEYS[1], ARGV[1], 'NX')
return redis.call('GET', KEYS[1])
`

// scripts holds the prepared scripts of one store.
type scripts struct {
	register, renew, revoke, bind, resolve, release, members, secret radix.EvalScript
	claim, resign                                                    radix.EvalScript
}

func newScripts() scripts {
	return scripts{
		register: radix.NewEvalScript(registerScript),
		renew:    radix.NewEvalScript(renewScript),
		revoke:   radix.NewEvalScript(revokeScript),
		bind:     radix.NewEvalScript(bindScript),
		resolve:  radix.NewEvalScript(resolveScript),
		release:  radix.NewEvalScript(releaseScript),
		members:  radix.NewEvalScript(membersScript),
		secret:   radix.NewEvalScript(secretScript),
		claim:    radix.NewEvalScript(claimScript),
		resign:   radix.NewEvalScript(resignScript),
	}
}
