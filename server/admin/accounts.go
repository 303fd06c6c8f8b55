package admin

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"time"

	"connectrpc.com/connect"
	"golang.org/x/crypto/bcrypt"
	"google.golang.org/protobuf/types/known/timestamppb"

	api "github.com/yorkie-affinity/yorkie/api/yorkie/v1"
	"github.com/yorkie-affinity/yorkie/server/backend/database"
)

// Error codes of the account calls.
const (
	// CodeTooManyAttempts: a log-in or sign-up came too soon after earlier
	// ones from the same user or address; the message says when to retry.
	CodeTooManyAttempts = "ErrTooManyAttempts"
	// CodeSignUpDisabled: the server was started with sign-up turned off.
	CodeSignUpDisabled = "ErrSignUpDisabled"
	// CodeTooManyProjects: the user owns the most projects allowed.
	CodeTooManyProjects = "ErrTooManyProjects"
	// CodeDefaultAccount: the server's own admin account cannot be deleted
	// (it would come back with its configured password at the next start).
	CodeDefaultAccount = "ErrDefaultAccount"
)

// Throttling of password checks and sign-ups. Log-ins (and the other calls
// that check a password) are slowed per username after
// loginFreeAttemptsPerUser failures, and per address after
// loginFreeAttemptsPerAddr failures; the wait doubles from a second up to
// loginMaxBackoff. Sign-ups are slowed per address after
// signUpFreePerAddr, doubling from signUpBaseBackoff up to an hour.
const (
	loginFreeAttemptsPerUser = 5
	loginFreeAttemptsPerAddr = 20
	loginBaseBackoff         = time.Second
	loginMaxBackoff          = 15 * time.Minute
	signUpFreePerAddr        = 20
	signUpBaseBackoff        = time.Second
	signUpMaxBackoff         = time.Hour
)

// DefaultMaxProjectsPerUser bounds the projects one user may own when
// Settings.MaxProjectsPerUser is 0.
const DefaultMaxProjectsPerUser = 100

func tooManyAttempts(wait time.Duration) error {
	secs := int(math.Ceil(wait.Seconds()))
	return newError(connect.CodeResourceExhausted, CodeTooManyAttempts,
		fmt.Errorf("too many attempts: retry in %d s", secs))
}

// errBadCredentials is what every failed password check answers, whether
// the user exists or not.
func errBadCredentials() error {
	return newError(connect.CodeUnauthenticated, CodeMismatchedPassword, errors.New("unknown user or wrong password"))
}

// CheckPassword returns the user when the password is theirs. It is
// throttled per username and per address (the caller's IP), and costs
// the same whether the user exists or not. The /auth/login endpoint and
// every AdminService call that takes a password use it.
func (s *Service) CheckPassword(ctx context.Context, username, password, addr string) (*database.UserInfo, error) {
	userKey, addrKey := username, hostOf(addr)
	userWait, err := s.loginUsers.wait(ctx, userKey)
	if err != nil {
		return nil, s.toConnect(ctx, err)
	}
	addrWait, err := s.loginAddrs.wait(ctx, addrKey)
	if err != nil {
		return nil, s.toConnect(ctx, err)
	}
	if wait := max(userWait, addrWait); wait > 0 {
		return nil, tooManyAttempts(wait)
	}
	user, err := s.db.FindUserByName(ctx, username)
	var hash []byte
	switch {
	case err == nil:
		hash = []byte(user.HashedPassword)
	case errors.Is(err, database.ErrUserNotFound):
		if hash, err = s.dummyHash(); err != nil {
			return nil, s.toConnect(ctx, err)
		}
	default:
		return nil, s.toConnect(ctx, err)
	}
	if bcrypt.CompareHashAndPassword(hash, []byte(password)) != nil || user == nil {
		if err := errors.Join(s.loginUsers.strike(ctx, userKey), s.loginAddrs.strike(ctx, addrKey)); err != nil {
			return nil, s.toConnect(ctx, err)
		}
		return nil, errBadCredentials()
	}
	if err := s.loginUsers.forget(ctx, userKey); err != nil {
		return nil, s.toConnect(ctx, err)
	}
	return user, nil
}

// IssueToken returns an admin token for the user: what LogIn answers and
// what the session cookie holds.
func (s *Service) IssueToken(user *database.UserInfo) (string, error) {
	return s.tokens.issue(user.Username, user.HashedPassword)
}

