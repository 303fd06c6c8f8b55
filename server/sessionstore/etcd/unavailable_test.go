package etcd

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestUnavailableTakesTheDeadlineEtcdRanOut: a call whose deadline ran out
// at etcd (while a new leader was elected) comes back as an unknown error
// naming the deadline, before the caller's own context ends; the store
// must answer it ErrUnavailable, as it does a deadline that ran out here.
func TestUnavailableTakesTheDeadlineEtcdRanOut(t *testing.T) {
	atEtcd := status.Error(codes.Unknown, context.DeadlineExceeded.Error())
	assert.True(t, unavailable(atEtcd))
	assert.True(t, unavailable(fmt.Errorf("resolve: %w", atEtcd)))
	assert.True(t, unavailable(status.Error(codes.Unavailable, "no leader")))
	assert.True(t, unavailable(context.DeadlineExceeded))

	assert.False(t, unavailable(status.Error(codes.Unknown, "something else")))
	assert.False(t, unavailable(status.Error(codes.InvalidArgument, context.DeadlineExceeded.Error())))
	assert.False(t, unavailable(errors.New("bad answer")))
}
