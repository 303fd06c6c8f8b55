package memory

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/yorkie-affinity/yorkie/server/backend/database"
)

// schemaStore keeps the schemas of every project under a lock of its own.
type schemaStore struct {
	mu      sync.Mutex
	schemas map[schemaName]*database.SchemaInfo
}

type schemaName struct {
	project, name string
	version       int
}

// CreateSchema implements database.Schemas.
func (db *DB) CreateSchema(ctx context.Context, s *database.SchemaInfo) (*database.SchemaInfo, error) {
	if err := db.check(ctx, "create schema"); err != nil {
		return nil, err
	}
	st := &db.schemas
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.schemas == nil {
		st.schemas = make(map[schemaName]*database.SchemaInfo)
	}
	k := schemaName{s.ProjectID, s.Name, s.Version}
	if _, ok := st.schemas[k]; ok {
		return nil, fmt.Errorf("create schema %s: %w", s.Key(), database.ErrSchemaAlreadyExists)
	}
	c := s.Clone()
	c.ID = db.clientIDs.Next()
	c.CreatedAt = time.Now().UTC()
	st.schemas[k] = c
	return c.Clone(), nil
}

// FindSchema implements database.Schemas.
func (db *DB) FindSchema(ctx context.Context, projectID, name string, version int) (*database.SchemaInfo, error) {
	if err := db.check(ctx, "find schema"); err != nil {
		return nil, err
	}
	st := &db.schemas
	st.mu.Lock()
	defer st.mu.Unlock()
	s, ok := st.schemas[schemaName{projectID, name, version}]
	if !ok {
		return nil, fmt.Errorf("find schema %s: %w", database.SchemaKey(name, version), database.ErrSchemaNotFound)
	}
	return s.Clone(), nil
}

// collect returns the project's schemas that keep says to, ordered by name
// and then newest version first. The caller holds mu.
func (st *schemaStore) collect(projectID string, keep func(*database.SchemaInfo) bool) []*database.SchemaInfo {
	var out []*database.SchemaInfo
	for k, s := range st.schemas {
		if k.project == projectID && keep(s) {
			out = append(out, s.Clone())
		}
	}
	slices.SortFunc(out, func(a, b *database.SchemaInfo) int {
		return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(b.Version, a.Version))
	})
	return out
}

// FindSchemaVersions implements database.Schemas.
func (db *DB) FindSchemaVersions(ctx context.Context, projectID, name string) ([]*database.SchemaInfo, error) {
	if err := db.check(ctx, "find schema versions"); err != nil {
		return nil, err
	}
	st := &db.schemas
	st.mu.Lock()
	defer st.mu.Unlock()
	out := st.collect(projectID, func(s *database.SchemaInfo) bool { return s.Name == name })
	if len(out) == 0 {
		return nil, fmt.Errorf("find versions of schema %q: %w", name, database.ErrSchemaNotFound)
	}
	return out, nil
}

// ListSchemas implements database.Schemas.
func (db *DB) ListSchemas(ctx context.Context, projectID string) ([]*database.SchemaInfo, error) {
	if err := db.check(ctx, "list schemas"); err != nil {
		return nil, err
	}
	st := &db.schemas
	st.mu.Lock()
	defer st.mu.Unlock()
	all := st.collect(projectID, func(*database.SchemaInfo) bool { return true })
	out := make([]*database.SchemaInfo, 0, len(all))
	for _, s := range all {
		if len(out) == 0 || out[len(out)-1].Name != s.Name {
			out = append(out, s)
		}
	}
	return out, nil
}

// RemoveSchema implements database.Schemas.
func (db *DB) RemoveSchema(ctx context.Context, projectID, name string, version int) error {
	if err := db.check(ctx, "remove schema"); err != nil {
		return err
	}
	st := &db.schemas
	st.mu.Lock()
	defer st.mu.Unlock()
	k := schemaName{projectID, name, version}
	if _, ok := st.schemas[k]; !ok {
		return fmt.Errorf("remove schema %s: %w", database.SchemaKey(name, version), database.ErrSchemaNotFound)
	}
	delete(st.schemas, k)
	return nil
}

// SetDocumentSchema implements database.Schemas.
func (db *DB) SetDocumentSchema(ctx context.Context, docID, schemaKey string) error {
	if err := db.check(ctx, "set document schema"); err != nil {
		return err
	}
	d, err := db.findDoc(docID)
	if err != nil {
		return fmt.Errorf("set schema of document: %w", err)
	}
	d.mu.Lock()
	d.info.Schema = schemaKey
	d.mu.Unlock()
	return nil
}

// SchemaInUse implements database.Schemas.
func (db *DB) SchemaInUse(ctx context.Context, projectID, schemaKey string) (bool, error) {
	if err := db.check(ctx, "find documents of schema"); err != nil {
		return false, err
	}
	db.mu.RLock()
	defer db.mu.RUnlock()
	for _, id := range db.liveByKey {
		if info := db.docs[id].snapshot(); info.ProjectID == projectID && info.Schema == schemaKey && info.RemovedAt.IsZero() {
			return true, nil
		}
	}
	return false, nil
}
