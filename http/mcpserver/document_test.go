package mcpserver_test

import (
	"encoding/base64"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/cmd/herald/app/apptest"
	"github.com/heraldhq/herald/internal/pdf/pdftest"
	"github.com/heraldhq/herald/platforms"
)

// upload_media takes a PDF (its type from the name) through the same presign and confirm as any
// media, and relays confirm's refusal of a file that claims PDF and is not one.
func TestMCPUploadDocument(t *testing.T) {
	t.Parallel()
	h := apptest.Start(t, apptest.Options{Demo: true})
	s := h.MCPSession(h.Key)
	media := apptest.OKJSON(t, apptest.CallTool(t, s, "upload_media", map[string]any{"data": base64.StdEncoding.EncodeToString(pdftest.Build(4, false)), "filename": "deck.pdf"}))
	require.Equal(t, platforms.PDF, media["content_type"])
	require.NotEmpty(t, media["media_id"])

	msg := apptest.ToolError(t, apptest.CallTool(t, s, "upload_media", map[string]any{"data": base64.StdEncoding.EncodeToString(apptest.JPEGFile), "filename": "fake.pdf"}))
	require.Contains(t, msg, "not application/pdf")
}
