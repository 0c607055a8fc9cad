package blob

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// SniffLen is how many leading bytes Sniff looks at.
const SniffLen = 512

// Detect names the format of a file from its first bytes: one of the accepted content types,
// a few formats worth naming in an error (GIF, WebP, executables, PDF, ZIP), or "unknown".
func Detect(head []byte) string {
	switch {
	case bytes.HasPrefix(head, []byte{0xFF, 0xD8, 0xFF}):
		return "image/jpeg"
	case bytes.HasPrefix(head, []byte("\x89PNG\r\n\x1a\n")):
		return "image/png"
	case bytes.HasPrefix(head, []byte("GIF87a")), bytes.HasPrefix(head, []byte("GIF89a")):
		return "image/gif"
	case len(head) >= 12 && bytes.Equal(head[:4], []byte("RIFF")) && bytes.Equal(head[8:12], []byte("WEBP")):
		return "image/webp"
	case bytes.HasPrefix(head, []byte("\x7fELF")):
		return "an ELF executable"
	case bytes.HasPrefix(head, []byte("MZ")):
		return "a Windows executable"
	case bytes.HasPrefix(head, []byte{0xCF, 0xFA, 0xED, 0xFE}), bytes.HasPrefix(head, []byte{0xCE, 0xFA, 0xED, 0xFE}),
		bytes.HasPrefix(head, []byte{0xCA, 0xFE, 0xBA, 0xBE}):
		return "a Mach-O executable"
	case bytes.HasPrefix(head, []byte("#!")):
		return "a script"
	case bytes.HasPrefix(head, []byte("%PDF-")):
		return "application/pdf"
	case bytes.HasPrefix(head, []byte("PK\x03\x04")):
		return "application/zip"
	}
	if t := isoMedia(head); t != "" {
		return t
	}
	return "unknown"
}

// isoMedia recognises an ISO base media file (MP4) or a QuickTime movie from its first box: an
// ftyp box (major brand "qt  " for QuickTime), or one of QuickTime's classic top-level atoms.
func isoMedia(head []byte) string {
	if len(head) < 12 {
		return ""
	}
	size := binary.BigEndian.Uint32(head[:4])
	typ := string(head[4:8])
	if typ == "ftyp" {
		if size < 16 || !printable(head[8:12]) {
			return ""
		}
		if string(head[8:12]) == "qt  " {
			return "video/quicktime"
		}
		return "video/mp4"
	}
	switch typ {
	case "moov", "mdat", "wide", "free", "skip", "pnot":
		if size == 1 || size >= 8 {
			return "video/quicktime"
		}
	}
	return ""
}

func printable(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c > 0x7e {
			return false
		}
	}
	return true
}

// MismatchError says that a file's bytes are not of its declared type.
type MismatchError struct {
	Declared, Detected string
}

func (e *MismatchError) Error() string {
	return fmt.Sprintf("the file's bytes are %s, not %s", e.Detected, e.Declared)
}

// Sniff checks that the first bytes of a file match its declared content type. JPEG and PNG must
// be exactly that; the two video types accept each other, since MP4 and QuickTime are one
// container family that every network takes under either name.
func Sniff(contentType string, head []byte) error {
	got := Detect(head)
	ok := got == contentType || (IsVideo(contentType) && IsVideo(got))
	if !ok {
		if got == "unknown" {
			got = "of no recognised format"
		}
		return &MismatchError{Declared: contentType, Detected: got}
	}
	return nil
}
