package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/wrapperspb"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
)

const projectUsage = `usage: yorkie project <command> [flags]

commands:
  create NAME   create a project
  ls            list your projects (--output json for JSON)
  update NAME   change a project's name, webhooks or limits (see "yorkie project update -h")
`

// Values "--auth-webhook-method-add ALL" and "--event-webhook-events-add
// ALL" stand for, as upstream's CLI has them.
var (
	allAuthWebhookMethods = []string{
		"ActivateClient", "DeactivateClient", "AttachDocument", "DetachDocument", "RemoveDocument",
		"PushPull", "Watch", "WatchDocument", "WatchChannel", "Broadcast",
	}
	allEventWebhookEvents = []string{"DocumentRootChanged"}
)

// runProject dispatches the project subcommands.
func runProject(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, projectUsage)
		return 2
	}
	switch args[0] {
	case "create":
		return exitCode(stderr, "yorkie project create", projectCreate(args[1:], stdout, stderr))
	case "ls", "list":
		return exitCode(stderr, "yorkie project ls", projectList(args[1:], stdout, stderr))
	case "update":
		return exitCode(stderr, "yorkie project update", projectUpdate(args[1:], stdout, stderr))
	case "help", "-h", "--help":
		fmt.Fprint(stdout, projectUsage)
		return 0
	}
	fmt.Fprintf(stderr, "yorkie project: unknown command %q\n\n%s", args[0], projectUsage)
	return 2
}

// printProject writes one project as indented JSON, with protobuf's names.
func printProject(w io.Writer, p *api.Project) error {
	out, err := protojson.MarshalOptions{Multiline: true, Indent: "  ", UseProtoNames: true}.Marshal(p)
	if err != nil {
		return fmt.Errorf("encode project: %w", err)
	}
	_, err = fmt.Fprintln(w, string(out))
	return err
}

func oneName(fs *flag.FlagSet, args []string) (string, error) {
	rest, err := parseInterspersed(fs, args)
	if err != nil {
		return "", err
	}
	if len(rest) != 1 {
		return "", usageError{error: fmt.Errorf("want one project name, got %q", rest)}
	}
	return rest[0], nil
}

func projectCreate(args []string, stdout, stderr io.Writer) error {
	fs := flagSet("yorkie project create", stderr)
	addr := fs.String("rpc-addr", "", "address of the server (default: the one logged in to last)")
	name, err := oneName(fs, args)
	if err != nil {
		return err
	}
	s, _, err := openSession(*addr)
	if err != nil {
		return err
	}
	req, err := request(s, &api.CreateProjectRequest{Name: name})
	if err != nil {
		return err
	}
	ctx, cancel := callContext()
	defer cancel()
	res, err := s.client.CreateProject(ctx, req)
	if err != nil {
		return fmt.Errorf("create project %q: %w", name, err)
	}
	return printProject(stdout, res.Msg.Project)
}

func projectList(args []string, stdout, stderr io.Writer) error {
	fs := flagSet("yorkie project ls", stderr)
	addr := fs.String("rpc-addr", "", "address of the server (default: the one logged in to last)")
	output := fs.String("output", "", "output format: empty for a table, or json")
	fs.StringVar(output, "o", "", "shorthand for --output")
	rest, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return usageError{error: fmt.Errorf("unexpected arguments %q", rest)}
	}
	if *output != "" && *output != "json" {
		return usageError{error: fmt.Errorf("--output %q: want json or nothing", *output)}
	}
	s, _, err := openSession(*addr)
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
	if *output == "json" {
		items := make([]json.RawMessage, 0, len(res.Msg.Projects))
		for _, p := range res.Msg.Projects {
			b, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(p)
			if err != nil {
				return fmt.Errorf("encode project: %w", err)
			}
			items = append(items, b)
		}
		out, err := json.MarshalIndent(items, "", "  ")
		if err != nil {
			return fmt.Errorf("encode projects: %w", err)
		}
		_, err = fmt.Fprintln(stdout, string(out))
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tPUBLIC KEY\tSECRET KEY\tAUTH WEBHOOK URL\tEVENT WEBHOOK URL\tCREATED AT")
	for _, p := range res.Msg.Projects {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", p.Name, p.PublicKey, p.SecretKey,
			dash(p.AuthWebhookUrl), dash(p.EventWebhookUrl), p.CreatedAt.AsTime().UTC().Format(time.RFC3339))
	}
	return tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

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

