package mongo

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"

	"github.com/yorkie-affinity/yorkie/server/fault"
	"github.com/yorkie-affinity/yorkie/server/sessionstore"
)

// memberDoc is one registration.
type memberDoc struct {
	ID   string `bson:"_id"` // "<incarnation>:<addr>"
	Addr string `bson:"addr"`
	Inc  int64  `bson:"inc"`
	// TTLMillis is the lease's TTL, which observers wait before declaring
	// the member dead.
	TTLMillis int64 `bson:"ttl_ms"`
	// Beat changes at every renewal; only the member's own node writes it.
	Beat int64 `bson:"beat"`
}

func memberID(m sessionstore.Member) string {
	return strconv.FormatInt(m.Incarnation, 10) + ":" + m.Addr
}

func (d memberDoc) member() sessionstore.Member {
	return sessionstore.Member{Addr: d.Addr, Incarnation: d.Inc}
}

func (d memberDoc) valid() bool {
	return d.Addr != "" && d.TTLMillis > 0 && d.ID == memberID(d.member())
}

// observer remembers, per member record, the heartbeat last read and when
// it was first read, on this process's monotonic clock.
type observer struct {
	mu   sync.Mutex
	seen map[string]sighting
	now  func() time.Time
}

type sighting struct {
	beat int64
	at   time.Time
}

func newObserver() *observer {
	return &observer{seen: map[string]sighting{}, now: time.Now}
}

// alive records d's heartbeat and reports whether the member may be alive:
// its heartbeat changed within its TTL (plus 2% for clock rates) as this
// process saw it.
func (o *observer) alive(d memberDoc) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	now := o.now()
	s, ok := o.seen[d.ID]
	if !ok || s.beat != d.Beat {
		o.seen[d.ID] = sighting{beat: d.Beat, at: now}
		return true
	}
	ttl := time.Duration(d.TTLMillis) * time.Millisecond
	return now.Sub(s.at) < ttl+ttl/50
}

// forget drops what is known of record id.
func (o *observer) forget(id string) {
	o.mu.Lock()
	delete(o.seen, id)
	o.mu.Unlock()
}

// keep drops what is known of every record not in ids.
func (o *observer) keep(ids map[string]bool) {
	o.mu.Lock()
	for id := range o.seen {
		if !ids[id] {
			delete(o.seen, id)
		}
	}
	o.mu.Unlock()
}

// live judges record d; a record observed dead is deleted, so that readers
// that never saw it need not wait a TTL. The delete is by _id, which names
// one incarnation only.
func (s *Store) live(ctx context.Context, d memberDoc) bool {
	if l, ok := s.own.Load(d.ID); ok {
		select {
		case <-l.(*lease).Done():
		default:
			// This client's lease, not ended here (see memberAlive).
			s.obs.alive(d)
			return true
		}
	}
	if s.obs.alive(d) {
		return true
	}
	if _, err := s.members.DeleteOne(ctx, bson.D{{Key: "_id", Value: d.ID}}); err != nil {
		s.log.Debug("deleting a dead member's record failed", "member", d.ID, "err", err)
	} else {
		s.obs.forget(d.ID)
	}
	return false
}

// memberAlive reports whether m has a live registration: its record
// exists and, unless it is a lease of this client that has not ended here,
// its heartbeat has not been seen unchanged for its TTL. A node is the
// authority on its own lease, which it ends before any other node declares
// it dead: a busy server answering a renewal late must not make a node
// refuse its own bindings while its lease lasts. A deleted record (revoked,
// evicted, declared dead elsewhere) ends the membership for everyone.
func (s *Store) memberAlive(ctx context.Context, m sessionstore.Member) (bool, error) {
	var d memberDoc
	err := s.members.FindOne(ctx, bson.D{{Key: "_id", Value: memberID(m)}}).Decode(&d)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if !d.valid() || d.member() != m {
		return false, fmt.Errorf("member record %q: %w", d.ID, sessionstore.ErrMalformed)
	}
	return s.live(ctx, d), nil
}

// Members implements sessionstore.Store.
func (s *Store) Members(ctx context.Context) ([]sessionstore.Member, error) {
	ctx, cancel, err := s.begin(ctx, "members")
	if err != nil {
		return nil, err
	}
	defer cancel()
	cur, err := s.members.Find(ctx, bson.D{})
	if err != nil {
		return nil, s.wrapErr("members", err)
	}
	var docs []memberDoc
	if err := cur.All(ctx, &docs); err != nil {
		return nil, s.wrapErr("members", err)
	}
	ids := make(map[string]bool, len(docs))
	out := make([]sessionstore.Member, 0, len(docs))
	for _, d := range docs {
		if !d.valid() {
			return nil, fmt.Errorf("mongo members: record %q: %w", d.ID, sessionstore.ErrMalformed)
		}
		ids[d.ID] = true
		if s.live(ctx, d) {
			out = append(out, d.member())
		}
	}
	s.obs.keep(ids)
	return out, nil
}

