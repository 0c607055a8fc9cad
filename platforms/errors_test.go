package platforms_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/platforms"
)

// A 2xx body that is not the network's leaves the post in doubt on the creating call only.
func TestGarbledAndDecode(t *testing.T) {
	t.Parallel()
	a := &platforms.Answer{Status: 201, Body: []byte("<html>")}
	var v struct{ ID string }
	err := platforms.Decode(platforms.LinkedIn, a, &v, true)
	var e *platforms.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, platforms.Unknown, e.Kind)
	require.Equal(t, platforms.LinkedIn, e.Platform)
	require.Equal(t, 201, e.Status)
	require.Equal(t, "unexpected answer from LinkedIn (HTTP 201)", e.Message)
	require.Equal(t, platforms.Transient, platforms.KindOf(platforms.Decode(platforms.X, a, &v, false)))

	require.NoError(t, platforms.Decode(platforms.X, &platforms.Answer{Status: 200, Body: []byte(`{"ID":"1"}`)}, &v, true))
	require.Equal(t, "1", v.ID)
}

// A context that ended between calls is Transient; other errors pass as they are.
func TestStopped(t *testing.T) {
	t.Parallel()
	err := platforms.Stopped(platforms.Bluesky, fmt.Errorf("sleep: %w", context.Canceled))
	require.Equal(t, platforms.Transient, platforms.KindOf(err))
	require.ErrorIs(t, err, context.Canceled)
	other := errors.New("other")
	require.Same(t, other, platforms.Stopped(platforms.Bluesky, other))
}

func TestPlatformName(t *testing.T) {
	t.Parallel()
	for _, p := range platforms.All {
		require.NotEqual(t, string(p), p.Name(), "every network has a name people write")
	}
	require.Equal(t, "X", platforms.X.Name())
	require.Equal(t, "TikTok", platforms.TikTok.Name())
}
