package blob

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/persistence/blob/photo"
	"github.com/heraldhq/herald/platforms"
)

// Conversions (docs/media.md, "Conversions"). A photo that a network does not take as it is — a
// PNG for Instagram, a JPEG with an EXIF orientation or in CMYK for a network whose ImageRule asks
// for upright RGB — is re-encoded as a plain JPEG by package photo when a job publishes it: in
// the adapter's Publish, through platforms.Media.Conform, never on the API's request path.
//
// The JPEG is derived once per media and kept in the same storage as the upload, under
// DerivedKey (local disk or S3 alike), so that the networks that fetch media by URL reach it at a
// signed Herald URL like any media file, and later publishes and retries reuse it. The media
// record names it (persistence.Media.Derived) once its bytes are stored; deleting the media
// deletes it with the upload.
//
// Memory: the image's dimensions are checked before it is decoded (Options.MaxConvertPixels), the
// conversions of one media are one (singleflight: a second publish of the same media waits for
// the first one's JPEG), and conversions of different media run one at a time in the process,
// so the pixels of one image at most are in memory.

// conform is Media.Conform for a stored media: the media itself when the rule takes it as it is,
// else its derived JPEG, made now if it does not exist yet.
func (s *Service) conform(ctx context.Context, m *persistence.Media, as platforms.Media, rule platforms.ImageRule) (platforms.Media, error) {
	if IsVideo(m.ContentType) || !rule.Takes("image/jpeg") {
		return as, nil
	}
	if rule.Takes(m.ContentType) {
		if m.ContentType != "image/jpeg" || (!rule.Upright && !rule.RGB) {
			return as, nil
		}
		h, err := s.inspect(ctx, m.Key)
		if errors.Is(err, platforms.ErrUnconvertible) {
			// A JPEG whose header Herald cannot read goes as it is: the network judges it.
			return as, nil
		}
		if err != nil {
			return platforms.Media{}, err
		}
		if !(rule.Upright && h.Turned()) && !(rule.RGB && h.CMYK) {
			return as, nil
		}
	}
	d, err := s.derived(ctx, m)
	if err != nil {
		return platforms.Media{}, err
	}
	name := strings.TrimSuffix(m.OriginalFilename, ".png")
	name = strings.TrimSuffix(strings.TrimSuffix(name, ".jpeg"), ".jpg") + ".jpg"
	key := d.Key
	return platforms.Media{
		ID: m.ID, ContentType: d.ContentType, Size: d.Size, Filename: name, AltText: m.AltText,
		Open: func(ctx context.Context) (io.ReadCloser, error) {
			o, _, err := s.o.Blob.Open(ctx, key)
			if err != nil {
				return nil, err
			}
			return o, nil
		},
		// No Conform: the derived JPEG is upright RGB, what every rule takes.
		URL: s.o.Signer.FileURL(s.o.BaseURL(), key, s.o.Now().Add(s.o.URLTTL)),
	}, nil
}

// inspect reads the header of a stored image.
func (s *Service) inspect(ctx context.Context, key string) (photo.Header, error) {
	o, _, err := s.o.Blob.Open(ctx, key)
	if err != nil {
		return photo.Header{}, err
	}
	defer func() { _ = o.Close() }()
	return photo.Inspect(o)
}

// derived returns the media's derived JPEG, making it when the record names none or its bytes
// are gone.
func (s *Service) derived(ctx context.Context, m *persistence.Media) (*persistence.Derived, error) {
	if d := m.Derived; d != nil {
		if _, err := s.o.Blob.Stat(ctx, d.Key); err == nil {
			return d, nil
		} else if !errors.Is(err, ErrNotFound) {
			return nil, err
		}
	}
	ch := s.flights.DoChan(m.ID, func() (any, error) { return s.derive(ctx, m) })
	select {
	case r := <-ch:
		if r.Err != nil {
			return nil, r.Err
		}
		return r.Val.(*persistence.Derived), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// derive converts the media's file, stores the JPEG, then records it on the media.
func (s *Service) derive(ctx context.Context, m *persistence.Media) (*persistence.Derived, error) {
	select {
	case s.converting <- struct{}{}:
		defer func() { <-s.converting }()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	// Another flight may have finished while this one waited for its turn.
	var cur *persistence.Media
	if err := s.o.Store.View(func(tx *persistence.Tx) error {
		var err error
		cur, err = tx.Media(m.ID)
		return err
	}); err != nil {
		return nil, err
	}
	if d := cur.Derived; d != nil {
		if _, err := s.o.Blob.Stat(ctx, d.Key); err == nil {
			return d, nil
		}
	}
	o, _, err := s.o.Blob.Open(ctx, m.Key)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	err = photo.ToJPEG(o, &out, s.o.MaxConvertPixels)
	_ = o.Close()
	if err != nil {
		return nil, err
	}
	d := &persistence.Derived{Key: DerivedKey(m.UserID, m.ID), ContentType: "image/jpeg", Size: int64(out.Len()), CreatedAt: s.o.Now().UTC()}
	// The bytes are stored before the record names them; a crash in between leaves a file that
	// the next derivation writes over (same key).
	if err := s.o.Blob.Delete(ctx, d.Key); err != nil {
		return nil, err
	}
	if err := s.o.Blob.Put(ctx, d.Key, &out, d.Size, d.ContentType); err != nil {
		return nil, fmt.Errorf("blob: store the derived JPEG: %w", err)
	}
	err = s.o.Store.Update(ctx, func(tx *persistence.Tx) error {
		cur, err := tx.Media(m.ID)
		if err != nil {
			return err
		}
		cur.Derived = d
		return tx.PutMedia(cur)
	})
	if err != nil {
		return nil, err
	}
	s.o.Log.Info("media: derived a JPEG for the networks that take no other form", "media", m.ID, "from", m.ContentType, "bytes", d.Size)
	return d, nil
}
