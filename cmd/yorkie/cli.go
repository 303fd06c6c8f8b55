package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"
)

// cli holds what every command shares: upstream's global flags
// --rpc-addr and -o/--output, and where output goes.
type cli struct {
	stdout, stderr io.Writer
	stdin          io.Reader
	lines          *bufio.Reader // stdin, once a line was read
	rpcAddr        string
	output         string
}

// addr is --rpc-addr when given; "" lets the current context choose.
func (c *cli) addr(cmd *cobra.Command) string {
	if f := cmd.Flags().Lookup("rpc-addr"); f != nil && f.Changed {
		return c.rpcAddr
	}
	return ""
}

// newRootCommand is upstream's command tree: the server, the account and
// context commands, projects, documents, history and version.
func newRootCommand(stdout, stderr io.Writer, stdin io.Reader) *cobra.Command {
	c := &cli{stdout: stdout, stderr: stderr, stdin: stdin}
	root := &cobra.Command{
		Use:           "yorkie",
		Short:         "A Yorkie-compatible collaboration server and its admin CLI",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			return checkOutput(c.output)
		},
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.PersistentFlags().StringVar(&c.rpcAddr, "rpc-addr", defaultRPCAddr, "address of the server; without it, the current context's")
	root.PersistentFlags().StringVarP(&c.output, "output", "o", "", "output format: yaml or json (default: a table)")
	root.AddCommand(
		&cobra.Command{
			Use:                "server [flags]",
			Short:              "Run a Yorkie server (see yorkie server -h)",
			DisableFlagParsing: true,
			RunE: func(cmd *cobra.Command, args []string) error {
				return codeError(runServer(args, stderr))
			},
		},
		&cobra.Command{
			Use:                "migrate upstream [flags]",
			Short:              "Import an upstream Yorkie database (see yorkie migrate upstream -h)",
			DisableFlagParsing: true,
			RunE: func(cmd *cobra.Command, args []string) error {
				return codeError(runMigrate(args, stdout, stderr))
			},
		},
		c.loginCommand(), c.logoutCommand(), c.signupCommand(), c.passwdCommand(), c.deleteAccountCommand(),
		c.contextCommand(), c.projectCommand(), c.documentCommand(), c.historyCommand(), c.versionCommand(),
		c.drainCommand(),
	)
	return root
}

// run runs the command line and returns the process exit status: 2 for a
// command line that cannot run, 1 for a failure.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "server" {
		return runServer(args[1:], stderr)
	}
	root := newRootCommand(stdout, stderr, os.Stdin)
	root.SetArgs(args)
	cmd, err := root.ExecuteC()
	if err == nil {
		return 0
	}
	var exit exitError
	if errors.As(err, &exit) {
		return exit.code
	}
	name := "yorkie"
	if cmd != nil {
		name = cmd.CommandPath()
	}
	fmt.Fprintf(stderr, "%s: %v\n", name, err)
	var usage usageError
	if errors.As(err, &usage) || isCobraUsageError(err) {
		if cmd != nil {
			fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", name)
		}
		return 2
	}
	return 1
}

// isCobraUsageError tells the command-line errors cobra and pflag make.
func isCobraUsageError(err error) bool {
	msg := err.Error()
	for _, s := range []string{"unknown command", "unknown flag", "unknown shorthand flag", "flag needs an argument",
		"invalid argument", "required flag", "accepts ", "requires "} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

func codeError(code int) error {
	if code == 0 {
		return nil
	}
	return exitError{code}
}

// args checks the number of positional arguments, naming them.
func exactArgs(names ...string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != len(names) {
			return usageError{fmt.Errorf("want %s, got %d argument(s)", strings.Join(names, " and "), len(args))}
		}
		for i, a := range args {
			if a == "" {
				return usageError{fmt.Errorf("%s is empty", names[i])}
			}
		}
		return nil
	}
}

// readSecret reads a password from the terminal without echo, or a line
// of standard input when it is not a terminal (scripts, tests).
func (c *cli) readSecret(prompt string) (string, error) {
	fmt.Fprint(c.stderr, prompt)
	defer fmt.Fprintln(c.stderr)
	if f, ok := c.stdin.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		b, err := term.ReadPassword(int(f.Fd()))
		if err != nil {
			return "", fmt.Errorf("read password: %w", err)
		}
		return string(b), nil
	}
	return c.readLine()
}

// readLine reads one line of standard input.
func (c *cli) readLine() (string, error) {
	if c.lines == nil {
		c.lines = bufio.NewReader(c.stdin)
	}
	line, err := c.lines.ReadString('\n')
	if err != nil && (line == "" || !errors.Is(err, io.EOF)) {
		return "", fmt.Errorf("read standard input: %w", err)
	}
	return strings.TrimRight(line, "\r\n"), nil
}
