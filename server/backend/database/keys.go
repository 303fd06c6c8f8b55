package database

import (
	"crypto/rand"
	"strings"
)

// NewProjectKey returns a fresh public or secret key of a project: 128 random
// bits or more, so keys are unguessable and, in practice, never collide
// (the databases still refuse a duplicate).
func NewProjectKey() string { return strings.ToLower(rand.Text()) }

// NewSecret returns a fresh server secret, 256 random bits.
func NewSecret() string { return strings.ToLower(rand.Text() + rand.Text()) }
