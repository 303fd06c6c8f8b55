package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/api/yorkie/v1/v1connect"
	"github.com/yorkie-affinity/yorkie/server/document"
)

// cliDocument is a document summary as upstream's CLI prints it (Go field
// names in JSON, lower-cased in YAML).
type cliDocument struct {
	ID              string
	Key             string
	CreatedAt       time.Time
	AccessedAt      time.Time
	UpdatedAt       time.Time
	Root            string
	AttachedClients int
	DocSize         cliDocSize
	SchemaKey       string
	Presences       map[string]map[string]string
}

type cliDocSize struct {
	Live, GC cliDataSize
}

type cliDataSize struct {
	Data, Meta int
}

func toCLIDocument(d *api.DocumentSummary) *cliDocument {
	out := &cliDocument{
		ID: d.Id, Key: d.Key, Root: d.Root, AttachedClients: int(d.AttachedClients), SchemaKey: d.SchemaKey,
		CreatedAt: d.CreatedAt.AsTime().UTC(), AccessedAt: d.AccessedAt.AsTime().UTC(), UpdatedAt: d.UpdatedAt.AsTime().UTC(),
		DocSize: cliDocSize{
			Live: cliDataSize{int(d.DocumentSize.GetLive().GetData()), int(d.DocumentSize.GetLive().GetMeta())},
			GC:   cliDataSize{int(d.DocumentSize.GetGc().GetData()), int(d.DocumentSize.GetGc().GetMeta())},
		},
	}
	if len(d.Presences) > 0 {
		out.Presences = map[string]map[string]string{}
		for id, p := range d.Presences {
			out.Presences[id] = p.GetData()
		}
	}
	return out
}

// documentCommand is upstream's "document ls|create|update|remove", plus
// our "document get" (the profiling port's view).
func (c *cli) documentCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "document", Short: "Manage the documents of a project"}
	cmd.AddCommand(c.documentListCommand(), c.documentCreateCommand(), c.documentUpdateCommand(), c.documentRemoveCommand(),
		&cobra.Command{
			Use:                "get KEY [--project NAME|ID] [--addr URL] [--timeout DURATION]",
			Short:              "Print a document as the server's profiling port shows it",
			DisableFlagParsing: true,
			RunE: func(cmd *cobra.Command, args []string) error {
				return codeError(runDocument(append([]string{"get"}, args...), c.stdout, c.stderr))
			},
		})
	return cmd
}

func (c *cli) documentListCommand() *cobra.Command {
	var (
		previousID string
		pageSize   int32
		forward    bool
	)
	cmd := &cobra.Command{
		Use:   "ls PROJECT",
		Short: "List the documents of a project",
		Args:  exactArgs("the project name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, _, err := openSession(c.addr(cmd))
			if err != nil {
				return err
			}
			ctx, cancel := callContext()
			defer cancel()
			res, err := projectCall(ctx, s, args[0], &api.ListDocumentsRequest{
				PreviousId: previousID, PageSize: pageSize, IsForward: forward, IncludeRoot: true,
			}, "list documents", v1connect.AdminServiceClient.ListDocuments)
			if err != nil {
				return err
			}
			docs := make([]*cliDocument, 0, len(res.Documents))
			for _, d := range res.Documents {
				docs = append(docs, toCLIDocument(d))
			}
			if c.output != tableOutput {
				return printAs(c.stdout, c.output, docs)
			}
			rows := make([][]any, 0, len(docs))
			for _, d := range docs {
				rows = append(rows, []any{d.ID, d.Key, d.AttachedClients, ago(d.CreatedAt), ago(d.AccessedAt), ago(d.UpdatedAt), d.Root})
			}
			return printTable(c.stdout, []string{"ID", "KEY", "CLIENTS", "CREATED AT", "ACCESSED AT", "UPDATED AT", "SNAPSHOT"}, rows)
		},
	}
	cmd.Flags().StringVar(&previousID, "previous-id", "", "the document ID to start after")
	cmd.Flags().Int32Var(&pageSize, "size", 10, "documents per page")
	cmd.Flags().BoolVar(&forward, "forward", false, "list oldest first")
	return cmd
}

func (c *cli) documentCreateCommand() *cobra.Command {
	var root string
	cmd := &cobra.Command{
		Use:   "create PROJECT KEY",
		Short: "Create a document",
		Args:  exactArgs("the project name", "the document key"),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, _, err := openSession(c.addr(cmd))
			if err != nil {
				return err
			}
			ctx, cancel := callContext()
			defer cancel()
			res, err := projectCall(ctx, s, args[0], &api.CreateDocumentRequest{DocumentKey: args[1], InitialRoot: root},
				"create document", v1connect.AdminServiceClient.CreateDocument)
			if err != nil {
				return err
			}
			fmt.Fprintf(c.stdout, "Document created: %s (%s)\n", res.Document.GetKey(), res.Document.GetId())
			return nil
		},
	}
	cmd.Flags().StringVar(&root, "initial-root", "", "YSON of the document's initial root (default: an empty root)")
	return cmd
}

