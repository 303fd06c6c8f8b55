package memory

import (
	"encoding/binary"
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
)

// changeLog is a document's change log kept encoded: every change is one
// record in a single byte slice, found through a slice of integer offsets.
// Neither slice holds a pointer, so the garbage collector does not walk the
// log, however many changes every document ever stored add up to; decoded
// protobuf messages (a tree of maps, strings and sub-messages per change)
// made the collector's marking grow with the history of the whole database.
//
// A record is: uvarint client_seq, uvarint length of the actor ID, the actor
// ID, then the body in protobuf wire form up to the next record.
//
// Records are only ever appended after len(data), so a reader that took the
// slices under the document's lock may decode them after releasing it.
type changeLog struct {
	// base is the server_seq before the first record: 0 until a compaction
	// replaces the log.
	base int64
	data []byte
	// starts[i] is where the record of server_seq base+i+1 begins in data.
	starts []int
}

// head is the server_seq of the last change of the log.
func (l *changeLog) head() int64 { return l.base + int64(len(l.starts)) }

// encodeChanges returns the records of changes, one after the other, and
// their lengths.
func encodeChanges(changes []*database.Change) ([]byte, []int, error) {
	// Sizing first lets the bodies be written into one allocation; the
	// marshalling then reuses the sizes computed.
	size := 0
	for _, c := range changes {
		size += 2*binary.MaxVarintLen32 + len(c.ActorID) + proto.Size(c.Body)
	}
	buf := make([]byte, 0, size)
	lens := make([]int, len(changes))
	opts := proto.MarshalOptions{UseCachedSize: true}
	for i, c := range changes {
		before := len(buf)
		buf = binary.AppendUvarint(buf, uint64(c.ClientSeq))
		buf = binary.AppendUvarint(buf, uint64(len(c.ActorID)))
		buf = append(buf, c.ActorID...)
		var err error
		if buf, err = opts.MarshalAppend(buf, c.Body); err != nil {
			return nil, nil, fmt.Errorf("encode change %d: %w", c.ServerSeq, err)
		}
		lens[i] = len(buf) - before
	}
	return buf, lens, nil
}

// appendRecords adds records encoded by encodeChanges after the head.
func (l *changeLog) appendRecords(buf []byte, lens []int) {
	if l.data == nil {
		// A document's first records: most documents stay this small, so
		// do not leave the capacity append would add.
		l.data = make([]byte, 0, len(buf))
	}
	at := len(l.data)
	l.data = append(l.data, buf...)
	for _, n := range lens {
		l.starts = append(l.starts, at)
		at += n
	}
}

// reset replaces the log with records encoded by encodeChanges, the first
// of them at server_seq base+1.
func (l *changeLog) reset(base int64, buf []byte, lens []int) {
	*l = changeLog{base: base}
	l.appendRecords(buf, lens)
}

// view is the part of a log a reader decodes after releasing the document's
// lock: records [from, to] by server_seq.
type logView struct {
	data   []byte
	starts []int
	first  int64 // server_seq of starts[0]
}

// view returns the records with from <= server_seq <= to (clamped to the
// log). The caller holds the document's lock.
func (l *changeLog) view(from, to int64) logView {
	from = max(from, l.base+1)
	to = min(to, l.head())
	if from > to {
		return logView{}
	}
	lo, hi := from-l.base-1, to-l.base
	end := len(l.data)
	if int(hi) < len(l.starts) {
		end = l.starts[hi]
	}
	return logView{data: l.data[:end], starts: l.starts[lo:hi], first: from}
}

// record returns the i-th record of the view.
func (v logView) record(i int) []byte {
	end := len(v.data)
	if i+1 < len(v.starts) {
		end = v.starts[i+1]
	}
	return v.data[v.starts[i]:end]
}

var errCorruptRecord = errors.New("corrupt change record")

// header reads a record's client_seq and actor ID, and returns the rest:
// the body.
func header(rec []byte) (clientSeq uint32, actor []byte, body []byte, err error) {
	seq, n := binary.Uvarint(rec)
	if n <= 0 {
		return 0, nil, nil, errCorruptRecord
	}
	rec = rec[n:]
	alen, n := binary.Uvarint(rec)
	if n <= 0 || uint64(len(rec)-n) < alen {
		return 0, nil, nil, errCorruptRecord
	}
	rec = rec[n:]
	return uint32(seq), rec[:alen], rec[alen:], nil
}

// decode returns the view's changes, each decoded into memory of the
// caller's own, in a slice with room for size changes.
func (v logView) decode(size int) ([]*database.Change, error) {
	out := make([]*database.Change, len(v.starts), max(size, len(v.starts)))
	if len(v.starts) == 0 {
		return out, nil
	}
	rows := make([]database.Change, len(v.starts))
	bodies := make([]api.Change, len(v.starts))
	for i := range v.starts {
		seq := v.first + int64(i)
		clientSeq, actor, body, err := header(v.record(i))
		if err == nil {
			err = proto.Unmarshal(body, &bodies[i])
		}
		if err != nil {
			return nil, fmt.Errorf("change %d: %w", seq, err)
		}
		rows[i] = database.Change{ServerSeq: seq, ActorID: string(actor), ClientSeq: clientSeq, Body: &bodies[i]}
		out[i] = &rows[i]
	}
	return out, nil
}
