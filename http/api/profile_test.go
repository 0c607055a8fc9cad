package api_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/cmd/herald/app/apptest"
)

// PATCH /api/profile validates the time zone and the name, and needs one of them.
func TestProfileValidation(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{})
	br := h.SignedIn()
	for _, body := range []map[string]any{
		{"timezone": "Mars/Olympus"}, {"timezone": "Local"}, {"timezone": ""}, {"timezone": 3}, {"name": ""}, {},
	} {
		r := br.Send("PATCH", "/api/profile", body, br.CSRFHeader())
		require.Equal(t, 400, r.Status, "%v", body)
		require.Equal(t, "validation_error", r.ErrorCode(t))
	}
}
