package api_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/cmd/herald/app/apptest"
	"github.com/heraldhq/herald/persistence/blob"
	"github.com/heraldhq/herald/persistence/blob/photo"
	"github.com/heraldhq/herald/platforms"
)

// Test images, built in code.

// halves is a w×h image whose left half is left and right half is right.
func halves(w, h int, left, right color.NRGBA) *image.NRGBA {
	m := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			c := left
			if x >= w/2 {
				c = right
			}
			m.SetNRGBA(x, y, c)
		}
	}
	return m
}

func encodePNG(t *testing.T, m image.Image) []byte {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, png.Encode(&b, m))
	return b.Bytes()
}

func encodeJPEG(t *testing.T, m image.Image) []byte {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, jpeg.Encode(&b, m, &jpeg.Options{Quality: 95}))
	return b.Bytes()
}

// withOrientation inserts an EXIF APP1 segment with this orientation right after a JPEG's SOI.
func withOrientation(j []byte, o uint16) []byte {
	tiff := []byte("II*\x00\x08\x00\x00\x00")
	tiff = binary.LittleEndian.AppendUint16(tiff, 1)      // one entry
	tiff = binary.LittleEndian.AppendUint16(tiff, 0x0112) // Orientation
	tiff = binary.LittleEndian.AppendUint16(tiff, 3)      // SHORT
	tiff = binary.LittleEndian.AppendUint32(tiff, 1)
	tiff = binary.LittleEndian.AppendUint16(tiff, o)
	tiff = append(tiff, 0, 0, 0, 0, 0, 0) // value padding, no next IFD
	seg := append([]byte("Exif\x00\x00"), tiff...)
	app1 := binary.BigEndian.AppendUint16([]byte{0xFF, 0xE1}, uint16(len(seg)+2))
	out := append([]byte{}, j[:2]...)
	out = append(out, app1...)
	out = append(out, seg...)
	return append(out, j[2:]...)
}

// cmykJPEG is an Adobe CMYK JPEG: image/jpeg decodes such files but its encoder writes only
// YCbCr and gray, so the file is the standard library's own test image.
func cmykJPEG(t *testing.T) []byte {
	t.Helper()
	goroot, err := exec.Command("go", "env", "GOROOT").Output()
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(goroot)), "src", "image", "testdata", "video-001.cmyk.jpeg"))
	require.NoError(t, err)
	cfg, err := jpeg.DecodeConfig(bytes.NewReader(b))
	require.NoError(t, err)
	require.Equal(t, color.CMYKModel, cfg.ColorModel)
	return b
}

func near(t *testing.T, want color.NRGBA, got color.Color, msg string) {
	t.Helper()
	r, g, b, a := got.RGBA()
	require.Equal(t, uint32(0xFFFF), a, msg)
	d := func(x uint8, y uint32) int { return max(int(x)-int(y>>8), int(y>>8)-int(x)) }
	require.True(t, d(want.R, r) <= 12 && d(want.G, g) <= 12 && d(want.B, b) <= 12, "%s: want %v, got %d,%d,%d", msg, want, r>>8, g>>8, b>>8)
}

var (
	red   = color.NRGBA{R: 0xE0, G: 0x10, B: 0x10, A: 0xFF}
	blue  = color.NRGBA{R: 0x10, G: 0x20, B: 0xD0, A: 0xFF}
	white = color.NRGBA{R: 0xFF, G: 0xFF, B: 0xFF, A: 0xFF}
)

