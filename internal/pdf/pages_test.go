package pdf

import (
	"bytes"
	"compress/zlib"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/pdf/pdftest"
)

func TestPages(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, 2, 99, 100, 101, 300, 301, 1000} {
		for _, compressed := range []bool{false, true} {
			got, err := Pages(pdftest.Build(n, compressed))
			require.NoError(t, err, "n=%d compressed=%v", n, compressed)
			require.Equal(t, n, got, "n=%d compressed=%v", n, compressed)
		}
	}
}

func TestPagesCountsLeavesWithoutATree(t *testing.T) {
	t.Parallel()
	data := []byte("%PDF-1.4\n1 0 obj << /Type /Page >> endobj\n2 0 obj << /Type/Page/Parent 5 0 R >> endobj\n3 0 obj << /Type /PageLabel >> endobj\n")
	got, err := Pages(data)
	require.NoError(t, err)
	require.Equal(t, 2, got)
}

func TestPagesIncrementalUpdateCountsTheLargest(t *testing.T) {
	t.Parallel()
	data := append(pdftest.Build(10, false), []byte("2 0 obj\n<< /Type /Pages /Kids [3 0 R] /Count 4 >>\nendobj\n%%EOF\n")...)
	got, err := Pages(data)
	require.NoError(t, err)
	require.Equal(t, 10, got)
}

func TestPagesIndirectCountIsNotFollowed(t *testing.T) {
	t.Parallel()
	data := []byte("%PDF-1.4\n2 0 obj << /Type /Pages /Kids [3 0 R] /Count 7 0 R >> endobj\n3 0 obj << /Type /Page /Parent 2 0 R >> endobj\n")
	got, err := Pages(data)
	require.NoError(t, err)
	require.Equal(t, 1, got, "the node is skipped; its one page object is counted")
}

func TestPagesRefusals(t *testing.T) {
	t.Parallel()
	_, err := Pages([]byte("\x89PNG\r\n\x1a\n"))
	require.ErrorIs(t, err, ErrNotPDF)
	_, err = Pages(nil)
	require.ErrorIs(t, err, ErrNotPDF)
	_, err = Pages([]byte("%PDF-1.7\nnothing else"))
	require.ErrorIs(t, err, ErrUnreadable)
	// An object stream that is not zlib data (encrypted) hides its tree.
	data := []byte("%PDF-1.7\n9 0 obj\n<< /Type /ObjStm /N 1 /First 4 /Filter /FlateDecode >>\nstream\n\x01\x02\x03garbage\nendstream\nendobj\n")
	_, err = Pages(data)
	require.ErrorIs(t, err, ErrUnreadable)
}

func TestPagesDecompressionIsBounded(t *testing.T) {
	t.Parallel()
	// 1 MiB of zeros compress to ~1 KiB; six copies inflate past a 2 MiB bound, which stops
	// the decompression, not the count.
	var z bytes.Buffer
	w := zlib.NewWriter(&z)
	_, _ = w.Write(make([]byte, 1<<20))
	_ = w.Close()
	var b bytes.Buffer
	b.WriteString("%PDF-1.7\n")
	for range 6 {
		b.WriteString("9 0 obj\n<< /Type /ObjStm /Filter /FlateDecode >>\nstream\n")
		b.Write(z.Bytes())
		b.WriteString("\nendstream\nendobj\n")
	}
	b.WriteString("2 0 obj << /Type /Pages /Count 3 >> endobj\n")
	got, err := pages(b.Bytes(), 2<<20)
	require.NoError(t, err)
	require.Equal(t, 3, got)
}

func TestPagesNeverPanics(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	base := pdftest.Build(5, true)
	for range 2000 {
		data := append([]byte(nil), base...)
		for range 1 + r.IntN(20) {
			data[5+r.IntN(len(data)-5)] = byte(r.IntN(256))
		}
		data = data[:5+r.IntN(len(data)-5)]
		_, _ = Pages(data)
	}
}

// Many page tree entries without a dictionary around them would make each scan read back to the
// start of the file: the work is bounded, and such a file is unreadable, at once.
func TestPagesWorkIsBounded(t *testing.T) {
	t.Parallel()
	data := append([]byte("%PDF-1.7\n"), bytes.Repeat([]byte("/Type /Pages "), 50000)...)
	_, err := Pages(data)
	require.ErrorIs(t, err, ErrUnreadable)
}
