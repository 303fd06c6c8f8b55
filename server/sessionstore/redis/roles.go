package redis

import (
	"context"
	"fmt"
	"strconv"

	"github.com/yorkie-affinity/yorkie/server/sessionstore"
)

// A role is a hash role:<name> {addr, inc}, live only while the holder's
// member key member:<inc>:<addr> exists and holds inc, like a binding.

// claimScript: KEYS role, holder-to-be's member key; ARGV member key prefix,
// addr, incarnation. Returns {'ok', addr, inc} for the holder in force,
// {'notmember'} or {'malformed'}.
const claimScript = `
local t = redis.call('TYPE', KEYS[1]).ok
if t == 'hash' then
  local r = redis.call('HMGET', KEYS[1], 'addr', 'inc')
  if not r[1] or not r[2] then
    return {'malformed'}
  end
  if redis.call('GET', ARGV[1] .. r[2] .. ':' .. r[1]) == r[2] then
    return {'ok', r[1], r[2]}
  end
elseif t ~= 'none' then
  return {'malformed'}
end
if redis.call('GET', KEYS[2]) ~= ARGV[3] then
  return {'notmember'}
end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'addr', ARGV[2], 'inc', ARGV[3])
return {'ok', ARGV[2], ARGV[3]}
`

// resignScript: KEYS role; ARGV addr, incarnation. Deletes the role if it
// names that holder; returns 1 if it did.
const resignScript = `
local r = redis.call('HMGET', KEYS[1], 'addr', 'inc')
if redis.call('TYPE', KEYS[1]).ok == 'hash' and r[1] == ARGV[1] and r[2] == ARGV[2] then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
`

func (s *Store) roleKey(role string) string { return s.cfg.Prefix + "role:" + role }

// Claim implements sessionstore.Store.
func (s *Store) Claim(ctx context.Context, role string, owner sessionstore.Member) (sessionstore.Member, error) {
	var res []string
	inc := strconv.FormatInt(owner.Incarnation, 10)
	err := s.do(ctx, s.scripts.claim.Cmd(&res, []string{s.roleKey(role), s.memberKey(owner)},
		s.memberPrefix, owner.Addr, inc))
	if err != nil {
		return sessionstore.Member{}, s.wrapErr("claim", err)
	}
	if len(res) == 1 && res[0] == "notmember" {
		return sessionstore.Member{}, fmt.Errorf("redis claim %q for %s#%d: %w", role, owner.Addr, owner.Incarnation, sessionstore.ErrNotMember)
	}
	if len(res) != 3 || res[0] != "ok" {
		return sessionstore.Member{}, fmt.Errorf("redis claim %q: role record %v: %w", role, res, sessionstore.ErrMalformed)
	}
	holderInc, err := strconv.ParseInt(res[2], 10, 64)
	if err != nil {
		return sessionstore.Member{}, fmt.Errorf("redis claim %q: role record %v: %w: %w", role, res, sessionstore.ErrMalformed, err)
	}
	return sessionstore.Member{Addr: res[1], Incarnation: holderInc}, nil
}

// Resign implements sessionstore.Store.
func (s *Store) Resign(ctx context.Context, role string, owner sessionstore.Member) error {
	var deleted int
	err := s.do(ctx, s.scripts.resign.Cmd(&deleted, []string{s.roleKey(role)},
		owner.Addr, strconv.FormatInt(owner.Incarnation, 10)))
	if err != nil {
		return s.wrapErr("resign", err)
	}
	return nil
}
