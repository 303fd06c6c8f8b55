package backend

import (
	"context"
	"fmt"
	"time"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/document"
	"github.com/yorkie-affinity/yorkie/server/document/crdt"
	"github.com/yorkie-affinity/yorkie/server/schema"
	"github.com/yorkie-affinity/yorkie/server/yson"
)

// adminClientKey is the key of the client an admin root update is made by.
const adminClientKey = "yorkie-admin-update"

// DocumentUpdate is what UpdateDocumentByAdmin changes, as upstream's
// UpdateDocument: the root's members in Root (nil: the root stays), and,
// when SetSchema, the schema the document is bound to (SchemaKey, "" to
// detach it).
type DocumentUpdate struct {
	Root      yson.Object
	SetSchema bool
	SchemaKey string
}

// UpdateDocumentByAdmin applies an admin's update at the document's owner
// and returns the schema key the document is bound to afterwards. A schema
// change is refused with ErrDocumentAttached while clients are attached;
// an update whose result breaks the rules of the schema the document ends
// with is refused with ErrSchemaValidationFailed. A root update is stored as
// a change of a client of its own (activated, recorded as having attached
// the document, deactivated), so every attached client pulls it. Nothing
// is changed by a refused update.
func (b *Backend) UpdateDocumentByAdmin(ctx context.Context, p *database.ProjectInfo, epoch int64, docID string, u DocumentUpdate) (string, error) {
	ds, err := b.lockDoc(ctx, p, epoch, docID)
	if err != nil {
		return "", fmt.Errorf("update document by admin: %w", err)
	}
	defer ds.unlock()
	if ds.removed {
		return "", fmt.Errorf("document %s: %w", docID, database.ErrDocumentNotFound)
	}
	target := ds.schema
	if u.SetSchema {
		if len(ds.atts) > 0 {
			return "", fmt.Errorf("change the schema of document %s with %d clients attached: %w", docID, len(ds.atts), ErrDocumentAttached)
		}
		if target, err = b.findSchema(ctx, ds.project, u.SchemaKey); err != nil {
			return "", err
		}
	}
	doc, err := b.useDoc(ctx, ds)
	if err != nil {
		return "", err
	}
	if u.Root == nil {
		if vs := schema.Check(doc.RootObject(), target.rules, true); len(vs) > 0 {
			return "", fmt.Errorf("document %s under schema %s: %w: %s", docID, target.key, ErrSchemaValidationFailed, schema.Describe(vs))
		}
	} else if err := b.updateRoot(ctx, ds, doc, u.Root, target); err != nil {
		return "", err
	}
	if u.SetSchema {
		if err := b.db.SetDocumentSchema(ctx, docID, target.key); err != nil {
			b.writeFailed(ds, err)
			return "", fmt.Errorf("update document by admin: %w", err)
		}
		ds.schema = target
		if target.key != "" {
			// A RemoveSchema racing with this update either sees the
			// document bound or is seen here.
			if _, err := b.findSchema(ctx, ds.project, target.key); err != nil {
				if uerr := b.db.SetDocumentSchema(ctx, docID, ""); uerr != nil {
					b.writeFailed(ds, uerr)
				}
				ds.schema = docSchema{}
				return "", err
			}
		}
	}
	return ds.schema.key, nil
}

// findSchema reads the schema of key ("" for none), which must exist.
func (b *Backend) findSchema(ctx context.Context, projectID, key string) (docSchema, error) {
	if key == "" {
		return docSchema{}, nil
	}
	name, version, err := database.ParseSchemaKey(key)
	if err != nil {
		return docSchema{}, err
	}
	s, err := b.db.FindSchema(ctx, projectID, name, version)
	if err != nil {
		return docSchema{}, err
	}
	return docSchema{key: key, rules: s.Rules}, nil
}

// updateRoot applies and stores the change that sets root's members, if
// the result keeps target's rules. The caller holds the document's lock.
func (b *Backend) updateRoot(ctx context.Context, ds *docState, doc *document.Document, root yson.Object, target docSchema) error {
	client, err := b.db.ActivateClient(ctx, ds.project, adminClientKey, nil)
	if err != nil {
		return fmt.Errorf("update root of document %s: %w", ds.id, err)
	}
	defer func() {
		if _, err := b.db.DeactivateClient(context.WithoutCancel(ctx), ds.project, client.ID); err != nil {
			b.logger.Warn("deactivate the admin update's client", "client", client.ID, "error", err)
		}
	}()
	actor, err := crdt.ActorIDFromHex(client.ID)
	if err != nil {
		return fmt.Errorf("update root of document %s: %w", ds.id, err)
	}
	ch, err := doc.RootSetChange(root, actor)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidChange, err)
	}
	if err := doc.ApplyPushed([]*api.Change{ch}); err != nil {
		b.dropDoc(ds)
		return fmt.Errorf("%w: %w", ErrInvalidChange, err)
	}
	if vs := schema.Check(doc.RootObject(), target.rules, true); len(vs) > 0 {
		b.dropDoc(ds)
		return fmt.Errorf("new root of document %s under schema %s: %w: %s", ds.id, target.key, ErrSchemaValidationFailed, schema.Describe(vs))
	}
	seq := ds.head + 1
	ch.Id.ServerSeq = seq
	// The client is recorded as having attached the document, so that the
	// actor is known to later owners when clients' vectors name it.
	att := &database.Attachment{
		ClientID: client.ID, DocID: ds.id, Status: database.Detached,
		ServerSeq: seq, ClientSeq: 1, AttachedAt: ds.head, UpdatedAt: time.Now(),
	}
	if err := b.db.UpdateAttachment(ctx, att, ds.epoch); err != nil {
		b.writeFailed(ds, err)
		return fmt.Errorf("update root of document %s: %w", ds.id, err)
	}
	if key, err := actorKey(client.ID); err == nil {
		ds.known.Add(key)
	}
	change := &database.Change{ServerSeq: seq, ActorID: client.ID, ClientSeq: 1, Body: ch}
	if err := b.db.AppendChanges(ctx, ds.id, ds.epoch, []*database.Change{change}); err != nil {
		b.writeFailed(ds, err)
		return fmt.Errorf("update root of document %s: %w", ds.id, err)
	}
	ds.head, ds.docSeq = seq, seq
	b.keepRecent(ds, []*database.Change{change})
	b.publishChanged(ds.id, client.ID)
	return nil
}
