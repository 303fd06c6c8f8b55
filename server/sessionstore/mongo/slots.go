package mongo

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/bson"
	"go.mongodb.org/mongo-driver/mongo"

	"github.com/yorkie-affinity/yorkie/server/sessionstore"
)

// slotDoc is a binding (in the bindings collection, _id = document key) or a
// role hold (in the roles collection, _id = role name).
type slotDoc struct {
	ID   string `bson:"_id"`
	Addr string `bson:"addr"`
	Inc  int64  `bson:"inc"`
	// Ver is the binding's epoch, drawn from the counter; a role's Ver
	// only names the hold, for its takeover markers.
	Ver int64 `bson:"ver"`
}

func (d slotDoc) owner() sessionstore.Member {
	return sessionstore.Member{Addr: d.Addr, Incarnation: d.Inc}
}

// markerDoc claims the replacement of one slot version. Its _id is
// "<collection>/<attempt>/<version>/<slot id>".
type markerDoc struct {
	ID   string `bson:"_id"`
	Addr string `bson:"addr"`
	Inc  int64  `bson:"inc"`
	// At is the creator's clock in Unix milliseconds, for pruning only.
	At int64 `bson:"at"`
}

// retryPause is how long a caller waits for another's takeover to finish
// before it reads the slot again.
const retryPause = 5 * time.Millisecond

// slots runs the compare-and-set of one collection of slots.
type slots struct {
	s   *Store
	col *mongo.Collection

	// blocked remembers when this process first met each marker that kept
	// it from a takeover.
	mu      sync.Mutex
	blocked map[string]time.Time
}

func newSlots(s *Store, col *mongo.Collection) *slots {
	return &slots{s: s, col: col, blocked: map[string]time.Time{}}
}

// read returns the slot id; ok is false if there is none.
func (sl *slots) read(ctx context.Context, id string) (slotDoc, bool, error) {
	var d slotDoc
	err := sl.col.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&d)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return slotDoc{}, false, nil
	}
	if err != nil {
		return slotDoc{}, false, err
	}
	if d.ID != id || d.Addr == "" || d.Ver <= 0 {
		return slotDoc{}, false, fmt.Errorf("slot %q: %w", id, sessionstore.ErrMalformed)
	}
	return d, true, nil
}

// live returns the slot id if its owner is alive.
func (sl *slots) live(ctx context.Context, id string) (slotDoc, bool, error) {
	d, ok, err := sl.read(ctx, id)
	if err != nil || !ok {
		return d, false, err
	}
	alive, err := sl.s.memberAlive(ctx, d.owner())
	if err != nil {
		return slotDoc{}, false, err
	}
	return d, alive, nil
}

func (sl *slots) markerID(attempt int, d slotDoc) string {
	return sl.col.Name() + "/" + strconv.Itoa(attempt) + "/" + strconv.FormatInt(d.Ver, 10) + "/" + d.ID
}

// takeover deletes slot d for by, provided by wins the marker of d's
// version. It returns false if another caller holds that marker and is
// presumably replacing the slot; the caller then reads the slot again.
func (sl *slots) takeover(ctx context.Context, d slotDoc, by sessionstore.Member) (bool, error) {
	for attempt := 0; ; attempt++ {
		id := sl.markerID(attempt, d)
		start := time.Now()
		_, err := sl.s.markers.InsertOne(ctx, markerDoc{ID: id, Addr: by.Addr, Inc: by.Incarnation, At: start.UnixMilli()})
		if err == nil {
			sl.s.pruneMarkers(ctx)
			if time.Since(start) > sl.s.cfg.TakeoverTimeout/2 {
				// Others may already be past this marker: leave the slot.
				return false, nil
			}
			if _, err := sl.col.DeleteOne(ctx, bson.D{{Key: "_id", Value: d.ID}}); err != nil {
				return false, err
			}
			return true, nil
		}
		if !mongo.IsDuplicateKeyError(err) {
			return false, err
		}
		if !sl.markerExpired(id) {
			return false, nil
		}
	}
}

// markerExpired reports whether marker id has blocked this process for
// longer than TakeoverTimeout.
func (sl *slots) markerExpired(id string) bool {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	now := time.Now()
	first, ok := sl.blocked[id]
	if !ok {
		if len(sl.blocked) > 10000 {
			clear(sl.blocked)
		}
		sl.blocked[id] = now
		return false
	}
	if now.Sub(first) < sl.s.cfg.TakeoverTimeout {
		return false
	}
	delete(sl.blocked, id)
	return true
}

// acquire returns the live slot id, or makes owner its holder with a new
// version if it has none. keep says whether an existing live slot stands;
// bindings keep any live owner, roles too.
func (sl *slots) acquire(ctx context.Context, id string, owner sessionstore.Member) (slotDoc, error) {
	for {
		if err := ctx.Err(); err != nil {
			return slotDoc{}, fmt.Errorf("%w: %w", sessionstore.ErrUnavailable, err)
		}
		d, found, err := sl.read(ctx, id)
		if err != nil {
			return slotDoc{}, err
		}
		floor := int64(0)
		if found {
			alive, err := sl.s.memberAlive(ctx, d.owner())
			if err != nil {
				return slotDoc{}, err
			}
			if alive {
				return d, nil
			}
			won, err := sl.takeover(ctx, d, owner)
			if err != nil {
				return slotDoc{}, err
			}
			if !won {
				if err := pause(ctx, retryPause); err != nil {
					return slotDoc{}, fmt.Errorf("%w: %w", sessionstore.ErrUnavailable, err)
				}
				continue
			}
			floor = d.Ver + 1
		}
		alive, err := sl.s.memberAlive(ctx, owner)
		if err != nil {
			return slotDoc{}, err
		}
		if !alive {
			return slotDoc{}, fmt.Errorf("%s#%d: %w", owner.Addr, owner.Incarnation, sessionstore.ErrNotMember)
		}
		ver, err := sl.s.next(ctx, floor)
		if err != nil {
			return slotDoc{}, err
		}
		nd := slotDoc{ID: id, Addr: owner.Addr, Inc: owner.Incarnation, Ver: ver}
		if _, err := sl.col.InsertOne(ctx, nd); err != nil {
			if mongo.IsDuplicateKeyError(err) {
				continue
			}
			return slotDoc{}, err
		}
		return nd, nil
	}
}

// release deletes slot d if it is still the one in force. It reports
// whether d was in force with a live owner.
func (sl *slots) release(ctx context.Context, d slotDoc) (bool, error) {
	cur, found, err := sl.read(ctx, d.ID)
	if err != nil || !found || cur != d {
		return false, err
	}
	alive, err := sl.s.memberAlive(ctx, d.owner())
	if err != nil {
		return false, err
	}
	won, err := sl.takeover(ctx, d, d.owner())
	if err != nil || !won {
		return false, err
	}
	return alive, nil
}

// pruneMarkers deletes old takeover markers now and then.
func (s *Store) pruneMarkers(ctx context.Context) {
	if s.takeovers.Add(1)%64 != 0 {
		return
	}
	cutoff := time.Now().Add(-markerRetention).UnixMilli()
	if _, err := s.markers.DeleteMany(ctx, bson.D{{Key: "at", Value: bson.D{{Key: "$lt", Value: cutoff}}}}); err != nil {
		s.log.Debug("pruning takeover markers failed", "err", err)
	}
}
