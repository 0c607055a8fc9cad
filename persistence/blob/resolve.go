package blob

import (
	"context"
	"errors"
	"io"

	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/platforms"
)

// UnusableError says that a media id cannot be published: it is unknown, another user's, or not
// confirmed.
type UnusableError struct {
	ID string
}

func (e *UnusableError) Error() string {
	return "media " + e.ID + " is not a confirmed media of the post's owner"
}

// Resolve turns a user's media ids into the media the network adapters take, in order: Open
// streams the bytes from storage (once per call, so an adapter may retry an upload), and URL is a
// signed, expiring Herald URL of the file for the networks that fetch media themselves. An
// image's Conform converts it for a network that takes no other form (derive.go).
func (s *Service) Resolve(ctx context.Context, scope string, ids []string) ([]platforms.Media, error) {
	records := make([]*persistence.Media, 0, len(ids))
	if err := s.o.Store.View(func(tx *persistence.Tx) error {
		for _, id := range ids {
			m, err := tx.ConfirmedMedia(scope, id)
			if errors.Is(err, persistence.ErrNotFound) || errors.Is(err, persistence.ErrMediaUnconfirmed) {
				return &UnusableError{ID: id}
			}
			if err != nil {
				return err
			}
			records = append(records, m)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	out := make([]platforms.Media, 0, len(records))
	for _, m := range records {
		key := m.Key
		i := len(out)
		out = append(out, platforms.Media{
			ID:          m.ID,
			ContentType: m.ContentType,
			Size:        m.Size,
			Filename:    m.OriginalFilename,
			AltText:     m.AltText,
			Open: func(ctx context.Context) (io.ReadCloser, error) {
				o, _, err := s.o.Blob.Open(ctx, key)
				if err != nil {
					return nil, err
				}
				return o, nil
			},
			URL: s.URL(m),
		})
		if !IsVideo(m.ContentType) && !IsDocument(m.ContentType) {
			as := out[i]
			out[i].Conform = func(ctx context.Context, rule platforms.ImageRule) (platforms.Media, error) {
				return s.conform(ctx, m, as, rule)
			}
		}
	}
	return out, nil
}
