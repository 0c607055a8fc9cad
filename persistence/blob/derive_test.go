package blob_test

import (
	"bytes"
	"context"
	"image"
	"image/color"
	"image/png"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/persistence/blob"
	"github.com/heraldhq/herald/platforms"
)

var jpegOnly = platforms.ImageRule{Types: []string{"image/jpeg"}, Upright: true, RGB: true}

// A PNG's JPEG is derived once however many publishes ask for it at once, reused afterwards,
// served at a signed URL of its own, and deleted with its media.
func TestDerivedJPEG(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"local", "s3"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			var store blob.Store
			if backend == "local" {
				store = newLocal(t)
			} else {
				store, _ = newS3(t)
			}
			e := newEnv(t, store)
			ctx := context.Background()
			img := image.NewNRGBA(image.Rect(0, 0, 64, 48))
			for i := range img.Pix {
				img.Pix[i] = 0x80
			}
			img.SetNRGBA(0, 0, color.NRGBA{})
			var b bytes.Buffer
			require.NoError(t, png.Encode(&b, img))
			m, err := e.confirm(t, e.user, e.upload(t, e.user, "image/png", b.Bytes()), "image/png", b.Len())
			require.NoError(t, err)

			media, err := e.svc.Resolve(ctx, e.user, []string{m.ID})
			require.NoError(t, err)
			require.NotNil(t, media[0].Conform)
			same, err := media[0].Conform(ctx, platforms.ImageRule{Types: []string{"image/jpeg", "image/png"}})
			require.NoError(t, err)
			require.Equal(t, "image/png", same.ContentType, "a network that takes PNG gets the upload")
			require.Equal(t, media[0].URL, same.URL)

			var wg sync.WaitGroup
			got := make([]platforms.Media, 4)
			for i := range got {
				wg.Go(func() {
					c, err := media[0].Conform(ctx, jpegOnly)
					require.NoError(t, err)
					got[i] = c
				})
			}
			wg.Wait()
			var rec *persistence.Media
			read := func() {
				require.NoError(t, e.store.View(func(tx *persistence.Tx) error {
					var err error
					rec, err = tx.Media(m.ID)
					return err
				}))
			}
			read()
			require.NotNil(t, rec.Derived)
			made := rec.Derived.CreatedAt
			for _, c := range got {
				require.Equal(t, "image/jpeg", c.ContentType)
				require.Equal(t, rec.Derived.Size, c.Size)
				require.Equal(t, "orig.bin.jpg", c.Filename, "named for what it is now")
			}
			data := readAll(t, store, blob.DerivedKey(e.user, m.ID))
			require.Equal(t, rec.Derived.Size, int64(len(data)))
			require.Equal(t, []byte{0xFF, 0xD8, 0xFF}, data[:3])

			// Later publishes reuse it.
			e.clock.Advance(time.Hour)
			c, err := media[0].Conform(ctx, jpegOnly)
			require.NoError(t, err)
			read()
			require.Equal(t, made, rec.Derived.CreatedAt, "not derived again")

			// Its signed URL opens the JPEG.
			u, err := url.Parse(c.URL)
			require.NoError(t, err)
			require.Equal(t, m.ID+".derived.jpg", u.Path[len(blob.FilePathPrefix):])
			o, info, file, err := e.svc.OpenFile(ctx, m.ID+".derived.jpg", u.Query())
			require.NoError(t, err)
			require.NoError(t, o.Close())
			require.Equal(t, "image/jpeg", file.ContentType)
			require.Equal(t, int64(len(data)), info.Size)
			_, _, _, err = e.svc.OpenFile(ctx, m.ID+".derived.jpg", url.Values{"expires": u.Query()["expires"], "signature": {"x"}})
			require.Equal(t, blob.Forbidden, kindOf(t, err))
			_, _, _, err = e.svc.OpenFile(ctx, m.StorageFilename, u.Query())
			require.Equal(t, blob.Forbidden, kindOf(t, err), "the derived file's URL opens only the derived file")

			// Deleting the media deletes both files.
			require.NoError(t, e.store.Update(ctx, func(tx *persistence.Tx) error { return tx.DeleteMedia(rec) }))
			_, err = e.svc.Sweep(ctx)
			require.NoError(t, err)
			_, err = store.Stat(ctx, blob.DerivedKey(e.user, m.ID))
			require.ErrorIs(t, err, blob.ErrNotFound)
			_, err = store.Stat(ctx, m.Key)
			require.ErrorIs(t, err, blob.ErrNotFound)
		})
	}
}
