package backend

import (
	"context"
	"errors"
	"fmt"
	"slices"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/document"
	"github.com/yorkie-affinity/yorkie/server/schema"
)

// ErrSchemaValidationFailed: a pushed change leaves the document breaking
// its schema's rules. Nothing of the pack is stored.
var ErrSchemaValidationFailed = errors.New("schema validation failed")

// docSchema is the schema a document is bound to, as its owner holds it.
type docSchema struct {
	key   string
	rules []database.Rule
}

// loadSchema reads the rules of the schema key the document is bound to.
// A binding to a schema that no longer exists (removed by an operator's
// direct edit) constrains nothing.
func (b *Backend) loadSchema(ctx context.Context, projectID, key string) (docSchema, error) {
	if key == "" {
		return docSchema{}, nil
	}
	name, version, err := database.ParseSchemaKey(key)
	if err != nil {
		return docSchema{key: key}, nil
	}
	s, err := b.db.FindSchema(ctx, projectID, name, version)
	if errors.Is(err, database.ErrSchemaNotFound) {
		return docSchema{key: key}, nil
	}
	if err != nil {
		return docSchema{}, fmt.Errorf("schema %s: %w", key, err)
	}
	return docSchema{key: key, rules: s.Rules}, nil
}

// bindSchema binds the document to the schema key asked for at attach, as
// upstream does: only when the document has no schema yet and no other
// client is attached. The schema must exist (database.ErrSchemaNotFound).
// It is looked up again after binding, so a RemoveSchema racing with the
// attach either sees the document bound or makes the attach fail.
func (b *Backend) bindSchema(ctx context.Context, ds *docState, key string, others int) error {
	if key == "" || ds.schema.key != "" || others > 0 {
		return nil
	}
	name, version, err := database.ParseSchemaKey(key)
	if err != nil {
		return err
	}
	s, err := b.db.FindSchema(ctx, ds.project, name, version)
	if err != nil {
		return err
	}
	if err := b.db.SetDocumentSchema(ctx, ds.id, key); err != nil {
		return err
	}
	if _, err := b.db.FindSchema(ctx, ds.project, name, version); err != nil {
		if uerr := b.db.SetDocumentSchema(ctx, ds.id, ""); uerr != nil {
			b.writeFailed(ds, uerr)
		}
		return err
	}
	ds.schema = docSchema{key: key, rules: s.Rules}
	return nil
}

// checkSchema applies the changes to doc one by one, refusing one that
// leaves the document breaking its rules in a way the SDK's own check
// would have refused (schema.Introduced): a value of a type a rule refuses
// that was not there before. A missing value is let through, since the
// SDK's undo of the change that created it is not checked, and so is a
// violation the document had before the change.
//
// A change made on a replica that had seen everything before it
// (document.Covers) also has its trees checked against their node rules.
// A change concurrent with others may leave a tree that no SDK checked (two
// clients each removing one of two required paragraphs): for it the tree
// content, marks and node types are not checked, so the server never
// refuses what the SDK accepted.
func checkSchema(doc *document.Document, rules []database.Rule, changes []*api.Change) error {
	before := schema.Check(doc.RootObject(), rules, true)
	for i, c := range changes {
		if len(c.GetOperations()) == 0 {
			if err := doc.ApplyPushed(changes[i : i+1]); err != nil {
				return fmt.Errorf("%w: %w", ErrInvalidChange, err)
			}
			continue
		}
		full := false
		if vv, err := document.VersionVectorFromPB(c.GetId().GetVersionVector()); err == nil {
			full = doc.Covers(vv)
		}
		if err := doc.ApplyPushed(changes[i : i+1]); err != nil {
			return fmt.Errorf("%w: %w", ErrInvalidChange, err)
		}
		after := schema.Check(doc.RootObject(), rules, true)
		vs := schema.Introduced(before, after)
		if !full {
			vs = slices.DeleteFunc(vs, func(v schema.Violation) bool { return v.Content })
		}
		if len(vs) > 0 {
			return fmt.Errorf("change %d: %w: %s", i, ErrSchemaValidationFailed, schema.Describe(vs))
		}
		before = after
	}
	return nil
}
