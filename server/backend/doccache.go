package backend

import (
	"container/list"
	"context"
	"sync"
	"sync/atomic"

	"github.com/yorkie-affinity/yorkie/server/document"
)

// docCache bounds the documents a node keeps built, by the heap they take
// (an estimate: see document.HeapEstimate), a cached snapshot answer and the
// state their last snapshot was taken of included: past the bound, the least
// recently used documents whose lock is free are dropped, to be rebuilt from
// their snapshot and log when used again.
type docCache struct {
	mu    sync.Mutex
	limit int64
	total int64
	lru   list.List // of *cacheEntry, most recently used first
	gauge *atomic.Int64
}

// cacheEntry is one built document in the cache.
type cacheEntry struct {
	ds    *docState
	bytes int64
	elem  *list.Element
}

func newDocCache(limit int64, gauge *atomic.Int64) *docCache {
	return &docCache{limit: limit, gauge: gauge}
}

// touch records ds (whose lock the caller holds) as just used, with its
// current estimated heap, and evicts others while the cache is over its
// bound. A document whose lock is held elsewhere is in use and stays.
func (c *docCache) touch(ds *docState) {
	base := ds.snap.baseBytes.Load()
	bytes := ds.snap.answerBytes.Load() + ds.heapBytes() + base
	c.mu.Lock()
	defer c.mu.Unlock()
	e := ds.cached
	if e == nil {
		e = &cacheEntry{ds: ds}
		e.elem = c.lru.PushFront(e)
		ds.cached = e
	} else {
		c.lru.MoveToFront(e.elem)
	}
	c.total += bytes - e.bytes
	e.bytes = bytes
	for el := c.lru.Back(); el != nil && c.total > c.limit; {
		prev := el.Prev()
		victim := el.Value.(*cacheEntry).ds
		if victim != ds {
			select {
			case victim.lock <- struct{}{}:
				victim.doc = nil
				victim.snap.dropBase()
				c.removeLocked(victim)
				victim.unlock()
			default:
			}
		}
		el = prev
	}
	if c.total > c.limit && base > 0 {
		// Still over with only this document left: its snapshot base is an
		// optimisation, rebuilt from the stored snapshot when next needed.
		ds.snap.dropBase()
		e.bytes -= base
		c.total -= base
	}
	c.gauge.Store(c.total)
}

// remove forgets ds's entry; the caller holds ds's lock.
func (c *docCache) remove(ds *docState) {
	c.mu.Lock()
	c.removeLocked(ds)
	c.mu.Unlock()
}

func (c *docCache) removeLocked(ds *docState) {
	if e := ds.cached; e != nil {
		c.lru.Remove(e.elem)
		c.total -= e.bytes
		ds.cached = nil
		c.gauge.Store(c.total)
	}
}

// dropDoc discards the built document (it may be half-applied, or behind a
// write whose outcome is unsure); the next use rebuilds it from the database.
// The caller holds the lock.
func (b *Backend) dropDoc(ds *docState) {
	ds.doc, ds.gcWith, ds.collections = nil, nil, nil
	ds.recent.reset()
	ds.json, ds.jsonOf = "", nil
	ds.snap.dropBase()
	b.cache.remove(ds)
}

// heapRewalk is how far (a factor either way) a document's size may move
// from the size its heap was last estimated at before it is walked again;
// in between, the estimate follows the size in proportion. A walk costs
// about as much as applying a few changes per element, so it must not run on
// every call, yet an estimate taken of an empty document must not stand for
// the large one it grew into.
const heapRewalk = 1.25

// heapBytes is the built document's estimated heap. The caller holds the
// lock.
func (ds *docState) heapBytes() int64 {
	if ds.doc == nil {
		return 0
	}
	size := float64(max(ds.doc.Size().Total(), 1))
	if ds.heapOf != ds.doc || size > ds.heapAt*heapRewalk || size*heapRewalk < ds.heapAt {
		ds.heapOf, ds.heapAt, ds.heapEst = ds.doc, size, float64(ds.doc.HeapEstimate())
	}
	return int64(ds.heapEst * size / ds.heapAt)
}

// useDoc returns the document built up to ds.head: the cached one, brought
// forward through the log if the head moved without it, or one rebuilt from
// the newest snapshot and the changes after it. The caller holds the lock.
func (b *Backend) useDoc(ctx context.Context, ds *docState) (*document.Document, error) {
	if ds.doc != nil && ds.docSeq > ds.head {
		b.dropDoc(ds)
	}
	if ds.doc == nil {
		if err := b.buildDoc(ctx, ds); err != nil {
			return nil, err
		}
	}
	if ds.docSeq < ds.head {
		if err := b.replay(ctx, ds.id, ds.doc, ds.docSeq, ds.head); err != nil {
			b.dropDoc(ds)
			return nil, err
		}
		ds.docSeq = ds.head
	}
	b.cache.touch(ds)
	return ds.doc, nil
}

// buildDoc builds the document at ds.head from its newest snapshot and
// the log after it.
func (b *Backend) buildDoc(ctx context.Context, ds *docState) error {
	doc, snapSeq, err := b.docAt(ctx, ds.id, ds.head)
	if err != nil {
		return err
	}
	ds.snapSeq = max(ds.snapSeq, snapSeq)
	b.metrics.DocumentsBuilt.Add(1)
	ds.doc, ds.docSeq, ds.gcWith, ds.collections = doc, ds.head, nil, nil
	return nil
}
