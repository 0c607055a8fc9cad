package main

import (
	"os"
	"strings"

	"github.com/heraldhq/herald/platforms"
)

// networksFromEnv reads Herald's OAuth clients from the environment: HERALD_<PLATFORM>_CLIENT_ID
// and HERALD_<PLATFORM>_CLIENT_SECRET, with the platform identifier upper-cased
// (HERALD_LINKEDIN_CLIENT_ID, HERALD_TWITTER_X_CLIENT_ID...). A browser platform without a
// client id cannot be connected (POST /v1/accounts/connect answers 400). Herald's X app may
// also be named with the shorter HERALD_X_CLIENT_ID and HERALD_X_CLIENT_SECRET, as the other X
// variables are (HERALD_X_ACCESS_TOKEN...); the pair is read together, and
// HERALD_TWITTER_X_CLIENT_ID wins, so that a secret of one app is never paired with another
// app's id. With an X app, X connects through its consent in the dashboard (docs/accounts.md).
// Secrets come only from the environment, never from flags, so that they stay out of process
// listings.
func networksFromEnv() map[platforms.Platform]platforms.Config {
	out := map[platforms.Platform]platforms.Config{}
	for _, p := range platforms.All {
		id, sec := clientFromEnv("HERALD_" + strings.ToUpper(string(p)))
		if p == platforms.X && id == "" {
			id, sec = clientFromEnv("HERALD_X")
		}
		if id == "" && sec == "" {
			continue
		}
		out[p] = platforms.Config{ClientID: id, ClientSecret: sec}
	}
	return out
}

// clientFromEnv reads the client id and secret of the variables named prefix_CLIENT_ID and
// prefix_CLIENT_SECRET.
func clientFromEnv(prefix string) (id, secret string) {
	return strings.TrimSpace(os.Getenv(prefix + "_CLIENT_ID")), strings.TrimSpace(os.Getenv(prefix + "_CLIENT_SECRET"))
}
