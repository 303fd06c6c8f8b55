package mongo

import (
	"context"
	"time"
)

// hintTimeout bounds a head hint raised after an append has returned.
const hintTimeout = 10 * time.Second

// docAndFence reads the document's record and checks that no epoch above
// epoch claimed it: the two reads every write of the log or of an
// attachment starts with, sent at once rather than one after the other (a
// PushPull holds its document's lock across these round trips).
func (db *DB) docAndFence(ctx context.Context, docID string, epoch int64) (*docRecord, error) {
	fenced := make(chan error, 1)
	go func() {
		_, err := db.checkFence(ctx, docID, epoch)
		fenced <- err
	}()
	doc, err := db.loadDocHex(ctx, docID)
	ferr := <-fenced
	if err != nil {
		return nil, err
	}
	if ferr != nil {
		return nil, ferr
	}
	return doc, nil
}

// raiseHeadHintLater raises the head hint after the append that stored
// last has returned: the hint only saves later lookups some steps, so the
// caller need not wait for its round trip. Close waits for it.
func (db *DB) raiseHeadHintLater(ctx context.Context, docID string, last int64) {
	db.hints.Add(1)
	go func() {
		defer db.hints.Done()
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), hintTimeout)
		defer cancel()
		db.raiseHeadHint(ctx, docID, last)
	}()
}
