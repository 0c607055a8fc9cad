package blob_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/pdf/pdftest"
	"github.com/heraldhq/herald/persistence/blob"
	"github.com/heraldhq/herald/platforms"
)

func TestConfirmDocument(t *testing.T) {
	t.Parallel()
	e := newEnv(t, newLocal(t))
	ctx := context.Background()

	// A PDF of 300 pages, its page tree in a compressed object stream, is confirmed and resolved
	// as a document (no image conversion).
	data := pdftest.Build(300, true)
	p := e.upload(t, e.user, platforms.PDF, data)
	require.Equal(t, ".pdf", p.StorageFilename[len(p.StorageFilename)-4:])
	m, err := e.confirm(t, e.user, p, platforms.PDF, len(data))
	require.NoError(t, err)
	require.True(t, m.Confirmed())
	ms, err := e.svc.Resolve(ctx, e.user, []string{m.ID})
	require.NoError(t, err)
	require.True(t, ms[0].IsDocument())
	require.Nil(t, ms[0].Conform, "a document is never converted")

	// 301 pages, a file that claims PDF and is a PNG, and a PDF whose pages cannot be counted are
	// refused, and stay unconfirmed.
	for _, c := range []struct {
		data []byte
		want string
	}{
		{pdftest.Build(301, false), "the PDF has 301 pages; LinkedIn takes documents of at most 300"},
		{pngBytes, "the file's bytes are image/png, not application/pdf"},
		{[]byte("%PDF-1.7\nno page tree at all\n"), "pages could not be counted"},
	} {
		p := e.upload(t, e.user, platforms.PDF, c.data)
		_, err := e.confirm(t, e.user, p, platforms.PDF, len(c.data))
		require.Equal(t, blob.Invalid, kindOf(t, err))
		require.Contains(t, err.Error(), c.want)
		require.False(t, e.record(t, p.Key).Confirmed())
	}
}

func TestPresignDocumentLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t, newLocal(t))
	_, err := e.svc.Presign(context.Background(), e.user, "", "deck.pdf", platforms.PDF, platforms.MaxDocumentBytes+1)
	require.Equal(t, blob.Invalid, kindOf(t, err))
	require.Contains(t, err.Error(), "over the limit for documents (104857600 bytes)")
	_, err = e.svc.Presign(context.Background(), e.user, "", "deck.pdf", platforms.PDF, platforms.MaxDocumentBytes)
	require.NoError(t, err)
	require.EqualValues(t, platforms.MaxDocumentBytes, e.svc.Limits().For(platforms.PDF))
}
