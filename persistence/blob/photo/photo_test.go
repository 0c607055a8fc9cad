package photo

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"image"
	"image/color"
	"image/png"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/platforms"
)

// Each EXIF orientation turns the pixels the way the tag says the picture is to be shown.
func TestOrient(t *testing.T) {
	t.Parallel()
	// A 3×2 image whose pixels name their own coordinates.
	src := image.NewRGBA(image.Rect(0, 0, 3, 2))
	for y := range 2 {
		for x := range 3 {
			src.SetRGBA(x, y, color.RGBA{R: uint8(x), G: uint8(y), A: 0xFF})
		}
	}
	at := func(m *image.RGBA, x, y int) image.Point {
		c := m.RGBAAt(x, y)
		return image.Pt(int(c.R), int(c.G))
	}
	for _, tc := range []struct {
		o          int
		w, h       int
		topLeft    image.Point // the source pixel that ends up at (0,0)
		rightOfTop image.Point // and at (1,0)
	}{
		{2, 3, 2, image.Pt(2, 0), image.Pt(1, 0)},
		{3, 3, 2, image.Pt(2, 1), image.Pt(1, 1)},
		{4, 3, 2, image.Pt(0, 1), image.Pt(1, 1)},
		{5, 2, 3, image.Pt(0, 0), image.Pt(0, 1)},
		{6, 2, 3, image.Pt(0, 1), image.Pt(0, 0)},
		{7, 2, 3, image.Pt(2, 1), image.Pt(2, 0)},
		{8, 2, 3, image.Pt(2, 0), image.Pt(2, 1)},
	} {
		out := orient(src, tc.o)
		require.Equal(t, image.Rect(0, 0, tc.w, tc.h), out.Bounds(), "orientation %d", tc.o)
		require.Equal(t, tc.topLeft, at(out, 0, 0), "orientation %d", tc.o)
		require.Equal(t, tc.rightOfTop, at(out, 1, 0), "orientation %d", tc.o)
	}
}

// pngClaiming is a valid 1×1 PNG whose header claims w×h pixels (CRC fixed).
func pngClaiming(t *testing.T, w, h uint32) []byte {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, png.Encode(&b, image.NewGray(image.Rect(0, 0, 1, 1))))
	p := b.Bytes()
	// Signature (8), IHDR length (4), "IHDR" (4), width, height...
	binary.BigEndian.PutUint32(p[16:], w)
	binary.BigEndian.PutUint32(p[20:], h)
	binary.BigEndian.PutUint32(p[29:], crc32.ChecksumIEEE(p[12:29]))
	return p
}

// An image over the pixel limit is refused from its header, before anything is decoded; a
// corrupt one is refused when it is decoded. Both are permanent (platforms.ErrUnconvertible).
func TestToJPEGRefuses(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	err := ToJPEG(bytes.NewReader(pngClaiming(t, 100_000, 100_000)), &out, 0)
	require.ErrorIs(t, err, platforms.ErrUnconvertible)
	require.ErrorContains(t, err, "100000×100000 pixels (10000.0 megapixels); Herald converts images of up to 50.0 megapixels")
	require.Zero(t, out.Len())

	err = ToJPEG(bytes.NewReader(pngClaiming(t, 300, 200)), &out, 50_000)
	require.ErrorContains(t, err, "up to 0.1 megapixels")

	err = ToJPEG(bytes.NewReader(pngClaiming(t, 30, 20)), &out, 0)
	require.ErrorIs(t, err, platforms.ErrUnconvertible, "the pixel data does not match the header")
	require.ErrorContains(t, err, "the PNG is corrupt")

	_, err = Inspect(bytes.NewReader([]byte("GIF89a....")))
	require.ErrorIs(t, err, platforms.ErrUnconvertible)
	var pe *Error
	require.ErrorAs(t, err, &pe)
	_, err = Inspect(bytes.NewReader([]byte{0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10, 'J', 'F', 'I', 'F', 0, 1, 2, 3, 4, 5, 0x42}))
	require.ErrorContains(t, err, "the JPEG is corrupt")
}
