package migrate

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// progress prints, at most every interval, how many documents and changes
// are done, the rate of changes copied and the time left. The work of a
// document is its server_seq (what a first run copies); a document found
// unchanged counts as done at once.
type progress struct {
	w        io.Writer
	every    time.Duration
	start    time.Time
	mu       sync.Mutex
	last     time.Time
	docs     int
	docTotal int
	work     int64 // server_seq of the documents done
	total    int64
	copied   int64 // changes (and placeholders) written
	inDoc    int64 // of them, in the document under way
}

func newProgress(w io.Writer, every time.Duration, docs []*upDocument) *progress {
	p := &progress{w: w, every: every, start: time.Now(), docTotal: len(docs)}
	for _, d := range docs {
		p.total += d.ServerSeq
	}
	p.last = p.start
	return p
}

// changes records n more changes written of the document under way.
func (p *progress) changes(n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.copied += n
	p.inDoc += n
	p.maybePrint(false)
}

// docDone records a document finished, whatever its outcome.
func (p *progress) docDone(serverSeq int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.docs++
	p.work += serverSeq
	p.inDoc = 0
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
	done := p.work + p.inDoc
	left := "?"
	if done > 0 && done < p.total {
		left = (time.Duration(float64(elapsed) * float64(p.total-done) / float64(done))).Round(time.Second).String()
	} else if done >= p.total {
		left = "0s"
	}
	fmt.Fprintf(p.w, "documents %d/%d, changes %d/%d (%d written), %.0f changes/s, %s elapsed, %s left\n",
		p.docs, p.docTotal, min(done, p.total), p.total, p.copied, rate, elapsed.Round(time.Second), left)
}
