package backend

// DocumentIDs lists the IDs of the documents of the project served here
// under the key (a removed document's key may have started a new one): what
// a draining node asks the key's next owner to build.
func (b *Backend) DocumentIDs(projectID, key string) []string {
	name := DocName{Project: projectID, Key: key}
	b.mu.RLock()
	defer b.mu.RUnlock()
	var ids []string
	for id, n := range b.names {
		if n == name {
			ids = append(ids, id)
		}
	}
	return ids
}
