package crdt

import (
	"sort"
	"unicode/utf16"
)

// Object is a JSON object: string keys to elements, last writer wins per key.
type Object struct {
	base
	members elementRHT
}

// NewObject returns an empty object created at createdAt.
func NewObject(createdAt Ticket) *Object {
	return &Object{base: base{createdAt: createdAt}, members: newElementRHT()}
}

// Set puts elem under key at executedAt and returns the live element it displaced (now
// removed), or nil.
func (o *Object) Set(key string, elem Element, executedAt Ticket) Element {
	return o.members.set(key, elem, executedAt)
}

// RemoveChild marks the member created at createdAt removed at executedAt. It returns the
// member, false when the object never held it.
func (o *Object) RemoveChild(createdAt, executedAt Ticket) (Element, bool) {
	return o.members.removeByCreatedAt(createdAt, executedAt)
}

// Get returns the live element under key.
func (o *Object) Get(key string) (Element, bool) { return o.members.get(key) }

// GetByID returns the member created at createdAt, removed or not.
func (o *Object) GetByID(createdAt Ticket) (Element, bool) {
	m, ok := o.members.byCreatedAt[createdAt]
	if !ok {
		return nil, false
	}
	return m.elem, true
}

// Members calls fn for every member, removed ones included, in insertion order (the order
// snapshots list them).
func (o *Object) Members(fn func(key string, elem Element)) {
	for m := o.members.head; m != nil; m = m.next {
		fn(m.key, m.elem)
	}
}

// Len is the number of members held, removed ones included.
func (o *Object) Len() int { return len(o.members.byCreatedAt) }

// Purge implements Container.
func (o *Object) Purge(child Element) { o.members.purge(child) }

// Descendants implements Container.
func (o *Object) Descendants(fn func(elem Element, parent Container) bool) bool {
	for m := o.members.head; m != nil; m = m.next {
		if fn(m.elem, o) {
			// As the SDK: a true from fn ends this container's walk only.
			return true
		}
		if c, ok := m.elem.(Container); ok {
			c.Descendants(fn)
		}
	}
	return false
}

// SubPathOf implements Container.
func (o *Object) SubPathOf(createdAt Ticket) (string, bool) {
	m, ok := o.members.byCreatedAt[createdAt]
	if !ok {
		return "", false
	}
	return m.key, true
}

// DataSize implements Element: an object counts only its tickets.
func (o *Object) DataSize() DataSize { return DataSize{Meta: o.metaSize()} }

// JSON implements Element: live members, keys sorted by UTF-16 code units as JS sorts.
func (o *Object) JSON(b []byte) []byte {
	keys := make([]string, 0, len(o.members.byKey))
	seen := make(map[string]struct{}, len(o.members.byKey))
	for m := o.members.head; m != nil; m = m.next {
		if m.elem.IsRemoved() {
			continue
		}
		if _, ok := seen[m.key]; ok {
			continue
		}
		seen[m.key] = struct{}{}
		keys = append(keys, m.key)
	}
	sort.Slice(keys, func(i, j int) bool { return lessUTF16(keys[i], keys[j]) })
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = appendEscaped(b, k)
		b = append(b, '"', ':')
		elem, ok := o.members.get(k)
		if !ok {
			// The key's winner is removed while an older member under it is not (a set
			// that lost to a removed winner): the SDK cannot print this state at all; we
			// print the live member.
			elem = o.liveMember(k)
		}
		b = elem.JSON(b)
	}
	return append(b, '}')
}

func (o *Object) liveMember(key string) Element {
	for m := o.members.head; m != nil; m = m.next {
		if m.key == key && !m.elem.IsRemoved() {
			return m.elem
		}
	}
	return nil
}

// DeepCopy implements Element.
func (o *Object) DeepCopy() Element {
	c := NewObject(o.createdAt)
	c.movedAt, c.removedAt = o.movedAt, o.removedAt
	copies := make(map[*rhtMember]*rhtMember, len(o.members.byCreatedAt))
	for m := o.members.head; m != nil; m = m.next {
		copies[m] = c.members.append(&rhtMember{key: m.key, elem: m.elem.DeepCopy()})
	}
	for k, m := range o.members.byKey {
		c.members.byKey[k] = copies[m]
	}
	return c
}

// lessUTF16 orders strings by their UTF-16 code units, as JavaScript compares strings.
func lessUTF16(a, b string) bool {
	for i, j := 0, 0; ; {
		if i == len(a) || j == len(b) {
			return i == len(a) && j < len(b)
		}
		if a[i] < 0x80 && b[j] < 0x80 {
			if a[i] != b[j] {
				return a[i] < b[j]
			}
			i++
			j++
			continue
		}
		ra, na := decodeRune(a[i:])
		rb, nb := decodeRune(b[j:])
		if ra != rb {
			ua, ub := utf16Units(ra), utf16Units(rb)
			if ua[0] != ub[0] {
				return ua[0] < ub[0]
			}
			return ua[1] < ub[1]
		}
		i += na
		j += nb
	}
}

// utf16Units is r's first and second UTF-16 code unit (0 for the second of a BMP rune).
func utf16Units(r rune) [2]uint16 {
	if r >= 0x10000 {
		h, l := utf16.EncodeRune(r)
		return [2]uint16{uint16(h), uint16(l)}
	}
	return [2]uint16{uint16(r), 0}
}

// unsortedJSON writes the live members in insertion order, as the SDK's toJSON.
func (o *Object) unsortedJSON(b []byte) []byte {
	b = append(b, '{')
	first := true
	for m := o.members.head; m != nil; m = m.next {
		if m.elem.IsRemoved() {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, '"')
		b = appendEscaped(b, m.key)
		b = append(b, '"', ':')
		b = appendUnsortedJSON(b, m.elem)
	}
	return append(b, '}')
}
