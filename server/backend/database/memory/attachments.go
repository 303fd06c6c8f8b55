package memory

import (
	"encoding/binary"
	"time"

	"github.com/yorkie-affinity/yorkie/server/backend/database"
)

// attachmentSet is a document's attachments, one per client that ever
// attached it, kept as values in one slice with each version vector encoded:
// a document keeps the attachment of every client that left it, so a map and
// a record with a map of its own per attachment made the collector's work grow
// with every attach the database ever served. Its zero value is empty.
type attachmentSet struct {
	list []storedAttachment
	// index finds a client's attachment in list once the set has more than
	// scanLimit of them; nil until then.
	index map[string]int
}

// scanLimit is how many attachments a set searches by scanning.
const scanLimit = 16

// storedAttachment is an attachment at rest. The document's ID is the
// document's own.
type storedAttachment struct {
	clientID   string
	status     database.AttachmentStatus
	clientSeq  uint32
	serverSeq  int64
	attachedAt int64
	docEpoch   int64
	// vector is the version vector encoded by encodeVector.
	vector    []byte
	updatedAt time.Time
}

// storeAttachment returns a's form at rest.
func storeAttachment(a *database.Attachment) storedAttachment {
	return storedAttachment{
		clientID:   a.ClientID,
		status:     a.Status,
		clientSeq:  a.ClientSeq,
		serverSeq:  a.ServerSeq,
		attachedAt: a.AttachedAt,
		docEpoch:   a.DocEpoch,
		vector:     encodeVector(a.VersionVector),
		updatedAt:  a.UpdatedAt,
	}
}

// attachment returns the stored attachment in memory of the caller's own.
func (s *storedAttachment) attachment(docID string) *database.Attachment {
	return &database.Attachment{
		ClientID:      s.clientID,
		DocID:         docID,
		Status:        s.status,
		ServerSeq:     s.serverSeq,
		ClientSeq:     s.clientSeq,
		AttachedAt:    s.attachedAt,
		VersionVector: decodeVector(s.vector),
		DocEpoch:      s.docEpoch,
		UpdatedAt:     s.updatedAt,
	}
}

// find returns the client's attachment, or nil.
func (s *attachmentSet) find(clientID string) *storedAttachment {
	if s.index != nil {
		if i, ok := s.index[clientID]; ok {
			return &s.list[i]
		}
		return nil
	}
	for i := range s.list {
		if s.list[i].clientID == clientID {
			return &s.list[i]
		}
	}
	return nil
}

// put stores a, replacing the client's attachment if there is one.
func (s *attachmentSet) put(a storedAttachment) {
	if old := s.find(a.clientID); old != nil {
		*old = a
		return
	}
	if s.list == nil {
		s.list = make([]storedAttachment, 0, 1) // most documents have one client
	}
	s.list = append(s.list, a)
	switch n := len(s.list); {
	case s.index != nil:
		s.index[a.clientID] = n - 1
	case n > scanLimit:
		s.index = make(map[string]int, n)
		for i := range s.list {
			s.index[s.list[i].clientID] = i
		}
	}
}

// encodeVector returns v as uvarint-length-prefixed keys each followed by a
// varint value; nil for a nil vector, so that it reads back as nil.
func encodeVector(v map[string]int64) []byte {
	if v == nil {
		return nil
	}
	var scratch [256]byte
	buf := binary.AppendUvarint(scratch[:0], uint64(len(v)))
	for k, n := range v {
		buf = binary.AppendUvarint(buf, uint64(len(k)))
		buf = append(buf, k...)
		buf = binary.AppendVarint(buf, n)
	}
	// Stored for good: exactly its size.
	return append([]byte(nil), buf...)
}

// decodeVector reads a vector encodeVector wrote. Only this package writes
// the bytes, so a short record cannot occur; it would read as the entries
// before it.
func decodeVector(buf []byte) map[string]int64 {
	if buf == nil {
		return nil
	}
	n, w := binary.Uvarint(buf)
	buf = buf[w:]
	v := make(map[string]int64, n)
	for range n {
		klen, w := binary.Uvarint(buf)
		if w <= 0 || uint64(len(buf)-w) < klen {
			break
		}
		k := string(buf[w : w+int(klen)])
		buf = buf[w+int(klen):]
		val, w := binary.Varint(buf)
		if w <= 0 {
			break
		}
		buf = buf[w:]
		v[k] = val
	}
	return v
}