// Photos Instagram does not take as they are — PNGs (with alpha, 16-bit, paletted), a CMYK JPEG,
// a JPEG turned by its EXIF orientation — are published as JPEGs that Herald derived once and
// stored beside the upload; the simulator, which refuses anything but a JPEG, records what it
// fetched. A corrupt PNG fails its Instagram target with a clear message, and the post's other
// target is published all the same. On local storage and on S3.
func TestImagesAreConvertedForInstagram(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"local", "s3"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			o := apptest.Options{Demo: true}
			if backend == "s3" {
				o.Media = apptest.S3Media(t)
			}
			h := apptest.Start(t, o)
			ig, threads := h.Account(platforms.Instagram).ID, h.Account(platforms.Threads).ID
			ctx := context.Background()

			// publish sends one photo to Instagram, checks that the simulator got the stored
			// derivative as a JPEG, and returns the derivative decoded.
			publish := func(name, ctype string, data []byte) image.Image {
				t.Helper()
				id := h.UploadMedia(name, ctype, data)
				r := h.Do("POST", "/v1/posts/publish", map[string]any{"content": name, "platforms": []string{ig}, "media": []string{id}})
				require.Equal(t, 202, r.Status, string(r.Body))
				j := h.WaitJob(r.JSON(t)["tracking_id"].(string))
				require.Equal(t, "completed", j["status"], "%v", j)

				o, _, err := h.App.Media.Blob().Open(ctx, blob.DerivedKey(h.User.ID, id))
				require.NoError(t, err, "the derived JPEG is stored")
				derived, err := io.ReadAll(o)
				require.NoError(t, o.Close())
				require.NoError(t, err)
				var rec *struct{ sha, typ string }
				for _, p := range h.App.Sim.Publications(platforms.Instagram) {
					if p.Text == name {
						require.Len(t, p.MediaTypes, 1)
						rec = &struct{ sha, typ string }{p.MediaSHA256[0], p.MediaTypes[0]}
						require.Equal(t, []int64{int64(len(derived))}, p.MediaSizes)
					}
				}
				require.NotNil(t, rec, "published to Instagram")
				require.Equal(t, "image/jpeg", rec.typ)
				require.Equal(t, apptest.SHA256(derived), rec.sha, "Instagram fetched the derived JPEG")

				ph, err := photo.Inspect(bytes.NewReader(derived))
				require.NoError(t, err)
				require.Equal(t, photo.Header{Format: "jpeg", Width: ph.Width, Height: ph.Height}, ph, "no orientation tag, not CMYK")
				m, err := jpeg.Decode(bytes.NewReader(derived))
				require.NoError(t, err)
				return m
			}

			t.Log("a PNG with transparency: flattened on white")
			alpha := halves(32, 16, color.NRGBA{R: 0xFF, A: 0}, blue)
			m := publish("alpha.png", "image/png", encodePNG(t, alpha))
			require.Equal(t, image.Rect(0, 0, 32, 16), m.Bounds())
			near(t, white, m.At(4, 8), "transparent pixels are white")
			near(t, blue, m.At(28, 8), "opaque pixels keep their colour")

			t.Log("a 16-bit PNG")
			deep := image.NewNRGBA64(image.Rect(0, 0, 32, 16))
			for y := range 16 {
				for x := range 32 {
					c := color.NRGBA64{R: 0xE0E0, G: 0x1010, B: 0x1010, A: 0xFFFF}
					if x >= 16 {
						c = color.NRGBA64{R: 0x1010, G: 0x2020, B: 0xD0D0, A: 0xFFFF}
					}
					deep.SetNRGBA64(x, y, c)
				}
			}
			m = publish("deep.png", "image/png", encodePNG(t, deep))
			near(t, red, m.At(4, 8), "16-bit red")
			near(t, blue, m.At(28, 8), "16-bit blue")

			t.Log("a paletted PNG with a transparent entry")
			pal := image.NewPaletted(image.Rect(0, 0, 32, 16), color.Palette{color.NRGBA{}, red})
			for y := range 16 {
				for x := 16; x < 32; x++ {
					pal.SetColorIndex(x, y, 1)
				}
			}
			m = publish("paletted.png", "image/png", encodePNG(t, pal))
			near(t, white, m.At(4, 8), "the transparent entry is white")
			near(t, red, m.At(28, 8), "the opaque entry keeps its colour")

			t.Log("a CMYK JPEG: RGB")
			cmyk := cmykJPEG(t)
			orig, err := jpeg.Decode(bytes.NewReader(cmyk))
			require.NoError(t, err)
			m = publish("cmyk.jpg", "image/jpeg", cmyk)
			require.Equal(t, orig.Bounds(), m.Bounds())
			for _, p := range []image.Point{{20, 20}, {75, 50}, {130, 90}} {
				near(t, color.NRGBAModel.Convert(orig.At(p.X, p.Y)).(color.NRGBA), m.At(p.X, p.Y), "CMYK pixel converted")
			}

			t.Log("a JPEG turned by EXIF orientation 6: pixels turned a quarter clockwise, tag gone")
			turned := withOrientation(encodeJPEG(t, halves(32, 16, red, blue)), 6)
			ph, err := photo.Inspect(bytes.NewReader(turned))
			require.NoError(t, err)
			require.Equal(t, 6, ph.Orientation)
			m = publish("turned.jpg", "image/jpeg", turned)
			require.Equal(t, image.Rect(0, 0, 16, 32), m.Bounds())
			near(t, red, m.At(8, 4), "the left half is now on top")
			near(t, blue, m.At(8, 28), "the right half is now at the bottom")

			t.Log("a corrupt PNG: the Instagram target fails, the Threads target is published")
			corrupt := encodePNG(t, halves(32, 16, red, blue))
			corrupt = append(corrupt[:60:60], bytes.Repeat([]byte{0x5A}, 200)...)
			id := h.UploadMedia("broken.png", "image/png", corrupt)
			r := h.Do("POST", "/v1/posts/publish", map[string]any{"content": "broken", "platforms": []string{ig, threads}, "media": []string{id}})
			require.Equal(t, 202, r.Status, string(r.Body))
			j := h.WaitJob(r.JSON(t)["tracking_id"].(string))
			require.Equal(t, "completed", j["status"], "%v", j)
			var igMsg string
			for _, s := range j["platform_statuses"].([]any) {
				s := s.(map[string]any)
				switch s["platform"] {
				case "instagram":
					require.Equal(t, "platform_failed", s["phase"], "%v", s)
					igMsg = s["message"].(string)
				case "threads":
					require.Equal(t, "platform_success", s["phase"], "%v", s)
				}
			}
			require.Contains(t, igMsg, "could not be converted to a JPEG for instagram: the PNG is corrupt")
			_, _, err = h.App.Media.Blob().Open(ctx, blob.DerivedKey(h.User.ID, id))
			require.ErrorIs(t, err, blob.ErrNotFound, "nothing derived from a corrupt file")

			t.Log("a plain JPEG goes as it is: nothing derived")
			plain := encodeJPEG(t, halves(32, 16, red, blue))
			id = h.UploadMedia("plain.jpg", "image/jpeg", plain)
			r = h.Do("POST", "/v1/posts/publish", map[string]any{"content": "plain", "platforms": []string{ig}, "media": []string{id}})
			require.Equal(t, 202, r.Status, string(r.Body))
			require.Equal(t, "completed", h.WaitJob(r.JSON(t)["tracking_id"].(string))["status"])
			_, _, err = h.App.Media.Blob().Open(ctx, blob.DerivedKey(h.User.ID, id))
			require.ErrorIs(t, err, blob.ErrNotFound)
		})
	}
}