func (c *cli) documentUpdateCommand() *cobra.Command {
	var root string
	cmd := &cobra.Command{
		Use:   "update PROJECT KEY --root YSON",
		Short: "Replace a document's root",
		Args:  exactArgs("the project name", "the document key"),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, _, err := openSession(c.addr(cmd))
			if err != nil {
				return err
			}
			ctx, cancel := callContext()
			defer cancel()
			res, err := projectCall(ctx, s, args[0], &api.UpdateDocumentRequest{DocumentKey: args[1], Root: root},
				"update document", v1connect.AdminServiceClient.UpdateDocument)
			if err != nil {
				return err
			}
			fmt.Fprintf(c.stdout, "Document updated: %s (%s)\n", res.Document.GetKey(), res.Document.GetId())
			return nil
		},
	}
	cmd.Flags().StringVar(&root, "root", "", "YSON of the document's new root (required)")
	_ = cmd.MarkFlagRequired("root")
	return cmd
}

func (c *cli) documentRemoveCommand() *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:     "remove PROJECT KEY",
		Short:   "Remove a document",
		Example: "yorkie document remove sample-project sample-document [options]",
		Args:    exactArgs("the project name", "the document key"),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, _, err := openSession(c.addr(cmd))
			if err != nil {
				return err
			}
			ctx, cancel := callContext()
			defer cancel()
			_, err = projectCall(ctx, s, args[0], &api.RemoveDocumentByAdminRequest{DocumentKey: args[1], Force: force},
				"remove document", v1connect.AdminServiceClient.RemoveDocumentByAdmin)
			return err
		},
	}
	cmd.Flags().BoolVar(&force, "force", false, "remove the document even while clients are attached")
	return cmd
}

// changeSummary is one row of "history": the change and the document as
// it stood after it.
type changeSummary struct {
	ServerSeq int64  `json:"server_seq" yaml:"server_seq"`
	ClientSeq uint32 `json:"client_seq" yaml:"client_seq"`
	Lamport   int64  `json:"lamport" yaml:"lamport"`
	Message   string `json:"message" yaml:"message"`
	Snapshot  string `json:"snapshot" yaml:"snapshot"`
}

// historyCommand lists a document's changes, newest first, each with the
// document as it stood after it: the snapshot before the page is rebuilt
// here and the page's changes applied to it, as upstream's CLI does.
func (c *cli) historyCommand() *cobra.Command {
	var (
		previousSeq int64
		pageSize    int32
		forward     bool
	)
	cmd := &cobra.Command{
		Use:   "history PROJECT KEY",
		Short: "Show the history of a document",
		Args:  exactArgs("the project name", "the document key"),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, _, err := openSession(c.addr(cmd))
			if err != nil {
				return err
			}
			ctx, cancel := callContext()
			defer cancel()
			res, err := projectCall(ctx, s, args[0], &api.ListChangesRequest{
				DocumentKey: args[1], PreviousSeq: previousSeq, PageSize: pageSize, IsForward: forward,
			}, "list changes", v1connect.AdminServiceClient.ListChanges)
			if err != nil {
				return err
			}
			summaries := []changeSummary{}
			if changes := res.Changes; len(changes) > 0 {
				first := changes[0].GetId().GetServerSeq()
				for _, ch := range changes {
					first = min(first, ch.GetId().GetServerSeq())
				}
				meta, err := projectCall(ctx, s, args[0], &api.GetSnapshotMetaRequest{DocumentKey: args[1], ServerSeq: first - 1},
					fmt.Sprintf("get the snapshot before change %d", first), v1connect.AdminServiceClient.GetSnapshotMeta)
				if err != nil {
					return err
				}
				if summaries, err = replay(meta, changes); err != nil {
					return err
				}
			}
			if c.output != tableOutput {
				return printAs(c.stdout, c.output, summaries)
			}
			rows := make([][]any, 0, len(summaries))
			for _, sum := range summaries {
				rows = append(rows, []any{sum.ServerSeq, sum.Message, sum.Snapshot})
			}
			return printTable(c.stdout, []string{"SEQ", "MESSAGE", "SNAPSHOT"}, rows)
		},
	}
	cmd.Flags().Int64Var(&previousSeq, "previous-seq", 0, "the server sequence to start after")
	cmd.Flags().Int32Var(&pageSize, "size", 0, "changes per page (0: the server's default)")
	cmd.Flags().BoolVar(&forward, "forward", false, "list oldest first")
	return cmd
}

// replay applies the changes, oldest first, to the snapshot and returns
// the summaries newest first.
func replay(meta *api.GetSnapshotMetaResponse, changes []*api.Change) ([]changeSummary, error) {
	vv, err := document.VersionVectorFromPB(meta.VersionVector)
	if err != nil {
		return nil, fmt.Errorf("read the snapshot's version vector: %w", err)
	}
	doc, err := document.FromSnapshotAt(meta.Snapshot, vv)
	if err != nil {
		return nil, fmt.Errorf("read the snapshot: %w", err)
	}
	ordered := append([]*api.Change(nil), changes...)
	if len(ordered) > 1 && ordered[0].GetId().GetServerSeq() > ordered[1].GetId().GetServerSeq() {
		for i, j := 0, len(ordered)-1; i < j; i, j = i+1, j-1 {
			ordered[i], ordered[j] = ordered[j], ordered[i]
		}
	}
	out := make([]changeSummary, len(ordered))
	for i, ch := range ordered {
		if err := doc.ApplyChanges([]*api.Change{ch}); err != nil {
			return nil, fmt.Errorf("apply change %d: %w", ch.GetId().GetServerSeq(), err)
		}
		out[len(ordered)-1-i] = changeSummary{
			ServerSeq: ch.GetId().GetServerSeq(), ClientSeq: ch.GetId().GetClientSeq(), Lamport: ch.GetId().GetLamport(),
			Message: ch.GetMessage(), Snapshot: doc.JSON(),
		}
	}
	return out, nil
}
