package sim_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heraldhq/herald/internal/pdf/pdftest"
	"github.com/heraldhq/herald/platforms"
)

// LinkedIn's Documents API: a PDF is registered, uploaded and processed; a post carries it with
// its title, which LinkedIn requires; what is not a PDF, or has over 300 pages, is refused.
func TestLinkedInDocuments(t *testing.T) {
	t.Parallel()
	e := newXTestEnv(t, platforms.LinkedIn) // ProcessingDelay: 10 s
	c, err := e.sim.NewAccount(platforms.LinkedIn, "alice")
	require.NoError(t, err)
	author := "urn:li:person:" + c.UserID
	initBody, _ := json.Marshal(map[string]any{"initializeUploadRequest": map[string]any{"owner": author}})
	register := func() (uploadURL, urn string) {
		r := liREST(t, e, http.MethodPost, "/rest/documents?action=initializeUpload", c.AccessToken, initBody)
		require.Equal(t, http.StatusOK, r.status, string(r.body))
		v := r.json(t)["value"].(map[string]any)
		return v["uploadUrl"].(string), v["document"].(string)
	}

	for _, bad := range [][]byte{[]byte("GIF89a"), pdftest.Build(301, true)} {
		u, _ := register()
		r := e.do(t, http.MethodPut, u, c.AccessToken, "application/octet-stream", bad)
		require.Equal(t, http.StatusBadRequest, r.status, string(r.body))
	}

	data := pdftest.Build(9, false)
	u, urn := register()
	require.Regexp(t, `^urn:li:document:`, urn)
	r := e.do(t, http.MethodPut, u, c.AccessToken, "application/octet-stream", data)
	require.Equal(t, http.StatusCreated, r.status, string(r.body))
	status := func() string {
		r := liREST(t, e, http.MethodGet, "/rest/documents/"+urn, c.AccessToken, nil)
		require.Equal(t, http.StatusOK, r.status, string(r.body))
		return r.json(t)["status"].(string)
	}
	require.Equal(t, "PROCESSING", status())
	r = liREST(t, e, http.MethodPost, "/rest/posts", c.AccessToken, liPostBody(author, "deck", map[string]any{"media": map[string]any{"id": urn, "title": "Deck"}}))
	require.Equal(t, http.StatusUnprocessableEntity, r.status, "a document still processing")
	e.clock.Advance(10 * time.Second)
	require.Equal(t, "AVAILABLE", status())

	r = liREST(t, e, http.MethodPost, "/rest/posts", c.AccessToken, liPostBody(author, "deck", map[string]any{"media": map[string]any{"id": urn}}))
	require.Equal(t, http.StatusUnprocessableEntity, r.status, "a document needs a title")
	require.Empty(t, e.sim.Publications(platforms.LinkedIn))

	r = liREST(t, e, http.MethodPost, "/rest/posts", c.AccessToken, liPostBody(author, "deck", map[string]any{"media": map[string]any{"id": urn, "title": "Deck"}}))
	require.Equal(t, http.StatusCreated, r.status, string(r.body))
	pubs := e.sim.Publications(platforms.LinkedIn)
	require.Len(t, pubs, 1)
	require.Equal(t, "Deck", pubs[0].Options["document_title"])
	require.Len(t, pubs[0].MediaSHA256, 1)
}
