package platforms

// This file is the shape of a post's media as each network takes it: how many, which kinds may
// share a post (a carousel or gallery of photos, of photos and videos, a video alone, a PDF
// document alone). Each adapter states its network's shape once, in its MediaLimits, and its
// Validate calls CheckMediaShape with them; GET /v1/accounts/:id/capabilities publishes the same
// MediaLimits, so that what a client is told and what Herald refuses never differ.

// PDF is the content type of a document (a LinkedIn document post).
const PDF = "application/pdf"

// Documents: what Herald takes of a PDF. LinkedIn's Documents API takes up to 100 MB and 300
// pages; LinkedIn is the only network that takes documents, so Herald's upload holds every PDF to
// its limits (persistence/blob counts the pages when the file is confirmed).
const (
	MaxDocumentBytes = 100 << 20
	MaxDocumentPages = 300
)

// IsDocument reports whether the media is a document (a PDF).
func (m Media) IsDocument() bool { return m.ContentType == PDF }

// CheckMediaShape checks the count and mix of a post's media against a network's limits: a
// document only where the network takes documents, and then alone; no more than MaxItems media,
// MaxImages photos and MaxVideos videos; at least MinItems media when there are several (a
// carousel), and at least MinImages photos when there are photos; videos with other media only
// when the network mixes them (Mixed), never when a video goes alone (VideoAlone). Types and
// sizes are each adapter's own check. The error is an Invalid error of p (the API reports it on the
// target's media field).
func CheckMediaShape(p Platform, l MediaLimits, media []Media) error {
	images, videos, docs := 0, 0, 0
	for _, m := range media {
		switch {
		case m.IsDocument():
			docs++
		case m.IsVideo():
			videos++
		default:
			images++
		}
	}
	n := len(media)
	bad := func(format string, args ...any) error { return Errorf(p, Invalid, 0, format, args...) }
	switch {
	case docs > 0 && !l.Documents:
		return bad("a PDF document (application/pdf) goes to LinkedIn only; %s takes no documents", p.Name())
	case docs > 0 && n > 1:
		return bad("a document goes alone; the post has %d media files with a PDF", n)
	case docs > 0:
		return nil
	case n > l.MaxItems && l.MaxItems <= 1:
		return bad("%s takes one media file per post; the post has %d", p.Name(), n)
	case n > l.MaxItems && l.MinItems > 1:
		return bad("%d media files; %s takes one, or %d to %d in one post", n, p.Name(), l.MinItems, l.MaxItems)
	case n > l.MaxItems:
		return bad("%d media files; %s takes up to %d in one post", n, p.Name(), l.MaxItems)
	case videos > 0 && n > 1 && (l.VideoAlone || !l.Mixed && images > 0):
		return bad("a video goes alone on %s; the post has %d media files with %d video(s)", p.Name(), n, videos)
	case videos > l.MaxVideos && l.MaxVideos <= 1:
		return bad("%s takes one video per post; the post has %d", p.Name(), videos)
	case videos > l.MaxVideos:
		return bad("%d videos; %s takes up to %d in one post", videos, p.Name(), l.MaxVideos)
	case images > l.MaxImages && l.MaxImages == 0:
		return bad("%s takes videos only; the post has %d photo(s)", p.Name(), images)
	case images > l.MaxImages:
		return bad("%d photos; %s takes up to %d in one post", images, p.Name(), l.MaxImages)
	case n > 1 && n < l.MinItems:
		return bad("%d media files; a %s post with several takes %d to %d", n, p.Name(), l.MinItems, l.MaxItems)
	case images > 0 && images < l.MinImages:
		return bad("%d photo(s); a %s photo post takes %d to %d", images, p.Name(), l.MinImages, l.MaxImages)
	}
	return nil
}
