package pdf

import (
	"bytes"
	"testing"

	"github.com/heraldhq/herald/internal/pdf/pdftest"
)

// BenchmarkPages counts the pages of a 300-page PDF, its page tree plain or in a compressed
// object stream, and of a 100 MB one (the same tree after 100 MB of opaque stream data, as a
// scanned document's images would be).
func BenchmarkPages(b *testing.B) {
	big := append(pdftest.Build(300, true), bytes.Repeat([]byte("q 1 0 0 1 0 0 cm Q "), 100<<20/19)...)
	for _, c := range []struct {
		name string
		data []byte
	}{{"300-pages-plain", pdftest.Build(300, false)}, {"300-pages-objstm", pdftest.Build(300, true)}, {"100MB", big}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.data)))
			for b.Loop() {
				if n, err := Pages(c.data); err != nil || n != 300 {
					b.Fatal(n, err)
				}
			}
		})
	}
}
