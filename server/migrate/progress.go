package migrate

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// progress prints, at most every interval, how many documents and changes
// are done, the rate of changes copied and the time left. A run copies the
// new changes of every document in one pass, then completes the documents
// one by one: the changes to copy are the server_seq values past each
// document's head (a document found unchanged counts as done at once), and
// the time left weighs the two phases alike.
type progress struct {
	w        io.Writer
	every    time.Duration
	start    time.Time
	mu       sync.Mutex
	last     time.Time
	docs     int
	docTotal int
	skipped  int64 // server_seq of the documents that needed no copy
	total    int64
	copied   int64 // changes (and placeholders) written
}

func newProgress(w io.Writer, every time.Duration, docs []*upDocument) *progress {
	p := &progress{w: w, every: every, start: time.Now(), docTotal: len(docs)}
	for _, d := range docs {
		p.total += d.ServerSeq
	}
	p.last = p.start
	return p
}

// changes records n more changes written.
func (p *progress) changes(n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.copied += n
	p.maybePrint(false)
}

// docDone records a document finished, whatever its outcome; uncopied is
// the part of its server_seq no change was copied for (all of it for a
// document unchanged or failed before the pass, none for a completed one).
func (p *progress) docDone(uncopied int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.docs++
	p.skipped += uncopied
	p.maybePrint(false)
}

func (p *progress) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.maybePrint(true)
}

func (p *progress) maybePrint(force bool) {
	if p.w == nil {
		return
	}
	now := time.Now()
	if !force && now.Sub(p.last) < p.every {
		return
	}
	p.last = now
	elapsed := now.Sub(p.start)
	rate := float64(p.copied) / max(elapsed.Seconds(), 1e-3)
	done := min(p.skipped+p.copied, p.total)
	frac := 1.0
	if p.total > 0 && p.docTotal > 0 {
		frac = (float64(done)/float64(p.total) + float64(p.docs)/float64(p.docTotal)) / 2
	}
	left := "?"
	switch {
	case frac >= 1:
		left = "0s"
	case frac > 0:
		left = time.Duration(float64(elapsed) * (1 - frac) / frac).Round(time.Second).String()
	}
	fmt.Fprintf(p.w, "documents %d/%d, changes %d/%d (%d written), %.0f changes/s, %s elapsed, %s left\n",
		p.docs, p.docTotal, done, p.total, p.copied, rate, elapsed.Round(time.Second), left)
}
