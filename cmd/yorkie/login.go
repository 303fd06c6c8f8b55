package main

import (
	"errors"
	"fmt"

	"connectrpc.com/connect"
	"github.com/spf13/cobra"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
)

// credentialFlags are login's and signup's: -u, -p (asked for when
// missing) and --insecure (cleartext instead of TLS).
type credentialFlags struct {
	username, password string
	insecure           bool
}

func (f *credentialFlags) register(cmd *cobra.Command, withPassword bool) {
	cmd.Flags().StringVarP(&f.username, "username", "u", "", "user name (required)")
	_ = cmd.MarkFlagRequired("username")
	if withPassword {
		cmd.Flags().StringVarP(&f.password, "password", "p", "", "password (asked for when not given)")
	}
}

func (c *cli) password(f *credentialFlags) error {
	if f.password != "" {
		return nil
	}
	p, err := c.readSecret("Enter Password: ")
	if err != nil {
		return err
	}
	if p == "" {
		return usageError{errors.New("a password is required")}
	}
	f.password = p
	return nil
}

// loginCommand logs in and keeps the token as the context of the server,
// which becomes the current one.
func (c *cli) loginCommand() *cobra.Command {
	f := &credentialFlags{}
	cmd := &cobra.Command{
		Use:   "login",
		Short: "Log in to a Yorkie server",
		Args:  exactArgs(),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := c.password(f); err != nil {
				return err
			}
			conf, err := loadConfig()
			if err != nil {
				return err
			}
			s := dialAdmin(c.rpcAddr, cliAuth{Insecure: f.insecure})
			ctx, cancel := callContext()
			defer cancel()
			res, err := s.client.LogIn(ctx, connect.NewRequest(&api.LogInRequest{Username: f.username, Password: f.password}))
			if err != nil {
				return fmt.Errorf("log in to %s: %w", s.addr, err)
			}
			conf.Auths[s.addr] = cliAuth{Token: res.Msg.Token, Insecure: f.insecure}
			conf.RPCAddr = s.addr
			return saveConfig(conf)
		},
	}
	f.register(cmd, true)
	cmd.Flags().BoolVar(&f.insecure, "insecure", false, "reach the server over cleartext HTTP instead of TLS")
	return cmd
}

// logoutCommand forgets the token of the server (the current context
// unless --rpc-addr), or every token with --force.
func (c *cli) logoutCommand() *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:   "logout",
		Short: "Log out of a Yorkie server",
		Args:  exactArgs(),
		RunE: func(cmd *cobra.Command, args []string) error {
			conf, err := loadConfig()
			if err != nil {
				return err
			}
			addr := c.addr(cmd)
			if addr == "" {
				addr = conf.RPCAddr
			}
			if force || len(conf.Auths) <= 1 {
				return deleteConfig()
			}
			conf.forget(addr)
			return saveConfig(conf)
		},
	}
	cmd.Flags().BoolVar(&force, "force", false, "log out of every server")
	cmd.Flags().BoolVar(&force, "all", false, "same as --force")
	_ = cmd.Flags().MarkHidden("all")
	return cmd
}

// signupCommand creates an account; it does not log in.
func (c *cli) signupCommand() *cobra.Command {
	f := &credentialFlags{}
	cmd := &cobra.Command{
		Use:   "signup",
		Short: "Sign up to a Yorkie server",
		Args:  exactArgs(),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := c.password(f); err != nil {
				return err
			}
			s := dialAdmin(c.rpcAddr, cliAuth{Insecure: f.insecure})
			ctx, cancel := callContext()
			defer cancel()
			res, err := s.client.SignUp(ctx, connect.NewRequest(&api.SignUpRequest{Username: f.username, Password: f.password}))
			if err != nil {
				return fmt.Errorf("signup failed: %w", s.explain("SignUp", err))
			}
			fmt.Fprintf(c.stdout, "Signed up as '%s' (ID: %s)\n", res.Msg.User.GetUsername(), res.Msg.User.GetId())
			return nil
		},
	}
	f.register(cmd, true)
	cmd.Flags().BoolVar(&f.insecure, "insecure", false, "reach the server over cleartext HTTP instead of TLS")
	return cmd
}

// passwdCommand changes the password of the account logged in to the
// current server, asking for the current and the new one, then forgets
// the token (the server revokes it).
func (c *cli) passwdCommand() *cobra.Command {
	f := &credentialFlags{}
	cmd := &cobra.Command{
		Use:   "passwd",
		Short: "Change the password of an account",
		Args:  exactArgs(),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, conf, err := openSession(c.addr(cmd))
			if err != nil {
				return err
			}
			req, err := request(s, &api.ChangePasswordRequest{Username: f.username})
			if err != nil {
				return err
			}
			if req.Msg.CurrentPassword, err = c.readSecret("Enter Password: "); err != nil {
				return err
			}
			if req.Msg.NewPassword, err = c.readSecret("Enter New Password: "); err != nil {
				return err
			}
			ctx, cancel := callContext()
			defer cancel()
			if _, err := s.client.ChangePassword(ctx, req); err != nil {
				return fmt.Errorf("change password: %w", s.explain("ChangePassword", err))
			}
			delete(conf.Auths, s.addr)
			return saveConfig(conf)
		},
	}
	f.register(cmd, false)
	return cmd
}

// deleteAccountCommand deletes the account after the user types DELETE,
// and forgets the server's context.
func (c *cli) deleteAccountCommand() *cobra.Command {
	f := &credentialFlags{}
	cmd := &cobra.Command{
		Use:   "delete-account",
		Short: "Delete an account",
		Args:  exactArgs(),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, conf, err := openSession(c.addr(cmd))
			if err != nil {
				return err
			}
			req, err := request(s, &api.DeleteAccountRequest{Username: f.username})
			if err != nil {
				return err
			}
			if err := c.password(f); err != nil {
				return err
			}
			req.Msg.Password = f.password
			fmt.Fprintln(c.stderr, "Warning: This action cannot be undone. Type 'DELETE' to confirm: ")
			answer, err := c.readLine()
			if err != nil {
				return err
			}
			if answer != "DELETE" {
				return errors.New("account deletion aborted")
			}
			ctx, cancel := callContext()
			defer cancel()
			if _, err := s.client.DeleteAccount(ctx, req); err != nil {
				return fmt.Errorf("delete account: %w", s.explain("DeleteAccount", err))
			}
			conf.forget(s.addr)
			return saveConfig(conf)
		},
	}
	f.register(cmd, true)
	return cmd
}
