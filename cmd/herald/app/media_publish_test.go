package app_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/platforms"
)

// The whole way through the API: upload an image and a video, publish them to Instagram and
// YouTube through the publishing runtime, and find the same bytes in the simulator's record.
func TestPublishedMediaReachTheSimulator(t *testing.T) {
	t.Parallel()
	b := setup(t, bundleOpts{demo: true})
	image := b.uploadMedia("photo.jpg", "image/jpeg", jpegFile)
	video := b.uploadMedia("clip.mp4", "video/mp4", mp4File)

	r := b.publishNew(map[string]any{"content": "Autumn collection", "platforms": ids(b.account(platforms.Instagram).ID), "media": []string{image}}, nil)
	require.Equal(t, 202, r.status, string(r.body))
	j := b.waitJob(r.json(t)["tracking_id"].(string))
	require.Equal(t, "completed", j["status"], "%v", j)

	r = b.publishNew(map[string]any{"content": "A clip\nmade with Herald", "platforms": ids(b.account(platforms.YouTube).ID), "media": []string{video}}, nil)
	require.Equal(t, 202, r.status, string(r.body))
	j = b.waitJob(r.json(t)["tracking_id"].(string))
	require.Equal(t, "completed", j["status"], "%v", j)

	ig := b.app.Sim.Publications(platforms.Instagram)
	require.Len(t, ig, 1)
	require.Equal(t, []string{sha(jpegFile)}, ig[0].MediaSHA256)
	yt := b.app.Sim.Publications(platforms.YouTube)
	require.Len(t, yt, 1)
	require.Equal(t, []string{sha(mp4File)}, yt[0].MediaSHA256)
}
