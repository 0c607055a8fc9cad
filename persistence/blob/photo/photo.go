// Package photo re-encodes an uploaded image as a plain JPEG, for the networks that take nothing
// else (docs/media.md, "Conversions"). It uses only the standard library's codecs, no cgo.
//
// The JPEG it writes is baseline 4:2:0 at quality 92 with no metadata: transparency is flattened
// on white, 16-bit and paletted PNGs become 8-bit RGB, CMYK JPEGs become RGB, and an EXIF
// orientation is applied to the pixels (the tag itself goes with the rest of the metadata, so the
// picture shows the same way up on a network that ignores the tag and on one that honours it).
//
// Memory: the dimensions are read with image.DecodeConfig before anything is decoded, and an image
// of more than MaxPixels is refused. A conversion then holds the decoded image and at most one
// RGB copy of it: about 4 bytes per pixel for an 8-bit PNG (flattened in place), 5.5 for a JPEG
// that is turned, 8 for a CMYK JPEG and 12 for a 16-bit PNG; the caller decides how many run at
// once.
package photo

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/jpeg"
	"image/png"
	"io"

	"github.com/heraldhq/herald/platforms"
)

// Quality is the JPEG quality of a conversion: high enough that the re-encoding is not visible.
const Quality = 92

// DefaultMaxPixels is the largest image converted: 50 megapixels, above the 48 of the largest
// phone cameras.
const DefaultMaxPixels = 50_000_000

// Error is a file that cannot be converted (corrupt, not an image, too large to decode); Reason is
// safe to show to the user. It is platforms.ErrUnconvertible: retrying will not help.
type Error struct {
	Reason string
	Err    error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return e.Reason + ": " + e.Err.Error()
	}
	return e.Reason
}

func (e *Error) Unwrap() error { return e.Err }

// Is makes an Error match platforms.ErrUnconvertible.
func (e *Error) Is(target error) bool { return target == platforms.ErrUnconvertible }

// Header is what the first bytes of an image say about it.
type Header struct {
	// Format is "jpeg" or "png".
	Format        string
	Width, Height int
	// Orientation is the EXIF orientation of a JPEG (1 to 8; 1 is upright), 0 when it has none.
	Orientation int
	// CMYK is true for a four-component (CMYK or YCCK) JPEG.
	CMYK bool
}

// Turned reports whether the image has an orientation other than upright.
func (h Header) Turned() bool { return h.Orientation >= 2 && h.Orientation <= 8 }

// Inspect reads an image's header: for a JPEG its markers up to the first scan (orientation,
// components, dimensions), for a PNG its IHDR. It reads no pixel data.
func Inspect(r io.Reader) (Header, error) {
	br := bufio.NewReaderSize(r, 4096)
	sig, err := br.Peek(8)
	switch {
	case len(sig) >= 3 && sig[0] == 0xFF && sig[1] == 0xD8 && sig[2] == 0xFF:
		return inspectJPEG(br)
	case err == nil && string(sig) == "\x89PNG\r\n\x1a\n":
		cfg, err := png.DecodeConfig(br)
		if err != nil {
			return Header{}, &Error{Reason: "the PNG is corrupt", Err: err}
		}
		return Header{Format: "png", Width: cfg.Width, Height: cfg.Height}, nil
	}
	return Header{}, &Error{Reason: "the file is neither a JPEG nor a PNG"}
}

