package apptest

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"strings"

	"github.com/stretchr/testify/require"
)

// UnconvertibleMessage is Instagram's failure on UnconvertiblePhoto.
const UnconvertibleMessage = "could not be converted to a JPEG for instagram: the PNG is corrupt"

// UnconvertiblePhoto uploads a PNG every network takes at submission (Instagram converts PNGs to
// JPEG) whose bytes are corrupt: Instagram fails its target when it publishes, with
// UnconvertibleMessage. It is how a test makes a target fail on its network now that a post a
// network's rules refuse is refused before it is stored.
func (h *Herald) UnconvertiblePhoto() string {
	h.T.Helper()
	m := image.NewNRGBA(image.Rect(0, 0, 32, 16))
	for y := range 16 {
		for x := range 32 {
			c := color.NRGBA{R: 0xE0, G: 0x10, B: 0x10, A: 0xFF}
			if x >= 16 {
				c = color.NRGBA{R: 0x10, G: 0x20, B: 0xD0, A: 0xFF}
			}
			m.SetNRGBA(x, y, c)
		}
	}
	var buf bytes.Buffer
	require.NoError(h.T, png.Encode(&buf, m))
	corrupt := append(buf.Bytes()[:60:60], strings.Repeat("Z", 200)...)
	return h.UploadMedia("broken.png", "image/png", corrupt)
}
