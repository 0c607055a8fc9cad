// Package registry builds the nine adapters from their configurations.
package registry

import (
	"github.com/heraldhq/herald/platforms"
	"github.com/heraldhq/herald/platforms/bluesky"
	"github.com/heraldhq/herald/platforms/facebook"
	"github.com/heraldhq/herald/platforms/instagram"
	"github.com/heraldhq/herald/platforms/linkedin"
	"github.com/heraldhq/herald/platforms/pinterest"
	"github.com/heraldhq/herald/platforms/threads"
	"github.com/heraldhq/herald/platforms/tiktok"
	"github.com/heraldhq/herald/platforms/x"
	"github.com/heraldhq/herald/platforms/youtube"
)

// Adapters are the nine networks by platform.
type Adapters map[platforms.Platform]platforms.Adapter

// New builds every adapter; a platform missing from cfg gets the production defaults.
func New(cfg map[platforms.Platform]platforms.Config) Adapters {
	return Adapters{
		platforms.X:         x.New(cfg[platforms.X]),
		platforms.Bluesky:   bluesky.New(cfg[platforms.Bluesky]),
		platforms.LinkedIn:  linkedin.New(cfg[platforms.LinkedIn]),
		platforms.Facebook:  facebook.New(cfg[platforms.Facebook]),
		platforms.Instagram: instagram.New(cfg[platforms.Instagram]),
		platforms.Threads:   threads.New(cfg[platforms.Threads]),
		platforms.YouTube:   youtube.New(cfg[platforms.YouTube]),
		platforms.Pinterest: pinterest.New(cfg[platforms.Pinterest]),
		platforms.TikTok:    tiktok.New(cfg[platforms.TikTok]),
	}
}