// SignUp creates an account. Signing up with a name that is taken answers
// as a success would (with an ID that names no one) and changes nothing,
// so sign-up does not tell which names exist; the caller then cannot log
// in with the password it chose.
func (s *Service) SignUp(ctx context.Context, req *connect.Request[api.SignUpRequest]) (*connect.Response[api.SignUpResponse], error) {
	if s.cfg.SignUpDisabled {
		return nil, newError(connect.CodePermissionDenied, CodeSignUpDisabled,
			errors.New("sign-up is turned off on this server: ask its operator for an account"))
	}
	if err := errors.Join(validateUsername(req.Msg.Username), validatePassword(req.Msg.Password)); err != nil {
		return nil, invalidArgument(err)
	}
	addrKey := hostOf(req.Peer().Addr)
	wait, err := s.signUps.wait(ctx, addrKey)
	if err != nil {
		return nil, s.toConnect(ctx, err)
	}
	if wait > 0 {
		return nil, tooManyAttempts(wait)
	}
	if err := s.signUps.strike(ctx, addrKey); err != nil {
		return nil, s.toConnect(ctx, err)
	}
	user, err := s.createUser(ctx, req.Msg.Username, req.Msg.Password)
	if errors.Is(err, database.ErrUserAlreadyExists) {
		var id [12]byte
		_, _ = rand.Read(id[:]) // crypto/rand.Read never fails
		return connect.NewResponse(&api.SignUpResponse{User: &api.User{
			Id: hex.EncodeToString(id[:]), Username: req.Msg.Username, CreatedAt: timestamppb.New(s.cfg.Now()),
		}}), nil
	}
	if err != nil {
		return nil, s.toConnect(ctx, err)
	}
	return connect.NewResponse(&api.SignUpResponse{User: toUser(user)}), nil
}

// LogIn checks a password and returns a token.
func (s *Service) LogIn(ctx context.Context, req *connect.Request[api.LogInRequest]) (*connect.Response[api.LogInResponse], error) {
	user, err := s.CheckPassword(ctx, req.Msg.Username, req.Msg.Password, req.Peer().Addr)
	if err != nil {
		return nil, err
	}
	token, err := s.IssueToken(user)
	if err != nil {
		return nil, s.toConnect(ctx, err)
	}
	return connect.NewResponse(&api.LogInResponse{Token: token}), nil
}

// ChangePassword replaces a user's password after checking the current
// one. Every token issued before stops working.
func (s *Service) ChangePassword(ctx context.Context, req *connect.Request[api.ChangePasswordRequest]) (*connect.Response[api.ChangePasswordResponse], error) {
	if err := validatePassword(req.Msg.NewPassword); err != nil {
		return nil, invalidArgument(err)
	}
	user, err := s.CheckPassword(ctx, req.Msg.Username, req.Msg.CurrentPassword, req.Peer().Addr)
	if err != nil {
		return nil, err
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(req.Msg.NewPassword), s.cfg.PasswordCost)
	if err != nil {
		return nil, s.toConnect(ctx, fmt.Errorf("hash password: %w", err))
	}
	if _, err := s.db.UpdatePassword(ctx, user.Username, string(hash)); err != nil {
		return nil, s.toConnect(ctx, err)
	}
	s.logger.InfoContext(ctx, "admin password changed", "user", user.Username)
	return connect.NewResponse(&api.ChangePasswordResponse{}), nil
}

// DeleteAccount removes a user after checking its password, with its
// memberships. Its projects stay, as upstream's do. The server's own admin
// account is refused.
func (s *Service) DeleteAccount(ctx context.Context, req *connect.Request[api.DeleteAccountRequest]) (*connect.Response[api.DeleteAccountResponse], error) {
	user, err := s.CheckPassword(ctx, req.Msg.Username, req.Msg.Password, req.Peer().Addr)
	if err != nil {
		return nil, err
	}
	if user.Username == s.cfg.User {
		return nil, newError(connect.CodeFailedPrecondition, CodeDefaultAccount,
			fmt.Errorf("%q is this server's admin account: it would be made again at the next start", user.Username))
	}
	if err := s.db.DeleteUser(ctx, user.Username); err != nil {
		return nil, s.toConnect(ctx, err)
	}
	if err := s.db.RemoveMemberships(ctx, user.ID); err != nil {
		return nil, s.toConnect(ctx, err)
	}
	return connect.NewResponse(&api.DeleteAccountResponse{}), nil
}

// checkProjectLimit refuses a new project when the user owns the most
// allowed.
func (s *Service) checkProjectLimit(ctx context.Context, user *database.UserInfo) error {
	limit := s.cfg.MaxProjectsPerUser
	if limit < 0 {
		return nil
	}
	n, err := s.db.CountProjects(ctx, user.ID)
	if err != nil {
		return s.toConnect(ctx, err)
	}
	if n >= limit {
		return newError(connect.CodeResourceExhausted, CodeTooManyProjects,
			fmt.Errorf("you own %d projects, the most this server allows", n))
	}
	return nil
}
