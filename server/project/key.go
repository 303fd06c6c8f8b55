package project

import (
	"strings"

	"github.com/yorkie-affinity/yorkie/server/backend/database"
)

// ScopedKey is the name of a project's document or channel group across the
// cluster (the key it is bound under in the session store): the key itself
// in the default project, so bindings made before projects existed stay
// valid, and "<project ID>/<key>" in the others. Document keys and channel
// routing keys never hold a "/", so the two forms cannot meet.
func ScopedKey(projectID, key string) string {
	if projectID == database.DefaultProjectID {
		return key
	}
	return projectID + "/" + key
}

// SplitScopedKey undoes ScopedKey.
func SplitScopedKey(scoped string) (projectID, key string) {
	if p, k, ok := strings.Cut(scoped, "/"); ok {
		return p, k
	}
	return database.DefaultProjectID, scoped
}