func inspectJPEG(br *bufio.Reader) (Header, error) {
	h := Header{Format: "jpeg"}
	corrupt := func(what string) (Header, error) {
		return Header{}, &Error{Reason: "the JPEG is corrupt: " + what}
	}
	if _, err := br.Discard(2); err != nil {
		return corrupt("no start of image")
	}
	for {
		b, err := br.ReadByte()
		if err != nil {
			return corrupt("it ends before its first scan")
		}
		if b != 0xFF {
			return corrupt("a segment does not start with a marker")
		}
		m, err := br.ReadByte()
		for err == nil && m == 0xFF { // fill bytes
			m, err = br.ReadByte()
		}
		if err != nil {
			return corrupt("it ends before its first scan")
		}
		switch {
		case m == 0xD8 || m == 0x01 || (m >= 0xD0 && m <= 0xD7):
			continue // no length
		case m == 0xDA || m == 0xD9: // start of scan, end of image
			if h.Width == 0 {
				return corrupt("no frame header before the scan")
			}
			return h, nil
		}
		var lb [2]byte
		if _, err := io.ReadFull(br, lb[:]); err != nil {
			return corrupt("a segment is cut short")
		}
		n := int(binary.BigEndian.Uint16(lb[:])) - 2
		if n < 0 {
			return corrupt("a segment has a negative length")
		}
		switch {
		case m == 0xE1 && h.Orientation == 0: // APP1: EXIF
			seg := make([]byte, n)
			if _, err := io.ReadFull(br, seg); err != nil {
				return corrupt("a segment is cut short")
			}
			if bytes.HasPrefix(seg, []byte("Exif\x00\x00")) {
				h.Orientation = exifOrientation(seg[6:])
			}
		case m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC: // SOFn
			seg := make([]byte, n)
			if _, err := io.ReadFull(br, seg); err != nil || n < 6 {
				return corrupt("the frame header is cut short")
			}
			h.Height = int(binary.BigEndian.Uint16(seg[1:3]))
			h.Width = int(binary.BigEndian.Uint16(seg[3:5]))
			h.CMYK = seg[5] == 4
		default:
			if _, err := br.Discard(n); err != nil {
				return corrupt("a segment is cut short")
			}
		}
	}
}

// exifOrientation reads tag 0x0112 of IFD0 of a TIFF-structured EXIF block; 0 when absent or
// unreadable.
func exifOrientation(t []byte) int {
	if len(t) < 8 {
		return 0
	}
	var bo binary.ByteOrder
	switch string(t[:4]) {
	case "II*\x00":
		bo = binary.LittleEndian
	case "MM\x00*":
		bo = binary.BigEndian
	default:
		return 0
	}
	off := int(bo.Uint32(t[4:8]))
	if off < 8 || off+2 > len(t) {
		return 0
	}
	count := int(bo.Uint16(t[off:]))
	for i := range count {
		e := off + 2 + 12*i
		if e+12 > len(t) {
			return 0
		}
		if bo.Uint16(t[e:]) == 0x0112 && bo.Uint16(t[e+2:]) == 3 { // Orientation, SHORT
			return int(bo.Uint16(t[e+8:]))
		}
	}
	return 0
}

// ToJPEG decodes the image r holds (a JPEG or a PNG) and writes it to w as a plain JPEG (see the
// package comment). An image of more than maxPixels (DefaultMaxPixels when 0) is refused before it
// is decoded. r is read three times from its start: header, dimensions, pixels.
func ToJPEG(r io.ReadSeeker, w io.Writer, maxPixels int) error {
	if maxPixels <= 0 {
		maxPixels = DefaultMaxPixels
	}
	h, err := Inspect(r)
	if err != nil {
		return err
	}
	if _, err := r.Seek(0, io.SeekStart); err != nil {
		return err
	}
	cfg, format, err := image.DecodeConfig(bufio.NewReader(r))
	if err != nil {
		return &Error{Reason: "the " + upper(h.Format) + " is corrupt", Err: err}
	}
	if cfg.Width <= 0 || cfg.Height <= 0 {
		return &Error{Reason: "the image has no pixels"}
	}
	if px := int64(cfg.Width) * int64(cfg.Height); px > int64(maxPixels) {
		return &Error{Reason: fmt.Sprintf("the image is %d×%d pixels (%.1f megapixels); Herald converts images of up to %.1f megapixels",
			cfg.Width, cfg.Height, float64(px)/1e6, float64(maxPixels)/1e6)}
	}
	if _, err := r.Seek(0, io.SeekStart); err != nil {
		return err
	}
	img, _, err := image.Decode(bufio.NewReaderSize(r, 64<<10))
	if err != nil {
		return &Error{Reason: "the " + upper(format) + " is corrupt", Err: err}
	}
	img = opaque(img)
	if h.Format == "jpeg" && h.Turned() {
		img = orient(img, h.Orientation)
	}
	return jpeg.Encode(w, img, &jpeg.Options{Quality: Quality})
}

func upper(format string) string {
	switch format {
	case "jpeg":
		return "JPEG"
	case "png":
		return "PNG"
	}
	return "image"
}

