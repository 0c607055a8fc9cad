package main

import (
	"os"
	"strings"

	"github.com/heraldhq/herald/platforms"
)

// networksFromEnv reads Herald's OAuth clients from the environment: HERALD_<PLATFORM>_CLIENT_ID
// and HERALD_<PLATFORM>_CLIENT_SECRET, with the platform identifier upper-cased
// (HERALD_LINKEDIN_CLIENT_ID, HERALD_TWITTER_X_CLIENT_ID...). A browser platform without a
// client id cannot be connected (POST /v1/accounts/connect answers 400). Secrets come only from
// the environment, never from flags, so that they stay out of process listings.
func networksFromEnv() map[platforms.Platform]platforms.Config {
	out := map[platforms.Platform]platforms.Config{}
	for _, p := range platforms.All {
		name := "HERALD_" + strings.ToUpper(string(p))
		id := strings.TrimSpace(os.Getenv(name + "_CLIENT_ID"))
		sec := strings.TrimSpace(os.Getenv(name + "_CLIENT_SECRET"))
		if id == "" && sec == "" {
			continue
		}
		out[p] = platforms.Config{ClientID: id, ClientSecret: sec}
	}
	return out
}
