package database

import "context"

// AccountChanges changes and removes accounts and project keys: the calls
// of the admin API beyond creating and finding them.
type AccountChanges interface {
	// CreateExternalUser stores a new user without a password whose
	// identity the provider vouches for, or fails with
	// ErrUserAlreadyExists.
	CreateExternalUser(ctx context.Context, username, provider string) (*UserInfo, error)
	// FindUserByID returns the user or ErrUserNotFound.
	FindUserByID(ctx context.Context, id string) (*UserInfo, error)
	// UpdatePassword replaces the user's password hash; ErrUserNotFound if
	// there is no such user.
	UpdatePassword(ctx context.Context, username, hashedPassword string) (*UserInfo, error)
	// DeleteUser removes the user; ErrUserNotFound if there is none. Its
	// projects stay, as upstream's do: their keys keep working.
	DeleteUser(ctx context.Context, username string) error
	// RotateProjectKeys gives the project a fresh public and secret key;
	// the old ones stop naming it. ErrProjectNotFound for an unknown ID.
	RotateProjectKeys(ctx context.Context, id string) (*ProjectInfo, error)
	// CountProjects returns how many projects the user owns.
	CountProjects(ctx context.Context, owner string) (int, error)
}
