package database

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Sentinel errors of schemas.
var (
	// ErrSchemaNotFound: the project has no schema with the name (and
	// version).
	ErrSchemaNotFound = errors.New("schema not found")
	// ErrSchemaAlreadyExists: the project has a schema with the name and
	// version already.
	ErrSchemaAlreadyExists = errors.New("schema already exists")
	// ErrInvalidSchemaKey: a schema key is not "<name>@<version>".
	ErrInvalidSchemaKey = errors.New("invalid schema key")
)

// SchemaInfo is one version of a project's document schema: the body its
// author wrote and the rules the SDK and the server check documents with.
type SchemaInfo struct {
	// ID is 24 lowercase hex characters.
	ID        string
	ProjectID string
	// Name and Version are unique together within the project.
	Name      string
	Version   int
	Body      string
	Rules     []Rule
	CreatedAt time.Time
}

// Key is the schema's key as documents name it: "<name>@<version>".
func (s *SchemaInfo) Key() string { return SchemaKey(s.Name, s.Version) }

// Clone returns a deep copy of s.
func (s *SchemaInfo) Clone() *SchemaInfo {
	c := *s
	c.Rules = make([]Rule, len(s.Rules))
	for i, r := range s.Rules {
		c.Rules[i] = Rule{Path: r.Path, Type: r.Type, TreeNodes: slices.Clone(r.TreeNodes)}
	}
	return &c
}

// Rule says what type the value at Path (a "$"-rooted, dot-separated path
// through objects) must have; for a yorkie.Tree, TreeNodes may constrain its
// nodes.
type Rule struct {
	Path      string
	Type      string
	TreeNodes []TreeNodeRule
}

// TreeNodeRule constrains the tree nodes of one type: the children it may
// hold (a content expression), the marks its text may carry and the groups
// it belongs to.
type TreeNodeRule struct {
	NodeType string
	Content  string
	Marks    string
	Group    string
}

// SchemaKey returns the key of a schema version, "<name>@<version>".
func SchemaKey(name string, version int) string {
	return name + "@" + strconv.Itoa(version)
}

// ParseSchemaKey splits "<name>@<version>"; ErrInvalidSchemaKey if it is
// not of that form.
func ParseSchemaKey(key string) (string, int, error) {
	name, v, ok := strings.Cut(key, "@")
	if !ok || name == "" || strings.Contains(v, "@") {
		return "", 0, fmt.Errorf("schema key %q: want <name>@<version>: %w", key, ErrInvalidSchemaKey)
	}
	version, err := strconv.Atoi(v)
	if err != nil || version < 1 {
		return "", 0, fmt.Errorf("schema key %q: version %q: %w", key, v, ErrInvalidSchemaKey)
	}
	return name, version, nil
}

// Schemas stores the document schemas of projects and which schema each
// document is bound to (DocInfo.Schema).
type Schemas interface {
	// CreateSchema stores a new version of a schema of the project, or fails
	// with ErrSchemaAlreadyExists.
	CreateSchema(ctx context.Context, s *SchemaInfo) (*SchemaInfo, error)
	// FindSchema returns the project's schema version or ErrSchemaNotFound.
	FindSchema(ctx context.Context, projectID, name string, version int) (*SchemaInfo, error)
	// FindSchemaVersions returns every version of the project's schema, the
	// newest first, or ErrSchemaNotFound when it has none.
	FindSchemaVersions(ctx context.Context, projectID, name string) ([]*SchemaInfo, error)
	// ListSchemas returns the newest version of each schema of the project,
	// by name.
	ListSchemas(ctx context.Context, projectID string) ([]*SchemaInfo, error)
	// RemoveSchema deletes the project's schema version, or fails with
	// ErrSchemaNotFound. It does not look at documents: callers check
	// SchemaInUse first and the binder checks the schema again after binding.
	RemoveSchema(ctx context.Context, projectID, name string, version int) error

	// SetDocumentSchema binds the document to the schema key ("" unbinds).
	// ErrDocumentNotFound for an unknown document.
	SetDocumentSchema(ctx context.Context, docID, schemaKey string) error
	// SchemaInUse reports whether a live document of the project is bound to
	// the schema key.
	SchemaInUse(ctx context.Context, projectID, schemaKey string) (bool, error)
}