// opaque returns the image as an *image.RGBA, *image.Gray or *image.YCbCr with every pixel
// opaque: what has transparency is composited over white. An 8-bit NRGBA or RGBA image is
// flattened in place, so it costs no copy.
func opaque(img image.Image) image.Image {
	switch m := img.(type) {
	case *image.YCbCr, *image.Gray:
		return m
	case *image.NRGBA:
		p := m.Pix
		for i := 0; i+3 < len(p); i += 4 {
			if a := uint32(p[i+3]); a != 0xFF {
				for c := range 3 {
					p[i+c] = uint8((uint32(p[i+c])*a + 0xFF*(0xFF-a) + 0x7F) / 0xFF)
				}
				p[i+3] = 0xFF
			}
		}
		return &image.RGBA{Pix: m.Pix, Stride: m.Stride, Rect: m.Rect}
	case *image.RGBA: // premultiplied: over white adds what the alpha leaves
		p := m.Pix
		for i := 0; i+3 < len(p); i += 4 {
			if a := p[i+3]; a != 0xFF {
				for c := range 3 {
					p[i+c] += 0xFF - a
				}
				p[i+3] = 0xFF
			}
		}
		return m
	case *image.CMYK:
		b := m.Rect
		out := image.NewRGBA(b)
		for y := b.Min.Y; y < b.Max.Y; y++ {
			si, di := m.PixOffset(b.Min.X, y), out.PixOffset(b.Min.X, y)
			for x := b.Min.X; x < b.Max.X; x++ {
				r, g, bl := color.CMYKToRGB(m.Pix[si], m.Pix[si+1], m.Pix[si+2], m.Pix[si+3])
				out.Pix[di], out.Pix[di+1], out.Pix[di+2], out.Pix[di+3] = r, g, bl, 0xFF
				si, di = si+4, di+4
			}
		}
		return out
	}
	// 16-bit, paletted, gray with alpha...: over a white canvas.
	b := img.Bounds()
	out := image.NewRGBA(b)
	draw.Draw(out, b, image.White, image.Point{}, draw.Src)
	draw.Draw(out, b, img, b.Min, draw.Over)
	return out
}

// orient turns an opaque image upright according to its EXIF orientation (2 to 8).
func orient(img image.Image, o int) *image.RGBA {
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	dw, dh := w, h
	if o >= 5 {
		dw, dh = h, w
	}
	var get func(x, y int) (uint8, uint8, uint8)
	switch m := img.(type) {
	case *image.RGBA:
		get = func(x, y int) (uint8, uint8, uint8) {
			i := m.PixOffset(b.Min.X+x, b.Min.Y+y)
			return m.Pix[i], m.Pix[i+1], m.Pix[i+2]
		}
	case *image.YCbCr:
		get = func(x, y int) (uint8, uint8, uint8) {
			c := m.YCbCrAt(b.Min.X+x, b.Min.Y+y)
			return color.YCbCrToRGB(c.Y, c.Cb, c.Cr)
		}
	case *image.Gray:
		get = func(x, y int) (uint8, uint8, uint8) {
			v := m.Pix[m.PixOffset(b.Min.X+x, b.Min.Y+y)]
			return v, v, v
		}
	default:
		get = func(x, y int) (uint8, uint8, uint8) {
			c := color.RGBAModel.Convert(img.At(b.Min.X+x, b.Min.Y+y)).(color.RGBA)
			return c.R, c.G, c.B
		}
	}
	out := image.NewRGBA(image.Rect(0, 0, dw, dh))
	for y := range dh {
		di := out.PixOffset(0, y)
		for x := range dw {
			var sx, sy int
			switch o {
			case 2: // mirrored
				sx, sy = w-1-x, y
			case 3: // upside down
				sx, sy = w-1-x, h-1-y
			case 4: // mirrored upside down
				sx, sy = x, h-1-y
			case 5: // transposed
				sx, sy = y, x
			case 6: // turned: shown after a quarter turn clockwise
				sx, sy = y, h-1-x
			case 7: // transversed
				sx, sy = w-1-y, h-1-x
			case 8: // shown after a quarter turn anticlockwise
				sx, sy = w-1-y, x
			}
			out.Pix[di], out.Pix[di+1], out.Pix[di+2] = get(sx, sy)
			out.Pix[di+3] = 0xFF
			di += 4
		}
	}
	return out
}
