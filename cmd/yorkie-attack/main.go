// Command yorkie-attack replays the attacks of a hostile tenant or an
// anonymous caller against yorkie server binaries on loopback and prints
// what each cost the server, binary beside binary, in one run:
//
//	yorkie-attack -bin before=bin/yorkie-before -bin after=bin/yorkie
//
// Each attack gets a fresh server per binary (free ports, in-memory
// database, --pprof-enabled for forced collections), started by the tool and
// stopped after the attack. The figures are read from the server's own
// /metrics (goroutines, open descriptors, heap, resident memory) and from
// what the tool's clients saw (answers, latency, delays).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strings"
	"time"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// binFlag collects -bin name=path.
type binFlag []binary

// binary is a server binary and the flags it is started with besides the
// tool's own.
type binary struct {
	name, path string
	args       []string
}

func (b *binFlag) String() string { return fmt.Sprint(*b) }

func (b *binFlag) Set(v string) error {
	name, cmd, ok := strings.Cut(v, "=")
	fields := strings.Fields(cmd)
	if !ok || name == "" || len(fields) == 0 {
		return fmt.Errorf("want name=path [server flags], got %q", v)
	}
	*b = append(*b, binary{name, fields[0], fields[1:]})
	return nil
}

// figure is one measured value of one attack.
type figure struct {
	name  string
	value string
}

// attack runs against a started server and returns its figures.
type attack struct {
	name string
	what string
	run  func(ctx context.Context, t *target, cfg config, logger *slog.Logger) ([]figure, error)
	// defaults: the server keeps its default on private webhook addresses
	// (the other attacks allow them, for their endpoints on loopback).
	defaults bool
}

// config holds the sizes of the attacks.
type config struct {
	authRequests int           // ActivateClient calls at a project whose auth webhook never answers
	authSpread   time.Duration // over this long
	authGiveUp   time.Duration // each attacking client gives up after this
	portTimeout  time.Duration // authport: the projects' webhook request timeout
	guesses      int           // admin: wrong-password LogIn calls
	eventDocs    int           // attacker documents posting to a silent event webhook
	eventWait    time.Duration // longest wait for the victim's event
	dropDocs     int           // attacker documents changed to fill the event backlog
	dropWait     time.Duration // longest wait for the victim's event after them
	topics       int           // broadcasts with a large topic to a watcher that does not read
	topicBytes   int
	viewOps      int           // docview: operations of the viewed document
	views        int           // docview: GETs at once
	bombs        int           // concurrent gzip bombs
	bombBytes    int           // what each inflates to
	longRequests int           // authlong: ActivateClient calls at a project whose webhook timeout is long
	longSpread   time.Duration // over this long
	longTimeout  time.Duration // authlong: the project's auth webhook request timeout
	signUpFor    time.Duration // signup: SignUp calls from one address for this long
	fieldCalls   int           // fields: calls with each oversized field
	fieldBytes   int           // fields: bytes of each oversized value
}

