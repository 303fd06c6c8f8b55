package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"google.golang.org/protobuf/types/known/wrapperspb"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
)

// Values "--auth-webhook-method-add ALL" and "--event-webhook-events-add
// ALL" stand for, as upstream's CLI has them.
var (
	allAuthWebhookMethods = []string{
		"ActivateClient", "DeactivateClient", "AttachDocument", "DetachDocument", "RemoveDocument",
		"PushPull", "Watch", "WatchDocument", "WatchChannel", "Broadcast",
	}
	allEventWebhookEvents = []string{"DocumentRootChanged"}
)

// cliProject is a project as upstream's CLI prints it: upstream's JSON
// names, Go field names where upstream has no tag; YAML lower-cases them.
type cliProject struct {
	ID                          string   `json:"id"`
	Name                        string   `json:"name"`
	Owner                       string   `json:"owner"`
	AuthWebhookURL              string   `json:"auth_webhook_url"`
	AuthWebhookMethods          []string `json:"auth_webhook_methods"`
	AuthWebhookMaxRetries       uint64
	AuthWebhookMinWaitInterval  string
	AuthWebhookMaxWaitInterval  string
	AuthWebhookRequestTimeout   string
	EventWebhookURL             string   `json:"event_webhook_url"`
	EventWebhookEvents          []string `json:"event_webhook_events"`
	EventWebhookMaxRetries      uint64
	EventWebhookMinWaitInterval string
	EventWebhookMaxWaitInterval string
	EventWebhookRequestTimeout  string
	ClientDeactivateThreshold   string
	ChannelSessionTTL           string
	SnapshotThreshold           int64
	SnapshotInterval            int64
	MaxSubscribersPerDocument   int
	MaxAttachmentsPerDocument   int
	MaxSizePerDocument          int
	RemoveOnDetach              bool      `json:"remove_on_detach"`
	AutoRevisionEnabled         bool      `json:"auto_revision_enabled"`
	AllowedOrigins              []string  `json:"allowed_origins"`
	PublicKey                   string    `json:"public_key"`
	SecretKey                   string    `json:"secret_key"`
	CreatedAt                   time.Time `json:"created_at"`
	UpdatedAt                   time.Time `json:"updated_at"`
}

func toCLIProject(p *api.Project) *cliProject {
	return &cliProject{
		ID: p.Id, Name: p.Name,
		AuthWebhookURL: p.AuthWebhookUrl, AuthWebhookMethods: p.AuthWebhookMethods,
		AuthWebhookMaxRetries: p.AuthWebhookMaxRetries, AuthWebhookMinWaitInterval: p.AuthWebhookMinWaitInterval,
		AuthWebhookMaxWaitInterval: p.AuthWebhookMaxWaitInterval, AuthWebhookRequestTimeout: p.AuthWebhookRequestTimeout,
		EventWebhookURL: p.EventWebhookUrl, EventWebhookEvents: p.EventWebhookEvents,
		EventWebhookMaxRetries: p.EventWebhookMaxRetries, EventWebhookMinWaitInterval: p.EventWebhookMinWaitInterval,
		EventWebhookMaxWaitInterval: p.EventWebhookMaxWaitInterval, EventWebhookRequestTimeout: p.EventWebhookRequestTimeout,
		ClientDeactivateThreshold: p.ClientDeactivateThreshold, ChannelSessionTTL: p.ChannelSessionTtl,
		SnapshotThreshold: p.SnapshotThreshold, SnapshotInterval: p.SnapshotInterval,
		MaxSubscribersPerDocument: int(p.MaxSubscribersPerDocument), MaxAttachmentsPerDocument: int(p.MaxAttachmentsPerDocument),
		MaxSizePerDocument: int(p.MaxSizePerDocument), RemoveOnDetach: p.RemoveOnDetach,
		AutoRevisionEnabled: p.AutoRevisionEnabled, AllowedOrigins: p.AllowedOrigins,
		PublicKey: p.PublicKey, SecretKey: p.SecretKey,
		CreatedAt: p.CreatedAt.AsTime().UTC(), UpdatedAt: p.UpdatedAt.AsTime().UTC(),
	}
}

