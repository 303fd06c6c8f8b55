package sdkdiff_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/yorkie-affinity/yorkie/test/testenv"
)

// recordEnv names a directory where every session's lines (with our snapshot answers in
// effect) are written as <kind or mixed>-seed<n>.jsonl, to keep one in testdata.
const recordEnv = "YORKIE_SDKDIFF_RECORD"

// seedsEnv adds that many seeds (from 1000 on) to the sets named in setsEnv (a comma
// list, "mixed" when unset): a longer search for divergences than the default run.
const (
	seedsEnv = "YORKIE_SDKDIFF_SEEDS"
	setsEnv  = "YORKIE_SDKDIFF_SETS"
)

type sessionSet struct {
	name  string
	kinds []string
	seeds []int
	steps int
	// extra are more arguments of gen.js.
	extra []string
}

// sessions are what the test runs: a few sessions of each kind alone, then sessions of all
// kinds together. Every session has its own seed; a failure names it.
var sessions = []sessionSet{
	{"object", []string{"object"}, []int{1, 2, 3}, 250, nil},
	{"array", []string{"array"}, []int{1, 2, 3}, 250, nil},
	{"counter", []string{"counter"}, []int{1, 2}, 200, nil},
	{"primitive", []string{"primitive"}, []int{1, 2}, 200, nil},
	{"text", []string{"text"}, []int{1, 2, 3}, 250, nil},
	{"tree", []string{"tree"}, []int{1, 2, 3}, 250, nil},
	// Sessions of every kind together.
	{"mixed", nil, []int{11, 12, 13, 14, 15}, 400, nil},
	// Many late joiners while arrays move: each loads our snapshot of a document whose
	// moved elements often still have their emptied first positions
	// (testdata/mixed-seed1093.jsonl).
	{"latejoin", []string{"array"}, []int{1, 2, 3, 4}, 300, []string{"--joins", "8",
		"--weights", `{"join":4,"full":0.5}`, "--op-weights", `{"moveLast":6,"moveAfter":4,"push":6}`}},
}

var allKinds = []string{"object", "array", "counter", "primitive", "text", "tree"}

// generator is how to run gen.js here.
type generator struct {
	node, script string
}

func findGenerator(t *testing.T) generator {
	t.Helper()
	node := testenv.LookBinary(t, "node")
	script, err := filepath.Abs("gen.js")
	if err != nil {
		t.Fatal(err)
	}
	sdk := filepath.Join(filepath.Dir(script), "..", "..", "..", "test", "e2e", "node_modules", "@yorkie-js", "sdk")
	if _, err := os.Stat(sdk); err != nil {
		testenv.Unavailable(t, "the JS SDK is not installed (run npm ci in test/e2e): %v", err)
	}
	return generator{node: node, script: script}
}

func (g generator) args(kinds []string, seed, steps int, extra []string, trace bool) []string {
	args := []string{g.script, "--seed", strconv.Itoa(seed), "--steps", strconv.Itoa(steps),
		"--kinds", strings.Join(kinds, ","), "--answer-snapshots"}
	args = append(args, extra...)
	if trace {
		args = append(args, "--trace")
	}
	return args
}

// replay runs one session and replays it as it is produced.
func (g generator) replay(ctx context.Context, kinds []string, seed, steps int, extra []string, trace bool) (*replayer, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cmd := exec.CommandContext(ctx, g.node, g.args(kinds, seed, steps, extra, trace)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the generator: %w", err)
	}
	var out io.Reader = stdout
	if dir := os.Getenv(recordEnv); dir != "" && !trace {
		name := "mixed"
		if len(kinds) == 1 {
			name = kinds[0]
		}
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("%s-seed%d.jsonl", name, seed)))
		if err != nil {
			return nil, fmt.Errorf("record the session: %w", err)
		}
		defer f.Close()
		out = io.TeeReader(stdout, f)
	}
	p := newReplayer(kinds, stdin)
	runErr := p.run(out)
	stdin.Close()
	if runErr != nil && out != io.Reader(stdout) {
		// Keep the rest of the session in the recording.
		_, _ = io.Copy(io.Discard, out)
	}
	if runErr != nil {
		cancel()
		_ = cmd.Wait()
		return p, runErr
	}
	if err := cmd.Wait(); err != nil {
		return p, fmt.Errorf("generator: %w\n%s", err, stderr.String())
	}
	return p, nil
}

