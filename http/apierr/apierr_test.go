package apierr

import (
	"net/http"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// specCodes is the spec's full set of error codes; Herald sends no other.
var specCodes = []string{
	"invalid_api_key", "api_key_revoked", "api_key_expired", "unauthorized", "forbidden", "not_found",
	"validation_error", "rate_limit_exceeded", "idempotency_conflict", "limit_exceeded", "not_implemented", "internal_error",
}

func TestErrorsUseOnlyTheSpecCodes(t *testing.T) {
	t.Parallel()
	for _, e := range []*Error{
		Validation("x"), NotFound("post"), Forbidden("post"), Internal(), Unavailable("busy"),
	} {
		require.True(t, slices.Contains(specCodes, e.Code), "code %q is not in the spec", e.Code)
		require.Equal(t, "urn:herald:problem:"+e.Code, e.Body().Type)
	}
}

func TestUnavailableIsA503InternalErrorWithRetryAfter(t *testing.T) {
	t.Parallel()
	e := Unavailable("the server is busy and did not answer in time; retry shortly")
	require.Equal(t, http.StatusServiceUnavailable, e.Status)
	require.Equal(t, CodeInternal, e.Code)
	require.Equal(t, "1", e.Header.Get("Retry-After"))
	b := e.Body()
	require.Equal(t, "the server is busy and did not answer in time; retry shortly", b.Error.Message)
	require.Equal(t, "Service Unavailable", b.Title)
	require.Equal(t, http.StatusServiceUnavailable, b.Status)
}
