package backend

// docNames remembers the name of every document ID this node has looked up,
// both ways: by ID for the calls that name a document by ID, and by name for
// ReleaseKey and DocumentIDs, so that those look up a key instead of walking
// every document this node has ever seen. Names never change, so entries are
// only added. The caller holds Backend.mu.
type docNames struct {
	byID map[string]DocName
	// byName holds the first ID remembered under a name; a removed
	// document's key may start another document, whose ID goes to more.
	byName map[DocName]string
	more   map[DocName][]string
}

func newDocNames() docNames {
	return docNames{
		byID:   make(map[string]DocName),
		byName: make(map[DocName]string),
		more:   make(map[DocName][]string),
	}
}

// add remembers that id is named n.
func (d *docNames) add(id string, n DocName) {
	if _, ok := d.byID[id]; ok {
		return
	}
	d.byID[id] = n
	if _, ok := d.byName[n]; !ok {
		d.byName[n] = id
		return
	}
	d.more[n] = append(d.more[n], id)
}

// ids lists the IDs remembered under n.
func (d *docNames) ids(n DocName) []string {
	first, ok := d.byName[n]
	if !ok {
		return nil
	}
	return append([]string{first}, d.more[n]...)
}
