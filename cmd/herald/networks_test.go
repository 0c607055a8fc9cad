package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/platforms"
)

// Herald's OAuth clients come from HERALD_<PLATFORM>_CLIENT_ID/_SECRET; X's app also from the
// shorter HERALD_X_CLIENT_ID/_SECRET, read as a pair that the long names override.
func TestNetworksFromEnv(t *testing.T) {
	for _, name := range []string{"HERALD_X_CLIENT_ID", "HERALD_X_CLIENT_SECRET", "HERALD_TWITTER_X_CLIENT_ID", "HERALD_TWITTER_X_CLIENT_SECRET", "HERALD_LINKEDIN_CLIENT_ID"} {
		t.Setenv(name, "")
	}
	require.Empty(t, networksFromEnv())

	t.Setenv("HERALD_LINKEDIN_CLIENT_ID", " li-id ")
	t.Setenv("HERALD_X_CLIENT_ID", "short-id")
	t.Setenv("HERALD_X_CLIENT_SECRET", "short-secret")
	got := networksFromEnv()
	require.Equal(t, platforms.Config{ClientID: "li-id"}, got[platforms.LinkedIn])
	require.Equal(t, platforms.Config{ClientID: "short-id", ClientSecret: "short-secret"}, got[platforms.X])

	// The long names win, and a public client's id is not paired with the short secret.
	t.Setenv("HERALD_TWITTER_X_CLIENT_ID", "long-id")
	require.Equal(t, platforms.Config{ClientID: "long-id"}, networksFromEnv()[platforms.X])
	t.Setenv("HERALD_TWITTER_X_CLIENT_SECRET", "long-secret")
	require.Equal(t, platforms.Config{ClientID: "long-id", ClientSecret: "long-secret"}, networksFromEnv()[platforms.X])
}
