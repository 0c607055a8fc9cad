package api

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/http/apierr"
)

// Streams caps each user's open streams: the one over the cap is 429 rate_limit_exceeded with
// Retry-After, other users are not held by it, a stream that ends frees its place; at shutdown
// every stream is refused with 503 instead.
func TestStreamsCapPerUser(t *testing.T) {
	t.Parallel()
	s := NewStreams(2)
	require.NoError(t, s.add("a", "shutting down"))
	require.NoError(t, s.add("a", "shutting down"))
	err := s.add("a", "shutting down")
	var ae *apierr.Error
	require.ErrorAs(t, err, &ae)
	require.Equal(t, http.StatusTooManyRequests, ae.Status)
	require.Equal(t, apierr.CodeRateLimitExceeded, ae.Code)
	require.Equal(t, "5", ae.Header.Get("Retry-After"))
	require.NoError(t, s.add("b", "shutting down"), "another user")
	s.done("a")
	require.Equal(t, 1, s.OpenOf("a"))
	require.NoError(t, s.add("a", "shutting down"), "a place freed")

	for _, u := range []string{"a", "a", "b"} {
		s.done(u)
	}
	require.Zero(t, s.OpenOf("a"))
	require.Zero(t, s.OpenOf("b"))
	require.NoError(t, s.Close(context.Background()))
	err = s.add("c", "shutting down")
	require.ErrorAs(t, err, &ae)
	require.Equal(t, http.StatusServiceUnavailable, ae.Status)

	unlimited := NewStreams(-1)
	for range 100 {
		require.NoError(t, unlimited.add("a", ""))
	}
	require.Equal(t, DefaultMaxStreamsPerUser, NewStreams(0).MaxPerUser())
}
