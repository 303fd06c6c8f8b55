package migrate

import (
	"context"
	"errors"
	"fmt"

	"go.mongodb.org/mongo-driver/bson"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
	"github.com/yorkie-affinity/yorkie/server/document"
)

// Difference is one imported document that does not read here as it does
// upstream.
type Difference struct {
	Project string
	Key     string
	DocID   string
	// ServerSeq is where the two were compared.
	ServerSeq int64
	Problem   string
}

func (d Difference) String() string {
	return fmt.Sprintf("document %q (%s, project %s) at server_seq %d: %s", d.Key, d.DocID, d.Project, d.ServerSeq, d.Problem)
}

// VerifyReport counts what Verify compared.
type VerifyReport struct {
	Documents int
	// Compared counts the documents compared with an upstream snapshot;
	// the others (no snapshot upstream) were rebuilt to their head.
	Compared    int
	Differences []Difference
}

// rebuildBatch is how many changes a rebuild reads at once.
const rebuildBatch = 1000

// Verify rebuilds every imported document here from its change log alone
// and compares it with upstream's newest snapshot of it: the same content
// at the same server_seq. A document without an upstream snapshot is
// rebuilt to its head, which proves its log applies. The target's head
// must be the source's. Nothing is written.
func (im *Importer) Verify(ctx context.Context) (*VerifyReport, error) {
	rep := &VerifyReport{}
	err := each(ctx, im.src.Collection("documents"), bson.D{}, byID, func(d *upDocument, _ bson.Raw) error {
		rep.Documents++
		diff := func(seq int64, format string, args ...any) {
			rep.Differences = append(rep.Differences, Difference{
				Project: d.ProjectID.Hex(), Key: d.Key, DocID: d.ID.Hex(), ServerSeq: seq, Problem: fmt.Sprintf(format, args...),
			})
		}
		info, err := im.cfg.Target.FindDocument(ctx, d.ProjectID.Hex(), d.ID.Hex())
		if errors.Is(err, database.ErrDocumentNotFound) {
			diff(d.ServerSeq, "not imported")
			return nil
		}
		if err != nil {
			return err
		}
		head := info.ServerSeq
		if head != d.ServerSeq {
			diff(d.ServerSeq, "the log here ends at server_seq %d", head)
			return nil
		}
		var snap *upSnapshot
		err = each(ctx, im.src.Collection("snapshots"),
			bson.D{{Key: "doc_id", Value: d.ID}, {Key: "project_id", Value: d.ProjectID}, {Key: "server_seq", Value: bson.D{{Key: "$lte", Value: d.ServerSeq}}}},
			bson.D{{Key: "server_seq", Value: -1}},
			func(s *upSnapshot, _ bson.Raw) error {
				if snap == nil {
					snap = s
				}
				return nil
			})
		if err != nil {
			return err
		}
		to := head
		if snap != nil {
			to = snap.ServerSeq
		}
		rebuilt := document.New()
		for lo := int64(1); lo <= to; lo += rebuildBatch {
			hi := min(lo+rebuildBatch-1, to)
			changes, err := im.cfg.Target.FindChanges(ctx, d.ID.Hex(), lo, hi)
			if err != nil {
				return err
			}
			if int64(len(changes)) != hi-lo+1 {
				diff(lo, "the log here holds %d changes of server_seq %d..%d", len(changes), lo, hi)
				return nil
			}
			bodies := make([]*api.Change, len(changes))
			for i, c := range changes {
				bodies[i] = c.Body
			}
			if err := rebuilt.ApplyChanges(bodies); err != nil {
				diff(hi, "the log here does not apply: %v", err)
				return nil
			}
		}
		if snap == nil {
			return nil
		}
		rep.Compared++
		upstream, err := upstreamDocument(ctx, im, snap)
		if err != nil {
			diff(snap.ServerSeq, "upstream's snapshot %s: %v", snap.ID.Hex(), err)
			return nil
		}
		if got, want := rebuilt.JSON(), upstream.JSON(); got != want {
			diff(snap.ServerSeq, "rebuilt here %s, upstream's snapshot %s", got, want)
		}
		return nil
	})
	if err != nil {
		return rep, fmt.Errorf("verify: %w", err)
	}
	return rep, nil
}

// upstreamDocument reads upstream's snapshot into a document.
func upstreamDocument(ctx context.Context, im *Importer, s *upSnapshot) (*document.Document, error) {
	snap, err := s.snapshot(ctx, im.src)
	if err != nil {
		return nil, err
	}
	vv, err := document.VersionVectorFromPB(&api.VersionVector{Vector: snap.VersionVector})
	if err != nil {
		return nil, err
	}
	return document.FromSnapshotAt(snap.Data, vv)
}
