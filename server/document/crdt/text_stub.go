package crdt

// Text is a placeholder for the rich text type until it lands; it holds nothing.
type Text struct {
	base
}

// NewText returns an empty text created at createdAt.
func NewText(createdAt Ticket) *Text { return &Text{base: base{createdAt: createdAt}} }

// DataSize implements Element.
func (t *Text) DataSize() DataSize { return DataSize{Meta: t.metaSize()} }

// JSON implements Element.
func (t *Text) JSON(b []byte) []byte { return append(b, "[]"...) }

// DeepCopy implements Element.
func (t *Text) DeepCopy() Element { c := *t; return &c }

// GCPairs lists the removed nodes waiting for collection.
func (t *Text) GCPairs() []GCPair { return nil }