// printProject writes one project as upstream's create and update do: one
// line of JSON, or YAML.
func (c *cli) printProject(p *api.Project) error {
	if c.output == yamlOutput {
		return printAs(c.stdout, yamlOutput, toCLIProject(p))
	}
	out, err := json.Marshal(toCLIProject(p))
	if err != nil {
		return fmt.Errorf("encode project: %w", err)
	}
	_, err = fmt.Fprintln(c.stdout, string(out))
	return err
}

// projectCommand is upstream's "project create|ls|update".
func (c *cli) projectCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "project", Short: "Manage projects"}
	cmd.AddCommand(c.projectCreateCommand(), c.projectListCommand(), c.projectUpdateCommand())
	return cmd
}

func (c *cli) projectCreateCommand() *cobra.Command {
	return &cobra.Command{
		Use:     "create NAME",
		Short:   "Create a project",
		Example: "yorkie project create sample-project",
		Args:    exactArgs("the project name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, _, err := openSession(c.addr(cmd))
			if err != nil {
				return err
			}
			req, err := request(s, &api.CreateProjectRequest{Name: args[0]})
			if err != nil {
				return err
			}
			ctx, cancel := callContext()
			defer cancel()
			res, err := s.client.CreateProject(ctx, req)
			if err != nil {
				return fmt.Errorf("create project %q: %w", args[0], err)
			}
			return c.printProject(res.Msg.Project)
		},
	}
}

func (c *cli) projectListCommand() *cobra.Command {
	var verbose bool
	cmd := &cobra.Command{
		Use:   "ls",
		Short: "List your projects",
		Args:  exactArgs(),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, _, err := openSession(c.addr(cmd))
			if err != nil {
				return err
			}
			req, err := request(s, &api.ListProjectsRequest{})
			if err != nil {
				return err
			}
			ctx, cancel := callContext()
			defer cancel()
			res, err := s.client.ListProjects(ctx, req)
			if err != nil {
				return fmt.Errorf("list projects: %w", err)
			}
			projects := make([]*cliProject, 0, len(res.Msg.Projects))
			for _, p := range res.Msg.Projects {
				projects = append(projects, toCLIProject(p))
			}
			if c.output != tableOutput {
				return printAs(c.stdout, c.output, projects)
			}
			if !verbose {
				rows := make([][]any, 0, len(projects))
				for _, p := range projects {
					rows = append(rows, []any{p.Name, p.PublicKey, p.SecretKey, ago(p.CreatedAt)})
				}
				return printTable(c.stdout, []string{"NAME", "PUBLIC KEY", "SECRET KEY", "CREATED AT"}, rows)
			}
			rows := make([][]any, 0, len(projects))
			for _, p := range projects {
				rows = append(rows, []any{p.Name, p.PublicKey, p.SecretKey,
					p.AuthWebhookURL, strings.Join(p.AuthWebhookMethods, ","), p.AuthWebhookMaxRetries,
					p.AuthWebhookMinWaitInterval, p.AuthWebhookMaxWaitInterval, p.AuthWebhookRequestTimeout,
					p.EventWebhookURL, strings.Join(p.EventWebhookEvents, ","), p.EventWebhookMaxRetries,
					p.EventWebhookMinWaitInterval, p.EventWebhookMaxWaitInterval, p.EventWebhookRequestTimeout,
					p.ClientDeactivateThreshold, p.ChannelSessionTTL, p.SnapshotThreshold, p.SnapshotInterval,
					p.MaxSubscribersPerDocument, p.MaxAttachmentsPerDocument, p.RemoveOnDetach, ago(p.CreatedAt)})
			}
			return printTable(c.stdout, []string{"NAME", "PUBLIC KEY", "SECRET KEY",
				"AUTH WEBHOOK URL", "AUTH WEBHOOK METHODS", "AUTH WEBHOOK MAX RETRIES",
				"AUTH WEBHOOK MIN WAIT INTERVAL", "AUTH WEBHOOK MAX WAIT INTERVAL", "AUTH WEBHOOK REQUEST TIMEOUT",
				"EVENT WEBHOOK URL", "EVENT WEBHOOK EVENTS", "EVENT WEBHOOK MAX RETRIES",
				"EVENT WEBHOOK MIN WAIT INTERVAL", "EVENT WEBHOOK MAX WAIT INTERVAL", "EVENT WEBHOOK REQUEST TIMEOUT",
				"CLIENT DEACTIVATE THRESHOLD", "CHANNEL SESSION TTL", "SNAPSHOT THRESHOLD", "SNAPSHOT INTERVAL",
				"MAX SUBSCRIBERS PER DOCUMENT", "MAX ATTACHMENTS PER DOCUMENT", "REMOVE ON DETACH", "CREATED AT"}, rows)
		},
	}
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "show every setting of the projects")
	return cmd
}

