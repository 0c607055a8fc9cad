package sim

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/heraldhq/herald/internal/pdf"
)

// LinkedIn's Documents API (networks.md §3.2): POST /rest/documents?action=initializeUpload
// {"initializeUploadRequest":{"owner"}} answers value.uploadUrl and value.document
// (urn:li:document:…); one PUT to the upload URL takes the file, which must be a PDF (its bytes
// begin with %PDF-) of at most 100 MB and 300 pages, else 400; the document is then PROCESSING
// for Options.ProcessingDelay and AVAILABLE (GET /rest/documents/{urn}). A post carries it as
// content.media {id, title}, the title required (422 without one); the record keeps the title in
// Options["document_title"].

const (
	liMaxDocumentBytes = 100 << 20
	liMaxDocumentPages = 300
)

func (li *liSim) registerDocuments() {
	li.n.Mux.HandleFunc("POST /rest/documents", li.rest(li.documentsAction))
	li.n.Mux.HandleFunc("GET /rest/documents/{urn}", li.rest(li.getAsset("document")))
	li.n.Mux.HandleFunc("PUT /dms-uploads/documents/{id}", li.authed(li.putDocument))
}

func (li *liSim) documentsAction(w http.ResponseWriter, r *http.Request, m liMember) {
	li.initializeUpload(w, r, m, "document", "documents")
}

func (li *liSim) putDocument(w http.ResponseWriter, r *http.Request, m liMember) {
	a, data, ok := li.upload(w, r, m, "document", liMaxDocumentBytes)
	if !ok {
		return
	}
	pages, err := pdf.Pages(data)
	switch {
	case err != nil:
		liError(w, http.StatusBadRequest, 0, "", "the document is not a readable PDF: "+err.Error())
		return
	case pages > liMaxDocumentPages:
		liError(w, http.StatusBadRequest, 0, "", fmt.Sprintf("the document has %d pages; at most %d", pages, liMaxDocumentPages))
		return
	}
	li.n.Store.PutBlob(&Blob{ID: "li-asset:" + a.urn, ContentType: "application/pdf", Data: data, Ready: true, Owner: a.owner})
	li.n.Store.With(func(map[string]any) {
		a.status, a.size = "PROCESSING", int64(len(data))
		a.readyAt = li.n.Sim.Now().Add(li.n.Sim.Options().ProcessingDelay)
	})
	w.WriteHeader(http.StatusCreated)
}

// liDocumentTitle is the title of a post's document (content.media with a urn:li:document id);
// isDoc is false when the content carries no document.
func liDocumentTitle(raw json.RawMessage) (title string, isDoc bool) {
	var content struct {
		Media *struct {
			ID    string `json:"id"`
			Title string `json:"title"`
		} `json:"media"`
	}
	if len(raw) == 0 || json.Unmarshal(raw, &content) != nil || content.Media == nil {
		return "", false
	}
	if len(content.Media.ID) < len("urn:li:document:") || content.Media.ID[:len("urn:li:document:")] != "urn:li:document:" {
		return "", false
	}
	return content.Media.Title, true
}