func projectUpdate(args []string, stdout, stderr io.Writer) error {
	fs := flagSet("yorkie project update", stderr)
	addr := fs.String("rpc-addr", "", "address of the server (default: the one logged in to last)")
	newName := fs.String("name", "", "new name of the project")
	authURL := fs.String("auth-webhook-url", "", "URL of the auth webhook (empty: none)")
	eventURL := fs.String("event-webhook-url", "", "URL of the event webhook (empty: none)")
	var methodsAdd, methodsRm, eventsAdd, eventsRm stringList
	fs.Var(&methodsAdd, "auth-webhook-method-add", "a method the auth webhook guards (repeatable; ALL for every one)")
	fs.Var(&methodsRm, "auth-webhook-method-rm", "a method the auth webhook stops guarding (repeatable; ALL for every one)")
	fs.Var(&eventsAdd, "event-webhook-events-add", "an event the event webhook receives (repeatable; ALL for every one)")
	fs.Var(&eventsRm, "event-webhook-events-rm", "an event the event webhook stops receiving (repeatable; ALL for every one)")
	authHook := webhookFlags(fs, "auth-webhook", "authorization webhook")
	eventHook := webhookFlags(fs, "event-webhook", "event webhook")
	threshold := fs.String("client-deactivate-threshold", "", "idle time after which the project's clients are deactivated, e.g. 24h")
	maxSubs := fs.Int("max-subscribers-per-document", 0, "most Watch subscribers of one document (0: no bound)")
	maxAttach := fs.Int("max-attachments-per-document", 0, "most clients attached to one document (0: no bound)")
	maxSize := fs.Int("max-size-per-document", 0, "largest size of one document in bytes (0: no bound)")
	removeOnDetach := fs.Bool("remove-on-detach", false, "remove a document when its last client detaches")
	name, err := oneName(fs, args)
	if err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })

	s, _, err := openSession(*addr)
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
		f.Name = wrapperspb.String(*newName)
	}
	if set["auth-webhook-url"] {
		f.AuthWebhookUrl = wrapperspb.String(*authURL)
	}
	if set["event-webhook-url"] {
		f.EventWebhookUrl = wrapperspb.String(*eventURL)
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
		f.ClientDeactivateThreshold = wrapperspb.String(*threshold)
	}
	if set["max-subscribers-per-document"] {
		f.MaxSubscribersPerDocument = wrapperspb.Int32(int32(*maxSubs))
	}
	if set["max-attachments-per-document"] {
		f.MaxAttachmentsPerDocument = wrapperspb.Int32(int32(*maxAttach))
	}
	if set["max-size-per-document"] {
		f.MaxSizePerDocument = wrapperspb.Int32(int32(*maxSize))
	}
	if set["remove-on-detach"] {
		f.RemoveOnDetach = wrapperspb.Bool(*removeOnDetach)
	}
	upd, err := request(s, &api.UpdateProjectRequest{Id: p.Id, Fields: f})
	if err != nil {
		return err
	}
	res, err := s.client.UpdateProject(ctx, upd)
	if err != nil {
		return fmt.Errorf("update project %q: %w", name, err)
	}
	return printProject(stdout, res.Msg.Project)
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

func webhookFlags(fs *flag.FlagSet, prefix, what string) webhookCallFlags {
	return webhookCallFlags{
		prefix:     prefix,
		maxRetries: fs.Uint64(prefix+"-max-retries", 0, "most retries of a failed "+what+" call (0: the server's flag)"),
		minWait:    fs.String(prefix+"-min-wait-interval", "", "first wait between "+what+" retries, doubling up to the max, e.g. 100ms (empty: the server's flag)"),
		maxWait:    fs.String(prefix+"-max-wait-interval", "", "longest wait between "+what+" retries, e.g. 3s (empty: the server's flag)"),
		timeout:    fs.String(prefix+"-request-timeout", "", "timeout of one "+what+" request, e.g. 3s (empty: the server's flag)"),
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