func TestSDKSessions(t *testing.T) {
	g := findGenerator(t)
	sets, err := withExtraSeeds(sessions, os.Getenv(seedsEnv), os.Getenv(setsEnv))
	if err != nil {
		t.Fatal(err)
	}
	for _, set := range sets {
		if set.kinds == nil {
			set.kinds = allKinds
		}
		t.Run(set.name, func(t *testing.T) {
			t.Parallel()
			for _, seed := range set.seeds {
				t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
					runSession(t, g, set.kinds, seed, set.steps, set.extra)
				})
			}
		})
	}
}

func runSession(t *testing.T, g generator, kinds []string, seed, steps int, extra []string) {
	p, err := g.replay(t.Context(), kinds, seed, steps, extra, false)
	if err == nil {
		t.Logf("%d changes, %d operations, %d checks, %d SDK snapshots read (%d that the SDK itself reads back differently), %d of ours loaded by the SDK (%d read back differently, as the SDK reads its own); garbage once settled: %d (-1: stopped before)",
			p.stats.changes, p.stats.ops, p.stats.checks, p.stats.snapshots, p.stats.lossySnapshots, p.stats.loads, p.stats.lossyLoads, p.stats.settledGarbage)
		if len(p.stats.sdkDiverged) > 0 {
			t.Logf("SDK replicas that do not converge with the log (compared with the log): %s", strings.Join(p.stats.sdkDiverged, "; "))
		}
		if len(p.stats.revived) > 0 {
			t.Logf("a replica undid a removal; replicas whose garbage once settled differs from ours (%d): %s", p.stats.settledGarbage, strings.Join(p.stats.revived, "; "))
		}
		for _, f := range p.stats.faults {
			t.Logf("the SDK failed by itself and the session stopped early: %s", f)
		}
		if p.stats.checks == 0 {
			t.Errorf("seed %d: the session checked nothing", seed)
		}
		return
	}
	var d *divergence
	if !errors.As(err, &d) {
		t.Fatalf("seed %d (kinds %s): %v", seed, strings.Join(kinds, ","), err)
	}
	// Replay again with the SDK's JSON after every change, to name the first change
	// after which the documents differ.
	first := err
	if _, terr := g.replay(t.Context(), kinds, seed, steps, extra, true); terr != nil {
		var td *divergence
		if errors.As(terr, &td) && td.change != nil {
			first = terr
		}
	}
	found := ""
	if first != err {
		found = fmt.Sprintf("\nfound at: %v", err)
	}
	t.Fatalf("seed %d (kinds %s) diverges from the SDK\nfirst divergence: %v%s\nreproduce: node %s | node %s",
		seed, strings.Join(kinds, ","), first, found, shellWords(g.args(kinds, seed, steps, extra, true)),
		filepath.Join(filepath.Dir(g.script), "dump.js"))
}

// TestSDKCorpus replays recorded sessions (testdata/*.jsonl, written by gen.js) without
// Node: cases worth keeping, such as past divergences. Every one must pass: a recorded
// divergence is fixed, not set aside.
func TestSDKCorpus(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".jsonl")
		t.Run(name, func(t *testing.T) {
			kind, _, _ := strings.Cut(name, "-")
			r, err := os.Open(f)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			// A recorded session names its kinds in its start line; one written by hand
			// has the kind its name starts with.
			p := newReplayer([]string{kind}, nil)
			if err := p.run(r); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
		})
	}
}

// withExtraSeeds returns sets with n (the value of seedsEnv, "" for none) more seeds in each
// set named in names (the value of setsEnv, "" for the mixed set).
func withExtraSeeds(sets []sessionSet, n, names string) ([]sessionSet, error) {
	if n == "" {
		return sets, nil
	}
	extra, err := strconv.Atoi(n)
	if err != nil || extra < 0 {
		return nil, fmt.Errorf("%s=%q: want a number of seeds", seedsEnv, n)
	}
	if names == "" {
		names = "mixed"
	}
	chosen := strings.Split(names, ",")
	out := slices.Clone(sets)
	for _, name := range chosen {
		i := slices.IndexFunc(out, func(s sessionSet) bool { return s.name == name })
		if i < 0 {
			return nil, fmt.Errorf("%s: no session set %q", setsEnv, name)
		}
		seeds := slices.Clone(out[i].seeds)
		for s := 1000; s < 1000+extra; s++ {
			seeds = append(seeds, s)
		}
		out[i].seeds = seeds
	}
	return out, nil
}

// shellWords joins args into a command line a shell reads back as args.
func shellWords(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if strings.Trim(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789,._/-") != "" || a == "" {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		out[i] = a
	}
	return strings.Join(out, " ")
}
