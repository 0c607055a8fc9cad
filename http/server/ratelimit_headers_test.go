package server

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// The rate limit headers carry the plan's figures, each header its own value, and adding to one
// leaves the others as they were.
func TestRateLimitHeaders(t *testing.T) {
	t.Parallel()
	h := http.Header{}
	setRateLimitHeaders(h, `pro "x"`, 10000, 9876, 3599)
	require.Equal(t, http.Header{
		"Ratelimit-Limit":     {"10000"},
		"Ratelimit-Remaining": {"9876"},
		"Ratelimit-Reset":     {"3599"},
		"Ratelimit-Policy":    {`"pro \"x\"";q=10000;w=3600`},
		"Ratelimit":           {`"pro \"x\"";r=9876;t=3599`},
	}, h)
	h.Add("Ratelimit-Limit", "1")
	require.Equal(t, []string{"10000", "1"}, h["Ratelimit-Limit"])
	require.Equal(t, []string{"9876"}, h["Ratelimit-Remaining"])

	setRateLimitHeaders(h, "free", 60, 0, 0)
	require.Equal(t, []string{"60"}, h["Ratelimit-Limit"])
	require.Equal(t, []string{"0"}, h["Ratelimit-Remaining"])
	require.Equal(t, []string{`"free";q=60;w=3600`}, h["Ratelimit-Policy"])
	require.Equal(t, []string{`"free";r=0;t=0`}, h["Ratelimit"])
}