// Register implements sessionstore.Store. The lease is renewed every ttl/3.
func (s *Store) Register(ctx context.Context, addr string, ttl time.Duration) (sessionstore.Lease, error) {
	if addr == "" {
		return nil, errors.New("mongo register: empty address")
	}
	ms := int64((ttl + time.Millisecond - 1) / time.Millisecond)
	if ms < 3 {
		return nil, fmt.Errorf("mongo register %s: ttl %v is below 3ms", addr, ttl)
	}
	ctx, cancel, err := s.begin(ctx, "register")
	if err != nil {
		return nil, err
	}
	defer cancel()
	// The lease is counted from before the record is written.
	start := time.Now()
	inc, err := s.next(ctx, 0)
	if err != nil {
		return nil, s.wrapErr("register "+addr, err)
	}
	m := sessionstore.Member{Addr: addr, Incarnation: inc}
	d := memberDoc{ID: memberID(m), Addr: addr, Inc: inc, TTLMillis: ms, Beat: 0}
	if _, err := s.members.InsertOne(ctx, d); err != nil {
		return nil, s.wrapErr("register "+addr, err)
	}
	l := &lease{
		s:       s,
		member:  m,
		ttl:     time.Duration(ms) * time.Millisecond,
		done:    make(chan struct{}),
		stopped: make(chan struct{}),
	}
	l.ctx, l.stop = context.WithCancel(s.base)
	s.own.Store(d.ID, l)
	if !s.spawn(func() {
		defer s.own.Delete(d.ID)
		l.keepAlive(start)
	}) {
		s.own.Delete(d.ID)
		l.stop()
		return nil, fmt.Errorf("mongo register %s: %w", addr, fault.ErrShuttingDown)
	}
	s.kickWatches()
	return l, nil
}

// lease is a registration kept alive by keepAlive.
type lease struct {
	s      *Store
	member sessionstore.Member
	ttl    time.Duration
	beat   atomic.Int64 // the heartbeat last written

	ctx  context.Context // cancelled by Revoke and by Store.Close
	stop context.CancelFunc

	done     chan struct{}
	stopped  chan struct{}
	doneOnce sync.Once
}

func (l *lease) Member() sessionstore.Member { return l.member }

func (l *lease) Done() <-chan struct{} { return l.done }

func (l *lease) end() { l.doneOnce.Do(func() { close(l.done) }) }

// renew writes the next heartbeat; ok is false if the record is gone.
func (l *lease) renew(ctx context.Context) (ok bool, err error) {
	res, err := l.s.members.UpdateOne(ctx, bson.D{{Key: "_id", Value: memberID(l.member)}},
		bson.D{{Key: "$set", Value: bson.D{{Key: "beat", Value: l.beat.Add(1)}}}})
	if err != nil {
		return false, l.s.wrapErr("renew", err)
	}
	if res.MatchedCount == 0 {
		return false, nil
	}
	return true, nil
}

// keepAlive renews the lease every ttl/3 until it is revoked, or lost: the
// record is gone, or no renewal succeeded for a whole TTL counted from the
// start of the last successful one.
func (l *lease) keepAlive(lastOK time.Time) {
	defer close(l.stopped)
	defer l.end()
	gone := sessionstore.KeepAlive{
		TTL:    l.ttl,
		Renew:  l.renew,
		Gone:   "the member record was deleted (declared dead or revoked)",
		Logger: l.s.log.With("addr", l.member.Addr, "incarnation", l.member.Incarnation),
	}.Run(l.ctx, lastOK)
	if gone {
		l.s.kickWatches()
	}
}

// Revoke implements sessionstore.Lease: it deletes the record, then stops
// renewal and ends the lease. If the delete fails the lease is left as it
// was and the error wraps sessionstore.ErrUnavailable.
func (l *lease) Revoke(ctx context.Context) error {
	ctx, cancel, err := l.s.begin(ctx, "revoke")
	if err != nil {
		return err
	}
	defer cancel()
	if _, err := l.s.members.DeleteOne(ctx, bson.D{{Key: "_id", Value: memberID(l.member)}}); err != nil {
		return l.s.wrapErr("revoke", err)
	}
	l.stop()
	<-l.stopped
	l.s.obs.forget(memberID(l.member))
	l.s.kickWatches()
	return nil
}