// editList applies removals then additions to a list, "ALL" standing for
// every item, and keeps the list sorted.
func editList(prev, rm, add, all []string) []string {
	set := map[string]bool{}
	for _, v := range prev {
		set[v] = true
	}
	for _, v := range rm {
		if v == "ALL" {
			clear(set)
		}
		delete(set, v)
	}
	for _, v := range add {
		if v == "ALL" {
			for _, a := range all {
				set[a] = true
			}
			continue
		}
		set[v] = true
	}
	out := make([]string, 0, len(set))
	for v := range set {
		out = append(out, v)
	}
	slices.Sort(out)
	return out
}

func (c *cli) projectUpdateCommand() *cobra.Command {
	var (
		newName, authURL, eventURL, threshold, channelTTL string
		methodsAdd, methodsRm, eventsAdd, eventsRm        []string
		maxSubs, maxAttach, maxSize                       int32
		snapThreshold, snapInterval                       int64
		removeOnDetach                                    bool
	)
	cmd := &cobra.Command{
		Use:     "update NAME",
		Short:   "Change a project's settings (only the flags given are changed)",
		Example: "yorkie project update name [options]",
		Args:    exactArgs("the project name"),
	}
	fs := cmd.Flags()
	fs.StringVar(&newName, "name", "", "new name of the project")
	fs.StringVar(&authURL, "auth-webhook-url", "", "URL of the auth webhook (empty: none)")
	fs.StringVar(&eventURL, "event-webhook-url", "", "URL of the event webhook (empty: none)")
	fs.StringArrayVar(&methodsAdd, "auth-webhook-method-add", nil, "a method the auth webhook guards (repeatable; ALL for every one)")
	fs.StringArrayVar(&methodsRm, "auth-webhook-method-rm", nil, "a method the auth webhook stops guarding (repeatable; ALL for every one)")
	fs.StringArrayVar(&eventsAdd, "event-webhook-events-add", nil, "an event the event webhook receives (repeatable; ALL for every one)")
	fs.StringArrayVar(&eventsRm, "event-webhook-events-rm", nil, "an event the event webhook stops receiving (repeatable; ALL for every one)")
	authHook := webhookFlags(fs, "auth-webhook", "authorization webhook")
	eventHook := webhookFlags(fs, "event-webhook", "event webhook")
	fs.StringVar(&threshold, "client-deactivate-threshold", "", "idle time after which the project's clients are deactivated, e.g. 24h")
	fs.StringVar(&channelTTL, "channel-session-ttl", "", "a channel session not refreshed for longer leaves its counts, e.g. 60s")
	fs.Int64Var(&snapThreshold, "snapshot-threshold", 0, "changes a client must be behind to get a snapshot instead")
	fs.Int64Var(&snapInterval, "snapshot-interval", 0, "changes between stored snapshots of a document")
	fs.Int32Var(&maxSubs, "max-subscribers-per-document", 0, "most Watch subscribers of one document (0: no bound)")
	fs.Int32Var(&maxAttach, "max-attachments-per-document", 0, "most clients attached to one document (0: no bound)")
	fs.Int32Var(&maxSize, "max-size-per-document", 0, "largest size of one document in bytes (0: no bound)")
	fs.BoolVar(&removeOnDetach, "remove-on-detach", false, "remove a document when its last client detaches")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		name := args[0]
		set := map[string]bool{}
		fs.Visit(func(f *pflag.Flag) { set[f.Name] = true })
		s, _, err := openSession(c.addr(cmd))
		if err != nil {
			return err
		}
		req, err := request(s, &api.GetProjectRequest{Name: name})
		if err != nil {
			return err
		}
		ctx, cancel := callContext()
		defer cancel()
		got, err := s.client.GetProject(ctx, req)
		if err != nil {
			return fmt.Errorf("find project %q: %w", name, err)
		}
		p := got.Msg.Project

		// Only what the flags change is sent.
		f := &api.UpdatableProjectFields{}
		if set["name"] {
			f.Name = wrapperspb.String(newName)
		}
		if set["auth-webhook-url"] {
			f.AuthWebhookUrl = wrapperspb.String(authURL)
		}
		if set["event-webhook-url"] {
			f.EventWebhookUrl = wrapperspb.String(eventURL)
		}
		if set["auth-webhook-method-add"] || set["auth-webhook-method-rm"] {
			f.AuthWebhookMethods = &api.UpdatableProjectFields_AuthWebhookMethods{
				Methods: editList(p.AuthWebhookMethods, methodsRm, methodsAdd, allAuthWebhookMethods),
			}
		}
		if set["event-webhook-events-add"] || set["event-webhook-events-rm"] {
			f.EventWebhookEvents = &api.UpdatableProjectFields_EventWebhookEvents{
				Events: editList(p.EventWebhookEvents, eventsRm, eventsAdd, allEventWebhookEvents),
			}
		}
		f.AuthWebhookMaxRetries, f.AuthWebhookMinWaitInterval, f.AuthWebhookMaxWaitInterval, f.AuthWebhookRequestTimeout = authHook.fields(set)
		f.EventWebhookMaxRetries, f.EventWebhookMinWaitInterval, f.EventWebhookMaxWaitInterval, f.EventWebhookRequestTimeout = eventHook.fields(set)
		if set["client-deactivate-threshold"] {
			f.ClientDeactivateThreshold = wrapperspb.String(threshold)
		}
		if set["channel-session-ttl"] {
			f.ChannelSessionTtl = wrapperspb.String(channelTTL)
		}
		if set["snapshot-threshold"] {
			f.SnapshotThreshold = wrapperspb.Int64(snapThreshold)
		}
		if set["snapshot-interval"] {
			f.SnapshotInterval = wrapperspb.Int64(snapInterval)
		}
		if set["max-subscribers-per-document"] {
			f.MaxSubscribersPerDocument = wrapperspb.Int32(maxSubs)
		}
		if set["max-attachments-per-document"] {
			f.MaxAttachmentsPerDocument = wrapperspb.Int32(maxAttach)
		}
		if set["max-size-per-document"] {
			f.MaxSizePerDocument = wrapperspb.Int32(maxSize)
		}
		if set["remove-on-detach"] {
			f.RemoveOnDetach = wrapperspb.Bool(removeOnDetach)
		}
		upd, err := request(s, &api.UpdateProjectRequest{Id: p.Id, Fields: f})
		if err != nil {
			return err
		}
		res, err := s.client.UpdateProject(ctx, upd)
		if err != nil {
			return fmt.Errorf("update project %q: %w", name, err)
		}
		return c.printProject(res.Msg.Project)
	}
	return cmd
}

