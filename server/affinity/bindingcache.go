package affinity

import (
	"iter"

	"github.com/yorkie-affinity/yorkie/server/sessionstore"
)

// bindingCache holds the cached bindings by document key. A node may cache
// one for each of many documents, while their owners are a few members, so
// an entry keeps its owner as an index into a table of members and its
// epoch, 16 bytes without pointers, instead of a copy of the binding (key
// and owner's address again). The table only grows, by one member per
// registration ever seen owning a key. The Manager's mutex guards it.
type bindingCache struct {
	byKey  map[string]cachedBinding
	owners []sessionstore.Member
	index  map[sessionstore.Member]uint32
}

type cachedBinding struct {
	owner uint32
	epoch int64
}

func newBindingCache() bindingCache {
	return bindingCache{byKey: map[string]cachedBinding{}, index: map[sessionstore.Member]uint32{}}
}

func (c *bindingCache) get(key string) (sessionstore.Binding, bool) {
	e, ok := c.byKey[key]
	if !ok {
		return sessionstore.Binding{}, false
	}
	return c.binding(key, e), true
}

func (c *bindingCache) binding(key string, e cachedBinding) sessionstore.Binding {
	return sessionstore.Binding{Key: key, Owner: c.owners[e.owner], Epoch: e.epoch}
}

func (c *bindingCache) put(b sessionstore.Binding) {
	i, ok := c.index[b.Owner]
	if !ok {
		i = uint32(len(c.owners))
		c.owners = append(c.owners, b.Owner)
		c.index[b.Owner] = i
	}
	c.byKey[b.Key] = cachedBinding{owner: i, epoch: b.Epoch}
}

func (c *bindingCache) delete(key string) { delete(c.byKey, key) }

// all yields every cached binding; the caller may delete the one it was
// given.
func (c *bindingCache) all() iter.Seq2[string, sessionstore.Binding] {
	return func(yield func(string, sessionstore.Binding) bool) {
		for k, e := range c.byKey {
			if !yield(k, c.binding(k, e)) {
				return
			}
		}
	}
}