func attacks() []attack {
	return []attack{
		{"auth", "auth webhook that accepts connections and never answers", runAuth, false},
		{"authlong", "auth webhook that never answers, with a long project request timeout", runAuthLong, false},
		{"authport", "auth webhook on a closed port vs one that never answers", runAuthPort, false},
		{"event", "event webhooks: an attacker's silent endpoint vs a victim project's event", runEvent, false},
		{"eventdrop", "event webhooks: an attacker fills the backlog, then a victim project changes a document", runEventDrop, false},
		{"topic", "broadcasts with large topics to a watcher that does not read", runTopic, false},
		{"lamport", "a change with lamport 2^63-1", runLamport, false},
		{"bomb", "concurrent gzip bombs", runBomb, false},
		{"docview", "the operators' view of a large document, GET many times at once", runDocView, false},
		{"admin", "the admin API and operators' view without credentials", runAdmin, false},
		{"signup", "SignUp from one address as fast as it answers", runSignUp, false},
		{"webhookaddr", "project webhooks at loopback and link-local addresses, the server on its defaults", runWebhookAddr, true},
		{"fields", "oversized channel keys, client metadata and presence", runFields, false},
	}
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("yorkie-attack", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var bins binFlag
	fs.Var(&bins, "bin", "name=path of a yorkie binary to attack, optionally followed by server flags (repeat: the figures come side by side)")
	names := fs.String("attacks", "auth,authlong,authport,event,eventdrop,topic,lamport,bomb,docview,admin,signup,webhookaddr,fields", "attacks to run, comma-separated")
	var cfg config
	fs.IntVar(&cfg.authRequests, "auth-requests", 2000, "auth: ActivateClient calls at the project whose webhook never answers")
	fs.DurationVar(&cfg.authSpread, "auth-spread", 2*time.Second, "auth: the calls are spread over this long")
	fs.DurationVar(&cfg.authGiveUp, "auth-give-up", time.Second, "auth: each attacking client gives up after this")
	fs.DurationVar(&cfg.portTimeout, "port-timeout", time.Second, "authport: the projects' auth webhook request timeout (2 retries, 100-200ms apart)")
	fs.IntVar(&cfg.guesses, "guesses", 20, "admin: wrong-password LogIn calls, one after the other")
	fs.IntVar(&cfg.eventDocs, "event-docs", 8, "event: attacker documents whose events go to a silent endpoint")
	fs.DurationVar(&cfg.eventWait, "event-wait", 150*time.Second, "event: longest wait for the victim's event")
	fs.IntVar(&cfg.dropDocs, "drop-docs", 10050, "eventdrop: attacker documents changed")
	fs.DurationVar(&cfg.dropWait, "drop-wait", 30*time.Second, "eventdrop: longest wait for the victim's event")
	fs.IntVar(&cfg.topics, "topics", 40, "topic: broadcasts to a watcher that does not read")
	fs.IntVar(&cfg.topicBytes, "topic-bytes", 16<<20, "topic: bytes of each broadcast's topic")
	fs.IntVar(&cfg.viewOps, "view-ops", 100000, "docview: operations of the viewed document")
	fs.IntVar(&cfg.views, "views", 8, "docview: GETs of its view at once")
	fs.IntVar(&cfg.bombs, "bombs", 20, "bomb: gzip bombs sent at once")
	fs.IntVar(&cfg.bombBytes, "bomb-bytes", 1<<30, "bomb: bytes each bomb inflates to")
	fs.IntVar(&cfg.longRequests, "long-requests", 3000, "authlong: ActivateClient calls at the project whose webhook never answers")
	fs.DurationVar(&cfg.longSpread, "long-spread", 3*time.Second, "authlong: the calls are spread over this long")
	fs.DurationVar(&cfg.longTimeout, "long-timeout", time.Hour, "authlong: the project's auth webhook request timeout")
	fs.DurationVar(&cfg.signUpFor, "signup-for", 10*time.Second, "signup: SignUp calls from one address, 4 at a time, for this long")
	fs.IntVar(&cfg.fieldCalls, "field-calls", 20, "fields: calls with each oversized field")
	fs.IntVar(&cfg.fieldBytes, "field-bytes", 1<<20, "fields: bytes of each oversized value")
	verbose := fs.Bool("v", false, "log progress and the servers' warnings")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if len(bins) == 0 {
		fmt.Fprintln(stderr, "yorkie-attack: give at least one -bin name=path")
		return 2
	}
	var chosen []attack
	for _, n := range strings.Split(*names, ",") {
		i := slices.IndexFunc(attacks(), func(a attack) bool { return a.name == n })
		if i < 0 {
			fmt.Fprintf(stderr, "yorkie-attack: unknown attack %q\n", n)
			return 2
		}
		chosen = append(chosen, attacks()[i])
	}
	level := slog.LevelWarn
	if *verbose {
		level = slog.LevelDebug
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	var table [][]string
	header := []string{"attack", "figure"}
	for _, b := range bins {
		header = append(header, b.name)
	}
	for _, a := range chosen {
		var cols [][]figure
		for _, b := range bins {
			logger.Info("attack", "attack", a.name, "binary", b.name)
			figs, err := attackBinary(ctx, b, a, cfg, logger, *verbose, stderr)
			if err != nil {
				figs = append(figs, figure{"error", err.Error()})
			}
			cols = append(cols, figs)
		}
		table = append(table, merge(a.name, cols)...)
	}
	printTable(stdout, header, table)
	return 0
}

// attackBinary starts b, runs a against it and stops it.
func attackBinary(ctx context.Context, b binary, a attack, cfg config, logger *slog.Logger, verbose bool, stderr io.Writer) ([]figure, error) {
	var serverLog io.Writer = io.Discard
	if verbose {
		serverLog = stderr
	}
	t, err := startServer(ctx, b.path, serverLog, a.defaults, b.args...)
	if err != nil {
		return nil, err
	}
	defer t.stop()
	actx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	return a.run(actx, t, cfg, logger)
}

// merge lays the figures of each binary side by side, in the order the
// first binary that has a figure gives it.
func merge(attackName string, cols [][]figure) [][]string {
	var names []string
	for _, col := range cols {
		for _, f := range col {
			if !slices.Contains(names, f.name) {
				names = append(names, f.name)
			}
		}
	}
	var rows [][]string
	for _, n := range names {
		row := []string{attackName, n}
		for _, col := range cols {
			v := ""
			if i := slices.IndexFunc(col, func(f figure) bool { return f.name == n }); i >= 0 {
				v = col[i].value
			}
			row = append(row, v)
		}
		rows = append(rows, row)
	}
	return rows
}

// printTable prints a Markdown table.
func printTable(w io.Writer, header []string, rows [][]string) {
	fmt.Fprintf(w, "| %s |\n", strings.Join(header, " | "))
	fmt.Fprintf(w, "|%s\n", strings.Repeat(" --- |", len(header)))
	for _, r := range rows {
		fmt.Fprintf(w, "| %s |\n", strings.Join(r, " | "))
	}
}
