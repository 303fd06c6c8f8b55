package memory

import (
	"context"
	"sync"
	"time"
)

// strikeStore keeps attempt counts under a lock of their own.
type strikeStore struct {
	mu   sync.Mutex
	keys map[string]*strike
}

type strike struct {
	count int
	last  time.Time
}

// AddStrike implements database.Strikes.
func (db *DB) AddStrike(ctx context.Context, key string, now time.Time, window time.Duration) (int, error) {
	if err := db.check(ctx, "add strike"); err != nil {
		return 0, err
	}
	s := &db.strikes
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.keys == nil {
		s.keys = make(map[string]*strike)
	}
	st, ok := s.keys[key]
	if !ok || now.Sub(st.last) >= window {
		st = &strike{}
		s.keys[key] = st
	}
	st.count++
	if now.After(st.last) {
		st.last = now
	}
	return st.count, nil
}

// FindStrikes implements database.Strikes.
func (db *DB) FindStrikes(ctx context.Context, key string) (int, time.Time, error) {
	if err := db.check(ctx, "find strikes"); err != nil {
		return 0, time.Time{}, err
	}
	s := &db.strikes
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, ok := s.keys[key]; ok {
		return st.count, st.last, nil
	}
	return 0, time.Time{}, nil
}

// ClearStrikes implements database.Strikes.
func (db *DB) ClearStrikes(ctx context.Context, key string) error {
	if err := db.check(ctx, "clear strikes"); err != nil {
		return err
	}
	s := &db.strikes
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.keys, key)
	return nil
}

// RemoveStrikesBefore implements database.Strikes.
func (db *DB) RemoveStrikesBefore(ctx context.Context, before time.Time) (int, error) {
	if err := db.check(ctx, "remove strikes"); err != nil {
		return 0, err
	}
	s := &db.strikes
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for k, st := range s.keys {
		if st.last.Before(before) {
			delete(s.keys, k)
			n++
		}
	}
	return n, nil
}
