package linkedin

import (
	"context"
	"encoding/json"
	"io"
	"net/http"

	"github.com/heraldhq/herald/platforms"
)

// Document posts (a PDF shown as a carousel of its pages): the Documents API registers the file
// (POST /rest/documents?action=initializeUpload with its owner), takes its bytes with one PUT to
// the upload URL it answered, and processes it (GET /rest/documents/{urn} until AVAILABLE); the
// post then carries content.media {id: urn:li:document:…, title}. LinkedIn requires the title:
// it is the options' document_title, else the file's name without its extension
// (platforms.DocumentTitle). LinkedIn takes PDFs of up to 100 MB and 300 pages; Herald's upload
// holds every PDF to those limits, counting its pages (persistence/blob).

// documentContent uploads the post's document and returns the post's content.
func (a *Adapter) documentContent(ctx context.Context, c platforms.Credentials, m platforms.Media, o *platforms.LinkedInOptions) (map[string]any, error) {
	urn, err := a.uploadDocument(ctx, c, m)
	if err != nil {
		return nil, err
	}
	return map[string]any{"media": map[string]any{"id": urn, "title": platforms.DocumentTitle(o, m)}}, nil
}

// uploadDocument registers a document, PUTs its bytes and waits until LinkedIn processed it; it
// returns the document URN. PROCESSING_FAILED is Permanent.
func (a *Adapter) uploadDocument(ctx context.Context, c platforms.Credentials, m platforms.Media) (string, error) {
	raw, _ := json.Marshal(map[string]any{"initializeUploadRequest": map[string]any{"owner": authorURN(c)}})
	var init struct {
		Value struct {
			UploadURL string `json:"uploadUrl"`
			Document  string `json:"document"`
		} `json:"value"`
	}
	if _, err := a.call(ctx, platforms.Call{Method: http.MethodPost, URL: a.base + "/rest/documents?action=initializeUpload", Body: raw, ContentType: "application/json", Bearer: c.AccessToken, Header: a.restHeader()}, &init); err != nil {
		return "", err
	}
	if init.Value.UploadURL == "" || init.Value.Document == "" {
		return "", platforms.Errorf(platforms.LinkedIn, platforms.Transient, 0, "document initializeUpload answered without uploadUrl or document")
	}
	rc, err := open(ctx, m)
	if err != nil {
		return "", err
	}
	data, err := io.ReadAll(io.LimitReader(rc, platforms.MaxDocumentBytes+1))
	rc.Close()
	if err != nil {
		return "", &platforms.Error{Platform: platforms.LinkedIn, Kind: platforms.Transient, Message: "reading the document failed", Err: err}
	}
	if len(data) > platforms.MaxDocumentBytes {
		return "", invalid("the document is over %d bytes; LinkedIn allows %d", platforms.MaxDocumentBytes, platforms.MaxDocumentBytes)
	}
	if _, err := a.call(ctx, platforms.Call{Method: http.MethodPut, URL: init.Value.UploadURL, Body: data, ContentType: "application/octet-stream", Bearer: c.AccessToken}, nil); err != nil {
		return "", err
	}
	return init.Value.Document, a.waitAvailable(ctx, c, "documents", init.Value.Document)
}
