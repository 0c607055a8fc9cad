package platforms

import (
	"context"
	"errors"
	"fmt"
	"slices"
)

// ImageRule is what a network takes as a photo, beyond what Herald accepts at upload (JPEG and
// PNG). Herald converts the rest at publish time where the conversion keeps the picture's meaning
// (docs/media.md, "Conversions"): it re-encodes the photo as a plain JPEG. Each adapter that needs
// one declares its rule beside its Validate and calls ConformImages in Publish.
type ImageRule struct {
	// Types are the image content types the network takes as they are; a photo of another type
	// is re-encoded as JPEG.
	Types []string
	// Upright: a JPEG with an EXIF orientation other than upright is re-encoded with the
	// orientation applied to its pixels, for a network that does not promise to honour the tag.
	Upright bool
	// RGB: a CMYK JPEG is re-encoded as RGB.
	RGB bool
}

// Takes reports whether the network takes a photo of this content type as it is.
func (r ImageRule) Takes(contentType string) bool { return slices.Contains(r.Types, contentType) }

// Convertible reports whether a photo the network does not take as it is can be converted for it:
// the media can be converted (Conform is set) and the network takes JPEG.
func (r ImageRule) Convertible(m Media) bool {
	return m.Conform != nil && !m.IsVideo() && r.Takes("image/jpeg")
}

// ConformImages returns the post with every photo in a form the network's rule takes: each
// image's Conform is asked (it answers the same media when nothing needs to change, else a JPEG
// derivative with its own Open and URL). A photo that cannot be converted is an Invalid error
// naming it, found before any network call; a storage failure on the way is Transient.
func ConformImages(ctx context.Context, p Platform, post Post, rule ImageRule) (Post, error) {
	out := post
	out.Media = slices.Clone(post.Media)
	for i, m := range post.Media {
		if m.IsVideo() {
			continue
		}
		if m.Conform == nil {
			if !rule.Takes(m.ContentType) {
				return Post{}, Errorf(p, Invalid, 0, "media %d has type %q, which %s does not take, and Herald cannot convert it here", i+1, m.ContentType, p)
			}
			continue
		}
		c, err := m.Conform(ctx, rule)
		switch {
		case errors.Is(err, ErrUnconvertible):
			return Post{}, &Error{Platform: p, Kind: Invalid, Message: fmt.Sprintf("media %d%s could not be converted to a JPEG for %s: %v", i+1, nameOf(m), p, err), Err: err}
		case err != nil:
			return Post{}, &Error{Platform: p, Kind: Transient, Message: fmt.Sprintf("media %d%s could not be prepared for %s", i+1, nameOf(m), p), Err: err}
		}
		out.Media[i] = c
	}
	return out, nil
}

func nameOf(m Media) string {
	if m.Filename == "" {
		return ""
	}
	return " (" + m.Filename + ")"
}
