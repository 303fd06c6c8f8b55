package authwebhook

import (
	"container/list"
	"crypto/sha256"
	"encoding/binary"
	"sync"
	"time"
)

// cacheKey names one question: the project and a digest of the webhook's
// URL and the request (token, method, attributes). A digest keeps every
// entry the same small size whatever the token's length; the URL in it makes
// a project's new webhook answer afresh.
type cacheKey struct {
	project string
	digest  [sha256.Size]byte
}

// newCacheKey digests the question's fields themselves, each with its
// length, so that a cached answer is found without encoding the request's
// JSON body, which only a call to the webhook needs.
func newCacheKey(project, url string, r Request) cacheKey {
	h := sha256.New()
	var n [8]byte
	field := func(s string) {
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	field(url)
	field(r.Token)
	field(r.Method)
	// nil (JSON null) and empty (JSON []) are different requests.
	count := uint64(len(r.Attributes))
	if r.Attributes == nil {
		count = ^uint64(0)
	}
	binary.BigEndian.PutUint64(n[:], count)
	h.Write(n[:])
	for _, a := range r.Attributes {
		field(a.Key)
		field(string(a.Verb))
	}
	k := cacheKey{project: project}
	h.Sum(k.digest[:0])
	return k
}

type cacheEntry struct {
	key     cacheKey
	v       verdict
	reason  string
	expires time.Time
}

// lru is a bounded cache of answers that expire. Allowed and denied answers
// live in separate lrus, so a flood of refused tokens cannot evict the
// answers that let real users in.
type lru struct {
	mu      sync.Mutex
	size    int
	ttl     time.Duration
	order   *list.List // front is the most recently used
	entries map[cacheKey]*list.Element
}

func newLRU(size int, ttl time.Duration) *lru {
	return &lru{size: size, ttl: ttl, order: list.New(), entries: make(map[cacheKey]*list.Element)}
}

func (c *lru) enabled() bool { return c.size > 0 && c.ttl > 0 }

func (c *lru) get(k cacheKey, now time.Time) (cacheEntry, bool) {
	if !c.enabled() {
		return cacheEntry{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[k]
	if !ok {
		return cacheEntry{}, false
	}
	e := el.Value.(*cacheEntry)
	if !now.Before(e.expires) {
		c.order.Remove(el)
		delete(c.entries, k)
		return cacheEntry{}, false
	}
	c.order.MoveToFront(el)
	return *e, true
}

func (c *lru) put(k cacheKey, v verdict, reason string, now time.Time) {
	if !c.enabled() {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[k]; ok {
		e := el.Value.(*cacheEntry)
		e.v, e.reason, e.expires = v, reason, now.Add(c.ttl)
		c.order.MoveToFront(el)
		return
	}
	for c.order.Len() >= c.size {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.entries, last.Value.(*cacheEntry).key)
	}
	c.entries[k] = c.order.PushFront(&cacheEntry{key: k, v: v, reason: reason, expires: now.Add(c.ttl)})
}

// remove drops k, so that a changed answer is not shadowed by the other lru.
func (c *lru) remove(k cacheKey) {
	if !c.enabled() {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[k]; ok {
		c.order.Remove(el)
		delete(c.entries, k)
	}
}