// webhookCallFlags are the flags of one webhook's call settings, named as
// upstream's CLI names them (--auth-webhook-max-retries, ...).
type webhookCallFlags struct {
	prefix     string
	maxRetries *uint64
	minWait    *string
	maxWait    *string
	timeout    *string
}

func webhookFlags(fs *pflag.FlagSet, prefix, what string) webhookCallFlags {
	return webhookCallFlags{
		prefix:     prefix,
		maxRetries: fs.Uint64(prefix+"-max-retries", 0, "most retries of a failed "+what+" call"),
		minWait:    fs.String(prefix+"-min-wait-interval", "", "first wait between "+what+" retries, doubling up to the max, e.g. 100ms"),
		maxWait:    fs.String(prefix+"-max-wait-interval", "", "longest wait between "+what+" retries, e.g. 3s"),
		timeout:    fs.String(prefix+"-request-timeout", "", "timeout of one "+what+" request, e.g. 3s"),
	}
}

// fields returns the update of the settings whose flags were given.
func (w webhookCallFlags) fields(set map[string]bool) (retries *wrapperspb.UInt64Value, minWait, maxWait, timeout *wrapperspb.StringValue) {
	if set[w.prefix+"-max-retries"] {
		retries = wrapperspb.UInt64(*w.maxRetries)
	}
	str := func(name string, v *string) *wrapperspb.StringValue {
		if set[w.prefix+name] {
			return wrapperspb.String(*v)
		}
		return nil
	}
	return retries, str("-min-wait-interval", w.minWait), str("-max-wait-interval", w.maxWait), str("-request-timeout", w.timeout)
}
