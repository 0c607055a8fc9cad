package blob

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/heraldhq/herald/internal/pdf"
	"github.com/heraldhq/herald/persistence"
	"github.com/heraldhq/herald/platforms"
)

// Documents: a PDF is confirmed only when its pages can be counted and are at most
// platforms.MaxDocumentPages (LinkedIn's 300), so that a document Herald holds is one LinkedIn
// takes. The file's first bytes are %PDF- (Sniff); its pages are counted from its page tree
// (internal/pdf, which says how and where that count may err). Counting reads the whole file
// (at most Limits.MaxDocumentBytes) into memory, one count at a time in the process.

// checkPages counts a stored PDF's pages and refuses one that cannot be counted or is too long.
func (s *Service) checkPages(ctx context.Context, m *persistence.Media) error {
	select {
	case s.counting <- struct{}{}:
		defer func() { <-s.counting }()
	case <-ctx.Done():
		return ctx.Err()
	}
	o, _, err := s.o.Blob.Open(ctx, m.Key)
	if err != nil {
		return err
	}
	defer func() { _ = o.Close() }()
	data, err := io.ReadAll(io.LimitReader(o, s.o.Limits.MaxDocumentBytes+1))
	if err != nil {
		return fmt.Errorf("blob: read the document: %w", err)
	}
	if int64(len(data)) > s.o.Limits.MaxDocumentBytes {
		return refuse(Invalid, "size_bytes: the stored file is over %d bytes", s.o.Limits.MaxDocumentBytes)
	}
	pages, err := pdf.Pages(data)
	switch {
	case errors.Is(err, pdf.ErrNotPDF):
		return refuse(Invalid, "the file's bytes are not a PDF; upload a real application/pdf file")
	case err != nil:
		return refuse(Invalid, "the PDF's pages could not be counted (an encrypted or damaged file?); Herald takes PDFs whose pages it can count, up to %d", platforms.MaxDocumentPages)
	case pages > platforms.MaxDocumentPages:
		e := refuse(Invalid, "the PDF has %d pages; LinkedIn takes documents of at most %d", pages, platforms.MaxDocumentPages)
		e.Details = map[string]any{"pages": pages, "max_pages": platforms.MaxDocumentPages}
		return e
	}
	return nil
}
