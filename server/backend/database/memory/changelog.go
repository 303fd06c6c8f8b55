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
// record in byte chunks, found through a slice of integer positions. Neither
// holds a pointer but the chunks' headers, so the garbage collector does not
// walk the log, however many changes every document ever stored add up to;
// decoded protobuf messages (a tree of maps, strings and sub-messages per
// change) made the collector's marking grow with the history of the whole
// database.
//
// A record is: uvarint client_seq, uvarint length of the actor ID, the actor
// ID, then the body in protobuf wire form up to the record's end.
//
// A chunk is allocated whole and never moves, so a long log is not copied as
// it grows; bytes are only ever written after the last record, so a reader
// that took the slices under the document's lock may decode the records
// after releasing it.
type changeLog struct {
	// base is the server_seq before the first record: 0 until a compaction
	// replaces the log.
	base   int64
	chunks [][]byte
	used   int // bytes of the last chunk holding records
	// ends[i] is where the record of server_seq base+i+1 ends (see pos); it
	// begins where the one before it ends if that is in the same chunk, at
	// the chunk's start otherwise.
	ends []uint64
}

// maxChunk is the size a log's chunks grow to; a longer record has a chunk
// of its own.
const maxChunk = 64 << 10

// pos packs a chunk's index and an offset in it.
func pos(chunk, off int) uint64 { return uint64(chunk)<<32 | uint64(off) }

// unpos is the inverse of pos.
func unpos(p uint64) (chunk, off int) { return int(p >> 32), int(p & (1<<32 - 1)) }

// head is the server_seq of the last change of the log.
func (l *changeLog) head() int64 { return l.base + int64(len(l.ends)) }

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
	for _, n := range lens {
		rec := buf[:n]
		buf = buf[n:]
		if len(l.chunks) == 0 || l.used+n > len(l.chunks[len(l.chunks)-1]) {
			// A new chunk for the rest of the batch at least, and as large
			// as the log so far (up to maxChunk): a log that keeps growing
			// allocates about as much as it holds, and a document of one
			// batch exactly that.
			size, held := n+len(buf), 0
			for _, c := range l.chunks {
				held += len(c)
			}
			if held > 0 {
				size = max(size, min(held, maxChunk))
			}
			l.chunks = append(l.chunks, make([]byte, size))
			l.used = 0
		}
		copy(l.chunks[len(l.chunks)-1][l.used:], rec)
		l.used += n
		l.ends = append(l.ends, pos(len(l.chunks)-1, l.used))
	}
}

// reset replaces the log with records encoded by encodeChanges, the first
// of them at server_seq base+1.
func (l *changeLog) reset(base int64, buf []byte, lens []int) {
	*l = changeLog{base: base}
	l.appendRecords(buf, lens)
}

// logView is the part of a log a reader decodes after releasing the
// document's lock: records [from, to] by server_seq.
type logView struct {
	chunks [][]byte
	// ends are the records' ends; the first record begins at prev if that
	// is in its chunk.
	ends  []uint64
	prev  uint64
	first int64 // server_seq of the first record
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
	v := logView{chunks: l.chunks, ends: l.ends[lo:hi], first: from}
	if lo > 0 {
		v.prev = l.ends[lo-1]
	} else {
		v.prev = pos(-1, 0) // no record before: in no chunk
	}
	return v
}

// record returns the i-th record of the view.
func (v logView) record(i int) []byte {
	chunk, end := unpos(v.ends[i])
	before := v.prev
	if i > 0 {
		before = v.ends[i-1]
	}
	start := 0
	if c, off := unpos(before); c == chunk {
		start = off
	}
	return v.chunks[chunk][start:end]
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
	out := make([]*database.Change, len(v.ends), max(size, len(v.ends)))
	if len(v.ends) == 0 {
		return out, nil
	}
	rows := make([]database.Change, len(v.ends))
	bodies := make([]api.Change, len(v.ends))
	for i := range v.ends {
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
